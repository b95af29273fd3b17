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
import functools
import math
import time

import torch

from ..constraints import Choice, Instance, Int, Optional, Real, validate
from ..nn.parallel import DISTRIBUTED, data_parallel
from .baselines import DenseKVCache
from .cache import DynamicKVCache
from .dynamics import DASAConfig, region_mask, token_dynamics
from .model import SCHEDULE, ARVideoDiT, DiTBlock, _tokens, patchify

_MODEL = Instance(ARVideoDiT, "ARVideoDiT")
_POSITIVE = Real(low=0.0, closed="neither")
#: FSDP2 units of the DASA network under ``distributed="fsdp"``: each transformer block, then the root
FSDP_UNITS = (DiTBlock,)
#: the teacher fit's units: its loss runs the network's layers without ``ARVideoDiT.forward`` (the block-causal
#: clean/noisy stream), and FSDP2 gathers a unit's weights only in that unit's forward, so every layer that holds
#: weights (the linear maps, the time MLP, the blocks) is its own unit and the root holds none
TEACHER_FSDP_UNITS = (DiTBlock, torch.nn.Sequential, torch.nn.Linear)


def _teacher_forcing(model: ARVideoDiT, clip: torch.Tensor, level: torch.Tensor, eps: torch.Tensor,
                     u: torch.Tensor, eps_clean: torch.Tensor) -> torch.Tensor:
    return model.teacher_forcing_loss_given(clip, level, eps, u, eps_clean)


@validate(model=_MODEL, steps=Int(low=1), batch=Int(low=1), lr=_POSITIVE, max_seconds=Optional(_POSITIVE),
          distributed=Choice(*DISTRIBUTED))
def train_teacher(model: ARVideoDiT, clips: torch.Tensor, *, steps: int, batch: int = 8, lr: float = 2e-3,
                  seed: int = 0, max_seconds: float | None = None, distributed: str = "auto") -> list[float]:
    """AdamW (warm-up 20 steps, cosine), grad clip 1, teacher forcing on ``clips [N, T, 3, S, S]``; stops at
    ``steps`` or after ``max_seconds`` of this process's CPU time. Under :class:`neurips26.nn.train.TrainingGuard`:
    a non-finite loss raises :class:`~neurips26.nn.train.NonFiniteLossError` with the weights and the train/eval
    modes restored. Returns the loss per step (the model is left in eval mode).

    ``distributed``: one of :data:`neurips26.nn.parallel.DISTRIBUTED` (:func:`~neurips26.nn.parallel.data_parallel`).
    Under ``torchrun`` every rank draws the same global batch of ``batch`` clips *and its noise* (levels and
    Gaussian draws of :meth:`ARVideoDiT.teacher_forcing_noise`, from the seeded generator) and trains on rows
    ``rank::world`` of both, so the gradients equal one process's on the whole batch (``batch`` must divide by the
    world size); the losses returned are the means over the ranks, and ``max_seconds`` stops every rank together
    when any has run out. In one process the training is bit for bit what it was."""
    clips = model._check_frames("clips", clips, "train_teacher")
    if clips.shape[1] < 2 * model.config.chunk_frames:
        raise ValueError(f"clips must hold at least 2 chunks ({2 * model.config.chunk_frames} frames), "
                         f"got {clips.shape[1]}")
    g = torch.Generator().manual_seed(seed)
    dp = data_parallel(model, _teacher_forcing, distributed=distributed, fsdp_units=TEACHER_FSDP_UNITS)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    losses, t0 = [], time.process_time()
    # all or nothing: a non-finite loss or an interrupt puts the weights and the modes back
    with dp.guard(model, opt, where="train_teacher", what="the teacher-forcing loss") as guard:
        model.train()
        for step in range(steps):
            idx = torch.randint(len(clips), (batch,), generator=g)
            clip = clips[idx]
            noise = model.teacher_forcing_noise(batch, clip.shape[1], generator=g)   # the global batch's draws
            loss = dp(*dp.shard(clip, *noise))
            guard.check_loss(loss, step=step)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(dp.mean(loss.item()))
            stop = max_seconds is not None and time.process_time() - t0 > max_seconds
            if dp.world_size > 1:                     # every rank stops at the same step, or none does
                stop = dp.mean(float(stop)) > 0
            if stop:
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


@validate(student=_MODEL, teacher=_MODEL, cfg=Instance(DASAConfig), steps=Int(low=1), lr=_POSITIVE,
          weight_lambda=Real(low=0.0), batch=Int(low=1), warmup_fraction=Real(low=0.0, high=1.0, closed="left"),
          clip_norm=_POSITIVE, distributed=Choice(*DISTRIBUTED))
