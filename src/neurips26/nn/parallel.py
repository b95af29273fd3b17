r"""Data parallelism for any training loop: one object that a paper's own loop calls instead of its loss.

A loop written for one process::

    opt = torch.optim.Adam(model.parameters(), lr)
    with TrainingGuard(model, opt) as guard:
        for x, y in batches:
            loss = loss_fn(model, x, y)
            guard.check_loss(loss); loss.backward(); opt.step(); opt.zero_grad()

runs data-parallel under ``torchrun`` with three changes, and unchanged (bit for bit) in one process::

    dp = data_parallel(model, loss_fn)                     # DDP (or FSDP2) when torchrun started >1 process
    opt = torch.optim.Adam(model.parameters(), lr)          # after data_parallel: FSDP swaps the parameters
    with dp.guard(model, opt) as guard:                     # the finite-loss check agrees across ranks
        for x, y in batches:
            x, y = dp.shard(x, y)                           # this rank's rows rank::world of the global batch
            loss = dp(x, y)                                 # loss_fn(model, x, y), inside DDP's forward
            guard.check_loss(loss); loss.backward(); opt.step(); opt.zero_grad()

**Why it equals one process.** Every rank draws the same global batch of $B$ rows and keeps rows
$r, r + W, r + 2W, \dots$ ($W$ = world size, $B$ divisible by $W$). A loss that is the *mean* over rows gives rank
$r$ the gradient $g_r = \frac{W}{B}\sum_{i \in r} \nabla \ell_i$; DDP all-reduces and divides by $W$:
$\frac1W \sum_r g_r = \frac1B \sum_i \nabla \ell_i$, the one-process gradient. So the weights after each step are
those of one process with the whole batch, to float round-off (the sum runs in another order). This needs a
loss that is a row mean and draws no random numbers per rank (dropout, diffusion noise differ between ranks) and
no statistic across rows (batch norm: each rank normalises its half).

**Why the loss runs inside the wrapper.** DDP synchronises the gradients of what runs through *its* forward. A
paper's loss often calls a model method (``model.loss(x, y)``, ``model.reconstruction_loss(x)``) rather than
``model(x)``; wrapping the whole ``loss_fn(model, *args)`` as the forward of a small module (``_LossModule``)
makes every such loss synchronised, whatever it calls.

**FSDP** (``distributed="fsdp"``): PyTorch's FSDP2 ``fully_shard`` shards parameters, gradients and optimizer
state across ranks *in place*; the optimizer must be built after :func:`data_parallel`, over the (now ``DTensor``)
parameters, and the loss must reach the weights through ``model(...)`` (FSDP2 gathers a unit's weights in the
unit's forward); gather the trained weights with :func:`~neurips26.nn.train.full_state_dict`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ..constraints import Bool, Choice, Instance, validate
from ..constraints import Callable as CallableC
from .guard import TrainingGuard

__all__ = ["DISTRIBUTED", "DataParallel", "data_parallel", "world"]

#: ``distributed=``: data-parallel when torchrun started more than one process (``"auto"``), never (``"off"``),
#: or required: DDP (``"ddp"``) or FSDP2 (``"fsdp"``)
DISTRIBUTED = ("auto", "off", "ddp", "fsdp")


def world(distributed: str = "auto", *, where: str = "data_parallel") -> tuple[int, int]:
    """``(rank, world_size)`` of the data-parallel run ``distributed`` asks for; ``(0, 1)`` for one process.

    ``"ddp"``/``"fsdp"`` refuse to run without ``torch.distributed`` initialised with more than one process."""
    import torch.distributed as dist

    active = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
    if distributed in ("ddp", "fsdp") and not active:
        raise ValueError(f"{where}: distributed={distributed!r} needs torch.distributed initialised with more "
                         "than one process (launch with torchrun)")
    if distributed == "off" or not active:
        return 0, 1
    return dist.get_rank(), dist.get_world_size()


class _LossModule(nn.Module):
    """``loss_fn(model, *args, **kwargs)`` as a module's forward, for DDP to wrap (see the module docstring)."""

    def __init__(self, model: nn.Module, loss_fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.model, self.loss_fn = model, loss_fn

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self.loss_fn(self.model, *args, **kwargs)


def _fully_shard(model: nn.Module, units: tuple[type, ...]) -> None:
    """FSDP2 in place: every module of a class in ``units`` (innermost first), then the root."""
    from torch.distributed.fsdp import fully_shard

    for module in reversed(list(model.modules())):
        if module is not model and isinstance(module, units):
            fully_shard(module)
    fully_shard(model)


class DataParallel:
    """What :func:`data_parallel` returns: call it as the loss; shard batches with :meth:`shard`.

    Attributes:
        model: the user's model (sharded in place under FSDP).  mode: ``"off"``, ``"ddp"`` or ``"fsdp"``.
        rank, world_size: this process's rank and the number of processes (0 and 1 in one process).
    """

    def __init__(self, model: nn.Module, loss_fn: Callable[..., torch.Tensor], *, mode: str, rank: int,
                 world_size: int, find_unused_parameters: bool) -> None:
        self.model, self.loss_fn, self.mode, self.rank, self.world_size = model, loss_fn, mode, rank, world_size
        self._net: nn.Module | None = None
        if mode == "ddp":
            self._net = torch.nn.parallel.DistributedDataParallel(
                _LossModule(model, loss_fn), find_unused_parameters=find_unused_parameters)

    @property
    def is_main(self) -> bool:
        """Rank 0: the one process that logs, shows progress and writes checkpoints."""
        return self.rank == 0

    def __call__(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        """``loss_fn(model, *args, **kwargs)``; under DDP inside the wrapper's forward, so that backward
        all-reduces the gradients."""
        if self._net is not None:
            return self._net(*args, **kwargs)
        return self.loss_fn(self.model, *args, **kwargs)

    def shard(self, *batch: Any) -> Any:
        """This rank's rows ``rank::world_size`` of each item of a global batch (tensors and arrays along dim 0,
        lists and tuples by item); in one process the items themselves, unchanged. One item in, one out;
        several in, a tuple out. Every item must have the same number of rows, divisible by the world size."""
        if self.world_size == 1:
            return batch[0] if len(batch) == 1 else batch
        rows = {_rows(item, i) for i, item in enumerate(batch)}
        if len(rows) != 1:
            raise ValueError(f"DataParallel.shard: the items of a batch must have the same number of rows, got "
                             f"{sorted(rows)}")
        (n,) = rows
        if n % self.world_size:
            raise ValueError(f"DataParallel.shard: the global batch ({n} rows) must divide by the world size "
                             f"({self.world_size}) so every rank trains on an equal share")
        out = tuple(_take(item, self.rank, self.world_size) for item in batch)
        return out[0] if len(out) == 1 else out

    def mean(self, value: float) -> float:
        """The mean of a per-rank number (a loss, an accuracy) over the ranks; ``value`` in one process."""
        if self.world_size == 1:
            return value
        import torch.distributed as dist

        t = torch.tensor([float(value)], dtype=torch.float64)
        dist.all_reduce(t)
        return float(t.item()) / self.world_size

    def guard(self, model: nn.Module, *optimizers: torch.optim.Optimizer | None, **kwargs: Any) -> Any:
        """A :class:`~neurips26.nn.train.TrainingGuard` whose finite-loss check agrees across ranks (all stop
        and restore together, so none waits forever in the next all-reduce)."""
        return TrainingGuard(model, *optimizers, collective=self.world_size > 1, **kwargs)

    def unwrap(self) -> nn.Module:
        """The user's model (for evaluation and checkpoints: evaluate it, not the wrapper)."""
        return self.model

    def __repr__(self) -> str:
        return f"DataParallel(mode={self.mode!r}, rank={self.rank}, world_size={self.world_size})"


def _rows(item: Any, index: int) -> int:
    if isinstance(item, torch.Tensor | np.ndarray):
        if item.ndim == 0:
            raise ValueError(f"DataParallel.shard: item {index} is a 0-d value; a batch item needs a leading "
                             "row dimension")
        return int(item.shape[0])
    if isinstance(item, list | tuple):
        return len(item)
    raise TypeError(f"DataParallel.shard: item {index} must be a tensor, an array, a list or a tuple, got "
                    f"{type(item).__name__}")


def _take(item: Any, rank: int, world_size: int) -> Any:
    if isinstance(item, torch.Tensor | np.ndarray):
        return item[rank::world_size]
    return type(item)(item[rank::world_size])


@validate(model=Instance(nn.Module, "torch.nn.Module"), loss_fn=CallableC(), distributed=Choice(*DISTRIBUTED),
          find_unused_parameters=Bool())
def data_parallel(model: nn.Module, loss_fn: Callable[..., torch.Tensor], *, distributed: str = "auto",
                  fsdp_units: tuple[type, ...] = (), find_unused_parameters: bool = False) -> DataParallel:
    """Make ``loss_fn(model, *args)`` data-parallel when ``torchrun`` started more than one process.

    Args:
        model: the module to train (its parameters are broadcast from rank 0 by DDP, sharded in place by FSDP).
        loss_fn: ``loss_fn(model, *args, **kwargs) -> scalar`` tensor, a mean over the batch's rows.
        distributed: ``"auto"`` (DDP under torchrun with > 1 process, else one process), ``"off"``, ``"ddp"``
            or ``"fsdp"`` (the last two require torchrun).
        fsdp_units: module classes sharded as their own FSDP units (e.g. the transformer block).
        find_unused_parameters: DDP's option, for losses that leave some parameters without a gradient.

    Returns:
        a :class:`DataParallel`; in one process calling it is calling ``loss_fn(model, ...)``, nothing else.
    """
    if not isinstance(fsdp_units, tuple) or not all(isinstance(u, type) and issubclass(u, nn.Module)
                                                    for u in fsdp_units):
        raise TypeError(f"data_parallel: fsdp_units must be a tuple of nn.Module classes, got {fsdp_units!r}")
    rank, size = world(distributed)
    mode = "off" if size == 1 else ("fsdp" if distributed == "fsdp" else "ddp")
    if mode == "fsdp":
        _fully_shard(model, fsdp_units)
    return DataParallel(model, loss_fn, mode=mode, rank=rank, world_size=size,
                        find_unused_parameters=find_unused_parameters)
