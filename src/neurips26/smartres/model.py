"""The mini grounding MLLM shared by every method, and SmartRes on top of it.

* :class:`ViT` — patch embedding + 2D sin-cos position of each token centre in *full-resolution* pixels
  + a scale embedding, then non-causal pre-LN blocks on :func:`neurips26.nn.sdpa_attention`.
* :class:`FusionLM` — the "LLM": a non-causal transformer over [query tokens ; visual tokens] with a
  grounding head on each visual token (objectness logit + the box as a centre offset and a log size, in units
  of the token footprint; :func:`offsets_to_boxes`).
  The predicted box is the one of the arg-max-objectness visual token.
* :class:`MiniGroundingMLLM` — both, with encoders for the full view, the low view and regions, and hooks
  for the token-reduction baselines (:mod:`.baselines`).
* :class:`SmartRes` — low view → router → only the active regions through the ViT at full resolution →
  order-preserving sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.constraints import Choice, Instance, Int, Optional, Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorC
from neurips26.nn import sdpa_attention
from neurips26.nn.layers import PreNormBlock, patchify  # ([B, 3, H, W] -> [B, (H/p)(W/p), 3p²])

from ._checks import Boxes, IdTensor, ListOf, check_k_range, tensor
from .data import N_COLOURS, N_DIGITS
from .merging import bipartite_merge
from .router import ResolutionRouter, select_regions
from .sequence import (
    SCALE_FULL,
    SCALE_LOW,
    VisualSequence,
    build_order_preserving_sequence,
    region_corners,
    single_view_sequence,
    token_centres,
)

#: ``query [B, 2]``: (digit, colour) id pairs, digit in [0, N_DIGITS), colour in [0, N_COLOURS)
QUERY = IdTensor("B 2", high=(N_DIGITS, N_COLOURS), labels=("digit", "colour"))
#: ``images [B, 3, H, W]``: finite float pixels (the model also checks H = W = its image size)
IMAGES = TensorC("B 3 H W", dtype="float")
_SEQ_TOKENS = TensorC("B T D", finite=False)            # a VisualSequence's tokens: only their batch size is read


def sincos_2d(pos: Tensor, dim: int) -> Tensor:
    r"""2D sin-cos embedding of pixel positions ``pos [..., 2]`` → ``[..., dim]`` (dim divisible by 4):
    for x and y each, $[\sin(\omega_k u), \cos(\omega_k u)]_{k<dim/4}$ with $\omega_k = 1000^{-k/(dim/4)}$
    rad/pixel."""
    n = dim // 4
    omega = torch.exp(-math.log(1000.0) * torch.arange(n, dtype=torch.float32, device=pos.device) / n)
    ang = pos[..., :, None].float() * omega                                          # [..., 2, n]
    return torch.cat([ang.sin(), ang.cos()], dim=-1).flatten(-2)                     # [..., 4n]




def make_block(dim: int, heads: int) -> PreNormBlock:
    """One non-causal pre-LN block (LayerNorm, GELU MLP of width 4·dim): the shared :class:`neurips26.nn.layers.
    PreNormBlock` (keys ``norm1``, ``qkv``, ``proj``, ``norm2``, ``mlp``)."""
    return PreNormBlock(dim, heads, 4.0, causal=False, norm="layer", mlp="gelu")


def block_forward(blk: PreNormBlock, x: Tensor, key_bias: Tensor | None = None) -> tuple[Tensor, Tensor]:
    r"""``blk(x)`` with an additive ``key_bias [B, 1, 1, T]`` on the logits (ToMe's $\log(\text{size})$, or
    $-\infty$ on padding), through the block's ``attend`` seam so the keys come out at no extra cost.

    Returns the block output ``[B, T, d]`` and the keys averaged over heads ``[B, T, d_h]`` (ToMe's metric)."""
    seen: dict[str, Tensor] = {}

    def attend(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        seen["k"] = k
        mask = None if key_bias is None else key_bias.to(q.dtype)
        return sdpa_attention(q, k, v, attn_mask=mask, is_causal=False)              # softmax(qkᵀ/√d + bias) v

    out = blk(x, attend=attend)
    return out, seen["k"].mean(1)


def _heads(blk: PreNormBlock, t: Tensor) -> Tensor:
    b, n, d = t.shape
    return t.reshape(b, n, blk.heads, d // blk.heads).transpose(1, 2)                  # [B, H, n, d_h]


def attention_probs(blk: PreNormBlock, x: Tensor, key_bias: Tensor | None = None) -> Tensor:
    """The full attention matrix of ``blk`` on input ``x [B, T, d]``: ``[B, H, T, T]`` (recomputed: SDPA /
    FlashAttention kernels do not return it). VisionZip needs it (attention mass *received*, a column sum);
    FastV and SparseVLM need only rows (:func:`attention_rows`)."""
    h = blk.norm1(x)
    b, t, d = h.shape
    q, k, _ = blk.qkv(h).reshape(b, t, 3, blk.heads, d // blk.heads).permute(2, 0, 3, 1, 4)
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if key_bias is not None:
        logits = logits + key_bias
    return logits.softmax(-1)


def attention_rows(blk: PreNormBlock, x: Tensor, rows: slice, key_bias: Tensor | None = None) -> Tensor:
    r"""Only the query ``rows`` of ``blk``'s attention on ``x [B, T, d]``: ``[B, H, R, T]``.

    $A_{r,:} = \mathrm{softmax}(q_r K^\top/\sqrt{d_h})$ needs the queries of the R text tokens and the keys of all
    T tokens — $O(R\,T)$ logits instead of $O(T^2)$, and a $d \times d$ projection for K alone — which is how
    FastV and SparseVLM read text-to-visual attention. Softmax is row-wise, so it equals
    ``attention_probs(blk, x)[:, :, rows]``."""
    h = blk.norm1(x)
    d = h.shape[-1]
    w, bias = blk.qkv.weight, blk.qkv.bias                                            # [3d, d], [3d]
    q = _heads(blk, F.linear(h[:, rows], w[:d], None if bias is None else bias[:d]))           # [B, H, R, d_h]
    k = _heads(blk, F.linear(h, w[d:2 * d], None if bias is None else bias[d:2 * d]))          # [B, H, T, d_h]
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if key_bias is not None:
        logits = logits + key_bias
    return logits.softmax(-1)


@dataclass(frozen=True)
class MLLMConfig:
    """Sizes of the mini MLLM (spec: patch 8, d 96, 3 + 3 blocks at 128²; the gpu variant: 512², patch 16,
    d 384, 6 + 6 blocks)."""

    image_size: int = 128
    patch: int = 8
    dim: int = 96
    heads: int = 4
    vit_blocks: int = 3
    lm_blocks: int = 3
    region_px: int = 32
    lowres_scale: float = 0.5

    def __post_init__(self) -> None:
        check_arguments("MLLMConfig", {**{name: Int(low=1) for name in ("image_size", "patch", "dim", "heads",
                                                                         "vit_blocks", "lm_blocks", "region_px")},
                                       "lowres_scale": Real(low=0.0, high=1.0, closed="right")}, vars(self))
        if self.image_size % self.patch:
            raise ValueError(f"MLLMConfig: patch must divide image_size={self.image_size}, got {self.patch}")
        if self.dim % 4:
            raise ValueError(f"MLLMConfig: dim must be a multiple of 4 (2-D sin-cos positions), got {self.dim}")
        if self.dim % self.heads:
            raise ValueError(f"MLLMConfig: heads must divide dim={self.dim}, got {self.heads}")
        if self.image_size % self.region_px or self.region_px % self.patch:
            raise ValueError(f"MLLMConfig: region_px must divide image_size={self.image_size} and be a multiple of "
                             f"patch={self.patch}, got {self.region_px}")

    @property
    def full_grid(self) -> int:
        return self.image_size // self.patch

    @property
    def low_grid(self) -> int:
        return int(self.image_size * self.lowres_scale) // self.patch

    @property
    def region_grid(self) -> tuple[int, int]:
        g = self.image_size // self.region_px
        return (g, g)

    @property
    def region_tokens(self) -> int:
        return (self.region_px // self.patch) ** 2


_CONFIG = Instance(MLLMConfig, "MLLMConfig")


class ViT(nn.Module):
    """The shared vision encoder: any crop at any scale, positions in full-resolution pixels."""

    @validate(config=_CONFIG)
    def __init__(self, config: MLLMConfig) -> None:
        super().__init__()
        self.config = config
        d = config.dim
        self.patch_embed = nn.Linear(3 * config.patch ** 2, d)
        self.scale_emb = nn.Embedding(2, d)
        self.blocks = nn.ModuleList([make_block(d, config.heads) for _ in range(config.vit_blocks)])
        self.ln = nn.LayerNorm(d)

    @validate(pixels=TensorC("B 3 H W", dtype="float"), pos=TensorC("N 2", dtype="float"), scale=Int(low=0, high=1))
    def embed(self, pixels: Tensor, pos: Tensor, scale: int) -> Tensor:
        """``pixels [B, 3, h, w]`` of a crop (already at its scale), ``pos [N, 2]`` full-res centres (one per patch)
        → ``[B, N, d]``; ``scale``: :data:`SCALE_FULL` or :data:`SCALE_LOW`."""
        p = self.config.patch
        if pixels.shape[2] % p or pixels.shape[3] % p:
            raise ValueError(f"ViT.embed: pixels must be [B, 3, h, w] with h, w multiples of patch={p}, got "
                             f"{tuple(pixels.shape)}")
        check_arguments("ViT.embed", {"pos": tensor(f"{(pixels.shape[2] // p) * (pixels.shape[3] // p)} 2")},
                        {"pos": pos})
        x = self.patch_embed(patchify(pixels, self.config.patch))
        return x + sincos_2d(pos, self.config.dim) + self.scale_emb.weight[scale]

    def forward(self, x: Tensor, *, tome_r: list[int] | None = None, extra: Tensor | None = None,
                return_last_attn: bool = False, tome_metric: str = "keys"):
        """Run the blocks on embedded tokens ``x [B, N, d]``.

        ``tome_r``: tokens merged after each block (ToMe, with size-weighted attention); ``extra [B, N, e]``
        (positions, footprints) is merged alongside; ``tome_metric``: the similarity ToMe matches on,
        ``"keys"`` (the paper's: the block's keys, averaged over heads) or ``"tokens"`` (the block outputs).
        ``return_last_attn``: also the last block's attention matrix (recomputed).
        Returns ``(tokens, extra, size, attn)``.
        """
        check_arguments("ViT.forward", {
            "x": tensor(f"B N {self.config.dim}"), "tome_r": Optional(ListOf(Int(low=0), length=len(self.blocks))),
            "extra": Optional(tensor("B N E")), "tome_metric": Choice("keys", "tokens")},
            {"x": x, "tome_r": tome_r, "extra": extra, "tome_metric": tome_metric})
        b, n, _ = x.shape
        size = x.new_ones(b, n)
        attn = None
        for i, blk in enumerate(self.blocks):
            bias = None if tome_r is None else size.log()[:, None, None, :]
            if return_last_attn and i == len(self.blocks) - 1:
                attn = attention_probs(blk, x, bias)
            x, keys = block_forward(blk, x, bias)
            if tome_r is not None and tome_r[i] > 0:
                metric = keys if tome_metric == "keys" else x
                x, size, extra = bipartite_merge(metric, x, size, tome_r[i], extra)
        return self.ln(x), extra, size, attn


class FusionLM(nn.Module):
    """The "LLM": [2 query tokens (digit, colour) ; visual tokens] → per-visual-token objectness and box."""

    @validate(config=_CONFIG)
    def __init__(self, config: MLLMConfig) -> None:
        super().__init__()
        self.config = config
        d = config.dim
        self.digit_emb = nn.Embedding(N_DIGITS, d)
        self.colour_emb = nn.Embedding(N_COLOURS, d)
        self.type_emb = nn.Embedding(3, d)                                            # digit, colour, visual
        self.vis_proj = nn.Linear(d, d)
        self.scale_emb = nn.Embedding(2, d)
        self.blocks = nn.ModuleList([make_block(d, config.heads) for _ in range(config.lm_blocks)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 5)

    @validate(query=QUERY)
    def query_tokens(self, query: Tensor) -> Tensor:
        """``query [B, 2]`` (digit, colour) → ``[B, 2, d]``."""
        return torch.stack([self.digit_emb(query[:, 0]) + self.type_emb.weight[0],
                            self.colour_emb(query[:, 1]) + self.type_emb.weight[1]], dim=1)

    @validate(query=QUERY)
    def query_embedding(self, query: Tensor) -> Tensor:
        """e_q ``[B, 2d]`` for the router: the two query embeddings, concatenated."""
        return torch.cat([self.digit_emb(query[:, 0]), self.colour_emb(query[:, 1])], dim=1)

    def visual_inputs(self, seq: VisualSequence) -> Tensor:
        return (self.vis_proj(seq.tokens) + sincos_2d(seq.pos, self.config.dim)
                + self.scale_emb(seq.scale) + self.type_emb.weight[2])

    @validate(seq=Instance(VisualSequence, "VisualSequence"))
    def forward(self, seq: VisualSequence, query: Tensor, *, reduce=None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Returns ``(objectness [B, T'], offsets [B, T', 4], pos [B, T', 2], footprint [B, T'])``
        of the visual tokens that reach the head (``T' < T`` when ``reduce`` prunes inside the LM), with
        objectness ``-inf`` on padding.

        ``reduce``: ``(layer, fn)``: before block ``layer`` the hidden states go through
        ``fn(block, h_query, h_visual, meta, valid) -> (h_visual, meta, valid)`` (FastV / SparseVLM hooks);
        ``meta [B, T, 3]`` holds (x, y, footprint).
        """
        check_arguments("FusionLM.forward", {"seq.tokens": _SEQ_TOKENS, "query": QUERY},
                        {"seq.tokens": seq.tokens, "query": query})
        q = self.query_tokens(query)
        v = self.visual_inputs(seq)
        n_q = q.shape[1]
        meta = torch.cat([seq.pos, seq.footprint[..., None]], dim=-1)
        valid = seq.valid
        for i, blk in enumerate(self.blocks):
            if reduce is not None and reduce[0] == i:
                v, meta, valid = reduce[1](blk, q, v, meta, valid)
            h = torch.cat([q, v], dim=1)
            bias = _padding_bias(valid, n_q, h.dtype)
            h = blk(h, attn_mask=None if bias is None else bias)
            q, v = h[:, :n_q], h[:, n_q:]
        out = self.head(self.ln(v))
        obj = out[..., 0].masked_fill(~valid, float("-inf"))
        return obj, out[..., 1:], meta[..., :2], meta[..., 2]


def _padding_bias(valid: Tensor, n_q: int, dtype: torch.dtype) -> Tensor | None:
    if bool(valid.all()):
        return None
    keep = torch.cat([valid.new_ones(valid.shape[0], n_q), valid], dim=1)
    return torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, float("-inf"))[:, None, None, :]


LOG_SIZE_CLAMP = 4.0      # |log(w / footprint)| is clamped here before exp (boxes 1/55 .. 55 footprints wide)


def offsets_to_boxes(offsets: Tensor, pos: Tensor, footprint: Tensor) -> Tensor:
    r"""Every token's box from its head outputs ``offsets [..., 4] = (u, v, a, b)``: normalised centre offset and
    log size in units of the token's footprint s (inferred parameterisation, the Faster R-CNN / DETR one),

    $$c = p + s\,(u, v), \qquad (w, h) = s\,(e^{a}, e^{b}), \qquad \text{box} = (c - \tfrac{w, h}{2},\;
    c + \tfrac{w, h}{2}),$$

    with $a, b$ clamped to $\pm$ :data:`LOG_SIZE_CLAMP`. ``pos [..., 2]``, ``footprint [...]`` → ``[..., 4]``
    pixels (x1, y1, x2, y2); always $x_2 \ge x_1$, $y_2 \ge y_1$."""
    s = footprint[..., None]
    c = pos + s * offsets[..., :2]
    half = s * offsets[..., 2:].clamp(-LOG_SIZE_CLAMP, LOG_SIZE_CLAMP).exp() / 2
    return torch.cat([c - half, c + half], dim=-1)


def box_targets(boxes: Tensor, pos: Tensor, footprint: Tensor) -> Tensor:
    """The head outputs that :func:`offsets_to_boxes` maps to ``boxes [B, 4]`` from every token:
    ``pos [B, T, 2]``, ``footprint [B, T]`` → ``[B, T, 4]`` (u, v, log w/s, log h/s)."""
    s = footprint.clamp(min=1e-6)[..., None]
    centre = (boxes[:, None, :2] + boxes[:, None, 2:]) / 2
    wh = (boxes[:, None, 2:] - boxes[:, None, :2]).clamp(min=1e-3)
    return torch.cat([(centre - pos) / s, (wh / s).log()], dim=-1)


def decode_boxes(obj: Tensor, offsets: Tensor, pos: Tensor, footprint: Tensor) -> Tensor:
    """The box (:func:`offsets_to_boxes`) of the arg-max-objectness token ``→ [B, 4]`` pixels."""
    best = obj.argmax(1)
    ar = torch.arange(obj.shape[0])
    return offsets_to_boxes(offsets[ar, best], pos[ar, best], footprint[ar, best])


def generalized_iou(a: Tensor, b: Tensor) -> Tensor:
    r"""Paired GIoU of boxes ``a, b [..., 4]`` (x1 <= x2, y1 <= y2): $\mathrm{IoU} - |C \setminus (A \cup B)| / |C|$
    with C the smallest enclosing box; in [-1, 1], differentiable, 1 iff the boxes coincide."""
    lo, hi = torch.maximum(a[..., :2], b[..., :2]), torch.minimum(a[..., 2:], b[..., 2:])
    inter = (hi - lo).clamp(min=0).prod(-1)
    area_a = (a[..., 2:] - a[..., :2]).prod(-1)
    area_b = (b[..., 2:] - b[..., :2]).prod(-1)
    union = (area_a + area_b - inter).clamp(min=1e-9)
    enclose = (torch.maximum(a[..., 2:], b[..., 2:]) - torch.minimum(a[..., :2], b[..., :2])).prod(-1).clamp(min=1e-9)
    return inter / union - (enclose - union) / enclose


def regression_tokens(pos: Tensor, footprint: Tensor, boxes: Tensor, valid: Tensor) -> tuple[Tensor, Tensor]:
    """Tokens that regress the box: those whose footprint holds the box centre and those whose centre lies inside
    the box (``[B, T]`` bool each: ``holds``, ``regress``). Returns ``(holds, regress)``."""
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2                                        # [B, 2]
    dist = (pos - centre[:, None]).abs().amax(-1)                                     # L-inf distance [B, T]
    holds = (dist <= footprint / 2) & valid
    inside = ((pos >= boxes[:, None, :2]) & (pos <= boxes[:, None, 2:])).all(-1) & valid
    return holds, holds | inside


def grounding_loss(obj: Tensor, offsets: Tensor, pos: Tensor, footprint: Tensor, boxes: Tensor,
                   giou_weight: float = 1.0) -> Tensor:
    r"""Cross-entropy over visual tokens (target: the finest token whose footprint holds the box centre)
    + the box loss on the regressing tokens (:func:`regression_tokens`), averaged per image and then over images:
    L1 on the normalised (centre offset, log size) of :func:`box_targets` + ``giou_weight`` · (1 − GIoU) of the
    decoded box, a scale-free term (an error of one pixel costs a 6-px target as much IoU as three pixels cost
    an 18-px one)."""
    valid = torch.isfinite(obj)
    holds, regress = regression_tokens(pos, footprint, boxes, valid)
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2
    dist = (pos - centre[:, None]).abs().amax(-1)
    # finest footprint first, nearest centre to break ties
    rank = torch.where(holds, footprint + 1e-3 * dist, torch.full_like(dist, float("inf")))
    ce = F.cross_entropy(obj, rank.argmin(1))
    # each image weighs the same whatever its box size: a mean over its own regressing tokens, then over images
    # (a per-token mean lets the 4-9 tokens inside a medium box outvote the 1-2 of a small one)
    per_image = regress.sum(1, keepdim=True)
    w = regress.float() / per_image.clamp(min=1) / (per_image > 0).sum().clamp(min=1)
    l1 = ((offsets - box_targets(boxes, pos, footprint)).abs().sum(-1) * w).sum()
    giou = generalized_iou(offsets_to_boxes(offsets, pos, footprint), boxes[:, None, :].expand(-1, pos.shape[1], -1))
    return ce + l1 + giou_weight * ((1 - giou) * w).sum()


class MiniGroundingMLLM(nn.Module):
    """ViT + FusionLM with encoders for the three views every method needs."""

    @validate(config=Optional(_CONFIG))
    def __init__(self, config: MLLMConfig | None = None) -> None:
        super().__init__()
        self.config = MLLMConfig() if config is None else config
        self.vit = ViT(self.config)
        self.lm = FusionLM(self.config)

    def _check_images(self, images: Tensor) -> Tensor:
        s = self.config.image_size
        check_arguments(type(self).__name__, {"images": tensor(f"B 3 {s} {s}")}, {"images": images})
        return images

    def full_inputs(self, images: Tensor) -> tuple[Tensor, Tensor]:
        """Embedded full-resolution tokens ``[B, 256, d]`` and ``meta [256, 3]`` (x, y, footprint)."""
        images = self._check_images(images)
        c = self.config
        pos = token_centres(c.full_grid, c.full_grid, c.patch)
        meta = torch.cat([pos, torch.full((len(pos), 1), float(c.patch))], 1)
        return self.vit.embed(images, pos, SCALE_FULL), meta

    def encode_full(self, images: Tensor) -> VisualSequence:
        """The full-resolution reference: all (H/p)² tokens through the ViT."""
        images = self._check_images(images)
        x, meta = self.full_inputs(images)
        tokens, _, _, _ = self.vit(x)
        b, n = tokens.shape[:2]
        return single_view_sequence(tokens, meta.expand(b, -1, -1), SCALE_FULL, n_vit=b * n)

    def encode_low(self, images: Tensor) -> tuple[Tensor, Tensor]:
        """Low view (``lowres_scale``, area resize): tokens ``[B, N_L, d]`` and centres ``[N_L, 2]``."""
        images = self._check_images(images)
        c = self.config
        low = F.interpolate(images, scale_factor=c.lowres_scale, mode="area")
        pos = token_centres(c.low_grid, c.low_grid, c.patch / c.lowres_scale)
        tokens, _, _, _ = self.vit(self.vit.embed(low, pos, SCALE_LOW))
        return tokens, pos

    def encode_regions(self, images: Tensor, region_ids: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """Active regions at full resolution, each encoded as its own sequence of (region_px/p)² tokens.
        Returns per image ``[k_b, n_r, d]`` tokens and ``[k_b, n_r, 2]`` centres."""
        images = self._check_images(images)
        c = self.config
        _check_region_ids("MiniGroundingMLLM.encode_regions", region_ids, images.shape[0],
                          c.region_grid[0] * c.region_grid[1])
        r, n_r = c.region_px, c.region_tokens
        crops, poss, counts = [], [], []
        local = token_centres(r // c.patch, r // c.patch, c.patch)                  # [n_r, 2] inside a region
        for i, ids in enumerate(region_ids):
            corners = region_corners(ids, c.region_grid, r)                         # [k, 2]
            for x0, y0 in corners.long().tolist():
                crops.append(images[i, :, y0:y0 + r, x0:x0 + r])
            poss.append(corners[:, None, :] + local[None])
            counts.append(len(ids))
        if crops:
            pix = torch.stack(crops)
            pos_all = torch.cat(poss)                                              # [K, n_r, 2]
            x = self.vit.patch_embed(patchify(pix, c.patch)) + sincos_2d(pos_all, c.dim) \
                + self.vit.scale_emb.weight[SCALE_FULL]
            tokens, _, _, _ = self.vit(x)
        else:
            tokens = images.new_zeros(0, n_r, c.dim)
        return list(tokens.split(counts)), poss

    def sequence_from_regions(self, images: Tensor, region_ids: list[Tensor],
                              low: tuple[Tensor, Tensor] | None = None) -> VisualSequence:
        """[low view] ++ [given regions at full resolution], order preserved."""
        c = self.config
        images = self._check_images(images)
        _check_region_ids("MiniGroundingMLLM.sequence_from_regions", region_ids, images.shape[0],
                          c.region_grid[0] * c.region_grid[1])
        low_tokens, low_pos = low if low is not None else self.encode_low(images)
        rt, rp = self.encode_regions(images, region_ids)
        return build_order_preserving_sequence(low_tokens, low_pos, rt, rp, region_ids,
                                               n_regions=c.region_grid[0] * c.region_grid[1],
                                               low_footprint=c.patch / c.lowres_scale, region_footprint=c.patch)

    def low_sequence(self, images: Tensor, low: tuple[Tensor, Tensor] | None = None) -> VisualSequence:
        """The low-resolution-only reference (N_L tokens)."""
        low_tokens, low_pos = low if low is not None else self.encode_low(images)
        b, n = low_tokens.shape[:2]
        meta = torch.cat([low_pos, torch.full((n, 1), self.config.patch / self.config.lowres_scale)], 1)
        return single_view_sequence(low_tokens, meta.expand(b, -1, -1), SCALE_LOW, n_vit=b * n)

    def ground(self, seq: VisualSequence, query: Tensor, *, reduce=None) -> Tensor:
        """Predicted boxes ``[B, 4]`` (full-resolution pixels)."""
        return decode_boxes(*self.lm(seq, query, reduce=reduce))

    @validate(seq=Instance(VisualSequence, "VisualSequence"))
    def loss(self, seq: VisualSequence, query: Tensor, boxes: Tensor) -> Tensor:
        """The grounding loss of :func:`grounding_loss` for true ``boxes [B, 4]``."""
        check_arguments("MiniGroundingMLLM.loss", {"seq.tokens": _SEQ_TOKENS, "boxes": _BOXES},
                        {"seq.tokens": seq.tokens, "boxes": boxes})
        return grounding_loss(*self.lm(seq, query), boxes)


_BOXES = Boxes("B 4")


def _check_region_ids(where: str, region_ids: object, batch: int, n_regions: int) -> None:
    """One 1-D integer tensor of distinct ids in ``[0, n_regions)`` per image."""
    check_arguments(where, {"region_ids": ListOf(IdTensor("K", n_regions, distinct=True), length=batch)},
                    {"region_ids": region_ids})


class SmartRes(nn.Module):
    """Pixel-space resolution routing.

    Args:
        vision_encoder: the :class:`MiniGroundingMLLM` whose ViT encodes the views (its LM is not used here).
        router: a :class:`ResolutionRouter` over the low-resolution tokens.
        lowres_scale: must equal the model's low-view scale (½).
        region_px: must equal the model's region side.
        threshold, k_min, k_max: the selection rule of :func:`select_regions`.
    """

    @validate(vision_encoder=Instance(MiniGroundingMLLM, "MiniGroundingMLLM"),
              router=Instance(ResolutionRouter, "ResolutionRouter"), lowres_scale=Real(low=0.0, closed="neither"),
              region_px=Int(low=1), threshold=Real(low=0.0, high=1.0, closed="neither"))
    def __init__(self, vision_encoder: MiniGroundingMLLM, router: ResolutionRouter, lowres_scale: float = 0.5,
                 region_px: int = 32, threshold: float = 0.5, k_min: int = 1, k_max: int | None = None) -> None:
        super().__init__()
        c = vision_encoder.config
        if lowres_scale != c.lowres_scale:
            raise ValueError(f"SmartRes: lowres_scale must equal the encoder's {c.lowres_scale}, got {lowres_scale}")
        if region_px != c.region_px:
            raise ValueError(f"SmartRes: region_px must equal the encoder's {c.region_px}, got {region_px}")
        check_k_range("SmartRes", k_min, k_max, c.region_grid[0] * c.region_grid[1])
        self.encoder, self.router = vision_encoder, router
        self.threshold, self.k_min, self.k_max = threshold, k_min, k_max

    def route(self, low_tokens: Tensor, query_emb: Tensor) -> Tensor:
        c = self.encoder.config
        return self.router(low_tokens, (c.low_grid, c.low_grid), query_emb, c.region_grid)

    def encode(self, images: Tensor, query_emb: Tensor) -> VisualSequence:
        """``images [B, 3, S, S]``, ``query_emb [B, q]`` → the order-preserving sequence; only the routed
        regions go through the ViT at full resolution."""
        low = self.encoder.encode_low(images)                                        # global view
        logits = self.route(low[0], query_emb)                                        # [B, gh·gw]
        ids = select_regions(logits, self.threshold, self.k_min, self.k_max)
        return self.encoder.sequence_from_regions(images, ids, low=low)