def dynamics_guided_distill(student: ARVideoDiT, teacher: ARVideoDiT, contexts: torch.Tensor, cfg: DASAConfig,
                            steps: int = 300, lr: float = 5e-5, weight_lambda: float = 1.0, *,
                            num_frames: int = 8, seed: int = 0, warmup_fraction: float = 0.1,
                            clip_norm: float = 1.0, batch: int = 1, distributed: str = "auto") -> dict:
    """Distil the dense ``teacher`` into the DASA ``student`` (trained in place) on teacher rollouts from
    ``contexts [N, chunk_frames, 3, S, S]``; ``weight_lambda = 0`` gives the uniform MSE.

    Schedule: AdamW (no weight decay: the student starts at the teacher's weights), linear warm-up over
    ``warmup_fraction`` of the steps then cosine decay to 0, gradient norm clipped at ``clip_norm``. A
    fine-tune of a converged model: a small peak lr (default 5e-5) and a decay to zero keep the student from
    drifting away from the teacher where the loss is already near zero. Under
    :class:`neurips26.nn.train.TrainingGuard`: a non-finite loss raises and restores the weights and modes.

    Each step draws ``batch`` rollouts (default 1), one chunk index shared by them, and per rollout a noise level
    and its Gaussian noise; the weights $\\hat s$ are normalised per rollout; the loss is the mean over rollouts.
    ``distributed``: as :func:`train_teacher` (:func:`~neurips26.nn.parallel.data_parallel`): every rank draws
    the same global batch with its levels and noise and trains on rows ``rank::world`` (``batch`` must divide by
    the world size); the teacher, frozen, runs whole on every rank. In one process (``batch=1``) the training
    is bit for bit what it was.

    Returns ``{"losses": [...], "steps": int}``.
    """
    if student.config != teacher.config:
        raise ValueError("student and teacher must share one VideoDiTConfig (the student is a copy of the teacher)")
    c = teacher.config
    contexts = teacher._check_frames("contexts", contexts, "dynamics_guided_distill")
    if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 2 * c.chunk_frames \
            or num_frames % c.chunk_frames:
        raise ValueError(f"num_frames must be a multiple of {c.chunk_frames} >= {2 * c.chunk_frames}, got "
                         f"{num_frames!r}")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        rollouts = teacher.generate(contexts, num_frames, generator=torch.Generator().manual_seed(seed))
    t_cache, s_cache = DenseKVCache(c.depth), DynamicKVCache(c.depth, cfg)
    loss_fn = functools.partial(_distill_loss, teacher=teacher, cfg=cfg, weight_lambda=weight_lambda,
                                t_cache=t_cache, s_cache=s_cache)
    dp = data_parallel(student, loss_fn, distributed=distributed, fsdp_units=FSDP_UNITS)
    opt = torch.optim.AdamW(student.parameters(), lr=lr, weight_decay=0.0)
    warm = max(1, round(warmup_fraction * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(k, steps) / steps)))
    losses = []
    n_chunks = rollouts.shape[1] // c.chunk_frames
    with dp.guard(student, opt, where="dynamics_guided_distill", what="the distillation loss") as guard:
        student.train()
        for step in range(steps):
            idx = torch.randint(len(rollouts), (batch,), generator=g)
            ci = int(torch.randint(1, n_chunks, (1,), generator=g))
            level = torch.randint(len(SCHEDULE), (batch,), generator=g)
            noise = torch.randn((batch, c.chunk_frames, 3, c.frame_size, c.frame_size), generator=g)
            video, level, noise = dp.shard(rollouts[idx], level, noise)      # this rank's rows of the draws
            loss = dp(video, ci, level, noise)
            guard.check_loss(loss, step=step)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(student.parameters(), clip_norm)
            opt.step()
            sched.step()
            losses.append(dp.mean(loss.item()))
    student.eval()
    return {"losses": losses, "steps": steps}


def _distill_loss(student: ARVideoDiT, video: torch.Tensor, ci: int, level: torch.Tensor, noise: torch.Tensor, *,
                  teacher: ARVideoDiT, cfg: DASAConfig, weight_lambda: float, t_cache, s_cache) -> torch.Tensor:
    """The weighted x̂₀ distillation loss of rollouts ``video [b, T, 3, S, S]`` at chunk ``ci``, noise level index
    ``level [b]`` and noise ``noise [b, chunk_frames, 3, S, S]``: a mean over the rollouts (rows)."""
    c = teacher.config
    b = video.shape[0]
    t = torch.tensor(SCHEDULE)[level]                                     # [b] noise levels
    tv = t.view(b, 1, 1, 1, 1)
    x0 = video[:, ci * c.chunk_frames:(ci + 1) * c.chunk_frames]
    xt = (1 - tv) * x0 + tv * noise
    prev = patchify(video[:, ci * c.chunk_frames - 2:ci * c.chunk_frames], c.patch).view(
        b, 2, c.tokens_per_frame, -1)
    rmask = region_mask(token_dynamics(prev[:, 0], prev[:, 1], cfg.score), (c.grid, c.grid), cfg)
    with torch.no_grad():
        _prefill(teacher, video, ci, t_cache, cfg)
        last = video[:, ci * c.chunk_frames - 1]              # the copy prior's base (if the model has it)
        target = teacher(xt, t, t_cache, ci * c.chunk_frames, prev_frame=last)
        _prefill(student, video, ci, s_cache, cfg)
    pred = student(xt, t, s_cache, ci * c.chunk_frames, "dasa", region=rmask, cfg=cfg, prev_frame=last)
    # w_i = 1 + λ ŝ_i, ŝ the chunk's token dynamics vs the previous frame, normalised to mean 1 per rollout
    cur = patchify(x0, c.patch).view(b, c.chunk_frames, c.tokens_per_frame, -1)
    before = torch.cat([prev[:, 1:], cur[:, :-1]], dim=1)
    s = token_dynamics(before.flatten(1, 2), cur.flatten(1, 2), "latent_l2")
    w = 1 + weight_lambda * s / s.mean(dim=1, keepdim=True).clamp_min(1e-6)
    err = (_tokens(pred, c.patch) - _tokens(target, c.patch)).pow(2).mean(-1)   # unchecked: NaN -> guard
    return (w * err).mean()


def copy_model(model: ARVideoDiT) -> ARVideoDiT:
    """A deep copy (the student's initialisation)."""
    return copy.deepcopy(model)
