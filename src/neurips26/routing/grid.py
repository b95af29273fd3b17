r"""The depth x width scaling grid and its equal-parameter pairs.

Parameters grow as $\approx 13 d^2 L$, so doubling the width $d$ equals quadrupling the depth $L$:
$(d, 4L)$ and $(2d, L)$ are an equal-parameter (deep, wide) pair. Training FLOPs per sample follow
$\approx 6 \cdot \text{params} \cdot T$ plus the attention term (see :func:`train_step_flops`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..constraints import ArrayLike, Int, Real, validate
from .model import DecoderConfig, count_params, tour_flops, train_step_flops

__all__ = ["GridPoint", "equal_param_pairs", "scaling_grid"]


@dataclass(frozen=True)
class GridPoint:
    """One configuration with its parameter count and FLOPs at ``n_nodes`` cities.

    ``train_flops_per_sample`` is averaged over the uniform sub-path step $t$; ``tour_flops`` is one
    greedy tour (forward only).
    """

    config: DecoderConfig
    n_params: int
    train_flops_per_sample: float
    tour_flops: int
    n_nodes: int

    @property
    def label(self) -> str:
        return self.config.label


@validate(widths=ArrayLike(ndim=1, dtype="integer"), depths=ArrayLike(ndim=1, dtype="integer"), n_nodes=Int(low=3))
def scaling_grid(widths: Sequence[int], depths: Sequence[int], *, n_nodes: int = 20,
                 **config: Any) -> list[GridPoint]:
    """Every (d, L) in ``widths`` x ``depths`` (width-major) as :class:`GridPoint`; ``config`` goes to
    :class:`DecoderConfig` (``ff_mult``, ``head_dim``, flags)."""
    if not (len(widths) and len(depths)):
        raise ValueError(f"scaling_grid: widths and depths must be non-empty, got {widths!r} and {depths!r}")
    n_nodes = int(n_nodes)
    out = []
    for d in widths:
        for L in depths:
            cfg = DecoderConfig(d_model=d, n_layers=L, **config)
            # mean over t = 1..n-2 of the per-sample training FLOPs with m = n - t remaining
            mean_train = sum(train_step_flops(cfg, n_nodes - t) for t in range(1, n_nodes - 1)) / (n_nodes - 2)
            out.append(GridPoint(cfg, count_params(cfg), mean_train, tour_flops(cfg, n_nodes), n_nodes))
    return out


@validate(tolerance=Real(low=0.0))
def equal_param_pairs(grid: Sequence[GridPoint], tolerance: float = 0.10) -> list[tuple[GridPoint, GridPoint]]:
    """(deep, wide) pairs with deep.d < wide.d, deep.L > wide.L and parameters within ``tolerance``."""
    if isinstance(grid, str) or not all(isinstance(g, GridPoint) for g in grid):
        raise TypeError("grid must be a sequence of GridPoint (from scaling_grid)")
    pairs = []
    for a in grid:
        for b in grid:
            ca, cb = a.config, b.config
            if ca.d_model < cb.d_model and ca.n_layers > cb.n_layers:
                if abs(a.n_params - b.n_params) <= tolerance * max(a.n_params, b.n_params):
                    pairs.append((a, b))
    return pairs
