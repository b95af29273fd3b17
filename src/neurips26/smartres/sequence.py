"""Token positions in one full-resolution frame and the order-preserving visual sequence.

Every token carries the pixel coordinates of the centre of its footprint in the *full-resolution* image
(so the box the model reads off a token is in full-resolution pixels whatever the token's scale). For
patch size p, a token at scale s (1 = full, ½ = low) covers p/s full-resolution pixels:

$$\\mathrm{pos}(i, j) = \\big(x_0 + (j + \\tfrac12)\\,p/s,\\; y_0 + (i + \\tfrac12)\\,p/s\\big)$$

with $(x_0, y_0)$ the corner of the encoded crop (0 for the whole image, the region's corner for a region).
Layout (inferred): [global tokens, raster order] ++ [active regions in raster order of region id, each
region's tokens in raster order].
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ._checks import check_float, check_int, check_tensor

#: ``scale`` ids carried by the tokens
SCALE_FULL, SCALE_LOW = 0, 1
#: ``region_ids`` of global (low-resolution) tokens and of padding
GLOBAL_ID, PAD_ID = -1, -2


def token_centres(rows: int, cols: int, footprint: float, x0: float = 0.0, y0: float = 0.0) -> Tensor:
    """Centres ``[rows·cols, 2]`` (x, y) in full-resolution pixels of a raster grid of tokens, each covering
    ``footprint`` pixels, whose top-left corner is at (x0, y0)."""
    check_int("rows", rows, 1)
    check_int("cols", cols, 1)
    check_float("footprint", footprint, low=0.0, open_low=True)
    check_float("x0", x0)
    check_float("y0", y0)
    i = torch.arange(rows, dtype=torch.float32)
    j = torch.arange(cols, dtype=torch.float32)
    ys, xs = torch.meshgrid(y0 + (i + 0.5) * footprint, x0 + (j + 0.5) * footprint, indexing="ij")
    return torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1)


def region_corners(region_ids: Tensor, region_grid: tuple[int, int], region_px: int) -> Tensor:
    """Top-left corners ``[k, 2]`` (x, y, pixels) of raster region ids."""
    gw = region_grid[1]
    return torch.stack([(region_ids % gw) * region_px, (region_ids // gw) * region_px], dim=1).float()


@dataclass
class VisualSequence:
    """The visual tokens handed to the LLM, padded to one length per batch.

    Attributes:
        tokens: ``[B, T, d]`` ViT outputs.
        pos: ``[B, T, 2]`` (x, y) token centres in full-resolution pixels.
        scale: ``[B, T]`` long, :data:`SCALE_FULL` or :data:`SCALE_LOW`.
        region_ids: ``[B, T]`` long: the region of a high-resolution token, :data:`GLOBAL_ID` for the global
            view, :data:`PAD_ID` for padding.
        n_vit_tokens: tokens the ViT encoded for this batch (all images together).
        footprint: ``[B, T]`` side in full-resolution pixels of each token's footprint.
    """

    tokens: Tensor
    pos: Tensor
    scale: Tensor
    region_ids: Tensor
    n_vit_tokens: int
    footprint: Tensor | None = None

    @property
    def valid(self) -> Tensor:
        """``[B, T]`` bool: True where a token is not padding."""
        return self.region_ids != PAD_ID

    @property
    def n_llm_tokens(self) -> Tensor:
        """``[B]`` visual tokens per image seen by the LLM."""
        return self.valid.sum(1)


def build_order_preserving_sequence(low_tokens: Tensor, low_pos: Tensor, region_tokens: list[Tensor],
                                    region_pos: list[Tensor], region_ids: list[Tensor], *,
                                    n_regions: int | None = None, low_footprint: float = 0.0,
                                    region_footprint: float = 0.0) -> VisualSequence:
    """Concatenate, per image, [global tokens] ++ [region tokens, regions sorted by id].

    Args:
        low_tokens: ``[B, N_L, d]`` global (low-resolution) tokens in raster order.
        low_pos: ``[B, N_L, 2]`` or ``[N_L, 2]`` their full-resolution centres.
        region_tokens: per image ``[k_b, n_r, d]`` tokens of its active regions (raster within a region).
        region_pos: per image ``[k_b, n_r, 2]`` their full-resolution centres.
        region_ids: per image ``[k_b]`` long region ids (any order, distinct, in ``[0, n_regions)``).
        n_regions: the region count, to validate ids (optional).
        low_footprint, region_footprint: footprint sides in pixels, stored in ``footprint`` (0: unknown).
    """
    check_tensor("low_tokens", low_tokens, ndim=3)
    b, n_l, d = low_tokens.shape
    if low_pos.dim() == 2:
        low_pos = low_pos[None].expand(b, -1, -1)
    check_tensor("low_pos", low_pos, ndim=3)
    if low_pos.shape != (b, n_l, 2):
        raise ValueError(f"low_pos must have shape [{b}, {n_l}, 2] or [{n_l}, 2], got {tuple(low_pos.shape)}")
    for name, seq in (("region_tokens", region_tokens), ("region_pos", region_pos), ("region_ids", region_ids)):
        if not isinstance(seq, list | tuple) or len(seq) != b:
            raise ValueError(f"{name} must be a list of {b} tensors (one per image), got {type(seq).__name__} "
                             f"of length {len(seq) if hasattr(seq, '__len__') else '?'}")
    if n_regions is not None:
        check_int("n_regions", n_regions, 1)
    check_float("low_footprint", low_footprint, low=0.0)
    check_float("region_footprint", region_footprint, low=0.0)
    for i in range(b):
        check_tensor(f"region_tokens[{i}]", region_tokens[i], ndim=3)
        check_tensor(f"region_pos[{i}]", region_pos[i], ndim=3)
    rows = []
    for i in range(b):
        ids = region_ids[i]
        if not isinstance(ids, Tensor) or ids.dim() != 1 or ids.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"region_ids[{i}] must be a 1-d integer tensor, got {ids!r}")
        if ids.numel() and (int(ids.min()) < 0 or (n_regions is not None and int(ids.max()) >= n_regions)):
            raise ValueError(f"region_ids[{i}] must lie in [0, {n_regions}), got {ids.tolist()}")
        if ids.unique().numel() != ids.numel():
            raise ValueError(f"region_ids[{i}] must be distinct, got {ids.tolist()}")
        toks, pos = region_tokens[i], region_pos[i]
        k = ids.numel()
        if toks.dim() != 3 or toks.shape[0] != k or toks.shape[2] != d:
            raise ValueError(f"region_tokens[{i}] must have shape [{k}, n_r, {d}], got {tuple(toks.shape)}")
        if pos.shape != (*toks.shape[:2], 2):
            raise ValueError(f"region_pos[{i}] must have shape {(*toks.shape[:2], 2)}, got {tuple(pos.shape)}")
        order = ids.long().argsort()                                               # regions in raster order
        n_r = toks.shape[1]
        rid = ids.long()[order].repeat_interleave(n_r)
        rows.append((torch.cat([low_tokens[i], toks[order].reshape(-1, d)]),
                     torch.cat([low_pos[i], pos[order].reshape(-1, 2).to(low_pos.dtype)]),
                     torch.cat([torch.full((n_l,), GLOBAL_ID, dtype=torch.long), rid])))
    t = max(len(r[0]) for r in rows)
    tokens = low_tokens.new_zeros(b, t, d)
    pos_out = low_pos.new_zeros(b, t, 2)
    rids = torch.full((b, t), PAD_ID, dtype=torch.long)
    for i, (tk, ps, ri) in enumerate(rows):
        tokens[i, :len(tk)], pos_out[i, :len(tk)], rids[i, :len(tk)] = tk, ps, ri
    scale = torch.where(rids == GLOBAL_ID, SCALE_LOW, SCALE_FULL)
    footprint = torch.where(rids == GLOBAL_ID, float(low_footprint), float(region_footprint))
    n_vit = b * n_l + sum(int(tk.shape[0] * tk.shape[1]) for tk in region_tokens)
    return VisualSequence(tokens, pos_out, scale, rids, n_vit, footprint)
