r"""Supervised imitation of reference tours with random sub-path sampling (LEHD's recipe, inferred).

A sample is (instance, reference tour $\pi$, step $t$): rotate $\pi$ by a random offset and reverse it
with probability 1/2 (both give the same closed tour, so the model cannot learn the label's order),
call the first $t$ nodes visited, and train the cross-entropy of the true next node,

$$\ell = -\log p_\theta(\pi_{t+1} \mid x, \pi_1, \pi_t, R_t), \qquad R_t = \{\pi_{t+1}, \dots, \pi_n\}.$$

All samples of a batch share $t \in [1, n-2]$ (uniform; at least two choices remain), so the batch is a
dense tensor. The ReZero scalars $\alpha$ get their own Adam group at ``alpha_lr_mult`` x the learning rate
(Adam moves a parameter by about its rate per step, so at one shared rate of $10^{-3}$ an $\alpha$ that
starts at 0 is still $\approx 0.1$ after 300 steps and every block stays damped; ``alpha_lr_mult=1`` is that
old set-up, kept as an ablation). ``train_supervised`` runs Adam with a linear warm-up and a cosine decay to
10% (our choice; LEHD: Adam 1e-4, x0.97 per epoch). Under ``torchrun`` (an initialised ``torch.distributed``
group) it runs on :func:`neurips26.nn.parallel.data_parallel` (``distributed="auto"``: DDP; ``"fsdp"``: FSDP2):
every rank draws the same global batch (same seed) and keeps rows ``rank::world``; the loss is a mean over rows
and the gradients are averaged, so the update equals the single-process update on the whole batch (to float
round-off); in one process the loop is the plain one, bit for bit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from neurips26.nn.parallel import DISTRIBUTED, DataParallel, data_parallel, world

from ..constraints import Callable as CallableC
from ..constraints import Choice, Int, Optional, Real, check_arguments, validate
from ._checks import Policy
from .baselines import _EncoderLayer
from .model import DecoderBlock
from .tsp import as_instances, check_tours

__all__ = ["SubpathBatch", "SubpathSampler", "TrainResult", "subpath_loss", "train_supervised"]


@dataclass
class SubpathBatch:
    """One training batch: instance ids ``[B]``, ``first``/``last`` ``[B]``, ``remaining`` ``[B, m]``
    (increasing node order), ``target`` ``[B]`` (position of the true next node in ``remaining``), ``t``."""

    index: torch.Tensor
    first: torch.Tensor
    last: torch.Tensor
    remaining: torch.Tensor
    target: torch.Tensor
    t: int

    def shard(self, rank: int, world: int) -> SubpathBatch:
        """Rows ``[rank·s, (rank+1)·s)`` with ``s = B // world`` (the batch must hold one row per rank).
        (:func:`train_supervised` shards by :meth:`DataParallel.shard`'s rows ``rank::world`` instead.)"""
        check_arguments("SubpathBatch.shard", {"world": Int(1, len(self.index))}, {"world": world})
        check_arguments("SubpathBatch.shard", {"rank": Int(0, int(world) - 1)}, {"rank": rank})
        rank, world = int(rank), int(world)
        size = len(self.index) // world
        sl = slice(rank * size, (rank + 1) * size)
        return SubpathBatch(self.index[sl], self.first[sl], self.last[sl], self.remaining[sl], self.target[sl],
                            self.t)


class SubpathSampler:
    """Random sub-path samples from ``X`` ``[N, n, 2]`` and reference ``tours`` ``[N, n]`` (seeded)."""

    @validate(seed=Int(low=0))
    def __init__(self, X: Any, tours: Any, seed: int = 0) -> None:
        X = as_instances(X)
        tours = check_tours(tours, X.shape[0], X.shape[1])
        self.X, self.tours = X, tours
        self.rng = np.random.default_rng(int(seed))

    @property
    def n_nodes(self) -> int:
        return self.X.shape[1]

    @validate(batch_size=Int(low=1))
    def sample(self, batch_size: int) -> SubpathBatch:
        batch_size = int(batch_size)
        N, n = self.tours.shape
        rng = self.rng
        idx = rng.integers(0, N, batch_size)
        t = int(rng.integers(1, n - 1))  # visited nodes; n - t >= 2 remain
        offset = rng.integers(0, n, batch_size)
        flip = rng.random(batch_size) < 0.5
        pi = self.tours[idx]
        pi = np.where(flip[:, None], pi[:, ::-1], pi)
        # rotation: pi'_k = pi_{(k + offset) mod n}
        pi = np.take_along_axis(pi, (np.arange(n)[None] + offset[:, None]) % n, axis=1)
        remaining = np.sort(pi[:, t:], axis=1)
        target = (remaining < pi[:, t:t + 1]).sum(axis=1)  # rank of pi_t among the remaining nodes
        as_t = torch.from_numpy
        return SubpathBatch(as_t(idx.astype(np.int64)), as_t(pi[:, 0].copy()), as_t(pi[:, t - 1].copy()),
                            as_t(remaining.copy()), as_t(target.astype(np.int64)), t)


@dataclass
class TrainResult:
    """Per-step losses, samples seen (global), wall seconds and the learning rates used."""

    losses: list[float] = field(default_factory=list)
    samples: int = 0
    seconds: float = 0.0
    lrs: list[float] = field(default_factory=list)
    world_size: int = 1
    evals: list[float] = field(default_factory=list)  # eval_fn() every eval_every steps and at the end
    eval_steps: list[int] = field(default_factory=list)


def _upcast(logits: torch.Tensor) -> torch.Tensor:
    """Cross-entropy in at least float32 (bf16/fp16 logits are upcast; float64 stays float64)."""
    return logits if logits.dtype in (torch.float32, torch.float64) else logits.float()


def _lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    if step < warmup:
        return lr * (step + 1) / warmup
    # cosine from lr down to 0.1 lr over the remaining steps
    frac = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def _subpath_ce(model: torch.nn.Module, X: torch.Tensor, first: torch.Tensor, last: torch.Tensor,
                remaining: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The sub-path cross-entropy of a batch, a mean over its rows (what DDP averages across ranks)."""
    return F.cross_entropy(_upcast(model(X, first, last, remaining)), target)  # logits [B, m]


_POSITIVE = Real(low=0.0, closed="neither")


@validate(model=Policy(trainable=True), steps=Int(low=1), batch_size=Int(low=1), lr=_POSITIVE, seed=Int(low=0),
          warmup_steps=Optional(Int(low=0)), grad_clip=_POSITIVE, progress=Optional(CallableC()),
          alpha_lr_mult=_POSITIVE, eval_fn=Optional(CallableC()), eval_every=Int(low=0),
          distributed=Choice(*DISTRIBUTED))
def train_supervised(model: torch.nn.Module, X: Any, tours: Any, *, steps: int, batch_size: int, lr: float,
                     seed: int = 0, warmup_steps: int | None = None, grad_clip: float = 1.0,
                     progress: Callable[[Iterable[int]], Iterator[int]] | None = None,
                     alpha_lr_mult: float = 30.0, eval_fn: Callable[[], float] | None = None,
                     eval_every: int = 0, distributed: str = "auto") -> TrainResult:
    """Train ``model`` in place to imitate ``tours`` on ``X`` by sub-path cross-entropy.

    Args:
        model: a policy with ``encode``/``score`` (:class:`TSPDecoderOnly`, :class:`POMOLightDecoder`).
        X: instances ``[N, n, 2]``; tours: reference tours ``[N, n]`` (permutations).
        steps: optimiser steps; batch_size: global samples per step (divisible by the world size under DDP).
        lr: peak Adam learning rate; warm-up ``warmup_steps`` (default ``min(100, steps // 10)``, >= 1).
        seed: fixes the data order (same seed, same batches for every model).
        grad_clip: max global gradient norm.
        progress: optional wrapper for the step loop (e.g. ``ctx.progress``-like tqdm).
        alpha_lr_mult: the ReZero scalars' (parameters named ``*alpha_*``) learning rate as a multiple of
            ``lr`` (same schedule); 1 is one shared rate (the earlier, damped set-up).
        eval_fn, eval_every: when both are given, ``eval_fn()`` (e.g. a validation loss) is recorded in
            ``result.evals`` every ``eval_every`` steps and after the last step (for convergence checks).
        distributed: ``"auto"`` (DDP when ``torchrun`` started more than one process, else one process),
            ``"off"``, ``"ddp"`` or ``"fsdp"`` (FSDP2: parameters, gradients and Adam's moments sharded across
            the ranks, one unit per block and the root; gather the trained weights with
            :func:`neurips26.nn.train.full_state_dict`; FSDP2 refuses 0-d parameters, so not for a model with
            ReZero scalars: use ``"ddp"`` there, or ``rezero=False``); the last two require torchrun
            (:func:`neurips26.nn.parallel.data_parallel`).
    Returns:
        :class:`TrainResult` (losses are the global batch mean under DDP; evaluation runs on every rank).
    """
    sampler = SubpathSampler(X, tours, seed=seed)
    steps, batch_size = int(steps), int(batch_size)
    warmup = max(1, min(100, steps // 10)) if warmup_steps is None else int(warmup_steps)
    _, size = world(distributed, where="train_supervised")  # ddp/fsdp without torchrun: refused here
    if batch_size % size:
        raise ValueError(f"train_supervised: batch_size must be divisible by the world size {size}, got {batch_size}")
    p0 = next(model.parameters())
    dtype, device = p0.dtype, p0.device
    # FSDP units: each block (decoder or POMO encoder layer), then the root; data_parallel before the optimiser
    dp = data_parallel(model, _subpath_ce, distributed=distributed, fsdp_units=(DecoderBlock, _EncoderLayer))
    Xt = torch.as_tensor(sampler.X, dtype=dtype, device=device)
    named = list(model.named_parameters())
    alphas = [p for k, p in named if "alpha_" in k.rsplit(".", 1)[-1]]
    rest = [p for k, p in named if "alpha_" not in k.rsplit(".", 1)[-1]]
    groups = [{"params": rest, "mult": 1.0}] + ([{"params": alphas, "mult": float(alpha_lr_mult)}] if alphas else [])
    opt = torch.optim.Adam(groups, lr=lr)
    # a run that fails midway (a non-finite loss, an interrupt) puts the weights, the optimiser and the modes back
    with dp.guard(model, opt, where="train_supervised", hint="lower lr or check X") as guard:
        return _train_loop(dp, opt, sampler, Xt, steps, batch_size, lr, warmup, grad_clip, progress, device, guard,
                           eval_fn if eval_every else None, int(eval_every))


def _train_loop(dp: DataParallel, opt: torch.optim.Optimizer, sampler: SubpathSampler, Xt: torch.Tensor,
                steps: int, batch_size: int, lr: float, warmup: int, grad_clip: float, progress: Any,
                device: torch.device, guard: Any, eval_fn: Callable[[], float] | None = None,
                eval_every: int = 0) -> TrainResult:
    model = dp.model
    model.train()
    result = TrainResult(world_size=dp.world_size)
    t0 = time.perf_counter()
    loop: Iterable[int] = range(steps)
    if progress is not None:
        loop = progress(loop)
    for step in loop:
        cur = _lr_at(step, steps, lr, warmup)
        for group in opt.param_groups:
            group["lr"] = cur * group["mult"]
        b = sampler.sample(batch_size)  # the same global batch on every rank; this rank keeps rows rank::world
        index, first, last, remaining, target = (t.to(device) for t in dp.shard(b.index, b.first, b.last,
                                                                                   b.remaining, b.target))
        loss = dp(Xt[index], first, last, remaining, target)
        guard.check_loss(loss, step=step)  # collective under DDP: every rank stops together
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        result.losses.append(dp.mean(float(loss.detach())))
        result.lrs.append(cur)
        result.samples += batch_size
        if eval_fn is not None and ((step + 1) % eval_every == 0 or step + 1 == steps):
            result.evals.append(float(eval_fn()))
            result.eval_steps.append(step + 1)
            model.train()
    result.seconds = time.perf_counter() - t0
    return result


@torch.no_grad()
@validate(model=Policy(trainable=True), n_batches=Int(low=1), batch_size=Int(low=1), seed=Int(low=0))
def subpath_loss(model: torch.nn.Module, X: Any, tours: Any, *, n_batches: int = 4, batch_size: int = 256,
                 seed: int = 12345) -> float:
    """Mean sub-path cross-entropy of ``model`` on ``n_batches`` fixed (seeded) batches: an evaluation loss.

    The same ``seed`` gives the same samples, so values before and after training are comparable.
    """
    sampler = SubpathSampler(X, tours, seed=seed)
    p0 = next(model.parameters())
    Xt = torch.as_tensor(sampler.X, dtype=p0.dtype, device=p0.device)
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        for _ in range(int(n_batches)):
            b = sampler.sample(batch_size)
            dev = p0.device
            logits = model(Xt[b.index.to(dev)], b.first.to(dev), b.last.to(dev), b.remaining.to(dev))
            total += float(F.cross_entropy(_upcast(logits), b.target.to(dev)))
    finally:
        model.train(was_training)
    return total / n_batches
