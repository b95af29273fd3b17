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

from neurips26.constraints import AnyOf, Int, Optional, Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorC

from ._checks import IdTensor, ListOf

#: ``scale`` ids carried by the tokens
SCALE_FULL, SCALE_LOW = 0, 1
#: ``region_ids`` of global (low-resolution) tokens and of padding
GLOBAL_ID, PAD_ID = -1, -2


@validate(rows=Int(low=1), cols=Int(low=1), footprint=Real(low=0.0, closed="neither"), x0=Real(), y0=Real())
def token_centres(rows: int, cols: int, footprint: float, x0: float = 0.0, y0: float = 0.0) -> Tensor:
    """Centres ``[rows·cols, 2]`` (x, y) in full-resolution pixels of a raster grid of tokens, each covering
    ``footprint`` pixels, whose top-left corner is at (x0, y0)."""
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


def single_view_sequence(tokens: Tensor, meta: Tensor, scale: int, *, n_vit: int) -> VisualSequence:
    """A VisualSequence of one view (every token global, none padding): tokens ``[B, T, d]`` with
    ``meta [B, T, 3]`` (x, y, footprint) and one ``scale`` id (:data:`SCALE_FULL` / :data:`SCALE_LOW`)."""
    b, t = tokens.shape[:2]
    rid = torch.full((b, t), GLOBAL_ID, dtype=torch.long)
    return VisualSequence(tokens, meta[..., :2], torch.full((b, t), scale, dtype=torch.long), rid, n_vit,
                          meta[..., 2])


@validate(low_tokens=TensorC("B L D", dtype="float"),
          low_pos=AnyOf(TensorC("L 2", dtype="float"), TensorC("B L 2", dtype="float")),
          region_tokens=ListOf(TensorC("K R D", dtype="float"), length="B"),
          region_pos=ListOf(TensorC("K R 2", dtype="float"), length="B"), n_regions=Optional(Int(low=1)),
          low_footprint=Real(low=0.0), region_footprint=Real(low=0.0))
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
    b, n_l, d = low_tokens.shape
    if low_pos.dim() == 2:
        low_pos = low_pos[None].expand(b, -1, -1)
    check_arguments("build_order_preserving_sequence",
                    {"region_ids": ListOf(IdTensor("K", n_regions, distinct=True), length=b)},
                    {"region_ids": region_ids})
    for i in range(b):  # per image, the three lists agree on its region count k and tokens per region n_r
        k, toks, pos = region_ids[i].numel(), region_tokens[i], region_pos[i]
        if toks.shape[0] != k:
            raise ValueError(f"build_order_preserving_sequence: region_tokens[{i}] must have shape [{k}, n_r, {d}] "
                             f"(one row per id of region_ids[{i}]), got {tuple(toks.shape)}")
        if pos.shape != (*toks.shape[:2], 2):
            raise ValueError(f"build_order_preserving_sequence: region_pos[{i}] must have shape "
                             f"{(*toks.shape[:2], 2)}, got {tuple(pos.shape)}")
    rows = []
    for i in range(b):
        ids = region_ids[i]
        toks, pos = region_tokens[i], region_pos[i]
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
