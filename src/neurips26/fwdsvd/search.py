r"""Forward-only rank search: score every candidate by dispersion in one hooked forward, then pick $\rho$.

Steps (formalisation inferred from the abstract; see ``shared/papers/P05-fwdsvd.md``):

1. one no-grad forward over the calibration batches with :class:`AngleConcentrationStats` hooks;
2. $W^\star = \arg\max_W D(W)$ (``top_k`` best matrices);
3. rank rule ``"grid"``: evaluate $\rho \in$ ``rho_grid`` on $W^\star$ with the label-using ``eval_fn``
   (forward only) and keep the unmodified model when no $\rho$ beats it; ``"auto"`` (label-free,
   speculative): store the $T \times r$ coefficient block of $W^\star$ in a second forward, compute
   $A(W_k)$ exactly for every $k$ and take the knee of that curve.

Cost in pass-equivalents $F$ (one forward over the calibration set): $1 + (1 + \text{top\_k}\,|\rho|)$ with
``"grid"``, against LASER's $|\text{candidates}|\,|\rho|$ and a gradient search's $\approx 3 + \text{top\_k}\,|\rho|$.
"""

from __future__ import annotations

import math
import resource
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from neurips26.constraints import AnyOf, ArrayLike, Choice, Int, Optional, Real, Tensor, check_arguments, validate
from neurips26.constraints import Callable as CallableC

from .stats import (
    _EPS,
    POSITION_RULES,
    RHO_MIN,
    ROWS,
    SCORE_RULES,
    AngleConcentrationStats,
    _rows,
    _selection,
    _unpack,
)
from .svd import MODEL, RHO, RankReduction, RestoreHandle, laser_reduce, rank_for_rho, svd_factors

__all__ = ["DEFAULT_RHO_GRID", "ForwardOnlyRankSearch", "SearchResult", "angle_concentration_by_rank", "knee_index"]

DEFAULT_RHO_GRID = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5)
RANK_RULES = ("grid", "auto")
TOP_K = Int(low=1)
_SCORE = {"eval_fn(model)": Real()}  # what eval_fn returns: a finite number
_FINITE_BATCH = {"calibration batch": Tensor(finite=True)}
_SEARCH = {"positions": POSITION_RULES, "score": SCORE_RULES, "rank_rule": Choice(*RANK_RULES),
           "top_k": TOP_K, "rho_min": RHO_MIN}


@dataclass
class SearchResult:
    """What a search found and what it cost.

    Attributes:
        reduction: the chosen edit, or ``None`` when the unmodified model scored best.
        scores: per-matrix selection scores (higher = chosen first; the gradient search stores $-\\Delta\\hat L$).
        passes_used: pass-equivalents over the calibration set (a backward counts 2 forwards).
        forward_passes, backward_passes: counts of calibration-set forwards and backwards.
        wall_s, cpu_s: wall-clock and process-CPU seconds of ``fit``.
        peak_mem_bytes: CUDA allocator peak during ``fit`` on a GPU; on CPU the process's peak RSS so far
            (meaningful in a fresh process, as the claim check measures it).
        trials: ``[(module, rho, eval score)]`` of every evaluated edit; ``base_score``: the unedited model's.
    """

    reduction: RankReduction | None
    scores: dict[str, float]
    passes_used: float
    forward_passes: int
    backward_passes: int
    wall_s: float
    cpu_s: float
    peak_mem_bytes: int
    trials: list[tuple[str, float, float]] = field(default_factory=list)
    base_score: float | None = None
    best_score: float | None = None


def _peak_mem(device: torch.device | None) -> int:
    if device is not None and device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    raw = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(raw if sys.platform == "darwin" else raw * 1024)


def _model_device(model: nn.Module) -> torch.device | None:
    p = next(model.parameters(), None)
    return None if p is None else p.device


class _Clock:
    """Wall and CPU time plus the memory peak of one ``fit`` call."""

    def __init__(self, model: nn.Module) -> None:
        self.device = _model_device(model)
        if self.device is not None and self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()

    def done(self) -> tuple[float, float, int]:
        return time.perf_counter() - self.wall0, time.process_time() - self.cpu0, _peak_mem(self.device)


