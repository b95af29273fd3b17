r"""Baselines of the forward-only search: LASER's exhaustive grid, a C2I-style gradient search, a random
matrix control (the unmodified model is the fourth: ``SearchResult.base_score``).

**LASER** (Sharma et al., arXiv 2312.13558): try every (matrix, $\rho$) edit and keep the best by the task
score; $|\text{candidates}| \cdot |\rho|$ forward passes over the calibration set.

**Gradient search** (after "Compress to Impress", arXiv 2510.20800, no code; formula inferred): write each
candidate as $W = U \,\mathrm{diag}(\sigma)\, V^\top$ with $\sigma$ trainable, run one forward + backward of the
calibration loss, and score the cut at rank $k$ by the first-order loss change of zeroing the tail,

$$\Delta \hat L(W, k) = -\sum_{i > k} \sigma_i \,\frac{\partial L}{\partial \sigma_i} ,$$

the most negative first. The ``top_k`` matrices (by their most negative cut) then go through the same
forward-only $\rho$ grid as the forward-only search.

**Random control**: one candidate drawn uniformly (seeded), then the same $\rho$ grid.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn

from neurips26.constraints import Callable as CallableC
from neurips26.constraints import Int, Optional, Tensor, check_arguments, validate

from .search import DEFAULT_RHO_GRID, TOP_K, SearchResult, _check_grid, _Clock, _listed, grid_trials
from .svd import MODEL, RankReduction, candidate_linears, rank_for_rho, svd_factors

__all__ = ["GradientSVSearch", "LaserExhaustiveSearch", "RandomMatrixSearch", "laser_grid_passes"]

COUNT = Int(low=0)
EVAL_FN = CallableC()  # eval_fn(model) -> float, higher is better
_SEED = {"seed": Int()}
_GRADIENT = {"top_k": TOP_K, "loss_fn": CallableC()}
_LOSS = {"loss_fn(model, batch)": Tensor(ndim=0)}  # a finite scalar tensor


@validate(n_candidates=COUNT, n_rho=COUNT)
def laser_grid_passes(n_candidates: int, n_rho: int) -> int:
    """Forward passes of LASER's full grid: one per (matrix, $\\rho$) cell (1260 = 210 x 6 for SmolLM2-135M)."""
    return n_candidates * n_rho


class LaserExhaustiveSearch:
    """Every (candidate, $\\rho$) edit, scored by ``eval_fn`` (higher is better); keeps the base model if none
    beats it. ``fit(model, eval_fn)`` sets ``result_``."""

    def __init__(self, candidates: str | Sequence[str] = "all", rho_grid: Sequence[float] = DEFAULT_RHO_GRID) -> None:
        self.candidates, self.rho_grid = candidates, rho_grid

    @validate(model=MODEL, eval_fn=EVAL_FN)
    def fit(self, model: nn.Module, eval_fn: Callable[[nn.Module], float], *,
            progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
            trial_cache: dict[Any, float] | None = None,
            svd: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None) -> LaserExhaustiveSearch:
        """``trial_cache``: scores of earlier searches on the same model and ``eval_fn``, reused (and filled);
        ``result_.forward_passes`` counts the cells of the grid all the same (what LASER alone would run)."""
        grid = _check_grid("LaserExhaustiveSearch.fit", self.rho_grid)
        names = candidate_linears(model, self.candidates)
        clock = _Clock(model)
        svd_cache: dict[str, Any] = {} if svd is None else svd  # filled on first use of a matrix
        base, trials, best, best_score, _ = grid_trials(model, names, grid, eval_fn, svd_cache=svd_cache,
                                                        progress=progress, trial_cache=trial_cache)
        scores = {n: max(s for m, _, s in trials if m == n) for n in names}
        wall, cpu, peak = clock.done()
        n = 1 + len(trials)
        self.result_ = SearchResult(best, scores, float(n), n, 0, wall, cpu, peak, trials, base, best_score)
        return self


class RandomMatrixSearch:
    """Control: a uniformly drawn candidate (``random.Random(seed)``), then the $\\rho$ grid."""

    def __init__(self, candidates: str | Sequence[str] = "all", rho_grid: Sequence[float] = DEFAULT_RHO_GRID,
                 seed: int = 0) -> None:
        self.candidates, self.rho_grid, self.seed = candidates, rho_grid, seed

    @validate(model=MODEL, eval_fn=EVAL_FN)
    def fit(self, model: nn.Module, eval_fn: Callable[[nn.Module], float], *,
            trial_cache: dict[Any, float] | None = None,
            svd: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None) -> RandomMatrixSearch:
        where = "RandomMatrixSearch.fit"
        grid = _check_grid(where, self.rho_grid)
        check_arguments(where, _SEED, {"seed": self.seed})
        names = candidate_linears(model, self.candidates)
        clock = _Clock(model)
        module = random.Random(int(self.seed)).choice(names)
        base, trials, best, best_score, _ = grid_trials(model, [module], grid, eval_fn, trial_cache=trial_cache,
                                                        svd_cache=svd)
        wall, cpu, peak = clock.done()
        n = 1 + len(trials)
        self.result_ = SearchResult(best, {module: 1.0}, float(n), n, 0, wall, cpu, peak, trials, base, best_score)
        self.module_ = module
        return self


