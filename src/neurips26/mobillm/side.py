r"""The server side: per-type feature aligners, one shared ladder side network, asynchronous updates.

**Adaptive layer-wise feature alignment** (our reconstruction; the paper's design is not public). For a
backbone type $b$ whose payload carries $K$ layers $h_{b,1..K}$ of width $d_b$, side layer $l = 1..L_s$ reads

$$z_l = \sum_{k \in W_l} \mathrm{softmax}(\beta_{b,l})_k \; P_{b,l}\,\mathrm{norm}_b(h_{b,k}), \qquad
W_l = \{c_l - w, \dots, c_l + w\} \cap [1, K], \quad c_l = \mathrm{round}(l K / L_s),$$

$\beta_{b,l}$ initialised peaked at $c_l$, $P_{b,l} \in \mathbb{R}^{d_s \times d_b}$ trainable, and
$\mathrm{norm}_b$ a running per-type, per-layer standardisation (mean and variance of the arrivals), so
backbones of different scale land on one scale. The "no-align" ablation is ``window=0, norm="none"``: one
linear map per side layer from the layer at relative depth $l/L_s$.

**Ladder side network** (LST, Sung et al. 2022), width $d_s$, $L_s$ blocks, gates $\mu_l = \sigma(\alpha_l/T)$
with $\alpha_l = 0$ at the start and $T = 0.1$:

$$s_0 = z_1, \qquad s_l = \mu_l\, z_l + (1 - \mu_l)\, f_l(s_{l-1}), \qquad \hat y = W_o\,\mathrm{LN}(s_{L_s}),$$

$f_l(s) = s + \mathrm{MLP}(\mathrm{LN}(s))$ (``block="mlp"``) or a pre-LN transformer block over the
token axis (``block="transformer"``; with one vector per sample the attention is trivial).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import AnyOf, Bool, Choice, Instance, Int, Optional, Real, Tensor, check_arguments, validate
from neurips26.nn.layers import PreNormBlock
from neurips26.nn.parallel import DISTRIBUTED, data_parallel

from .payload import _BITS, ActivationPayload

__all__ = ["NORMS", "FeatureAligner", "SideModel", "SideNetwork", "SideTuningServer", "side_step_flops"]

NORMS = ("running", "layer", "none")
INITS = ("pca", "random")


_POSITIVE, _NONNEG = Real(low=0.0, closed="neither"), Real(low=0.0)
_FEATURES = Tensor("B K ... D", ndim=(3, 4))  # [B, K, (T,) d]: K and D bound to the module's sizes
_FEATURES_ANY = Tensor("B K ... D", ndim=(3, 4), finite=False)
_LABELS = AnyOf(Tensor("B", dtype="integer"), Tensor("B", dtype="bool"))  # not floating point


def _check_features(h: object, name: str, where: str, k: int, d: int, *, finite: bool = True) -> None:
    """``h`` must be a ``[B, k, (T,) d]`` tensor (of finite values when ``finite``): the declared shape with the
    module's own sizes bound to ``K`` and ``D``."""
    sizes = {"K": (k, "the module"), "D": (d, "the module")}
    (_FEATURES if finite else _FEATURES_ANY).check(h, name, where, sizes)



def _full(p: torch.Tensor) -> torch.Tensor:
    """A parameter as one full tensor: itself, or (under FSDP2, outside a forward) its gathered ``DTensor``."""
    return p.full_tensor() if hasattr(p, "full_tensor") else p


def _store(p: torch.Tensor, full: torch.Tensor) -> None:
    """Write ``full`` back into parameter ``p`` (a no-op when :func:`_full` returned ``p`` itself)."""
    if full is not p:
        from torch.distributed.tensor import distribute_tensor

        p.copy_(distribute_tensor(full, p.device_mesh, p.placements))