def _checked_score(eval_fn: Callable[[nn.Module], float], model: nn.Module) -> float:
    value = eval_fn(model)
    if isinstance(value, torch.Tensor):
        value = value.item()
    check_arguments("", _SCORE, {"eval_fn(model)": value})
    return float(value)


def grid_trials(model: nn.Module, modules: Sequence[str], rho_grid: Sequence[float],
                eval_fn: Callable[[nn.Module], float], *,
                svd_cache: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None,
                progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
                trial_cache: dict[Any, float] | None = None,
                ) -> tuple[float, list[tuple[str, float, float]], RankReduction | None, float, int]:
    """Evaluate the unmodified model and every ``(module, rho)`` edit (each undone after its trial, also when
    ``eval_fn`` fails). ``trial_cache`` (``{(module, rho) or None: score}``) reuses scores of earlier searches
    with the same model and ``eval_fn`` (deterministic). Returns ``(base score, trials, best edit or None if
    none beats base, best score, number of eval_fn calls made)``."""
    svd_cache = {} if svd_cache is None else svd_cache
    cache = {} if trial_cache is None else trial_cache
    calls = 0
    if None not in cache:
        cache[None] = _checked_score(eval_fn, model)
        calls += 1
    base = cache[None]
    trials, best, best_score = [], None, base
    cells = [(m, rho) for m in modules for rho in rho_grid]
    for module, rho in (progress(cells) if progress is not None else cells):
        if (module, rho) not in cache:
            if module not in svd_cache:
                svd_cache[module] = svd_factors(model.get_submodule(module).weight)
            with laser_reduce(model, module, rho, svd=svd_cache[module]):
                cache[(module, rho)] = _checked_score(eval_fn, model)
            calls += 1
        score = cache[(module, rho)]
        trials.append((module, rho, score))
        if score > best_score:  # strictly better than the unmodified model and every earlier edit
            r = min(model.get_submodule(module).weight.shape)
            best, best_score = RankReduction(module, rho, rank_for_rho(rho, r)), score
    return base, trials, best, best_score, calls


def _check_grid(where: str, rho_grid: Any) -> tuple[float, ...]:
    """``rho_grid`` as a tuple of floats: a non-empty sequence whose every entry is a reduction in (0, 1]."""
    if isinstance(rho_grid, str) or not isinstance(rho_grid, Sequence) or not rho_grid:
        raise ValueError(f"{where}: rho_grid must be a non-empty sequence of numbers in (0, 1], got {rho_grid!r}")
    entries = {f"rho_grid[{i}]": r for i, r in enumerate(rho_grid)}
    check_arguments(where, dict.fromkeys(entries, RHO), entries)
    return tuple(float(r) for r in rho_grid)


def _listed(where: str, cal_batches: Any, single: type | tuple[type, ...] = (torch.Tensor, Mapping)) -> list[Any]:
    """``cal_batches`` as a non-empty list (one batch of a ``single`` type counts as a list of one)."""
    if isinstance(cal_batches, single):
        cal_batches = [cal_batches]
    try:
        batches = list(cal_batches)
    except TypeError as err:
        raise TypeError(f"{where}: cal_batches must be an iterable of batches, got {type(cal_batches).__name__}") \
            from err
    if not batches:
        raise ValueError(f"{where}: cal_batches is empty: the search needs calibration data")
    return batches


def _check_batches(where: str, cal_batches: Any) -> list[Any]:
    """The token batches of a forward search: listed, each one well formed (:func:`_unpack`) and finite."""
    batches = _listed(where, cal_batches)
    for b in batches:
        ids, _ = _unpack(b, where)
        if ids.dtype.is_floating_point:
            check_arguments(where, _FINITE_BATCH, {"calibration batch": ids})
    return batches


