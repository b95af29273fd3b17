"""Training and evaluation of any decoder with CTC (the recipe inferred from the Willett baseline).

AdamW (lr 2e-3, weight decay 1e-5), linear warm-up over the first 5% of steps, batch 32, gradient clip 1.0,
white-noise (σ 0.8) and per-sentence constant-offset (σ 0.2) augmentation, CTC with ``zero_infinity``.
Batches are drawn from a seeded generator, so two models trained with the same seed see the same data
order. Training stops at ``steps`` or, if given, once ``time_budget_s`` seconds of wall time have passed.

Data-parallel under ``torchrun`` (:func:`neurips26.nn.parallel.data_parallel`, ``distributed=``): every rank draws
the same global batch *and* the same augmentation noise from the seeded generator, pads it to the global longest
sentence, and keeps rows ``rank::world``; the CTC loss is a mean over sentences, so the all-reduced gradient is the
one-process gradient of the whole batch (and the weights after each step equal its, to float round-off). The
gradient clip acts on that all-reduced gradient; the time budget stops all ranks at the same step. In one process
nothing changes, bit for bit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from neurips26.nn.parallel import DISTRIBUTED, DataParallel, data_parallel
from neurips26.nn.train import TrainingGuard

from ._checks import MODULE, NONNEGATIVE, POSITIVE, Choice, Instance, Int, Optional, check_arguments, validate
from ._checks import Callable as CallableC
from .ctc import ctc_greedy_decode, ctc_loss, edit_distance, phoneme_error_rate, validate_targets
from .data import SpeechBCIData, make_batch


@dataclass
class TrainResult:
    """Steps taken, the loss of every step, wall seconds, and seconds per step."""

    steps: int
    losses: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def s_per_step(self) -> float:
        return self.wall_s / max(1, self.steps)


@validate(model=MODULE, data=Instance(SpeechBCIData), steps=Int(low=1), lr=POSITIVE, weight_decay=NONNEGATIVE,
          seed=Int(low=0), noise_std=NONNEGATIVE, offset_std=NONNEGATIVE, grad_clip=POSITIVE,
          time_budget_s=Optional(POSITIVE), progress=Optional(CallableC()), eval_every=Optional(Int(low=1)),
          on_eval=Optional(CallableC()), distributed=Choice(*DISTRIBUTED))
def train_ctc(model: nn.Module, data: SpeechBCIData, *, steps: int, batch_size: int = 32, lr: float = 2e-3,
              weight_decay: float = 1e-5, seed: int = 0, noise_std: float = 0.8, offset_std: float = 0.2,
              grad_clip: float = 1.0, time_budget_s: float | None = None,
              progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
              eval_every: int | None = None, on_eval: Callable[[int, nn.Module], None] | None = None,
              distributed: str = "auto") -> TrainResult:
    """Train ``model`` (``forward(x, day) -> logits``) on ``data`` with CTC; returns a :class:`TrainResult`.

    ``on_eval(step, model)`` is called after every ``eval_every`` steps (and after the last one) for
    learning curves; it may evaluate the model (:func:`evaluate` puts the train mode back).

    ``distributed``: ``"auto"`` (data-parallel with DDP when ``torchrun`` started more than one process, else one
    process), ``"off"``, ``"ddp"`` or ``"fsdp"`` (FSDP2 ``fully_shard`` of the whole model, in place: gather its
    weights with :func:`neurips26.nn.train.full_state_dict`); the last two need ``torchrun``. Each rank trains on
    ``batch_size / world`` sentences of the same global batch of ``batch_size`` (which must divide by the number of
    processes); ``losses`` are the means over the ranks, identical on every rank. ``progress`` wraps the loop on rank
    0 only; ``on_eval`` runs on every rank (an FSDP forward is collective), so let only rank 0 log from it.
    """
    if next(model.parameters(), None) is None:
        raise ValueError("train_ctc: model has no parameters to train")
    check_arguments("train_ctc", {"batch_size": Int(low=1, high=len(data))}, {"batch_size": batch_size})
    validate_targets([p.tolist() for p in data.phonemes], [f.shape[0] for f in data.features])
    dp = data_parallel(model, _ctc_step_loss, distributed=distributed)  # before the optimizer: FSDP swaps params
    # a run that fails midway (a non-finite loss, an interrupt) puts the weights and the modes back
    with dp.guard(model, where="train_ctc", what="the CTC loss") as guard:
        return _train(dp, data, steps, batch_size, lr, weight_decay, seed, noise_std, offset_std, grad_clip,
                      time_budget_s, progress, guard, eval_every, on_eval)


def _ctc_step_loss(model: nn.Module, x: torch.Tensor, day: torch.Tensor, lengths: torch.Tensor,
                   targets: list[list[int]]) -> torch.Tensor:
    """The CTC loss of one (sharded) batch: a mean over its sentences (run inside DDP's forward)."""
    return ctc_loss(model(x, day), targets, lengths)


def _train(dp: DataParallel, data: SpeechBCIData, steps: int, batch_size: int, lr: float, weight_decay: float,
           seed: int, noise_std: float, offset_std: float, grad_clip: float, time_budget_s: float | None,
           progress: Callable[[Iterable[int]], Iterable[int]] | None, guard: TrainingGuard,
           eval_every: int | None = None, on_eval: Callable[[int, nn.Module], None] | None = None) -> TrainResult:
    model = dp.model
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    result = TrainResult(0)
    model.train()
    start = time.perf_counter()
    loop: Iterable[int] = progress(range(steps)) if progress and dp.is_main else range(steps)
    for _ in loop:
        # the global batch and its noise, the same on every rank (one generator, one seed); then this rank's rows
        idx = torch.randint(0, len(data), (batch_size,), generator=gen).tolist()
        batch = make_batch(data, idx, device)
        x = batch.x
        if noise_std > 0:
            x = x + noise_std * torch.randn(x.shape, generator=gen).to(device)
        if offset_std > 0:
            x = x + offset_std * torch.randn(x.shape[0], 1, x.shape[2], generator=gen).to(device)
        x, day, lengths, targets = dp.shard(x, batch.day, batch.lengths, batch.targets)
        loss = dp(x, day, lengths, targets)
        guard.check_loss(loss, step=result.steps)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        sched.step()
        result.losses.append(dp.mean(float(loss.detach())))
        result.steps += 1
        out_of_time = time_budget_s is not None and time.perf_counter() - start >= time_budget_s
        if time_budget_s is not None and dp.world_size > 1:  # all ranks stop at the same step (or the rest hang)
            out_of_time = dp.mean(float(out_of_time)) > 0.0
        last = result.steps == steps or out_of_time
        if on_eval is not None and (last or (eval_every and result.steps % eval_every == 0)):
            on_eval(result.steps, model)
        if last:
            break
    result.wall_s = time.perf_counter() - start
    model.eval()
    return result


@dataclass
class EvalResult:
    """Test PER, mean CTC loss, the per-sentence log-posteriors ``[T_n, C]`` (for alignment analyses), and
    per sentence: edit distances ``errors``, target lengths ``ref_lengths`` and CTC losses ``losses`` (nats),
    so that PER = Σ errors / Σ ref_lengths and paired per-sentence comparisons are possible."""

    per: float
    loss: float
    log_probs: list[torch.Tensor]
    hyps: list[list[int]]
    errors: list[int] = field(default_factory=list)
    ref_lengths: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)