class FeatureAligner(nn.Module):
    """Maps one backbone type's ``K`` uploaded layers ``[B, K, (T,) d_b]`` to side inputs ``[B, L_s, (T,) d_s]``.

    Args:
        n_backbone_layers: ``K``, layers per payload of this type.
        d_backbone: their width ``d_b``.
        n_side_layers: ``L_s``.  d_side: ``d_s``.
        window: depth-mixing half width ``w`` (0: each side layer reads one backbone layer).
        norm: ``"running"`` (per-type, per-layer running standardisation), ``"layer"`` (per-vector, no affine)
            or ``"none"``.
        momentum: weight of a new batch in the running statistics after the first ``1/momentum`` batches
            (before that, the plain average of all batches so far).
        init: ``"pca"`` (the spec: the server sets each width map from the principal directions of the first
            arrival, :meth:`pca_init_`; rows beyond that batch's rank keep their random init) or ``"random"``.
    """

    @validate(n_backbone_layers=Int(low=1), d_backbone=Int(low=1), n_side_layers=Int(low=1), d_side=Int(low=1),
              window=Int(low=0), norm=Choice(*NORMS), momentum=Real(low=0.0, high=1.0, closed="right"),
              init=Choice(*INITS))
    def __init__(self, n_backbone_layers: int, d_backbone: int, n_side_layers: int, d_side: int, window: int = 2,
                 norm: str = "running", *, momentum: float = 0.01, init: str = "pca") -> None:
        super().__init__()
        k, d_backbone, ls, d_side = int(n_backbone_layers), int(d_backbone), int(n_side_layers), int(d_side)
        self.d_backbone, self.d_side, self.window = d_backbone, d_side, int(window)
        self.init = init
        self.n_backbone_layers, self.n_side_layers, self.norm, self.momentum = k, ls, norm, float(momentum)
        # c_l = round(l K / L_s) (1-based), the backbone layer at the side layer's relative depth
        centers = [min(k, max(1, round(l * k / ls))) - 1 for l in range(1, ls + 1)]
        beta = torch.full((ls, k), -math.inf)
        for l, c in enumerate(centers):
            lo, hi = max(0, c - self.window), min(k - 1, c + self.window)
            beta[l, lo:hi + 1] = 0.0
            beta[l, c] = 2.0  # peaked at c_l: softmax weight e^2 / (e^2 + 2w) there
        self.register_buffer("window_mask", torch.isfinite(beta))
        self.beta = nn.Parameter(torch.where(torch.isfinite(beta), beta, torch.zeros_like(beta)))
        self.proj = nn.ModuleList(nn.Linear(d_backbone, d_side) for _ in range(ls))
        self.register_buffer("running_mean", torch.zeros(k, d_backbone))
        self.register_buffer("running_var", torch.ones(k, d_backbone))
        self.register_buffer("batches_seen", torch.zeros((), dtype=torch.long))
        # 1 once the width maps were set by PCA (or when init="random": nothing to do)
        self.register_buffer("initialised", torch.tensor(init == "random"))
        self.centers = centers

    @torch.no_grad()
    def pca_init_(self, h: torch.Tensor) -> int:
        r"""Set every width map $P_l$ from the principal directions of the first arrival ``h [B, K, (T,) d_b]``.

        The vectors are normalised as the first training forward will normalise them (for ``"running"``: this
        batch's own mean and variance), mixed over the window with the initial $\mathrm{softmax}(\beta_l)$ and
        centred; the top $r = \min(d_s, \mathrm{rank})$ right singular vectors become the first $r$ rows of
        $P_l$ (scaled to the norm of the random rows they replace, so the output scale is unchanged) and the bias
        centres them. Returns $r$ (0 when already initialised). Idempotent: only the first call acts."""
        if bool(self.initialised):
            return 0
        _check_features(h, "features", "FeatureAligner.pca_init_", self.n_backbone_layers, self.d_backbone)
        flat = h.transpose(0, 1).reshape(self.n_backbone_layers, -1, self.d_backbone)  # [K, N, d]
        if self.norm == "running":
            mu, var = flat.mean(1, keepdim=True), flat.var(1, unbiased=False, keepdim=True)
            flat = (flat - mu) * torch.rsqrt(var + 1e-5)
        elif self.norm == "layer":
            flat = F.layer_norm(flat, flat.shape[-1:])
        w = self.mixing_weights()
        rank = 0
        for l, proj in enumerate(self.proj):
            mixed = torch.einsum("k,knd->nd", w[l], flat)
            center = mixed.mean(0)
            _, sv, vh = torch.linalg.svd(mixed - center, full_matrices=False)
            r = int(min(self.d_side, int((sv > 1e-6 * sv[0].clamp(min=1e-12)).sum())))
            if r == 0:
                continue
            weight, bias = _full(proj.weight), _full(proj.bias)  # the parameters themselves, unless FSDP-sharded
            scale = weight[:r].norm(dim=1, keepdim=True)
            weight[:r] = vh[:r] * scale
            bias[:r] = -(weight[:r] @ center)
            _store(proj.weight, weight)
            _store(proj.bias, bias)
            rank = max(rank, r)
        self.initialised.fill_(True)
        return rank

    def mixing_weights(self) -> torch.Tensor:
        """``[L_s, K]``: $\\mathrm{softmax}(\\beta_l)$ over the window (zero outside)."""
        return torch.softmax(_full(self.beta).masked_fill(~self.window_mask, -math.inf), dim=-1)

    def _normalise(self, h: torch.Tensor) -> torch.Tensor:
        if self.norm == "none":
            return h
        if self.norm == "layer":
            return F.layer_norm(h, h.shape[-1:])
        flat = h.transpose(0, 1).reshape(self.n_backbone_layers, -1, self.d_backbone)  # [K, N, d]
        if self.training and flat.shape[1] > 0:  # an empty batch (a rank without rows) moves no statistics
            with torch.no_grad():
                n = int(self.batches_seen) + 1
                rate = max(1.0 / n, self.momentum)
                self.running_mean.lerp_(flat.mean(1), rate)
                self.running_var.lerp_(flat.var(1, unbiased=False) if flat.shape[1] > 1
                                       else torch.ones_like(self.running_var), rate)
                self.batches_seen += 1
        shape = (1, self.n_backbone_layers) + (1,) * (h.dim() - 3) + (self.d_backbone,)
        # (h - mu_b) / sqrt(var_b + eps), per type and per layer
        return (h - self.running_mean.view(shape)) * torch.rsqrt(self.running_var.view(shape) + 1e-5)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """``h [B, K, d_b]`` or ``[B, K, T, d_b]`` -> ``z [B, L_s, d_s]`` or ``[B, L_s, T, d_s]``."""
        # checked (finite values too) before the running statistics move: one NaN would poison every later output
        _check_features(h, "features", "FeatureAligner.forward", self.n_backbone_layers, self.d_backbone)
        hn = self._normalise(h)
        w = self.mixing_weights()  # [L_s, K]
        zs = []
        for l, proj in enumerate(self.proj):
            # z_l = sum_k softmax(beta_l)_k P_l norm(h_k): mix first (P_l is linear), then project
            mixed = torch.einsum("k,bk...d->b...d", w[l], hn)
            zs.append(proj(mixed))
        return torch.stack(zs, dim=1)