# ------------------------------------------------------------------------------------------ rank rule "auto"
@validate(c=ROWS)
def angle_concentration_by_rank(c: torch.Tensor) -> torch.Tensor:
    r"""$A(W_k)$ for $k = 1..r$ from the coefficient block ``c [T, r]``: the mean pairwise cosine of
    $W_k x_t = \sum_{i \le k} c_{t,i} u_i$, i.e. of the truncated rows $c_{t, \le k}$. Returns float64 ``[r]``."""
    c = _rows("angle_concentration_by_rank", c, "c")
    t = c.shape[0]
    # ‖c_{t,≤k}‖ for every k: cumulative sums of squares  [T, r]
    norms = torch.sqrt(torch.cumsum(c ** 2, dim=1)).clamp_min(_EPS)
    # Σ_{s≠t} cos_k(s, t) = Σ_i (Σ_t c_{t,i}/‖c_{t,≤k}‖)² − Σ_t 1 over i ≤ k; computed per k  [r]
    out = torch.empty(c.shape[1], dtype=torch.float64)
    for k in range(1, c.shape[1] + 1):
        hat = c[:, :k] / norms[:, k - 1:k]
        out[k - 1] = (hat.sum(0).pow(2).sum() - hat.pow(2).sum()) / (t * (t - 1))
    return out


@validate(curve=AnyOf(Tensor("K"), ArrayLike("K")))
def knee_index(curve: torch.Tensor) -> int:
    """0-based index of the knee of a curve over ``k = 1..r``: the point farthest from the chord between
    its end points after scaling both axes to [0, 1] (Kneedle's distance form; a choice, inferred)."""
    y = torch.as_tensor(curve, dtype=torch.float64)
    n = y.numel()
    if n == 0:
        raise ValueError("knee_index: curve must be a non-empty 1-D tensor, got shape (0,)")
    if n < 3:
        return n - 1
    x = torch.linspace(0, 1, n, dtype=torch.float64)
    span = float(y.max() - y.min())
    yn = (y - y.min()) / span if span > 0 else torch.zeros_like(y)
    # distance from the chord (x0, y0) -> (x1, y1), up to a constant factor
    dist = ((yn[-1] - yn[0]) * x - (yn - yn[0])).abs()
    return int(torch.argmax(dist))


