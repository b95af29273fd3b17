"""Training of the shared backbone (mixed-resolution sequences) and of the routers (frozen low-view features).

Both trainers run data-parallel under ``torchrun`` (:func:`neurips26.nn.parallel.data_parallel`, keyword
``distributed``) and are unchanged, bit for bit, in one process: every rank draws the same global batch (the same
generators, the same mixture mode, the same training regions) and keeps rows ``rank::world`` of it; the losses are
means over the batch's rows, so the averaged gradient is the one of the whole batch. The router trainer also runs
under FSDP2 (``distributed="fsdp"``: the router reaches its weights through its ``forward``); the backbone does not
(:func:`train_backbone` says why).

Backbone mixture per step (spec): 40 % full resolution, 20 % low resolution only, 40 % low resolution +
1–3 regions at full resolution: foreground regions of the target (oracle) plus random ones, and in a quarter
of the cases without the region holding the box centre (jittered), so the LM also learns to fall back on
the global tokens. One backbone then serves every method.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from neurips26.constraints import Choice, Instance, Int, Optional, Real, validate
from neurips26.constraints import Tensor as TensorC
from neurips26.nn.parallel import DISTRIBUTED, data_parallel

from .data import N_COLOURS, N_DIGITS, SyntheticEgoGrounding, region_labels
from .model import MiniGroundingMLLM
from .router import ResolutionRouter, bce_routing_loss, focal_routing_loss, margin_routing_loss

MIXTURE = (("full", 0.4), ("low", 0.2), ("regions", 0.4))


@dataclass
class ScenePool:
    """Scenes held in memory: ``images [N, 3, S, S]`` (uint8), ``boxes [N, 4]``, ``query [N, 2]``, ``small [N]``."""

    images: Tensor
    boxes: Tensor
    query: Tensor
    small: Tensor
    objects: Tensor | None = None     # [N, 6, 6] (x1, y1, x2, y2, digit, colour) per object, rows of -1 padding

    def __len__(self) -> int:
        return len(self.boxes)

    def batch(self, idx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return self.images[idx].float() / 255.0, self.query[idx], self.boxes[idx]


def make_pool(dataset: SyntheticEgoGrounding, progress: Callable[[Iterable, str], Iterable] | None = None,
              desc: str = "scenes") -> ScenePool:
    """Render every scene of ``dataset`` once."""
    it: Iterable = range(len(dataset))
    if progress is not None:
        it = progress(it, desc)
    imgs, boxes, qs, small, objs = [], [], [], [], []
    for i in it:
        s = dataset.scene(i)
        imgs.append((s.image * 255).round().to(torch.uint8))
        boxes.append(s.box)
        qs.append(s.query)
        small.append(s.small)
        pad = torch.full((6, 6), -1.0)
        pad[:len(s.objects)] = s.objects
        objs.append(pad)
    return ScenePool(torch.stack(imgs), torch.stack(boxes), torch.stack(qs), torch.tensor(small), torch.stack(objs))


def attribute_targets(pos: Tensor, objects: Tensor, footprint: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Per token, the digit and colour of the object under it (``N_DIGITS`` / ``N_COLOURS`` = none):
    ``pos [B, T, 2]``, ``objects [B, K, 6]`` → two ``[B, T]`` long tensors.

    A token is on an object when its centre lies inside the object's box, or (with ``footprint [B, T]``) when its
    footprint holds the object's centre, so that every object labels at least one token at every scale (a 6-px
    glyph can fall between the centres of 8-px tokens). The first such object wins."""
    x, y = pos[..., 0, None], pos[..., 1, None]                                       # [B, T, 1]
    o = objects[:, None]                                                              # [B, 1, K, 6]
    inside = (o[..., 4] >= 0) & (x >= o[..., 0]) & (x < o[..., 2]) & (y >= o[..., 1]) & (y < o[..., 3])  # [B, T, K]
    if footprint is not None:
        half = footprint[..., None] / 2
        cx, cy = (o[..., 0] + o[..., 2]) / 2, (o[..., 1] + o[..., 3]) / 2
        inside = inside | ((o[..., 4] >= 0) & ((cx - x).abs() <= half) & ((cy - y).abs() <= half))
    any_in = inside.any(-1)
    first = inside.float().argmax(-1)                                                 # the first holding object
    digit = objects[..., 4].gather(1, first).long().masked_fill(~any_in, N_DIGITS)
    colour = objects[..., 5].gather(1, first).long().masked_fill(~any_in, N_COLOURS)
    return digit, colour