class _MLPBlock(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, s: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return s + self.mlp(self.norm(s))  # f(s) = s + MLP(LN(s))


class _TransformerBlock(nn.Module):
    """A pre-norm transformer block over the token axis (``neurips26.nn.layers.PreNormBlock``, GELU MLP of
    width 2d); padded tokens are masked out of the keys."""

    def __init__(self, d: int, n_heads: int) -> None:
        super().__init__()
        self.block = PreNormBlock(d, n_heads, mlp_ratio=2.0)

    def forward(self, s: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``s [B, T, d]``; ``mask [B, T]`` True = real token."""
        attn = None if mask is None else mask.bool()[:, None, None, :]  # [B, 1, 1, T]: keys to attend to
        return self.block(s, attn_mask=attn)


class SideNetwork(nn.Module):
    """The shared ladder side network (see the module docstring).

    Args:
        d_side: width ``d_s``.  n_layers: ``L_s``.  n_classes: outputs of the head.
        block: ``"mlp"`` or ``"transformer"``.  gate_T: the gate temperature ``T``.
        n_heads: attention heads of transformer blocks.
    """

    @validate(d_side=Int(low=1), n_layers=Int(low=1), n_classes=Int(low=2), block=Choice("mlp", "transformer"),
              gate_T=_POSITIVE)
    def __init__(self, d_side: int = 64, n_layers: int = 3, n_classes: int = 2, block: str = "mlp",
                 gate_T: float = 0.1, *, n_heads: int = 4) -> None:
        super().__init__()
        d_side, n_layers, n_classes = int(d_side), int(n_layers), int(n_classes)
        self.d_side, self.n_layers, self.n_classes = d_side, n_layers, n_classes
        if block == "transformer" and d_side % n_heads:
            raise ValueError(f"d_side ({d_side}) must be divisible by n_heads ({n_heads}) for transformer blocks")
        self.block, self.gate_T = block, float(gate_T)
        make = (lambda: _MLPBlock(d_side)) if block == "mlp" else (lambda: _TransformerBlock(d_side, n_heads))
        self.blocks = nn.ModuleList(make() for _ in range(n_layers))
        self.alpha = nn.Parameter(torch.zeros(n_layers))  # mu_l = sigmoid(alpha_l / T) = 0.5 at the start
        self.head_norm = nn.LayerNorm(d_side)
        self.head = nn.Linear(d_side, n_classes)

    def gates(self) -> torch.Tensor:
        """``[L_s]``: $\\mu_l = \\sigma(\\alpha_l / T)$."""
        return torch.sigmoid(self.alpha / self.gate_T)

    def forward(self, z: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``z [B, L_s, d_s]`` or ``[B, L_s, T, d_s]`` (with ``mask [B, T]``) -> logits ``[B, n_classes]``."""
        _check_features(z, "side inputs", "SideNetwork.forward", self.n_layers, self.d_side, finite=False)
        tokens = z if z.dim() == 4 else z.unsqueeze(2)  # [B, L_s, T, d_s]
        mu = self.gates()
        s = tokens[:, 0]
        for l, block in enumerate(self.blocks):
            # s_l = mu_l z_l + (1 - mu_l) f_l(s_{l-1})
            s = mu[l] * tokens[:, l] + (1 - mu[l]) * block(s, mask if z.dim() == 4 else None)
        s = self.head_norm(s)  # [B, T, d_s]
        if z.dim() == 4 and mask is not None:
            m = mask.to(s.dtype)[..., None]
            pooled = (s * m).sum(1) / m.sum(1).clamp(min=1.0)
        else:
            pooled = s.mean(1)
        return self.head(pooled)


def _moment_loss(zs: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]) -> torch.Tensor:
    """Class-conditional first and second (diagonal) moment gap between every pair of groups (see
    :class:`SideTuningServer`'s ``moment_weight``); 0 when no class has 2+ samples in two groups."""
    pooled = []
    for z, y, mask in zs:
        if z.dim() == 4:  # token level: masked mean over tokens
            m = (torch.ones(z.shape[0], z.shape[2]) if mask is None else mask.to(z.dtype))[:, None, :, None]
            z = (z * m).sum(2) / m.sum(2).clamp(min=1.0)
        pooled.append((z.flatten(1), y))
    terms = []
    for c in torch.unique(torch.cat([y for _, y in pooled])).tolist():
        stats = [(z[y == c].mean(0), z[y == c].var(0, unbiased=False)) for z, y in pooled if int((y == c).sum()) >= 2]
        for i in range(len(stats)):
            for j in range(i + 1, len(stats)):
                (m1, v1), (m2, v2) = stats[i], stats[j]
                terms.append((m1 - m2).pow(2).mean() + (v1 - v2).pow(2).mean())
    if not terms:
        return zs[0][0].sum() * 0.0
    return torch.stack(terms).mean()


def side_step_flops(side: SideNetwork, aligner: FeatureAligner, n_vectors: int, *, backward: bool = True) -> float:
    """Dense FLOPs of one aligned side-network pass over ``n_vectors`` (x3 with the backward)."""
    params = sum(p.numel() for p in side.parameters()) + sum(p.numel() for p in aligner.parameters())
    return (6.0 if backward else 2.0) * params * n_vectors


class SideModel(nn.Module):
    """What a device downloads once for inference: its type's aligner + the side network.
    ``forward(features [B, K, (T,) d_b], mask=None) -> logits``."""

    def __init__(self, aligner: FeatureAligner, side: SideNetwork) -> None:
        super().__init__()
        self.aligner, self.side = aligner, side

    def forward(self, features: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.side(self.aligner(features), mask)


class _ServerNet(nn.Module):
    """The server's trainable modules (``side``, ``aligner_0``, ...: the parameter order of the optimiser) with
    the side-tuning loss as ``forward(groups)``, so that DDP's forward and FSDP's gathers cover the whole loss."""

    def __init__(self, side: SideNetwork, aligners: dict[str, FeatureAligner], named: dict[str, FeatureAligner],
                 moment_weight: float) -> None:
        super().__init__()
        self.side = side
        for name, a in named.items():
            self.add_module(name, a)
        self._by_type, self.moment_weight = aligners, moment_weight

    def forward(self, groups: list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]]) -> torch.Tensor:
        logits, ys, zs = [], [], []
        for btype, x, y, mask in groups:
            z = self._by_type[btype](x)
            logits.append(self.side(z, mask))
            ys.append(y)
            zs.append((z, y, mask))
        loss = F.cross_entropy(torch.cat(logits), torch.cat(ys))
        if self.moment_weight > 0 and len(groups) > 1:
            loss = loss + self.moment_weight * _moment_loss(zs)
        return loss


