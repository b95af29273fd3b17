r"""The training guard every trainer of the library runs inside: a finite-loss check, and a restore on failure.

:class:`TrainingGuard` keeps a fit all-or-nothing (weights, optimizer state, gradients and train/eval modes are
put back when the fit fails); ``collective=True`` makes its finite-loss check agree across the ranks of a
data-parallel run. Used by :func:`neurips26.nn.train.train_lm`, :class:`neurips26.nn.parallel.DataParallel` and the
papers' own trainers (also importable from :mod:`neurips26.nn.train`).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import nn

__all__ = ["NonFiniteLossError", "TrainingGuard"]


class NonFiniteLossError(FloatingPointError, ValueError):
    """A training loss turned NaN or infinite. A ``FloatingPointError``; also a ``ValueError`` (a bad
    learning rate or bad data is a bad input), which the papers' trainers raised before the guard existed."""


class TrainingGuard:
    r"""Keep a fit all-or-nothing: a finite-loss check, and a restore on any failure.

    ::

        with TrainingGuard(model, optimizer, where="fit") as guard:
            for step in range(steps):
                loss = loss_fn(model, *next(batches))
                guard.check_loss(loss, step=step)       # NonFiniteLossError before backward if NaN/inf
                loss.backward(); optimizer.step()

    On entry it snapshots, **once per fit** (not per step: one copy of the weights in all instead of one per
    step), the model's ``state_dict`` (parameters and persistent buffers, cloned), the parameters' ``.grad``, each
    optimizer's
    ``state_dict`` (deep-copied: Adam's moments are updated in place) and the ``training`` flag of every
    submodule. If the block exits with any exception (the guard's own :class:`NonFiniteLossError`, an error in
    the loss, ``KeyboardInterrupt``), it copies the weights back into the same parameter tensors (so
    optimizers keep pointing at them), reloads each optimizer's state and learning rates, resets every
    submodule's mode flag, and lets the exception propagate unchanged. So a failed fit leaves the model as it
    was *before the fit*, not before the failing step: a partly trained model is never handed back silently.
    Not restored: learning-rate scheduler objects, RNG states and the caller's data iterators.

    Args:
        model: the module being trained.
        optimizers: optimizers whose state to restore (more can be added after entry with :meth:`watch`, e.g.
            one created inside the block).
        where: the trainer's name, the prefix of the message.  what: the loss's name in the message.
        hint: what the user can do, appended to the message.
    """

    def __init__(self, model: nn.Module, *optimizers: torch.optim.Optimizer | None, where: str = "",
                 what: str = "the training loss", hint: str = "lower the learning rate or check the data",
                 collective: bool = False) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"TrainingGuard: model must be a torch.nn.Module, got {type(model).__name__}")
        # collective: under torch.distributed every rank must stop together, or the others would wait forever
        # in the next gradient all-reduce; check_loss then agrees on finiteness across ranks (one all-reduce)
        self.model, self.where, self.what, self.hint, self.collective = model, where, what, hint, collective
        self._optimizers = [o for o in optimizers if o is not None]
        self._saved_opt: list[tuple[torch.optim.Optimizer, dict]] = []
        self._saved: dict[str, torch.Tensor] | None = None
        self._modes: list[tuple[nn.Module, bool]] = []

    def __enter__(self) -> TrainingGuard:
        with torch.no_grad():
            self._saved = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self._modes = [(m, m.training) for m in self.model.modules()]
        # gradients too: a failed fit must not leave the caller's .grad half-accumulated (usually None here)
        self._grads = [(p, None if p.grad is None else p.grad.detach().clone()) for p in self.model.parameters()]
        self._saved_opt = []
        for opt in self._optimizers:
            self.watch(opt)
        return self

    def watch(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        """Also restore ``optimizer`` (its state as of now) on failure; returns it."""
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"TrainingGuard: optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        self._saved_opt.append((optimizer, copy.deepcopy(optimizer.state_dict())))
        return optimizer

    def check_loss(self, loss: torch.Tensor | float, *, step: int | None = None, detail: str = "") -> None:
        """Raise :class:`NonFiniteLossError` if ``loss`` (a tensor, all of it, or a number) is NaN or infinite.
        One host sync per call on a GPU; call it before ``backward``."""
        finite = bool(torch.isfinite(loss).all()) if isinstance(loss, torch.Tensor) else math.isfinite(loss)
        if self.collective:
            import torch.distributed as dist

            flag = torch.tensor([1.0 if finite else 0.0])
            dist.all_reduce(flag, op=dist.ReduceOp.MIN)
            if finite and flag.item() == 0.0:
                detail += " (on another rank)"
            finite = flag.item() == 1.0
        if finite:
            return
        value = float(loss.detach().float().flatten()[0]) if isinstance(loss, torch.Tensor) else loss
        at = f" at step {step}" if step is not None else ""
        prefix = f"{self.where}: " if self.where else ""
        restored = "the model and optimizer are restored to their" if self._saved_opt else \
            "the model is restored to its"
        raise NonFiniteLossError(f"{prefix}{self.what} is non-finite ({value}){at}{detail}; {restored} state "
                                 f"before the fit ({self.hint})")

    def restore(self) -> None:
        """Put the weights, optimizer states and modes back as they were on entry."""
        if self._saved is not None:
            with torch.no_grad():
                self.model.load_state_dict(self._saved)
        for opt, state in self._saved_opt:
            opt.load_state_dict(state)
        for param, grad in getattr(self, "_grads", []):
            param.grad = grad
        for module, mode in self._modes:
            module.training = mode  # the flag itself: a module's overridden train() may not round-trip

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is not None:
            self.restore()
        self._saved, self._saved_opt, self._modes = None, [], []  # free the snapshot
        return False


# ------------------------------------------------------------------------------------------ the loop
