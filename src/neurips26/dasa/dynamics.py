r"""Dynamic/static decoupling: the per-token dynamics score, the per-frame keep mask and the region mask.

All three are **inferred** from the abstract (the paper body is not available; see the package docstring).

Default score, a codec-style residual on denoised latent tokens (here: pixel patches),

$$s_{f,i} = \frac{\lVert \hat x_f[i] - \hat x_{f-1}[i] \rVert}{\lVert \hat x_{f-1}[i] \rVert + \epsilon},$$

or, per layer, the TempCache-like key distance $s = 1 - \cos(K_f[i], K_{f-1}[i])$.
A token is *dynamic* when $s > \tau$, with $\tau$ the per-frame $(1-\rho)$-quantile (keep ratio $\rho$) or an
absolute threshold on the normalised score; the mask is then dilated (motion halos).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import torch

from ..constraints import Choice, Instance, Int, Optional, Real, Tensor, check_arguments, validate

EPS = 1e-6
SCORES = ("latent_l2", "key_cos")
STATIC_POLICIES = ("local", "skip", "full")


@dataclass
class DASAConfig:
    """Settings of DASA (defaults inferred, see the spec).

    Attributes:
        keep_ratio: fraction $\\rho \\in (0, 1]$ of each non-keyframe frame's tokens stored in the cache
            (the top-$\\rho$ by dynamics score, before dilation). Give exactly one of keep_ratio / threshold.
        threshold: absolute threshold $\\tau$ on the normalised score instead of a quantile.
        score: ``"latent_l2"`` (relative L2 residual of denoised tokens) or ``"key_cos"`` (1 − cos of keys).
        region_size: ``(rh, rw)`` tokens per compute region; must divide the token grid. ``None`` (default):
            from the grid (:meth:`for_grid`): per axis the largest divisor of the side that is <= min(4, side/4),
            i.e. the spec's 4×4 on large grids and at least 4 regions per axis on small ones (2×2 on 8×8).
        dilation: dilate the token mask (and the region mask) by this many cells (Chebyshev, 3×3 per step).
            ``None`` (default): 1 when the region grid has >= 8 regions per axis, else 0 (one step of dilation
            on a 4×4 region grid marks most of the frame dynamic and leaves nothing sparse).
        keyframe_every: every G-th chunk (the first included) is stored in full, like a codec I-frame.
        static_policy: what queries of static regions attend to: ``"full"`` (same as dynamic), ``"local"``
            (current chunk + latest keyframe) or ``"skip"`` (current chunk only).
        count_bias: add $\\log n_i$ to the logit of a cache entry standing for $n_i$ frames.
    """

    keep_ratio: float | None = 0.3
    threshold: float | None = None
    score: Literal["latent_l2", "key_cos"] = "latent_l2"
    region_size: tuple[int, int] | None = None
    dilation: int | None = None
    keyframe_every: int = 4
    static_policy: Literal["local", "skip", "full"] = "local"
    count_bias: bool = True

    def __post_init__(self) -> None:
        if (self.keep_ratio is None) == (self.threshold is None):
            raise ValueError("give exactly one of keep_ratio and threshold, got "
                             f"keep_ratio={self.keep_ratio!r}, threshold={self.threshold!r}")
        check_arguments("DASAConfig", _CONFIG, vars(self))
        if self.region_size is not None:
            rs = tuple(self.region_size) if isinstance(self.region_size, (tuple, list)) else None
            if rs is None or len(rs) != 2 or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1
                                                     for r in rs):
                raise ValueError(f"region_size must be None or two positive ints (rh, rw), got {self.region_size!r}")
            self.region_size = rs

    def for_grid(self, grid_hw: tuple[int, int]) -> DASAConfig:
        """This config with ``region_size`` and ``dilation`` resolved for a token grid ``(h, w)`` (itself when
        both are set): see the attribute docs."""
        if self.region_size is not None and self.dilation is not None:
            return self
        gh, gw = _check_grid(grid_hw, None)
        rs = self.region_size or (_region_side(gh), _region_side(gw))
        dil = self.dilation
        if dil is None:
            dil = 1 if min(gh // rs[0], gw // rs[1]) >= 8 else 0
        return replace(self, region_size=rs, dilation=dil)


_CONFIG = {"keep_ratio": Optional(Real(low=0.0, high=1.0, closed="right")),
           "threshold": Optional(Real(allow_inf=True)), "score": Choice(*SCORES), "dilation": Optional(Int(low=0)),
           "keyframe_every": Int(low=1), "static_policy": Choice(*STATIC_POLICIES)}


def _region_side(side: int) -> int:
    """The largest divisor of ``side`` that is <= min(4, side / 4) (at least 1)."""
    cap = max(1, min(4, side // 4))
    return max(d for d in range(1, cap + 1) if side % d == 0)


@validate(prev=Tensor("B N C"), cur=Tensor("B N C"), kind=Choice(*SCORES))
def token_dynamics(prev: torch.Tensor, cur: torch.Tensor, kind: str = "latent_l2") -> torch.Tensor:
    """Per-token dynamics score ``[B, N]`` of ``cur`` against ``prev`` (both ``[B, N, C]``).

    ``latent_l2``: $\\lVert c - p \\rVert / (\\lVert p \\rVert + \\epsilon)$; ``key_cos``: $1 - \\cos(p, c)$.
    """
    if kind == "latent_l2":
        return (cur - prev).norm(dim=-1) / (prev.norm(dim=-1) + EPS)
    return 1.0 - torch.nn.functional.cosine_similarity(cur, prev, dim=-1, eps=EPS)         # "key_cos"


@validate(radius=Int(low=0))
def dilate(mask: torch.Tensor, radius: int) -> torch.Tensor:
    """Binary dilation of ``mask [B, H, W]`` (bool) by ``radius`` steps of the 3×3 square (max-pool)."""
    if radius == 0:
        return mask.clone()
    k = 2 * radius + 1
    # one max-pool with a (2r+1)² window equals r iterations of the 3×3 square structuring element
    out = torch.nn.functional.max_pool2d(mask[:, None].float(), k, stride=1, padding=radius)
    return out[:, 0] > 0.5


def _check_grid(grid_hw: object, n: int | None) -> tuple[int, int]:
    if not (isinstance(grid_hw, (tuple, list)) and len(grid_hw) == 2
            and all(isinstance(g, int) and g >= 1 for g in grid_hw)):
        raise ValueError(f"grid_hw must be two positive ints (h, w), got {grid_hw!r}")
    gh, gw = grid_hw
    if n is not None and gh * gw != n:
        raise ValueError(f"grid_hw {tuple(grid_hw)} has {gh * gw} tokens, scores have {n}")
    return gh, gw


def _check_region(grid_hw: tuple[int, int], region_size: tuple[int, int]) -> None:
    if grid_hw[0] % region_size[0] or grid_hw[1] % region_size[1]:
        raise ValueError(f"region_size {tuple(region_size)} must divide the token grid {tuple(grid_hw)}")


_SCORES_2D = dict(scores=Tensor("B N"), cfg=Instance(DASAConfig))


def _select(scores: torch.Tensor, cfg: DASAConfig) -> torch.Tensor:
    """Threshold ``scores [B, N]``: top-ρ per row (ties broken by index), or ``s > τ``."""
    if cfg.threshold is not None:
        return scores > cfg.threshold
    b, n = scores.shape
    k = max(1, math.ceil(cfg.keep_ratio * n - 1e-9))
    idx = scores.topk(k, dim=1).indices
    keep = torch.zeros(b, n, dtype=torch.bool, device=scores.device)
    return keep.scatter_(1, idx, True)


@validate(**_SCORES_2D)
def token_mask(scores: torch.Tensor, grid_hw: tuple[int, int], cfg: DASAConfig) -> torch.Tensor:
    """Dynamic-token mask ``bool [B, N]`` of one frame's scores ``[B, N]`` (N = h·w, raster order):
    quantile/threshold, then dilation by ``cfg.dilation`` tokens."""
    gh, gw = _check_grid(grid_hw, scores.shape[1])
    cfg = cfg.for_grid((gh, gw))
    keep = _select(scores, cfg).view(-1, gh, gw)
    return dilate(keep, cfg.dilation).view(scores.shape)


@validate(scores=Tensor("B N"))
def region_scores(scores: torch.Tensor, grid_hw: tuple[int, int], region_size: tuple[int, int]) -> torch.Tensor:
    """Mean token score per region: ``[B, N]`` -> ``[B, R]`` (R = (h/rh)·(w/rw), raster order)."""
    gh, gw = _check_grid(grid_hw, scores.shape[1])
    rh, rw = region_size
    _check_region((gh, gw), region_size)
    s = scores.view(-1, gh // rh, rh, gw // rw, rw)
    return s.mean(dim=(2, 4)).reshape(scores.shape[0], -1)


@validate(**_SCORES_2D)
def region_mask(scores: torch.Tensor, grid_hw: tuple[int, int], cfg: DASAConfig) -> torch.Tensor:
    """Dynamic-region mask ``bool [B, R]`` from token scores ``[B, N]``: region means, top-ρ of the regions
    (or the threshold), then dilation by ``cfg.dilation`` regions."""
    cfg = cfg.for_grid(_check_grid(grid_hw, scores.shape[1]))
    rs = region_scores(scores, grid_hw, cfg.region_size)
    gh, gw = grid_hw
    grid = (gh // cfg.region_size[0], gw // cfg.region_size[1])
    keep = _select(rs, cfg).view(-1, *grid)
    return dilate(keep, cfg.dilation).view(rs.shape)


def token_region_index(grid_hw: tuple[int, int], region_size: tuple[int, int]) -> torch.Tensor:
    """Region id ``[h·w]`` (long) of each token of a frame in raster order."""
    gh, gw = grid_hw
    rh, rw = region_size
    _check_region(grid_hw, region_size)
    hh, ww = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    return ((hh // rh) * (gw // rw) + ww // rw).reshape(-1)