def _training_regions(boxes: Tensor, model: MiniGroundingMLLM, gen: torch.Generator) -> list[Tensor]:
    c = model.config
    n_regions = c.region_grid[0] * c.region_grid[1]
    fg = region_labels(boxes, c.image_size, c.region_grid)
    centre = _centre_region(boxes, c.image_size, c.region_grid)
    out = []
    for i in range(len(boxes)):
        k = int(torch.randint(1, 4, (1,), generator=gen))
        fg_ids = fg[i].nonzero()[:, 0]
        fg_ids = fg_ids[torch.randperm(len(fg_ids), generator=gen)]
        jitter = float(torch.rand(1, generator=gen)) < 0.25
        chosen = [int(j) for j in fg_ids if not (jitter and int(j) == int(centre[i]))]
        if not jitter:   # the centre region first, then other foreground
            chosen = [int(centre[i])] + [j for j in chosen if j != int(centre[i])]
        chosen = chosen[:k]
        others = [j for j in torch.randperm(n_regions, generator=gen).tolist()
                  if j not in chosen and not (jitter and j == int(centre[i]))]
        chosen += others[:k - len(chosen)]
        out.append(torch.tensor(sorted(chosen), dtype=torch.long))
    return out


def _centre_region(boxes: Tensor, image_size: int, region_grid: tuple[int, int]) -> Tensor:
    gh, gw = region_grid
    cx = ((boxes[:, 0] + boxes[:, 2]) / 2 / (image_size / gw)).floor().clamp(0, gw - 1).long()
    cy = ((boxes[:, 1] + boxes[:, 3]) / 2 / (image_size / gh)).floor().clamp(0, gh - 1).long()
    return cy * gw + cx


def cosine_lr(step: int, steps: int, lr: float, warmup: int) -> float:
    if step < warmup:
        return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return lr * 0.5 * (1 + math.cos(math.pi * t))


@dataclass
class TrainLog:
    """Per-step losses and sequence kinds; ``curve`` holds ``(step, score)`` of the optional evaluations."""

    losses: list[float] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    curve: list[tuple[int, float]] = field(default_factory=list)


class _WithProbe(torch.nn.Module):
    """The backbone and the attribute probe as one module, so that DDP synchronises the probe's gradients too."""

    def __init__(self, model: MiniGroundingMLLM, probe: torch.nn.Linear) -> None:
        super().__init__()
        self.model, self.probe = model, probe


def _backbone_loss(net: torch.nn.Module, images: Tensor, query: Tensor, boxes: Tensor, mode: str,
                   regions: list[Tensor] | None, objects: Tensor | None, attribute_weight: float) -> Tensor:
    """One step's loss on (this rank's rows of) a batch: the grounding loss on the ``mode`` sequence, plus the
    weighted attribute loss when ``objects`` is given (``net``: the model, or a :class:`_WithProbe`)."""
    model = net.model if isinstance(net, _WithProbe) else net
    if mode == "full":
        seq = model.encode_full(images)
    elif mode == "low":
        seq = model.low_sequence(images)
    else:
        seq = model.sequence_from_regions(images, regions)
    loss = model.loss(seq, query, boxes)
    if objects is not None:
        loss = loss + attribute_weight * _attribute_loss(net.probe, seq, objects)
    return loss


@validate(model=Instance(MiniGroundingMLLM, "MiniGroundingMLLM"), pool=Instance(ScenePool, "ScenePool"),
          steps=Int(low=1), batch=Int(low=1), lr=Real(low=0.0, closed="neither"), seed=Int(low=0),
          eval_every=Optional(Int(low=1)), attribute_weight=Real(low=0.0),
          distributed=Choice(*(d for d in DISTRIBUTED if d != "fsdp")))
