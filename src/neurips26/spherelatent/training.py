r"""Training helpers for the small-scale experiment: digits images, EMA, budgeted training, the FID classifier.

Budgets are CPU seconds of this process (``time.process_time``), so equal-budget comparisons stay fair on a
shared, loaded machine; :func:`fit` times a few calibration steps on a copy of the model, converts the budget
into a step count (so the cosine schedule completes) and trains with :func:`neurips26.nn.train_lm`.
EMA: $\bar\theta \leftarrow d_t\bar\theta + (1 - d_t)\theta$ with the warm-up $d_t = \min(d, (1 + t)/(10 + t))$,
so short runs are not dominated by the initial weights (inferred; the spec gives only $d$).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.constraints import Callable as IsCallable
from neurips26.constraints import Choice, Int, Optional, Real, validate
from neurips26.constraints import Tensor as TensorSpec
from neurips26.nn import train_lm

from .tokenizer import COUNT, MODULE, NONNEG

__all__ = ["EMA", "FitResult", "digits_images", "fit", "train_classifier", "train_tokenizer"]


#: an EMA decay, in [0, 1)
DECAY = Real(0.0, 1.0, closed="left")
#: integer class labels [N] (N bound by the images)
LABELS = TensorSpec("N", dtype="integer")


@validate(size=Int(low=8))
def digits_images(size: int = 16) -> tuple[Tensor, Tensor]:
    """scikit-learn's 1797 digits, bilinearly upsampled 8×8 -> ``size``×``size``, in [-1, 1].

    Returns ``(images [N, 1, S, S], labels [N])``.
    """
    from neurips26.data import load_digits

    x, y = load_digits()
    images = torch.as_tensor(x, dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    if size != 8:
        images = F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)
    return images.clamp(0, 1) * 2 - 1, torch.as_tensor(y, dtype=torch.long)


class EMA:
    """An exponential moving average of a module's floating-point parameters and buffers (``.module``)."""

    @validate(module=MODULE, decay=DECAY)
    def __init__(self, module: nn.Module, decay: float = 0.999) -> None:
        self.module = copy.deepcopy(module).eval().requires_grad_(False)
        self.decay, self.updates = float(decay), 0

    @torch.no_grad()
    @validate(module=MODULE)
    def update(self, module: nn.Module) -> None:
        """Move the average towards ``module`` (the same architecture as the averaged one).

        Refuses (``ValueError``) a module with a NaN or infinite parameter or buffer, leaving the average and the
        update count unchanged: one diverged step must not poison the weights that are evaluated."""
        avg_sd, cur_sd = self.module.state_dict(), module.state_dict()
        if list(avg_sd) != list(cur_sd) or any(avg_sd[k].shape != cur_sd[k].shape for k in avg_sd):
            raise ValueError("module must have the averaged module's parameters and buffers (same names and "
                             "shapes); got another architecture")
        bad = [k for k, v in cur_sd.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
        if bad:  # checked before any change: the average is left exactly as it was
            raise ValueError(f"module must be finite to be averaged; non-finite entries in {bad[:3]}"
                             f"{' ...' if len(bad) > 3 else ''} (the EMA is unchanged: {self.updates} updates)")
        # $d_t = \min(d, (1 + t) / (10 + t))$; $\bar\theta \leftarrow d_t \bar\theta + (1 - d_t)\theta$
        d = min(self.decay, (1 + self.updates) / (10 + self.updates))
        self.updates += 1
        for avg, cur in zip(avg_sd.values(), cur_sd.values()):
            if avg.is_floating_point():
                avg.mul_(d).add_(cur.detach(), alpha=1 - d)


@dataclass
class FitResult:
    steps: int
    cpu_seconds: float
    wall_seconds: float
    losses: list[float] = field(default_factory=list)
    ema: EMA | None = None
    # (steps done, cpu seconds of training so far, eval_fn(EMA module or model)) every eval_every steps and at the end
    eval_history: list[tuple[int, float, Any]] = field(default_factory=list)


def _batches(x: Tensor, y: Tensor | None, batch_size: int, seed: int) -> Callable[[int], tuple[Tensor, Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    state = {"perm": torch.randperm(x.shape[0], generator=gen), "pos": 0}
    dummy = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
    labels = y if y is not None else dummy

    def batch(_: int) -> tuple[Tensor, Tensor]:
        if state["pos"] + batch_size > x.shape[0]:
            state["perm"], state["pos"] = torch.randperm(x.shape[0], generator=gen), 0
        idx = state["perm"][state["pos"]:state["pos"] + batch_size]
        state["pos"] += batch_size
        return x[idx], labels[idx]

    return batch


def _now(clock: str) -> float:
    if clock == "process":
        return time.process_time()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def _steps_for_budget(model: nn.Module, loss_fn: Callable, batch: Callable, budget_s: float, lr: float,
                      clock: str = "process") -> int:
    """Time 3 AdamW steps (after 1 warm-up) on a throw-away copy; steps = budget / (seconds per step)."""
    probe = copy.deepcopy(model)
    opt = torch.optim.AdamW([p for p in probe.parameters() if p.requires_grad], lr=lr)
    rng = torch.get_rng_state()
    times = []
    for k in range(4):
        x, y = batch(k)
        t0 = _now(clock)
        opt.zero_grad(set_to_none=True)
        loss_fn(probe, x, y).backward()
        opt.step()
        times.append(_now(clock) - t0)
    torch.set_rng_state(rng)
    per_step = max(sorted(times[1:])[1], 1e-4)
    return max(10, int(budget_s / per_step))


@validate(model=MODULE, x=TensorSpec("N _ ...", dtype="float"), y=Optional(LABELS), loss_fn=IsCallable(),
          budget_s=Optional(Real(0.0, closed="neither")), steps=Optional(COUNT), batch_size=COUNT,
          lr=Real(0.0, closed="neither"), seed=Int(low=0), ema_decay=Optional(DECAY), warmup_steps=Optional(Int(low=0)),
          progress=Optional(IsCallable()), clock=Choice("process", "wall"), eval_fn=Optional(IsCallable()),
          eval_every=Optional(COUNT), evals=Optional(COUNT), on_step=Optional(IsCallable()))
def fit(model: nn.Module, x: Tensor, y: Tensor | None, *, loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor],
        budget_s: float | None = None, steps: int | None = None, batch_size: int = 128, lr: float = 1e-3,
        seed: int = 0, ema_decay: float | None = 0.999, warmup_steps: int | None = None,
        progress: Callable[..., Any] | None = None, desc: str = "train", clock: str = "process",
        eval_fn: Callable[[nn.Module], Any] | None = None, eval_every: int | None = None,
        evals: int | None = None, on_step: Callable[[int, int], None] | None = None) -> FitResult:
    """Train ``model`` in place for ``steps`` AdamW steps, or as many as ``budget_s`` CPU seconds allow.

    ``loss_fn(model, x_batch, y_batch) -> scalar``; ``y=None`` passes dummy labels. Cosine schedule with a
    5 % warm-up, grad-clip 1, weight decay 0; seeded batch order and noise. ``clock``: ``"process"`` (CPU
    seconds of this process) or ``"wall"`` (CUDA-synchronised wall seconds, for GPUs).
    ``eval_fn(module)`` is called on the EMA module (the model without EMA) after the EMA update of every
    ``eval_every``-th step (or at ``evals`` evenly spaced steps, when the step count comes from the budget) and
    after the last one (the evaluation curve, ``FitResult.eval_history``; its time is not counted in
    ``cpu_seconds``); ``on_step(steps_done, total_steps)`` after every step (e.g. a schedule
    inside the loss, as the consistency model's).
    """
    if (budget_s is None) == (steps is None):
        raise ValueError("give exactly one of budget_s (CPU seconds) or steps")
    if eval_every is not None and evals is not None:
        raise ValueError("give at most one of eval_every and evals")
    if x.shape[0] < 1:
        raise ValueError(f"fit: x must hold N >= 1 samples, got shape {tuple(x.shape)}")
    if batch_size > x.shape[0]:
        raise ValueError(f"fit: batch_size must be at most N = {x.shape[0]} (the number of samples in x), "
                         f"got {batch_size!r}")
    # a run that fails midway (a non-finite loss, an interrupt) puts the weights and the modes back: train_lm
    # runs under nn.train.TrainingGuard, and nothing before it touches the model (the budget probe trains a copy)
    return _fit(model, x, y, loss_fn, budget_s, steps, batch_size, lr, seed, ema_decay, warmup_steps, progress,
                desc, clock, eval_fn, eval_every, evals, on_step)


def _fit(model: nn.Module, x: Tensor, y: Tensor | None, loss_fn: Callable, budget_s: float | None, steps: int | None,
         batch_size: int, lr: float, seed: int, ema_decay: float | None, warmup_steps: int | None,
         progress: Callable[..., Any] | None, desc: str, clock: str, eval_fn: Callable | None = None,
         eval_every: int | None = None, evals: int | None = None, on_step: Callable | None = None) -> FitResult:
    torch.manual_seed(seed)
    if budget_s is not None:
        steps = _steps_for_budget(model, loss_fn, _batches(x, y, batch_size, seed + 1), float(budget_s), lr,
                                  clock)
    if evals is not None:
        eval_every = max(1, -(-steps // evals))  # ceil: evals points, the last at the last step
    ema = EMA(model, ema_decay) if ema_decay is not None else None
    torch.manual_seed(seed)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    history: list[tuple[int, float, Any]] = []
    eval_cpu = [0.0]  # evaluation time, excluded from the training CPU seconds

    def after_step(record: Any) -> None:
        if ema is not None:
            ema.update(model)
        done = record.step + 1
        if on_step is not None:
            on_step(done, steps)
        if eval_fn is not None and (done == steps or (eval_every is not None and done % eval_every == 0)):
            t0 = time.process_time()
            trained_cpu = t0 - cpu0 - eval_cpu[0]
            target = ema.module if ema is not None else model
            was = target.training
            target.eval()
            with torch.no_grad():
                value = eval_fn(target)
            target.train(was)
            eval_cpu[0] += time.process_time() - t0
            history.append((done, round(trained_cpu, 3), value))

    wrap = None
    if progress is not None:
        def wrap(it: Any, **_: Any) -> Any:
            return progress(it, desc=desc)
    result = train_lm(model, _batches(x, y, batch_size, seed), steps=steps, lr=lr, schedule="cosine",
                      warmup_steps=max(1, steps // 20) if warmup_steps is None else warmup_steps,
                      weight_decay=0.0, betas=(0.9, 0.99), grad_clip=1.0, loss_fn=loss_fn, callback=after_step,
                      progress=wrap)
    model.eval()
    return FitResult(steps=steps, cpu_seconds=time.process_time() - cpu0 - eval_cpu[0],
                     wall_seconds=time.perf_counter() - wall0, losses=result.losses, ema=ema, eval_history=history)


@validate(latent_noise=NONNEG)
def train_tokenizer(model: nn.Module, x: Tensor, *, budget_s: float | None = None, steps: int | None = None,
                    latent_noise: float = 0.1, batch_size: int = 128, lr: float = 2e-3, seed: int = 0,
                    progress: Callable[..., Any] | None = None, clock: str = "process") -> FitResult:
    """Train a :class:`ConvAutoencoder` (L1 + L2 with latent-noise augmentation), then freeze it (eval, no grad)."""
    if not isinstance(model, nn.Module) or not callable(getattr(model, "reconstruction_loss", None)):
        raise TypeError(f"model must be a tokenizer with reconstruction_loss() (a ConvAutoencoder), got "
                        f"{type(model).__name__}")
    out = fit(model, x, None, loss_fn=lambda m, xb, _: m.reconstruction_loss(xb, latent_noise), budget_s=budget_s,
              steps=steps, batch_size=batch_size, lr=lr, seed=seed, ema_decay=None, progress=progress,
              desc="tokenizer", clock=clock)
    model.eval().requires_grad_(False)
    return out


@validate(x01=TensorSpec("N 1 H W", dtype="float"), y=LABELS, image_size=Int(), steps=COUNT,
          train_fraction=Real(0.0, 1.0, closed="neither"))
def train_classifier(x01: Tensor, y: Tensor, *, image_size: int = 16, steps: int = 300, seed: int = 0,
                     train_fraction: float = 0.8) -> tuple[nn.Module, float]:
    """Train the digits-FID :class:`DigitsClassifier` on a seeded split; returns (model, held-out accuracy)."""
    from .metrics import DigitsClassifier

    if tuple(x01.shape[2:]) != (image_size, image_size):
        raise ValueError(f"train_classifier: image_size must be the side of the x01 images {tuple(x01.shape[2:])}, "
                         f"got {image_size!r}")
    cut = int(train_fraction * x01.shape[0])
    if not 1 <= cut < x01.shape[0]:  # also refuses an empty x01
        raise ValueError(f"train_fraction={train_fraction} leaves an empty train or test split of "
                         f"{x01.shape[0]} images")
    if int(y.min()) < 0:
        raise ValueError(f"y must hold class labels >= 0, got min {int(y.min())}")
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(x01.shape[0], generator=gen)
    cut = int(train_fraction * x01.shape[0])
    tr, te = perm[:cut], perm[cut:]
    torch.manual_seed(seed)
    net = DigitsClassifier(image_size=image_size, num_classes=int(y.max()) + 1).to(x01.device)
    fit(net, x01[tr], y[tr], loss_fn=lambda m, xb, yb: F.cross_entropy(m(xb), yb), steps=steps, batch_size=128,
        lr=3e-3, seed=seed, ema_decay=None)
    net.eval().requires_grad_(False)
    with torch.no_grad():
        acc = float((net(x01[te]).argmax(1) == y[te]).float().mean())
    return net, acc