def _server_loss(net: _ServerNet, groups: list) -> torch.Tensor:
    return net(groups)


class SideTuningServer:
    r"""Trains the side network and the aligners, one optimiser step per arrival (no rounds, no barrier).

    Args:
        side: the :class:`SideNetwork`.
        aligners: ``{backbone_type: FeatureAligner}``.
        lr: Adam learning rate.
        cache: keep every arrival (dequantised) and interleave replay steps from it, drawn per-device balanced
            (a device then forwards each sample once).
        replay_ratio: replay steps per arrival (fractions accumulate: 0.5 = one every second arrival).
        replay_batch: samples per replay step (default: the arriving batch's size).
        seed: seeds the replay draws.
        step_time_s: virtual server time per optimiser step (a fixed cost keeps the simulation deterministic);
            default: measured wall time is *not* used.
        moment_weight: $\lambda$ of the class-conditional moment-matching loss between backbone types (the spec's
            CORAL-style term, 0.1 there): in a step holding several types (replay draws over devices), the
            per-class mean and per-dimension variance of the aligned inputs $z$ of every pair of types are pulled
            together, $\lambda \cdot \mathrm{mean}_{c, (b, b')} (\lVert \mu_{b,c} - \mu_{b',c} \rVert^2 +
            \lVert \sigma^2_{b,c} - \sigma^2_{b',c} \rVert^2) / d_s$. 0 turns it off.
        weight_decay: AdamW's.
        distributed: ``"auto"`` (data-parallel when ``torchrun`` started more than one process, else one
            process: bit-identical to ``"off"``), ``"off"``, ``"ddp"`` or ``"fsdp"`` (see
            :func:`neurips26.nn.parallel.data_parallel`). Every rank must receive the same payloads in the same
            order (run the same simulation); each step's rows are split ``rank::world`` across the ranks (the
            step's batch must divide by the world size) and the gradients averaged, so the weights equal one
            process's on the whole batch when the loss has no batch statistics: ``norm="layer"`` or ``"none"``
            aligners and ``moment_weight=0`` (the running normalisation and the moment term see each rank's
            rows; DDP keeps rank 0's running statistics). The PCA init uses the whole first arrival on every
            rank. Under FSDP gather the weights with :func:`neurips26.nn.train.full_state_dict`.

    Every update runs under :class:`neurips26.nn.train.TrainingGuard`: a payload is validated completely before
    anything moves, and a step that fails (a non-finite loss, an error in the forward) leaves the weights,
    the optimiser state, the aligners' running statistics and PCA state, and every module's train/eval mode as
    they were.
    """

    @validate(side=Instance(SideNetwork), lr=_POSITIVE, cache=Bool(), replay_ratio=_NONNEG,
              replay_batch=Optional(Int(low=1)), seed=Int(), step_time_s=_NONNEG, weight_decay=_NONNEG,
              moment_weight=_NONNEG, distributed=Choice(*DISTRIBUTED))
    def __init__(self, side: SideNetwork, aligners: Mapping[str, FeatureAligner], lr: float = 1e-3,
                 cache: bool = True, replay_ratio: float = 1.0, *, replay_batch: int | None = None, seed: int = 0,
                 step_time_s: float = 0.005, weight_decay: float = 0.0, moment_weight: float = 0.0,
                 distributed: str = "auto") -> None:
        if not isinstance(aligners, Mapping) or not aligners \
                or not all(isinstance(a, FeatureAligner) for a in aligners.values()):
            raise ValueError(f"SideTuningServer: aligners must be a non-empty dict {{backbone_type: FeatureAligner}}, "
                             f"got {aligners!r}")
        for name, a in aligners.items():
            if a.d_side != side.d_side or a.n_side_layers != side.n_layers:
                raise ValueError(f"aligners[{name!r}] maps to {a.n_side_layers} x {a.d_side}, the side network "
                                 f"has {side.n_layers} x {side.d_side}")
        self.moment_weight = float(moment_weight)
        self.side, self.aligners = side, dict(aligners)
        named = {f"aligner_{i}": a for i, a in enumerate(self.aligners.values())}
        self.trainable = _ServerNet(side, self.aligners, named, self.moment_weight)
        # data-parallel under torchrun (before the optimiser: FSDP swaps the parameters); one process: unchanged
        self._dp = data_parallel(self.trainable, _server_loss, distributed=distributed,
                                 fsdp_units=(SideNetwork, FeatureAligner), find_unused_parameters=True)
        self.optimizer = torch.optim.AdamW(self.trainable.parameters(), lr=float(lr), weight_decay=weight_decay)
        self.cache_enabled, self.replay_ratio, self.replay_batch = bool(cache), float(replay_ratio), replay_batch
        self.step_time_s = float(step_time_s)
        self._rng = np.random.default_rng(int(seed))
        self._credit = 0.0
        self.cache: dict[int, list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]]] = {}
        self.processed: list[tuple[int, int]] = []  # (device_id, seq) of every arrival, in order
        self._seen: set[tuple[int, int]] = set()
        self.steps = 0
        self.server_flops = 0.0

    # ------------------------------------------------------------------ validation
    def _check_payload(self, payload: ActivationPayload) -> None:
        if payload.backbone_type not in self.aligners:
            raise ValueError(f"payload backbone_type {payload.backbone_type!r} is unknown: the server has aligners "
                             f"for {sorted(self.aligners)}")
        a = self.aligners[payload.backbone_type]
        if payload.width != a.d_backbone or payload.n_layers != a.n_backbone_layers:
            raise ValueError(f"payload of type {payload.backbone_type!r} has {payload.n_layers} layers of width "
                             f"{payload.width}; its aligner expects {a.n_backbone_layers} x {a.d_backbone}")
        where = "SideTuningServer.receive"
        _BITS.check(payload.quant_bits, "payload quant_bits", where)
        # activations [B, K, (T,) d] of finite values; labels [B] not floating; an "all" payload's token_mask [B, T]
        # (else the side network fails mid-step)
        mask = payload.token_mask
        check_arguments(where, {"payload activations": Tensor("B K T D" if mask is not None else "B ..."),
                                "payload labels": _LABELS, "payload token_mask": Optional(Tensor("B T", finite=False))},
                        {"payload activations": payload.dequantize(), "payload labels": payload.labels,
                         "payload token_mask": mask})
        if (payload.labels < 0).any() or (payload.labels >= self.side.n_classes).any():
            raise ValueError(f"payload labels must lie in [0, {self.side.n_classes}), got "
                             f"{payload.labels.min().item()}..{payload.labels.max().item()}")
        key = (payload.device_id, payload.seq)
        if key in self._seen:
            raise ValueError(f"payload (device_id={key[0]}, seq={key[1]}) was already processed")

    # ------------------------------------------------------------------ training
    def _loss(self, groups: list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]]) -> torch.Tensor:
        return self.trainable(groups)

    def _shard(self, groups: list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]]
               ) -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]]:
        """This rank's rows of a step's groups: row ``i`` of the step (counted across its groups, in order) goes to
        rank ``i mod world``, so every rank holds ``B / world`` rows and the row-mean loss averages to the
        one-process loss. One process: the groups themselves."""
        dp = self._dp
        if dp.world_size == 1:
            return groups
        rows = dp.shard(list(range(sum(x.shape[0] for _, x, _, _ in groups))))  # this rank's global row indices
        out, offset = [], 0
        for btype, x, y, mask in groups:
            mine = [i - offset for i in rows if offset <= i < offset + x.shape[0]]
            offset += x.shape[0]
            # DDP: a type without rows on this rank sits the step out (find_unused_parameters); FSDP: every rank
            # runs every unit (its all-gather is a collective), a type without rows on an empty batch
            if mine or dp.mode == "fsdp":
                out.append((btype, x[mine], y[mine], None if mask is None else mask[mine]))
        return out

    def _step(self, groups: list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]]) -> float:
        # all-or-nothing: weights, optimiser state, buffers (running statistics, PCA flag) and modes come back
        # if anything in the step raises, including a non-finite loss (checked before the backward)
        with self._dp.guard(self.trainable, self.optimizer, where="SideTuningServer", what="the side-tuning loss",
                            hint="check the payloads or lower lr") as guard:
            self.trainable.train()
            for btype, x, _, _ in groups:
                if not bool(self.aligners[btype].initialised):
                    # the spec's PCA init, from this type's first arrival (the whole batch, on every rank)
                    self.aligners[btype].pca_init_(x)
            loss = self._dp(self._shard(groups))
            guard.check_loss(loss, step=self.steps)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        self.steps += 1
        for btype, x, _, _ in groups:
            self.server_flops += side_step_flops(self.side, self.aligners[btype], x.shape[0])
        return self._dp.mean(float(loss.detach()))

    def _replay_groups(self, n: int) -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]]:
        """``n`` cached samples, each from a device drawn uniformly (per-device balanced), grouped by type."""
        devices = sorted(self.cache)
        picks: dict[tuple[int, int], list[int]] = {}
        for d in self._rng.integers(len(devices), size=n).tolist():
            entries = self.cache[devices[d]]
            e = int(self._rng.integers(len(entries)))
            i = int(self._rng.integers(entries[e][1].shape[0]))
            picks.setdefault((devices[d], e), []).append(i)
        by_type: dict[str, list] = {}
        for (dev, e), rows in sorted(picks.items()):
            btype, x, y, mask = self.cache[dev][e]
            by_type.setdefault(btype, []).append((x[rows], y[rows], None if mask is None else mask[rows]))
        groups = []
        for btype, items in sorted(by_type.items()):
            if items[0][2] is not None:  # "all" payloads: pad token axes to a common length
                t = max(x.shape[2] for x, _, _ in items)
                xs = [F.pad(x, (0, 0, 0, t - x.shape[2])) for x, _, _ in items]
                ms = [F.pad(m, (0, t - m.shape[1])) for _, _, m in items]
                groups.append((btype, torch.cat(xs), torch.cat([y for _, y, _ in items]), torch.cat(ms)))
            else:
                groups.append((btype, torch.cat([x for x, _, _ in items]), torch.cat([y for _, y, _ in items]), None))
        return groups

    def replay_step(self, n: int | None = None) -> float | None:
        """One optimiser step on ``n`` cached samples (default ``replay_batch`` or 16); ``None`` if the cache is
        empty."""
        if not self.cache:
            return None
        return self._step(self._replay_groups(n or self.replay_batch or 16))

    @validate(payload=Instance(ActivationPayload))
    def receive(self, payload: ActivationPayload) -> dict[str, float]:
        """One asynchronous update on an arriving payload (plus its replay steps); returns metrics:
        ``loss``, ``replay_steps``, ``replay_loss``, ``server_steps`` (this call), ``wall_s``."""
        self._check_payload(payload)
        start = time.perf_counter()
        x, y = payload.dequantize(), payload.labels.long()
        mask = payload.token_mask
        loss = self._step([(payload.backbone_type, x, y, mask)])
        self.processed.append((payload.device_id, payload.seq))
        self._seen.add((payload.device_id, payload.seq))
        if self.cache_enabled:
            self.cache.setdefault(payload.device_id, []).append((payload.backbone_type, x, y, mask))
        n_replay = 0
        replay_losses = []
        if self.cache_enabled and self.replay_ratio > 0:
            self._credit += self.replay_ratio
            while self._credit >= 1.0 - 1e-12:
                self._credit -= 1.0
                replay_losses.append(self.replay_step(self.replay_batch or payload.batch_size))
                n_replay += 1
        return {"loss": loss, "replay_steps": float(n_replay),
                "replay_loss": float(sum(replay_losses) / len(replay_losses)) if replay_losses else math.nan,
                "server_steps": float(1 + n_replay), "wall_s": time.perf_counter() - start}

    @property
    def cached_samples(self) -> int:
        return sum(x.shape[0] for entries in self.cache.values() for _, x, _, _ in entries)

    # ------------------------------------------------------------------ inference
    def _check_type(self, backbone_type: object, where: str) -> None:
        """``backbone_type`` must be one the server has an aligner for."""
        Choice(*sorted(self.aligners)).check(backbone_type, "backbone_type", where)

    @torch.no_grad()
    @validate(features=Tensor(finite=False))
    def predict_logits(self, features: torch.Tensor, backbone_type: str, mask: torch.Tensor | None = None
                       ) -> torch.Tensor:
        """Logits ``[B, n_classes]`` for features ``[B, K, (T,) d_b]`` of ``backbone_type`` (eval mode)."""
        self._check_type(backbone_type, "SideTuningServer.predict_logits")
        modes = {n: m.training for n, m in self.trainable.named_modules()}
        self.trainable.eval()
        try:
            return self.side(self.aligners[backbone_type](features), mask)
        finally:  # the caller's train/eval mode is kept, also when the forward raises
            for n, m in self.trainable.named_modules():
                m.train(modes[n])

    def export(self, backbone_type: str) -> SideModel:
        """A copy of ``backbone_type``'s aligner + the side network, for on-device inference (eval mode)."""
        self._check_type(backbone_type, "SideTuningServer.export")
        return SideModel(copy.deepcopy(self.aligners[backbone_type]), copy.deepcopy(self.side)).eval()

    def download_nbytes(self, backbone_type: str) -> int:
        """Bytes of :meth:`export` as float32 (what a device downloads once for inference)."""
        m = self.export(backbone_type)
        return sum(p.numel() * 4 for p in m.parameters())
