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
group) every rank draws the same global batch and keeps its contiguous share; DDP averages the gradients, so with
equal shares the update equals the single-process update on the whole batch.
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

from neurips26.nn.train import TrainingGuard

from ._checks import check_int
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
        """Rows ``[rank·s, (rank+1)·s)`` with ``s = B // world`` (the batch must hold one row per rank)."""
        if isinstance(world, bool) or not isinstance(world, int) or not 1 <= world <= len(self.index):
            raise ValueError(f"world must be an integer in [1, {len(self.index)}] (the batch size), got {world!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world:
            raise ValueError(f"rank must be an integer in [0, {world - 1}], got {rank!r}")
        size = len(self.index) // world
        sl = slice(rank * size, (rank + 1) * size)
        return SubpathBatch(self.index[sl], self.first[sl], self.last[sl], self.remaining[sl], self.target[sl],
                            self.t)


class SubpathSampler:
    """Random sub-path samples from ``X`` ``[N, n, 2]`` and reference ``tours`` ``[N, n]`` (seeded)."""

    def __init__(self, X: Any, tours: Any, seed: int = 0) -> None:
        X = as_instances(X)
        tours = check_tours(tours, X.shape[0], X.shape[1])
        check_int("seed", seed, 0)
        self.X, self.tours = X, tours
        self.rng = np.random.default_rng(seed)

    @property
    def n_nodes(self) -> int:
        return self.X.shape[1]

    def sample(self, batch_size: int) -> SubpathBatch:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
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


def _check_positive(name: str, value: Any, kind: type = int) -> None:
    ok = (isinstance(value, (int, np.integer)) if kind is int else isinstance(value, (int, float)))
    if isinstance(value, bool) or not ok or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive {kind.__name__}, got {value!r}")


def _check_policy(model: Any) -> None:
    if not isinstance(model, torch.nn.Module) or not (hasattr(model, "encode") and hasattr(model, "score")):
        raise TypeError(f"model must be a routing policy (an nn.Module with encode() and score()), got "
                        f"{type(model).__name__}")
    if next(model.parameters(), None) is None:
        raise ValueError("model has no parameters")


def train_supervised(model: torch.nn.Module, X: Any, tours: Any, *, steps: int, batch_size: int, lr: float,
                     seed: int = 0, warmup_steps: int | None = None, grad_clip: float = 1.0,
                     progress: Callable[[Iterable[int]], Iterator[int]] | None = None,
                     alpha_lr_mult: float = 30.0, eval_fn: Callable[[], float] | None = None,
                     eval_every: int = 0) -> TrainResult:
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
    Returns:
        :class:`TrainResult` (losses are the global batch mean under DDP).
    """
    _check_policy(model)
    _check_positive("steps", steps)
    _check_positive("batch_size", batch_size)
    _check_positive("lr", lr, float)
    _check_positive("grad_clip", grad_clip, float)
    if warmup_steps is not None:
        check_int("warmup_steps", warmup_steps, 0)
    _check_positive("alpha_lr_mult", alpha_lr_mult, float)
    check_int("eval_every", eval_every, 0)
    if eval_fn is not None and not callable(eval_fn):
        raise TypeError(f"eval_fn must be callable or None, got {type(eval_fn).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable (a tqdm-like wrapper) or None, got {type(progress).__name__}")
    sampler = SubpathSampler(X, tours, seed=seed)
    if sampler.n_nodes < 3:
        raise ValueError(f"X needs n >= 3 cities, got {sampler.n_nodes}")
    warmup = max(1, min(100, steps // 10)) if warmup_steps is None else int(warmup_steps)
    dist = torch.distributed
    ddp = dist.is_available() and dist.is_initialized()
    world, rank = (dist.get_world_size(), dist.get_rank()) if ddp else (1, 0)
    if batch_size % world:
        raise ValueError(f"batch_size must be divisible by the world size {world}, got {batch_size}")
    p0 = next(model.parameters())
    dtype, device = p0.dtype, p0.device
    Xt = torch.as_tensor(sampler.X, dtype=dtype, device=device)
    # a run that fails midway (a non-finite loss, an interrupt) puts the weights and the modes back
    with TrainingGuard(model, where="train_supervised", hint="lower lr or check X") as guard:
        return _train_loop(model, sampler, Xt, steps, batch_size, lr, warmup, grad_clip, progress, ddp, world, rank,
                           device, guard, float(alpha_lr_mult), eval_fn if eval_every else None, int(eval_every))


def _train_loop(model: torch.nn.Module, sampler: SubpathSampler, Xt: torch.Tensor, steps: int, batch_size: int,
                lr: float, warmup: int, grad_clip: float, progress: Any, ddp: bool, world: int, rank: int,
                device: torch.device, guard: TrainingGuard, alpha_lr_mult: float = 1.0,
                eval_fn: Callable[[], float] | None = None, eval_every: int = 0) -> TrainResult:
    dist = torch.distributed
    net = torch.nn.parallel.DistributedDataParallel(model) if ddp else model
    named = list(model.named_parameters())
    alphas = [p for k, p in named if "alpha_" in k.rsplit(".", 1)[-1]]
    rest = [p for k, p in named if "alpha_" not in k.rsplit(".", 1)[-1]]
    groups = [{"params": rest, "mult": 1.0}] + ([{"params": alphas, "mult": alpha_lr_mult}] if alphas else [])
    opt = torch.optim.Adam(groups, lr=lr)
    model.train()
    result = TrainResult(world_size=world)
    t0 = time.perf_counter()
    loop: Iterable[int] = range(steps)
    if progress is not None:
        loop = progress(loop)
    for step in loop:
        cur = _lr_at(step, steps, lr, warmup)
        for group in opt.param_groups:
            group["lr"] = cur * group["mult"]
        batch = sampler.sample(batch_size).shard(rank, world)
        to = lambda t: t.to(device)  # noqa: E731
        logits = net(Xt[to(batch.index)], to(batch.first), to(batch.last), to(batch.remaining))  # [B, m]
        loss = F.cross_entropy(_upcast(logits), to(batch.target))
        value = loss.detach().clone()  # reduced in place below; the graph's own tensor stays as it is
        if ddp:
            dist.all_reduce(value)
            value = value / world
        guard.check_loss(value, step=step)  # every rank sees the same reduced value, so all stop together
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        result.losses.append(float(value))
        result.lrs.append(cur)
        result.samples += batch_size
        if eval_fn is not None and ((step + 1) % eval_every == 0 or step + 1 == steps):
            result.evals.append(float(eval_fn()))
            result.eval_steps.append(step + 1)
            model.train()
    result.seconds = time.perf_counter() - t0
    return result


@torch.no_grad()
def subpath_loss(model: torch.nn.Module, X: Any, tours: Any, *, n_batches: int = 4, batch_size: int = 256,
                 seed: int = 12345) -> float:
    """Mean sub-path cross-entropy of ``model`` on ``n_batches`` fixed (seeded) batches: an evaluation loss.

    The same ``seed`` gives the same samples, so values before and after training are comparable.
    """
    _check_policy(model)
    check_int("n_batches", n_batches, 1)
    _check_positive("batch_size", batch_size)
    sampler = SubpathSampler(X, tours, seed=seed)
    p0 = next(model.parameters())
    Xt = torch.as_tensor(sampler.X, dtype=p0.dtype, device=p0.device)
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        for _ in range(n_batches):
            b = sampler.sample(batch_size)
            dev = p0.device
            logits = model(Xt[b.index.to(dev)], b.first.to(dev), b.last.to(dev), b.remaining.to(dev))
            total += float(F.cross_entropy(_upcast(logits), b.target.to(dev)))
    finally:
        model.train(was_training)
    return total / n_batches
