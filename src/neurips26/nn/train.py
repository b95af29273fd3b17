r"""A plain language-model training loop (nanoGPT-style: optimiser, schedule and step all visible).

One optimizer step of :func:`train_lm` is

1. set the learning rate $\eta_t$ = :func:`lr_at` ``(t, ...)`` on every parameter group;
2. for each of the ``grad_accum_steps`` micro-batches $(x_j, y_j)$: forward (under ``torch.autocast``
   when asked), $\ell_j$ = ``loss_fn(model, x_j, y_j)`` (default: mean next-token cross-entropy), and
   backward of $\ell_j / A$, so the summed gradient is that of the mean loss over the $A$ micro-batches;
3. clip the global gradient norm to ``grad_clip``: $g \leftarrow g \cdot \min(1, c / \lVert g \rVert_2)$;
4. one AdamW step (decoupled weight decay $\lambda$ on every parameter, as tst and dynconv used).

Schedules (pure functions of the step, $t = 0, 1, \dots, T-1$; warm-up of $W$ steps is the linear ramp
$w_t = \min(1, (t+1)/W)$, and $m$ = ``min_lr_ratio``):

* ``"constant"``: $\eta_t = \eta\, w_t$.
* ``"cosine"``: after warm-up, $\eta_t = \eta\,[m + (1-m)\tfrac12(1 + \cos(\pi p))]$ with
  $p = (t - W)/(T - W)$. With ``cosine_over_warmup=True`` the cosine spans the whole run and multiplies the
  ramp instead: $\eta_t = \eta\, w_t\,[m + (1-m)\tfrac12(1+\cos(\pi t / T))]$ (dynconv's schedule).
* ``"wsd"`` (warmup-stable-decay): ramp, flat at $\eta$, then over the last $D = \mathrm{round}(fT)$ steps
  ($f$ = ``decay_fraction``) a linear decay $\eta_t = \eta\,[m + (1-m)(T - t)/D]$ (tst's schedule).

Data order is the caller's: ``batches`` is an iterator of ``(inputs, targets)`` or a function of the
micro-batch index; :func:`seeded_batches` gives the usual seeded random windows of a token stream.

Every trainer of the library runs inside one :class:`TrainingGuard`: the loss is checked finite before each
backward, and on a non-finite loss or any exception (an interrupt included) the weights, the optimizer state and
the train/eval mode of every submodule are put back as they were when the fit began.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn

from .. import constraints as cons
from ..constraints import Bool, Choice, Instance, Int, Optional, Real, validate
from .guard import NonFiniteLossError, TrainingGuard
from .parallel import DISTRIBUTED, DataParallel, data_parallel, world

__all__ = ["DISTRIBUTED", "SCHEDULES", "DataParallel", "NonFiniteLossError", "StepRecord", "TrainResult",
           "TrainingGuard", "data_parallel", "full_state_dict", "lr_at", "lr_lambda", "next_token_loss",
           "seeded_batches", "train_lm"]

Schedule = Literal["cosine", "wsd", "constant"]
SCHEDULES: tuple[str, ...] = ("cosine", "wsd", "constant")
Batch = tuple[torch.Tensor, torch.Tensor]


# ------------------------------------------------------------------------------------------ validation
# the schedule's arguments, declared once for lr_at, lr_lambda and train_lm (train_lm calls T ``steps``)
_SCHEDULE = dict(schedule=Choice(*SCHEDULES), warmup_steps=Int(low=0),
                 decay_fraction=Real(0.0, 1.0), min_lr_ratio=Real(0.0, 1.0), cosine_over_warmup=Bool())


def _check_warmup(where: str, warmup_steps: int, total_steps: int, name: str = "total_steps") -> None:
    if warmup_steps > total_steps:
        raise ValueError(f"{where}: warmup_steps must be <= {name} ({total_steps}), got {warmup_steps}")


# ------------------------------------------------------------------------------------------ schedules
@validate(step=Int(low=0), total_steps=Int(low=1), peak_lr=Real(low=0.0), **_SCHEDULE)
def lr_at(step: int, *, total_steps: int, peak_lr: float, schedule: Schedule = "cosine", warmup_steps: int = 0,
          decay_fraction: float = 0.2, min_lr_ratio: float = 0.0, cosine_over_warmup: bool = False) -> float:
    r"""Learning rate at optimizer step ``step`` (0-based) of a ``total_steps`` run; a pure function.

    Args:
        step: ``0 <= step`` (steps past the end keep the last phase's formula, clamped at the floor).
        total_steps: $T$, optimizer steps of the run.
        peak_lr: $\eta$.
        schedule: ``"cosine"``, ``"wsd"`` or ``"constant"`` (formulas in the module docstring).
        warmup_steps: $W$, linear ramp $(t+1)/W$ over the first $W$ steps (0: none).
        decay_fraction: $f$ of ``"wsd"``: the last $\mathrm{round}(fT)$ steps decay linearly.
        min_lr_ratio: $m$, the floor of the decay as a fraction of ``peak_lr``.
        cosine_over_warmup: ``"cosine"`` only: the cosine spans all $T$ steps and multiplies the ramp.
    """
    _check_warmup("lr_at", warmup_steps, total_steps)
    return _lr(peak_lr, step, total_steps, schedule, warmup_steps, decay_fraction, min_lr_ratio,
               cosine_over_warmup)


def _factor(t: int, total: int, schedule: str, warmup: int, decay_fraction: float, m: float,
            cosine_over_warmup: bool) -> tuple[float, float]:
    r"""``(warm, decay)`` with $\eta_t$ = ``peak_lr * warm * decay`` evaluated left to right, the order of the
    hand-written schedules tst and dynconv used, so their learning rates are reproduced bit for bit."""
    in_warmup = warmup > 0 and t < warmup
    warm = (t + 1) / warmup if in_warmup else 1.0
    if schedule == "constant":
        return warm, 1.0
    if schedule == "cosine":
        if cosine_over_warmup:
            # $w_t [m + (1-m) \frac12 (1 + \cos(\pi t / T))]$
            return warm, m + (1.0 - m) * (0.5 * (1.0 + math.cos(math.pi * min(t, total) / total)))
        if in_warmup:
            return warm, 1.0
        # $p = (t - W) / (T - W)$ in [0, 1]
        p = min(1.0, (t - warmup) / max(1, total - warmup))
        return 1.0, m + (1.0 - m) * (0.5 * (1.0 + math.cos(math.pi * p)))
    # wsd: ramp, stable, then linear decay over the last D = round(f T) steps
    if in_warmup:
        return warm, 1.0
    decay = round(decay_fraction * total)
    if decay > 0 and t >= total - decay:
        return 1.0, m + (1.0 - m) * max(0.0, (total - t) / decay)
    return 1.0, 1.0


def _lr(peak_lr: float, *args: Any) -> float:
    warm, decay = _factor(*args)
    return peak_lr * warm * decay


@validate(total_steps=Int(low=1), **_SCHEDULE)
def lr_lambda(*, total_steps: int, schedule: Schedule = "cosine", warmup_steps: int = 0,
              decay_fraction: float = 0.2, min_lr_ratio: float = 0.0,
              cosine_over_warmup: bool = False) -> Callable[[int], float]:
    """The same schedule as a multiplier ``step -> lr / peak_lr`` for ``torch.optim.lr_scheduler.LambdaLR``
    (for loops that keep their own optimizer, e.g. tst's two-phase trainer)."""
    _check_warmup("lr_lambda", warmup_steps, total_steps)

    def factor(step: int) -> float:
        return lr_at(step, total_steps=total_steps, peak_lr=1.0, schedule=schedule, warmup_steps=warmup_steps,
                     decay_fraction=decay_fraction, min_lr_ratio=min_lr_ratio,
                     cosine_over_warmup=cosine_over_warmup)

    return factor


# ------------------------------------------------------------------------------------------ data order
@validate(batch_size=Int(low=1), context_len=Int(low=1), seed=Int(low=0))
def seeded_batches(tokens: torch.Tensor, batch_size: int, context_len: int, seed: int) -> Iterator[Batch]:
    r"""Endless random windows of a token stream, in an order fixed by ``seed``.

    Each batch draws ``batch_size`` start positions $i \sim U\{0, \dots, N - L - 2\}$ from a CPU
    ``torch.Generator`` seeded with ``seed`` and yields ``inputs = tokens[i : i+L]``,
    ``targets = tokens[i+1 : i+L+1]``, both ``int64 [batch_size, context_len]`` on ``tokens.device``.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1 or tokens.dtype.is_floating_point \
            or tokens.dtype == torch.bool or tokens.is_complex():
        raise ValueError(f"tokens must be a 1-D integer tensor, got "
                         f"{getattr(tokens, 'dtype', type(tokens).__name__)} {tuple(getattr(tokens, 'shape', ()))}")
    if len(tokens) < context_len + 2:
        raise ValueError(f"tokens must hold at least context_len + 2 = {context_len + 2} tokens, got {len(tokens)}")
    return _windows(tokens.long(), batch_size, context_len, seed)


def _windows(tokens: torch.Tensor, batch_size: int, context_len: int, seed: int) -> Iterator[Batch]:
    gen = torch.Generator().manual_seed(seed)
    offsets = torch.arange(context_len + 1, device=tokens.device)
    while True:
        starts = torch.randint(0, len(tokens) - context_len - 1, (batch_size,), generator=gen).to(tokens.device)
        window = tokens[starts[:, None] + offsets]  # [B, L+1]
        yield window[:, :-1], window[:, 1:]


def next_token_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    r"""Mean cross-entropy $-\frac1N \sum \log p(y \mid x)$ over all target positions (``-100`` ignored).

    ``model(inputs)`` must return logits ``[B, T, V]``; ``targets`` is ``[B, T]``."""
    logits = model(inputs)
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=-100)


@dataclass
class StepRecord:
    """What one optimizer step did (handed to ``callback``)."""

    step: int
    loss: float  # mean of the micro-batch losses (nats/token for the default loss)
    lr: float
    grad_norm: float | None  # global norm before clipping (None without clipping)
    tokens: int  # target positions this step (all micro-batches)


@dataclass
class TrainResult:
    """History of one :func:`train_lm` run (the model is trained in place)."""

    losses: list[float] = field(default_factory=list)  # per optimizer step
    lrs: list[float] = field(default_factory=list)
    grad_norms: list[float | None] = field(default_factory=list)
    tokens_seen: int = 0  # target positions over the run
    eval_history: list[tuple[int, Any]] = field(default_factory=list)  # (steps done, eval_fn(model))
    wall_seconds: float = 0.0
    steps: int = 0
    stopped_early: bool = False

    @property
    def final_loss(self) -> float:
        return self.losses[-1]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _batch_source(batches: Any) -> Callable[[int], Batch]:
    if callable(batches) and not hasattr(batches, "__next__"):
        return batches
    if hasattr(batches, "__iter__") or hasattr(batches, "__next__"):
        iterator = iter(batches)

        def pull(_: int) -> Batch:
            try:
                return next(iterator)
            except StopIteration:
                raise ValueError("batches ran out before the last step; pass an endless iterator "
                                 "(e.g. seeded_batches) or more batches") from None

        return pull
    raise TypeError(f"batches must be an iterator of (inputs, targets) or a callable index -> batch, got "
                    f"{type(batches).__name__}")


def _check_batch(batch: Any, index: int) -> Batch:
    if not (isinstance(batch, tuple | list) and len(batch) == 2
            and all(isinstance(t, torch.Tensor) for t in batch)):
        raise TypeError(f"batch {index} must be a pair (inputs, targets) of tensors, got {type(batch).__name__}")
    return batch[0], batch[1]


def _check_betas(betas: Any) -> None:
    if not (isinstance(betas, tuple | list) and len(betas) == 2):
        raise ValueError(f"train_lm: betas must be a pair (beta1, beta2), got {betas!r}")
    for i, b in enumerate(betas):  # AdamW's decay rates: beta = 1 never forgets
        Real(0.0, 1.0, closed="left").check(b, f"betas[{i}]", "train_lm")


_OPTIONAL_FN = Optional(cons.Callable())


@validate(model=Instance(nn.Module, "torch.nn.Module"), steps=Int(low=1), lr=Real(low=0.0), **_SCHEDULE,
          weight_decay=Real(low=0.0), eps=Real(low=0.0), grad_clip=Optional(Real(low=0.0, closed="neither")),
          autocast_dtype=Choice(None, torch.bfloat16, torch.float16), grad_accum_steps=Int(low=1),
          loss_fn=_OPTIONAL_FN, eval_fn=_OPTIONAL_FN, eval_every=Optional(Int(low=1)), callback=_OPTIONAL_FN,
          progress=_OPTIONAL_FN, optimizer=Optional(Instance(torch.optim.Optimizer, "torch.optim.Optimizer")),
          distributed=Choice(*DISTRIBUTED))
def train_lm(model: nn.Module, batches: Iterator[Batch] | Callable[[int], Batch], *, steps: int, lr: float,
             schedule: Schedule = "cosine", warmup_steps: int = 0, decay_fraction: float = 0.2,
             min_lr_ratio: float = 0.0, cosine_over_warmup: bool = False, weight_decay: float = 0.1,
             betas: tuple[float, float] = (0.9, 0.95), eps: float = 1e-8, grad_clip: float | None = 1.0,
             autocast_dtype: torch.dtype | None = None, grad_accum_steps: int = 1,
             loss_fn: Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
             eval_fn: Callable[[nn.Module], Any] | None = None, eval_every: int | None = None,
             callback: Callable[[StepRecord], bool | None] | None = None,
             progress: Callable[..., Any] | None = None,
             optimizer: torch.optim.Optimizer | None = None, distributed: str = "auto",
             fsdp_units: tuple[type, ...] = ()) -> TrainResult:
    """Train ``model`` in place for ``steps`` AdamW steps; returns the history.

    Args:
        model: any module; with the default loss ``model(inputs)`` returns logits ``[B, T, V]``.
        batches: an iterator of ``(inputs, targets)`` (e.g. :func:`seeded_batches`), or a callable
            ``k -> (inputs, targets)`` of the micro-batch index ``k = step * grad_accum_steps + j``.
        steps: optimizer steps $T$.  lr: peak learning rate.
        schedule, warmup_steps, decay_fraction, min_lr_ratio, cosine_over_warmup: see :func:`lr_at`.
        weight_decay, betas, eps: AdamW's (decay on every parameter).
        grad_clip: max global gradient norm (``None``: no clipping).
        autocast_dtype: ``torch.bfloat16`` / ``torch.float16`` to run forward and loss under
            ``torch.autocast`` on the model's device (float16 adds a ``GradScaler``); ``None``: full precision.
        grad_accum_steps: micro-batches per optimizer step (each loss divided by it).
        loss_fn: ``loss_fn(model, inputs, targets) -> scalar``; default :func:`next_token_loss`.
        eval_fn: ``eval_fn(model)`` run in ``eval()`` mode under ``no_grad`` every ``eval_every`` steps and
            after the last step; results land in ``TrainResult.eval_history`` as ``(steps_done, value)``.
        callback: ``callback(StepRecord)`` after every step; returning ``True`` stops training.
        progress: wraps the step range, e.g. ``ctx.progress`` or ``tqdm`` (called as ``progress(range, desc=)``).
        optimizer: an existing optimizer to step instead of a fresh AdamW (its lr is still set by the schedule).
        distributed: ``"auto"`` runs data-parallel (DDP) when ``torch.distributed`` is initialised with more than
            one process (``torchrun``), else in one process; ``"ddp"`` requires it, ``"off"`` never uses it.
            Under DDP every rank draws the same global batch from ``batches`` and trains on its rows
            ``rank::world_size`` (a ``DistributedSampler``-style shard, so the global batch size must divide by
            the world size); gradients are averaged across ranks, so two processes with half the batch each end
            with the weights of one process with the whole batch (to fp32 round-off); losses are reported as the
            mean over ranks; the finite-loss guard agrees across ranks (all stop and restore together); only rank
            0 shows progress. ``"fsdp"`` (needs torchrun too) shards parameters, gradients and AdamW's moments
            across the ranks with PyTorch's FSDP2 (``torch.distributed.fsdp.fully_shard``), same data sharding
            and same result as DDP (to fp32 round-off), each rank holding ``1/world`` of the state at rest.
            The model is sharded **in place** (its parameters become ``DTensor`` shards, also after the call,
            and after a failed fit, which restores the shard values): gather the weights with
            :func:`full_state_dict`. ``optimizer`` cannot be passed (it would hold the unsharded parameters);
            ``eval_fn`` runs on every rank (its forward all-gathers).
        fsdp_units: module classes sharded as their own FSDP units (e.g. the transformer block class), so only
            one unit's full weights exist at a time in forward/backward; the root is always a unit.

    Raises:
        FloatingPointError: a non-finite loss (with the step).
    """
    _check_warmup("train_lm", warmup_steps, steps, "steps")
    _check_betas(betas)
    if eval_every is not None and eval_fn is None:
        raise ValueError("train_lm: eval_every needs eval_fn")
    source = _batch_source(batches)
    loss_fn = next_token_loss if loss_fn is None else loss_fn
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")
    device = params[0].device
    _check_fsdp_args(distributed, optimizer, fsdp_units)
    # one process: dp(x, y) is loss_fn(model, x, y); under torchrun the whole loss runs inside DDP's forward (so a
    # loss_fn may call any method of the model: m.reconstruction_loss(x), m.loss(x, y)) or FSDP shards in place
    dp = data_parallel(model, loss_fn, distributed=distributed, fsdp_units=fsdp_units)
    if dp.mode == "fsdp":
        params = [p for p in model.parameters() if p.requires_grad]  # now DTensor shards
    if dp.world_size > 1:
        source = _sharded(source, dp)
    opt = optimizer or torch.optim.AdamW(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
    scaler = torch.amp.GradScaler(device.type) if autocast_dtype == torch.float16 else None

    result = TrainResult()
    start = time.perf_counter()
    step_range = range(steps)
    # all or nothing: a non-finite loss or any exception puts weights, optimizer and modes back as they were
    with TrainingGuard(model, opt, where="train_lm", what="the training loss", collective=dp.world_size > 1) as guard:
        loop = progress(step_range, desc="train") if progress is not None and dp.is_main else step_range
        _loop(dp, opt, source, scaler, guard, loop, result, steps=steps, lr=lr, schedule=schedule,
              warmup_steps=warmup_steps, decay_fraction=decay_fraction, min_lr_ratio=min_lr_ratio,
              cosine_over_warmup=cosine_over_warmup, grad_clip=grad_clip, device=device,
              autocast_dtype=autocast_dtype, accum=grad_accum_steps, params=params, eval_fn=eval_fn,
              eval_every=eval_every, callback=callback)
    result.wall_seconds = time.perf_counter() - start
    return result


def _check_fsdp_args(distributed: Any, optimizer: Any, fsdp_units: Any) -> None:
    if not isinstance(fsdp_units, tuple) or not all(isinstance(u, type) and issubclass(u, nn.Module)
                                                    for u in fsdp_units):
        raise TypeError(f"train_lm: fsdp_units must be a tuple of nn.Module classes, got {fsdp_units!r}")
    if distributed == "fsdp" and optimizer is not None:
        raise ValueError("train_lm: distributed='fsdp' builds its own AdamW over the sharded parameters; an "
                         "optimizer passed in would step the unsharded ones (leave optimizer=None)")
    world("off" if distributed == "auto" else distributed, where="train_lm")  # ddp/fsdp without torchrun: refuse


def full_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's ``state_dict`` with every FSDP ``DTensor`` shard gathered into a full tensor (a collective:
    call it on every rank); for an unsharded model, its plain ``state_dict``."""
    return {k: (v.full_tensor() if hasattr(v, "full_tensor") else v) for k, v in model.state_dict().items()}


def _sharded(source: Callable[[int], Batch], dp: DataParallel) -> Callable[[int], Batch]:
    """This rank's rows ``rank::world`` of every global batch (every rank draws the same global batch)."""

    def shard(index: int) -> Batch:
        inputs, targets = _check_batch(source(index), index)
        if inputs.shape[0] % dp.world_size:
            raise ValueError(f"train_lm: the global batch ({inputs.shape[0]} rows) must divide by the world size "
                             f"({dp.world_size}) so every rank trains on an equal share")
        return dp.shard(inputs, targets)

    return shard


def _loop(dp: DataParallel, opt: torch.optim.Optimizer, source: Callable[[int], Batch], scaler: Any,
          guard: TrainingGuard, loop: Any, result: TrainResult, *, steps: int,
          eval_fn: Callable | None, eval_every: int | None, callback: Callable | None, **step_args: Any) -> None:
    model = dp.model
    for step in loop:
        record = _one_step(dp, opt, source, scaler, guard, step=step, steps=steps, **step_args)
        if dp.world_size > 1:
            record.loss = dp.mean(record.loss)
            record.tokens = int(round(dp.mean(record.tokens) * dp.world_size))
        result.losses.append(record.loss)
        result.lrs.append(record.lr)
        result.grad_norms.append(record.grad_norm)
        result.tokens_seen += record.tokens
        result.steps = step + 1
        last = step + 1 == steps
        if eval_fn is not None and (last or (eval_every is not None and (step + 1) % eval_every == 0)):
            result.eval_history.append((step + 1, _evaluate(model, eval_fn)))
        if callback is not None and callback(record) is True:
            result.stopped_early = not last
            if eval_fn is not None and not last:
                result.eval_history.append((step + 1, _evaluate(model, eval_fn)))
            break


def _one_step(dp: DataParallel, opt: torch.optim.Optimizer, source: Callable[[int], Batch], scaler: Any,
              guard: TrainingGuard, *, step: int, steps: int, lr: float, schedule: str, warmup_steps: int,
              decay_fraction: float, min_lr_ratio: float, cosine_over_warmup: bool, grad_clip: float | None,
              device: torch.device, autocast_dtype: torch.dtype | None, accum: int, params: list) -> StepRecord:
    eta = _lr(lr, step, steps, schedule, warmup_steps, decay_fraction, min_lr_ratio, cosine_over_warmup)
    for group in opt.param_groups:
        group["lr"] = eta
    dp.model.train()
    opt.zero_grad(set_to_none=True)
    total_loss, tokens = 0.0, 0
    for j in range(accum):
        index = step * accum + j
        inputs, targets = _check_batch(source(index), index)
        inputs, targets = inputs.to(device), targets.to(device)
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            loss = dp(inputs, targets)
        guard.check_loss(loss, step=step, detail=f" (micro-batch {j})")  # before backward touches the grads
        # $\nabla \frac1A \sum_j \ell_j$: each micro-batch contributes $\ell_j / A$
        scaled = loss / accum if accum > 1 else loss
        (scaler.scale(scaled) if scaler is not None else scaled).backward()
        total_loss += float(loss.detach())
        tokens += int(targets.numel())
    grad_norm = None
    if grad_clip is not None:
        if scaler is not None:
            scaler.unscale_(opt)
        # $g \leftarrow g \min(1, c / \lVert g \rVert)$
        norm = torch.nn.utils.clip_grad_norm_(params, grad_clip)
        grad_norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)  # FSDP: a DTensor
    if scaler is not None:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    return StepRecord(step=step, loss=total_loss / accum, lr=eta, grad_norm=grad_norm, tokens=tokens)


def _evaluate(model: nn.Module, eval_fn: Callable[[nn.Module], Any]) -> Any:
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return eval_fn(model)
    finally:
        model.train(was_training)