def train_backbone(model: MiniGroundingMLLM, pool: ScenePool, *, steps: int, batch: int = 32, lr: float = 2e-3,
                   seed: int = 0, progress: Callable[[Iterable, str], Iterable] | None = None,
                   evaluate: Callable[[MiniGroundingMLLM], float] | None = None,
                   eval_every: int | None = None, attribute_weight: float = 0.0,
                   distributed: str = "auto") -> TrainLog:
    r"""AdamW (weight decay 0.05), linear warmup (5 %) + cosine, grad clip 1, on the mixture :data:`MIXTURE`,
    inside :class:`neurips26.nn.train.TrainingGuard` (a non-finite loss raises and restores the weights).

    ``evaluate(model) -> score`` runs (in eval mode, no grad) every ``eval_every`` steps and after the last;
    the scores go to ``TrainLog.curve``.

    ``attribute_weight > 0`` adds a dense attribute loss on the ViT outputs (inferred; the stand-in for the
    visual pre-training a real MLLM's encoder has): a linear probe, trained alongside and then dropped,
    predicts from every visual token the digit and the colour of the object under it (or none),
    $\mathcal L = \mathcal L_{ground} + w\,[\mathrm{CE}(\text{digit}) + \mathrm{CE}(\text{colour})]$, each CE
    balanced between object and background tokens (:func:`_attribute_loss`).
    It needs ``pool.objects``.

    ``distributed`` (:data:`neurips26.nn.parallel.DISTRIBUTED`): under ``torchrun`` with more than one process
    (``"auto"`` or ``"ddp"``), DDP: each rank trains on rows ``rank::world`` of the same global batch of ``batch``
    rows (``batch`` must divide by the world size), ``TrainLog.losses`` holds the mean over ranks, ``progress`` runs
    on rank 0 only, and the weights equal those of one process with the whole batch (to float round-off). Equality
    needs a loss that is a mean over rows: the grounding loss is one (cross-entropy and the per-image box terms,
    averaged over images), the attribute loss (``attribute_weight > 0``) is not (its object / background means pool
    the tokens of the whole batch), so with it the ranks train on a close but not equal objective. ``"fsdp"`` is
    not offered: FSDP2 gathers a unit's weights in the unit's ``forward``, and the training loss reaches the ViT's
    patch and scale embeddings outside any ``forward`` (``ViT.embed``, :meth:`~.model.MiniGroundingMLLM.
    encode_regions`; the backbone has no ``forward`` of its own)."""
    if attribute_weight > 0 and pool.objects is None:
        raise ValueError("train_backbone: attribute_weight > 0 needs pool.objects (make_pool records them)")
    gen = torch.Generator().manual_seed(seed)
    probe = torch.nn.Linear(model.config.dim, N_DIGITS + 1 + N_COLOURS + 1)
    attributes = attribute_weight > 0
    dp = data_parallel(_WithProbe(model, probe) if attributes else model, _backbone_loss, distributed=distributed)
    params = list(model.parameters()) + (list(probe.parameters()) if attributes else [])
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.05)
    names, probs = zip(*MIXTURE)
    rng = np.random.default_rng(seed)
    log = TrainLog()
    it: Iterable = range(steps)
    if progress is not None and dp.is_main:
        it = progress(it, "backbone training")
    with dp.guard(model, opt, where="train_backbone", what="the grounding loss") as guard, torch.enable_grad():
        model.train()
        for step in it:
            for g in opt.param_groups:
                g["lr"] = cosine_lr(step, steps, lr, max(1, steps // 20))
            idx = torch.randint(len(pool), (batch,), generator=gen)
            images, query, boxes = pool.batch(idx)
            mode = str(rng.choice(names, p=probs))
            # the training regions of the whole global batch (the same draws on every rank), then this rank's rows
            regions = _training_regions(boxes, model, gen) if mode == "regions" else [None] * batch
            objects = pool.objects[idx] if attributes else torch.zeros(batch, 0)
            images, query, boxes, regions, objects = dp.shard(images, query, boxes, regions, objects)
            loss = dp(images, query, boxes, mode, regions if mode == "regions" else None,
                      objects if attributes else None, attribute_weight)
            guard.check_loss(loss, step=step)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            log.losses.append(dp.mean(loss.item()))
            log.modes.append(mode)
            if evaluate is not None and ((eval_every and (step + 1) % eval_every == 0) or step + 1 == steps):
                model.eval()
                with torch.no_grad():
                    log.curve.append((step + 1, float(evaluate(model))))
                model.train()
        model.eval()
    return log


def _attribute_loss(probe: torch.nn.Linear, seq, objects: Tensor) -> Tensor:
    r"""Dense attribute loss, balanced between object and background tokens: for the digit and the colour,
    $\mathrm{CE}_{\text{object tokens}} + \mathrm{CE}_{\text{background tokens}}$ (each a mean over its own
    tokens). Objects cover a few percent of the tokens, so a plain mean is met by predicting "none" everywhere."""
    digit, colour = attribute_targets(seq.pos, objects, seq.footprint)
    out = probe(seq.tokens)                                                           # [B, T, 16]
    valid = seq.valid
    on = (digit < N_DIGITS) & valid
    w = on.float() / on.sum().clamp(min=1) + (valid & ~on).float() / (valid & ~on).sum().clamp(min=1)
    ce = torch.nn.functional.cross_entropy
    ce_d = ce(out[..., :N_DIGITS + 1].flatten(0, 1), digit.flatten(), reduction="none")
    ce_c = ce(out[..., N_DIGITS + 1:].flatten(0, 1), colour.flatten(), reduction="none")
    return ((ce_d + ce_c) * w.flatten()).sum()


@torch.no_grad()
def low_features(model: MiniGroundingMLLM, pool: ScenePool, batch: int = 128) -> tuple[Tensor, Tensor]:
    """Frozen low-view tokens ``[N, N_L, d]`` and query embeddings ``[N, 2d]`` of every pool scene."""
    feats, qe = [], []
    for start in range(0, len(pool), batch):
        idx = torch.arange(start, min(start + batch, len(pool)))
        images, query, _ = pool.batch(idx)
        feats.append(model.encode_low(images)[0])
        qe.append(model.lm.query_embedding(query))
    return torch.cat(feats), torch.cat(qe)


ROUTER_LOSSES = {
    "bce": lambda logits, fg: bce_routing_loss(logits, fg),
    "focal": lambda logits, fg: focal_routing_loss(logits, fg),
    "margin": lambda logits, fg: margin_routing_loss(logits, fg),
}


def _router_loss(router: ResolutionRouter, feats: Tensor, query_emb: Tensor, fg: Tensor, *, name: str,
                 low_grid: tuple[int, int], region_grid: tuple[int, int]) -> Tensor:
    """The routing loss ``name`` of :data:`ROUTER_LOSSES` on (this rank's rows of) a batch."""
    return ROUTER_LOSSES[name](router(feats, low_grid, query_emb, region_grid), fg)


@validate(model=Instance(MiniGroundingMLLM, "MiniGroundingMLLM"), feats=TensorC("N L D"), query_emb=TensorC("N Q"),
          boxes=TensorC("N 4"), loss=Choice(*ROUTER_LOSSES), steps=Int(low=1), batch=Int(low=1),
          lr=Real(low=0.0, closed="neither"), seed=Int(low=0), hidden=Int(low=1), distributed=Choice(*DISTRIBUTED))
def train_router(model: MiniGroundingMLLM, feats: Tensor, query_emb: Tensor, boxes: Tensor, *, loss: str,
                 steps: int, batch: int = 128, lr: float = 2e-3, seed: int = 0, hidden: int = 128,
                 distributed: str = "auto") -> ResolutionRouter:
    """A :class:`ResolutionRouter` on frozen low-view features with one of :data:`ROUTER_LOSSES`.

    ``distributed`` (:data:`neurips26.nn.parallel.DISTRIBUTED`): under ``torchrun`` with more than one process,
    DDP (``"auto"``, ``"ddp"``) or FSDP2 (``"fsdp"``: the router's parameters are sharded in place; gather them with
    :func:`neurips26.nn.train.full_state_dict`); each rank trains on rows ``rank::world`` of the same global batch
    (``batch`` must divide by the world size). Every routing loss is a mean over rows, so the weights equal those
    of one process with the whole batch (to float round-off)."""
    c = model.config
    torch.manual_seed(seed)
    router = ResolutionRouter(feats.shape[2], query_emb.shape[1], hidden=hidden)
    fg = region_labels(boxes, c.image_size, c.region_grid)
    dp = data_parallel(router, functools.partial(_router_loss, name=loss, low_grid=(c.low_grid, c.low_grid),
                                                 region_grid=c.region_grid), distributed=distributed)
    opt = torch.optim.AdamW(router.parameters(), lr=lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(seed)
    with dp.guard(router, opt, where="train_router", what=f"the {loss} routing loss") as guard, \
            torch.enable_grad():
        router.train()
        for step in range(steps):
            for g in opt.param_groups:
                g["lr"] = cosine_lr(step, steps, lr, max(1, steps // 20))
            idx = torch.randint(len(feats), (batch,), generator=gen)
            value = dp(*dp.shard(feats[idx], query_emb[idx], fg[idx]))
            guard.check_loss(value, step=step)
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
        router.eval()
    return router
