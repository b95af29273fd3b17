r"""Training of the dense teacher and DASA's dynamics-guided distillation (D; the loss is inferred).

Student: the DASA network (initialised from the teacher); teacher: the frozen dense model; data: teacher
rollouts (data-free, as in Self-Forcing). For a rollout, both build their cache from the teacher's frames
(student: DASA cache and region masks; teacher: dense), then at a random chunk and noise level

$$\mathcal L = \frac{1}{N}\sum_i w_i \lVert \hat x_0^{s}[i] - \hat x_0^{t}[i] \rVert^2, \qquad
w_i = 1 + \lambda\,\hat s_i,$$

with $\hat s$ the chunk's dynamics score normalised to mean 1 over its tokens; $\lambda = 0$ is the uniform MSE.
"""

from __future__ import annotations

import copy
import math
import time

import torch

from .._checks import check_int
from ..nn.train import TrainingGuard
from .baselines import DenseKVCache
from .cache import DynamicKVCache
from .dynamics import DASAConfig, region_mask, token_dynamics
from .model import ARVideoDiT, _tokens, patchify


def _positive(name: str, value: object, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or (value < 0 if allow_zero else value <= 0):
        raise ValueError(f"{name} must be a finite number {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return float(value)


def train_teacher(model: ARVideoDiT, clips: torch.Tensor, *, steps: int, batch: int = 8, lr: float = 2e-3,
                  seed: int = 0, max_seconds: float | None = None) -> list[float]:
    """AdamW (warm-up 20 steps, cosine), grad clip 1, teacher forcing on ``clips [N, T, 3, S, S]``; stops at
    ``steps`` or after ``max_seconds`` of this process's CPU time. Under :class:`neurips26.nn.train.TrainingGuard`:
    a non-finite loss raises :class:`~neurips26.nn.train.NonFiniteLossError` with the weights and the train/eval
    modes restored. Returns the loss per step (the model is left in eval mode)."""
    if not isinstance(model, ARVideoDiT):
        raise TypeError(f"model must be an ARVideoDiT, got {type(model).__name__}")
    clips = model._check_frames("clips", clips)
    check_int("steps", steps)
    check_int("batch", batch)
    _positive("lr", lr)
    if max_seconds is not None:
        _positive("max_seconds", max_seconds)
    if clips.shape[1] < 2 * model.config.chunk_frames:
        raise ValueError(f"clips must hold at least 2 chunks ({2 * model.config.chunk_frames} frames), "
                         f"got {clips.shape[1]}")
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    losses, t0 = [], time.process_time()
    # all or nothing: a non-finite loss or an interrupt puts the weights and the modes back
    with TrainingGuard(model, where="train_teacher", what="the teacher-forcing loss") as guard:
        model.train()
        for step in range(steps):
            idx = torch.randint(len(clips), (batch,), generator=g)
            loss = model.teacher_forcing_loss(clips[idx], generator=g)
            guard.check_loss(loss, step=step)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
            if max_seconds is not None and time.process_time() - t0 > max_seconds:
                break
    model.eval()
    return losses


def _prefill(model: ARVideoDiT, frames: torch.Tensor, chunks: int, cache, cfg: DASAConfig) -> None:
    """Write the first ``chunks`` chunks of ``frames`` into ``cache`` as :meth:`ARVideoDiT.generate` would."""
    c = model.config
    cache.reset()
    for ci in range(chunks):
        x = frames[:, ci * c.chunk_frames:(ci + 1) * c.chunk_frames]
        if ci == 0:
            write = {"dyn_mask": None, "keyframe": True}
        else:
            prev = patchify(frames[:, ci * c.chunk_frames - 1:ci * c.chunk_frames], c.patch)[:, :]
            write = {"dyn_mask": model._dyn_mask(x, prev, cfg), "keyframe": ci % cfg.keyframe_every == 0}
        model(x, 0.0, cache, ci * c.chunk_frames, write=write)


def dynamics_guided_distill(student: ARVideoDiT, teacher: ARVideoDiT, contexts: torch.Tensor, cfg: DASAConfig,
                            steps: int = 300, lr: float = 5e-5, weight_lambda: float = 1.0, *,
                            num_frames: int = 8, seed: int = 0, warmup_fraction: float = 0.1,
                            clip_norm: float = 1.0) -> dict:
    """Distil the dense ``teacher`` into the DASA ``student`` (trained in place) on teacher rollouts from
    ``contexts [N, chunk_frames, 3, S, S]``; ``weight_lambda = 0`` gives the uniform MSE.

    Schedule: AdamW (no weight decay: the student starts at the teacher's weights), linear warm-up over
    ``warmup_fraction`` of the steps then cosine decay to 0, gradient norm clipped at ``clip_norm``. A
    fine-tune of a converged model: a small peak lr (default 5e-5) and a decay to zero keep the student from
    drifting away from the teacher where the loss is already near zero. Under
    :class:`neurips26.nn.train.TrainingGuard`: a non-finite loss raises and restores the weights and modes.

    Returns ``{"losses": [...], "steps": int}``.
    """
    for name, m in (("student", student), ("teacher", teacher)):
        if not isinstance(m, ARVideoDiT):
            raise TypeError(f"{name} must be an ARVideoDiT, got {type(m).__name__}")
    if student.config != teacher.config:
        raise ValueError("student and teacher must share one VideoDiTConfig (the student is a copy of the teacher)")
    if not isinstance(cfg, DASAConfig):
        raise TypeError(f"cfg must be a DASAConfig, got {type(cfg).__name__}")
    check_int("steps", steps)
    _positive("lr", lr)
    _positive("weight_lambda", weight_lambda, allow_zero=True)
    c = teacher.config
    contexts = teacher._check_frames("contexts", contexts)
    if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 2 * c.chunk_frames \
            or num_frames % c.chunk_frames:
        raise ValueError(f"num_frames must be a multiple of {c.chunk_frames} >= {2 * c.chunk_frames}, got "
                         f"{num_frames!r}")
    _positive("clip_norm", clip_norm)
    if isinstance(warmup_fraction, bool) or not isinstance(warmup_fraction, int | float) \
            or not 0 <= warmup_fraction < 1:
        raise ValueError(f"warmup_fraction must be a number in [0, 1), got {warmup_fraction!r}")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        rollouts = teacher.generate(contexts, num_frames, generator=torch.Generator().manual_seed(seed))
    opt = torch.optim.AdamW(student.parameters(), lr=lr, weight_decay=0.0)
    warm = max(1, round(warmup_fraction * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(k, steps) / steps)))
    t_cache, s_cache = DenseKVCache(c.depth), DynamicKVCache(c.depth, cfg)
    losses = []
    with TrainingGuard(student, opt, where="dynamics_guided_distill", what="the distillation loss") as guard:
        student.train()
        _distill_loop(student, teacher, rollouts, cfg, steps, weight_lambda, clip_norm, g, opt, sched, guard,
                      t_cache, s_cache, losses)
    student.eval()
    return {"losses": losses, "steps": steps}


def _distill_loop(student, teacher, rollouts, cfg, steps, weight_lambda, clip_norm, g, opt, sched, guard,
                  t_cache, s_cache, losses) -> None:
    c = teacher.config
    n_chunks = rollouts.shape[1] // c.chunk_frames
    for step in range(steps):
        i = int(torch.randint(len(rollouts), (1,), generator=g))
        ci = int(torch.randint(1, n_chunks, (1,), generator=g))
        t = (1.0, 0.75, 0.5, 0.25)[int(torch.randint(4, (1,), generator=g))]
        video = rollouts[i:i + 1]
        x0 = video[:, ci * c.chunk_frames:(ci + 1) * c.chunk_frames]
        xt = (1 - t) * x0 + t * torch.randn(x0.shape, generator=g)
        prev = patchify(video[:, ci * c.chunk_frames - 2:ci * c.chunk_frames], c.patch).view(
            1, 2, c.tokens_per_frame, -1)
        rmask = region_mask(token_dynamics(prev[:, 0], prev[:, 1], cfg.score), (c.grid, c.grid), cfg)
        with torch.no_grad():
            _prefill(teacher, video, ci, t_cache, cfg)
            last = video[:, ci * c.chunk_frames - 1]              # the copy prior's base (if the model has it)
            target = teacher(xt, t, t_cache, ci * c.chunk_frames, prev_frame=last)
            _prefill(student, video, ci, s_cache, cfg)
        pred = student(xt, t, s_cache, ci * c.chunk_frames, "dasa", region=rmask, cfg=cfg, prev_frame=last)
        # w_i = 1 + λ ŝ_i, ŝ the chunk's token dynamics vs the previous frame, normalised to mean 1
        cur = patchify(x0, c.patch).view(1, c.chunk_frames, c.tokens_per_frame, -1)
        before = torch.cat([prev[:, 1:], cur[:, :-1]], dim=1)
        s = token_dynamics(before.flatten(1, 2), cur.flatten(1, 2), "latent_l2")
        w = 1 + weight_lambda * s / s.mean().clamp_min(1e-6)
        err = (_tokens(pred, c.patch) - _tokens(target, c.patch)).pow(2).mean(-1)   # unchecked: NaN -> guard
        loss = (w * err).mean()
        guard.check_loss(loss, step=step)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), clip_norm)
        opt.step()
        sched.step()
        losses.append(loss.item())


def copy_model(model: ARVideoDiT) -> ARVideoDiT:
    """A deep copy (the student's initialisation)."""
    return copy.deepcopy(model)