@torch.no_grad()
@validate(model=MODULE, data=Instance(SpeechBCIData), batch_size=Int(low=1))
def evaluate(model: nn.Module, data: SpeechBCIData, *, batch_size: int = 50) -> EvalResult:
    """Greedy-decode every sentence of ``data`` and score it. The model's train/eval mode is put back
    afterwards (also when the data is refused)."""
    was_training = model.training
    try:
        model.eval()
        return _evaluate(model, data, batch_size)
    finally:
        model.train(was_training)


def _evaluate(model: nn.Module, data: SpeechBCIData, batch_size: int) -> EvalResult:
    device = next(model.parameters()).device
    hyps, refs, lps, losses = [], [], [], []
    order = np.argsort([f.shape[0] for f in data.features])  # length-sorted batches: less padding
    for start in range(0, len(data), batch_size):
        idx = order[start: start + batch_size].tolist()
        batch = make_batch(data, idx, device)
        logits = model(batch.x, batch.day).float()
        # per-sentence CTC loss (nats, summed over the sentence)
        losses += [float(v) for v in ctc_loss(logits, batch.targets, batch.lengths, reduction="none")]
        hyps += ctc_greedy_decode(logits, batch.lengths)
        refs += batch.targets
        lp = logits.log_softmax(-1).cpu()
        lps += [lp[k, : int(n)] for k, n in enumerate(batch.lengths)]
    inv = np.argsort(order)
    hyps = [hyps[i] for i in inv]
    lps = [lps[i] for i in inv]
    refs = [refs[i] for i in inv]
    losses = [losses[i] for i in inv]
    n_labels = sum(len(r) for r in refs)
    errors = [edit_distance(h, r) for h, r in zip(hyps, refs)]
    return EvalResult(phoneme_error_rate(hyps, refs), sum(losses) / n_labels, lps, hyps, errors,
                      [len(r) for r in refs], losses)