class _SigmaLinear(nn.Module):
    r"""$y = U(\sigma \odot V^\top x) + b$ with only $\sigma$ trainable (``U [m, r]``, ``Vh [r, n]``)."""

    def __init__(self, layer: nn.Linear, svd: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> None:
        super().__init__()
        U, S, Vh = svd_factors(layer.weight) if svd is None else svd
        dtype, device = layer.weight.dtype, layer.weight.device
        self.register_buffer("U", U.to(dtype=dtype, device=device))
        self.register_buffer("Vh", Vh.to(dtype=dtype, device=device))
        self.sigma = nn.Parameter(S.to(dtype=dtype, device=device))
        self.bias = None if layer.bias is None else layer.bias.detach()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # [.., n] -> [.., r] -> scaled -> [.., m]
        y = ((x @ self.Vh.T) * self.sigma) @ self.U.T
        return y if self.bias is None else y + self.bias


def _swap(model: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, new)


class GradientSVSearch:
    """One backward with the singular values trainable; tail scores $\\Delta\\hat L$; then the $\\rho$ grid.

    Args:
        loss_fn: ``loss_fn(model, batch) -> scalar tensor`` (the calibration loss, e.g. the choice NLL).
        candidates, rho_grid, top_k: as in :class:`~neurips26.fwdsvd.ForwardOnlyRankSearch`.

    After ``fit``: ``result_``, ``tail_scores_`` ``{module: {rho: ΔL̂}}``, ``sigma_grads_`` ``{module: ∂L/∂σ}``.
    """

    def __init__(self, loss_fn: Callable[[nn.Module, Any], torch.Tensor], candidates: str | Sequence[str] = "all",
                 top_k: int = 1, rho_grid: Sequence[float] = DEFAULT_RHO_GRID) -> None:
        self.loss_fn, self.candidates, self.top_k, self.rho_grid = loss_fn, candidates, top_k, rho_grid

    def sigma_gradients(self, model: nn.Module, batches: list[Any], *,
                        svd: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None,
                        ) -> dict[str, torch.Tensor]:
        r"""$\partial L / \partial \sigma$ [r] per candidate, $L = \sum_{\text{batches}}$ ``loss_fn`` (one forward
        and one backward per batch); the model is restored (modules and ``requires_grad``) afterwards.
        ``svd``: precomputed factors per module (the rest are computed). Changes no attribute of the search."""
        return self._gradients(model, batches, svd)[0]

    def _gradients(self, model: nn.Module, batches: list[Any], svd: dict[str, Any] | None,
                   ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        names = candidate_linears(model, self.candidates)
        originals = {n: model.get_submodule(n) for n in names}
        flags = {p: p.requires_grad for p in model.parameters()}
        try:
            for p in model.parameters():
                p.requires_grad_(False)
            swapped = {n: _SigmaLinear(layer, (svd or {}).get(n)) for n, layer in originals.items()}
            for n, mod in swapped.items():
                _swap(model, n, mod)
            for batch in batches:
                loss = self.loss_fn(model, batch)
                check_arguments("GradientSVSearch", _LOSS, {"loss_fn(model, batch)": loss})
                loss.backward()
            sigmas = {n: mod.sigma.detach().to(torch.float64).cpu().clone() for n, mod in swapped.items()}
            return {n: mod.sigma.grad.detach().to(torch.float64).cpu().clone() for n, mod in swapped.items()}, sigmas
        finally:
            for n, layer in originals.items():
                _swap(model, n, layer)
            for p, flag in flags.items():
                p.requires_grad_(flag)

    @validate(model=MODEL, eval_fn=Optional(EVAL_FN))
    def fit(self, model: nn.Module, cal_batches: Iterable[Any], eval_fn: Callable[[nn.Module], float] | None = None,
            *, progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
            trial_cache: dict[Any, float] | None = None,
            svd: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None) -> GradientSVSearch:
        """``trial_cache`` / ``svd``: scores of earlier trials and SVD factors to reuse. A fit that raises
        leaves the attributes of the previous fit whole."""
        where = "GradientSVSearch.fit"
        grid = _check_grid(where, self.rho_grid)
        check_arguments(where, _GRADIENT, {"top_k": self.top_k, "loss_fn": self.loss_fn})
        batches = _listed(where, cal_batches, single=(torch.Tensor, dict))
        clock = _Clock(model)
        grads, sigmas = self._gradients(model, batches, svd)
        tail: dict[str, dict[float, float]] = {}
        for name, g in grads.items():
            sigma = sigmas[name]
            r = sigma.shape[0]
            # ΔL̂(W, k) = −Σ_{i>k} σ_i ∂L/∂σ_i
            tail[name] = {rho: -float((sigma * g)[rank_for_rho(rho, r):].sum()) for rho in grid}
        scores = {n: -min(t.values()) for n, t in tail.items()}  # higher = larger predicted loss drop
        ranked = sorted(scores, key=lambda n: -scores[n])[: self.top_k]
        forwards, backwards = 1, 1
        base = best_score = None
        trials: list[tuple[str, float, float]] = []
        if eval_fn is not None:
            base, trials, reduction, best_score, calls = grid_trials(model, ranked, grid, eval_fn, progress=progress,
                                                                     trial_cache=trial_cache, svd_cache=svd)
            forwards += calls
        else:
            top = ranked[0]
            rho = min(tail[top], key=tail[top].get)
            r = len(grads[top])
            reduction = RankReduction(top, rho, rank_for_rho(rho, r))
        wall, cpu, peak = clock.done()
        self.tail_scores_, self.sigma_grads_, self.sigmas_ = tail, grads, sigmas
        self.result_ = SearchResult(reduction, scores, float(forwards + 2 * backwards), forwards, backwards,
                                    wall, cpu, peak, trials, base, best_score)
        return self


