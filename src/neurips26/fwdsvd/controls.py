r"""Weight-only controls: scores that read the singular values alone, with no forward pass.

If the forward-only dispersion score $D(W)$ picks matrices no better than a score computed from $\sigma$
alone, the forward pass has not shown that it carries information. Two such scores, each used exactly as the
forward-only search uses $D$ (argmax over the candidates, then the same $\rho$ grid on the chosen matrix):

* ``"sigma_tail"``: the $\sigma^2$ share of the tail beyond the protected head $k_0 = \lceil\rho_{\min} r\rceil$,
  $\;S(W) = \sum_{i > k_0} \sigma_i^2 / \sum_i \sigma_i^2$ (the weight-only twin of $D$, which weighs the same
  tail by the output energy of its *dispersed* components);
* ``"mp_noise"``: a Marchenko–Pastur noise share in the spirit of laserRMT (our own formulation): model
  $W \in \mathbb{R}^{m\times n}$ as signal plus i.i.d. noise of variance $s^2$; with $p = \max(m, n)$,
  $q = \min(m, n)$, $\beta = q/p$ the eigenvalues of $W^\top W / p$ of pure noise follow the MP law on
  $[s^2(1-\sqrt\beta)^2,\ s^2(1+\sqrt\beta)^2]$. We estimate $s^2$ by matching the median of $\sigma_i^2/p$ to
  the MP median $\mu_\beta$, call the components above the bulk edge $\sigma_+ = s\sqrt p\,(1+\sqrt\beta)$
  signal (their count is the *MP rank*) and score a matrix by the energy share of its noise bulk,
  $\sum_{\sigma_i \le \sigma_+} \sigma_i^2 / \sum_i \sigma_i^2$ (the more noise, the sooner it is reduced).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from torch import nn

from neurips26.constraints import AnyOf, ArrayLike, Choice, Int, Tensor, check_arguments, validate
from neurips26.constraints import Callable as CallableC

from .search import DEFAULT_RHO_GRID, SearchResult, _check_grid, _Clock, grid_trials
from .stats import RHO_MIN
from .svd import candidate_linears, svd_factors

__all__ = ["WEIGHT_SCORES", "WeightSpectrumSearch", "marchenko_pastur_edge", "mp_noise_share", "sigma_tail_share",
           "weight_scores"]

WEIGHT_SCORES = ("sigma_tail", "mp_noise")
SIGMA = AnyOf(Tensor("R"), ArrayLike("R"))  # singular values [r], finite (a tensor or anything np.asarray takes)
_WEIGHT_SEARCH = {"score": Choice(*WEIGHT_SCORES), "rho_min": RHO_MIN, "seed": Int()}


def _check_sigma(where: str, sigma: Any) -> torch.Tensor:
    """``sigma`` (already declared :data:`SIGMA`) as float64: non-empty, >= 0 and descending."""
    s = torch.as_tensor(sigma, dtype=torch.float64)
    if s.numel() == 0 or (s < 0).any():
        got = f"{s.numel()} values" + (f", the smallest {float(s.min())!r}" if s.numel() else "")
        raise ValueError(f"{where}: sigma must be non-empty and >= 0 (singular values), got {got}")
    if (s[1:] > s[:-1] + 1e-12 * float(s.max())).any():
        raise ValueError(f"{where}: sigma must be sorted in descending order (as svd_factors returns it)")
    return s


@validate(sigma=SIGMA, rho_min=RHO_MIN)
def sigma_tail_share(sigma: torch.Tensor, rho_min: float = 0.01) -> float:
    r"""$\sum_{i > k_0} \sigma_i^2 / \sum_i \sigma_i^2$, $k_0 = \lceil \rho_{\min} r \rceil$ (0 for a zero matrix)."""
    s = _check_sigma("sigma_tail_share", sigma)
    k0 = math.ceil(float(rho_min) * s.numel() - 1e-9)
    total = float((s ** 2).sum())
    return float((s[k0:] ** 2).sum()) / total if total > 0 else 0.0


@lru_cache(maxsize=256)
def _mp_median(beta: float) -> float:
    """Median of the Marchenko–Pastur law with ratio ``beta`` in (0, 1] and unit variance (numerical)."""
    a, b = (1 - math.sqrt(beta)) ** 2, (1 + math.sqrt(beta)) ** 2
    # substitute x = a + (b - a) sin²(θ/2)... plainly: a fine midpoint grid on [a, b] of the density
    x = np.linspace(a, b, 200_001)[1:-1]
    dens = np.sqrt((b - x) * (x - a)) / (2 * math.pi * beta * x)
    cdf = np.cumsum(dens)
    cdf /= cdf[-1]
    return float(x[np.searchsorted(cdf, 0.5)])


@validate(sigma=SIGMA)
def marchenko_pastur_edge(sigma: torch.Tensor, shape: tuple[int, int]) -> tuple[float, int]:
    r"""``(σ₊, MP rank)`` of a matrix of ``shape`` ``(m, n)`` with singular values ``sigma`` (descending, length
    ``min(m, n)``): the noise scale from the median, the bulk edge $\sigma_+ = s\sqrt p(1+\sqrt\beta)$ and the
    number of singular values above it."""
    s = _check_sigma("marchenko_pastur_edge", sigma)
    if (not isinstance(shape, tuple | list) or len(shape) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in shape)):
        raise ValueError(f"marchenko_pastur_edge: shape must be (m, n) of positive ints, got {shape!r}")
    p, q = max(shape), min(shape)
    if s.numel() != q:
        raise ValueError(f"marchenko_pastur_edge: sigma has {s.numel()} values, a {shape[0]}x{shape[1]} matrix has {q}")
    beta = q / p
    # s² = median(σ_i² / p) / μ_β ; σ₊ = s √p (1 + √β)
    noise_var = float(torch.median(s ** 2 / p)) / _mp_median(beta)
    edge = math.sqrt(noise_var * p) * (1 + math.sqrt(beta))
    return edge, int((s > edge).sum())


@validate(sigma=SIGMA)
def mp_noise_share(sigma: torch.Tensor, shape: tuple[int, int]) -> float:
    r"""$\sum_{\sigma_i \le \sigma_+} \sigma_i^2 / \sum_i \sigma_i^2$: the energy share of the MP noise bulk."""
    s = _check_sigma("mp_noise_share", sigma)
    edge, _ = marchenko_pastur_edge(s, shape)
    total = float((s ** 2).sum())
    return float((s[s <= edge] ** 2).sum()) / total if total > 0 else 0.0


@validate(score=_WEIGHT_SEARCH["score"], rho_min=RHO_MIN)
def weight_scores(model: nn.Module, candidates: str | Sequence[str] = "all", score: str = "sigma_tail",
                  rho_min: float = 0.01,
                  svd: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None) -> dict[str, float]:
    """``{module: weight-only score}`` (higher = reduced first) for every candidate; ``svd`` caches factors."""
    rho_min = float(rho_min)
    cache = {} if svd is None else svd
    out = {}
    for name in candidate_linears(model, candidates):
        w = model.get_submodule(name).weight
        if name not in cache:
            cache[name] = svd_factors(w)
        sigma = cache[name][1]
        out[name] = (sigma_tail_share(sigma, rho_min) if score == "sigma_tail"
                     else mp_noise_share(sigma, tuple(w.shape)))
    return out


class WeightSpectrumSearch:
    """Control: choose the matrix by a weight-only score (no forward pass), then the same $\\rho$ grid.

    Args:
        candidates, rho_grid, rho_min: as in :class:`~neurips26.fwdsvd.ForwardOnlyRankSearch`.
        score: ``"sigma_tail"`` or ``"mp_noise"`` (see the module doc).

    ``fit(model, eval_fn)`` sets ``result_`` (:class:`SearchResult`), ``scores_`` and, for ``"mp_noise"``,
    ``mp_rank_`` ``{module: MP rank}``. Ties between scores are broken by a seeded draw (``seed``), never by
    module order.
    """

    def __init__(self, candidates: str | Sequence[str] = "all", score: str = "sigma_tail",
                 rho_grid: Sequence[float] = DEFAULT_RHO_GRID, rho_min: float = 0.01, seed: int = 0) -> None:
        self.candidates, self.score, self.rho_grid = candidates, score, rho_grid
        self.rho_min, self.seed = rho_min, seed

    @validate(eval_fn=CallableC())
    def fit(self, model: nn.Module, eval_fn: Callable[[nn.Module], float], *,
            progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
            trial_cache: dict[Any, float] | None = None,
            svd: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None) -> WeightSpectrumSearch:
        where = "WeightSpectrumSearch.fit"
        check_arguments(where, _WEIGHT_SEARCH, {name: getattr(self, name) for name in _WEIGHT_SEARCH})
        grid = _check_grid(where, self.rho_grid)
        clock = _Clock(model)
        cache = {} if svd is None else svd
        scores = weight_scores(model, self.candidates, self.score, self.rho_min, cache)
        top = max(scores.values())
        tied = sorted(n for n, v in scores.items() if v == top)
        module = random.Random(int(self.seed)).choice(tied)
        base, trials, best, best_score, calls = grid_trials(model, [module], grid, eval_fn, svd_cache=cache,
                                                            progress=progress, trial_cache=trial_cache)
        wall, cpu, peak = clock.done()
        n = 1 + len(trials)
        result = SearchResult(best, scores, float(n), n, 0, wall, cpu, peak, trials, base, best_score)
        if self.score == "mp_noise":
            shapes = {name: tuple(model.get_submodule(name).weight.shape) for name in scores}
            self.mp_rank_ = {name: marchenko_pastur_edge(cache[name][1], shapes[name])[1] for name in scores}
        self.result_, self.scores_, self.module_ = result, scores, module
        return self