class _CoefficientRecorder:
    """Forward hook that stores the coefficient block ``c [T, r]`` of one matrix (``"auto"`` only)."""

    def __init__(self, stats: AngleConcentrationStats, module: str) -> None:
        self.stats, self.module, self.rows = stats, module, []
        st = stats._get(module)
        self.v, self.sigma = st.v, st.sigma_dev

    def __call__(self, mod: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        with torch.no_grad():
            x = self.stats._tokens(inputs[0].detach(), self.module)
            self.rows.append(((x @ self.v) * self.sigma).to(device="cpu", dtype=torch.float64))


class ForwardOnlyRankSearch:
    """Choose one LASER edit from forward passes only.

    Args:
        candidates: ``"all"``, ``"mlp"``, ``"last_half"`` or a list of ``nn.Linear`` names.
        positions: ``"last"`` (each prompt's last real token) or ``"all"`` (every real token but position 0).
        score: ``"dispersion_energy"``, ``"neg_kappa_tail"`` or ``"frac_dispersed"``.
        rho_grid: reductions tried on the chosen matrix (rank rule ``"grid"``).
        rank_rule: ``"grid"`` (needs ``eval_fn``) or ``"auto"`` (label-free knee of $A(W_k)$).
        top_k: how many top-scored matrices the grid evaluates.
        rho_min: protected head share for the scores ($k_0 = \\lceil \\rho_{\\min} r \\rceil$).

    After ``fit``: ``result_`` (:class:`SearchResult`), ``scores_``, ``stats_``.
    """

    def __init__(self, candidates: str | Sequence[str] = "all", positions: str = "last",
                 score: str = "dispersion_energy", rho_grid: Sequence[float] = DEFAULT_RHO_GRID,
                 rank_rule: str = "grid", top_k: int = 1, rho_min: float = 0.01) -> None:
        self.candidates, self.positions, self.score = candidates, positions, score
        self.rho_grid, self.rank_rule, self.top_k, self.rho_min = rho_grid, rank_rule, top_k, rho_min

    def _validate(self) -> tuple[float, ...]:
        where = "ForwardOnlyRankSearch.fit"
        check_arguments(where, _SEARCH, {name: getattr(self, name) for name in _SEARCH})
        return _check_grid(where, self.rho_grid)

    @validate(model=MODEL, eval_fn=Optional(CallableC()))
    def fit(self, model: nn.Module, cal_batches: Iterable[Any],
            eval_fn: Callable[[nn.Module], float] | None = None, *,
            progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
            trial_cache: dict[Any, float] | None = None,
            svd: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None) -> ForwardOnlyRankSearch:
        """Hooked forward over ``cal_batches``, score, then the rank rule. The model is left unmodified
        (use :meth:`apply`). ``eval_fn(model) -> float`` (higher is better) is required by ``"grid"``.
        ``trial_cache`` / ``svd``: scores of earlier trials and SVD factors to reuse (see :func:`grid_trials`).
        A fit that raises leaves the attributes of the previous fit (``result_``, ``stats_``, ...) whole."""
        grid = self._validate()
        batches = _check_batches("ForwardOnlyRankSearch.fit", cal_batches)
        if self.rank_rule == "grid" and eval_fn is None:
            raise ValueError("ForwardOnlyRankSearch.fit: rank_rule='grid' needs eval_fn(model) -> float (e.g. "
                             "calibration accuracy)")
        clock = _Clock(model)
        stats = AngleConcentrationStats.attach(model, self.candidates, self.positions, svd=svd)
        try:
            for batch in batches:
                stats.observe(model, batch)
        finally:
            stats.detach()
        forwards = 1
        scores = stats.dispersion(self.score, self.rho_min)
        ranked = sorted(scores, key=lambda n: -scores[n])[: self.top_k]
        base = best_score = None
        trials: list[tuple[str, float, float]] = []
        if self.rank_rule == "grid":
            base, trials, reduction, best_score, calls = grid_trials(model, ranked, grid, eval_fn, progress=progress,
                                                                     trial_cache=trial_cache, svd_cache=svd)
            forwards += calls
        else:
            reduction, extra = self._auto(model, stats, ranked[0], batches)
            forwards += extra
            if eval_fn is not None:  # report only: the label-free choice is not overruled
                base = _checked_score(eval_fn, model)
                with laser_reduce(model, reduction.module, reduction.rho):
                    best_score = _checked_score(eval_fn, model)
                trials = [(reduction.module, reduction.rho, best_score)]
                forwards += 2
        wall, cpu, peak = clock.done()
        self.stats_, self.scores_ = stats, scores
        self.result_ = SearchResult(reduction, scores, float(forwards), forwards, 0, wall, cpu, peak, trials,
                                    base, best_score)
        return self

    def _auto(self, model: nn.Module, stats: AngleConcentrationStats, module: str,
              batches: list[Any]) -> tuple[RankReduction, int]:
        recorder = _CoefficientRecorder(stats, module)
        handle = model.get_submodule(module).register_forward_hook(recorder)
        try:
            for batch in batches:
                ids, mask = _unpack(batch, "ForwardOnlyRankSearch.fit")
                stats._select = _selection(mask, self.positions)
                with torch.no_grad():
                    model(ids)
        finally:
            stats._select = None
            handle.remove()
        c = torch.cat(recorder.rows)
        curve = angle_concentration_by_rank(c)
        r = c.shape[1]
        k0 = max(1, math.ceil(self.rho_min * r - 1e-9))
        k = max(k0, knee_index(curve) + 1)
        return RankReduction(module, k / r, rank_for_rho(k / r, r)), 1

    def apply(self, model: nn.Module, factorize: bool = False) -> RestoreHandle | None:
        """Apply the chosen edit to ``model``; ``None`` when the search kept the unmodified model."""
        if not hasattr(self, "result_"):
            raise RuntimeError("call fit() before apply()")
        red = self.result_.reduction
        return None if red is None else laser_reduce(model, red.module, red.rho, factorize)

