"""Protocol pieces: the binned source/target split, error and rank metrics, coreset stability."""

from __future__ import annotations

import numpy as np
from scipy.stats import kendalltau, spearmanr

from neurips26.constraints import AnyOf, ArrayLike, Instance, Int, Optional, Real, check_arguments, validate

_RNG = Optional(AnyOf(Int(), Instance(np.random.Generator, "numpy Generator")))  # None, an int seed, a Generator
_SCORES = ArrayLike(ndim=1)  # a finite 1-D array of numbers
_FRACTION = Real(0, 1, closed="neither")


@validate(acc=_SCORES, n_source=Int(low=1), bins=Int(low=1), rng=_RNG)
def binned_split(acc, n_source: int, *, bins: int = 10,
                 rng: np.random.Generator | int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The paper's "binned interpolation" split: ``n_source`` source models drawn evenly from
    ``bins`` equal-width accuracy bins (round robin over the bins, random within a bin; empty bins
    are skipped), every other model is a target.

    Args:
        acc: ``(M,)`` full-benchmark accuracies.
    Returns:
        ``(source_idx, target_idx)``, both sorted.
    """
    acc = np.asarray(acc, dtype=np.float64)
    check_arguments("binned_split", {"n_source": Int(high=acc.size - 1)}, {"n_source": n_source})  # a target left
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    edges = np.linspace(acc.min(), acc.max(), bins + 1)
    which = np.clip(np.searchsorted(edges, acc, side="right") - 1, 0, bins - 1)
    queues = [list(rng.permutation(np.nonzero(which == b)[0])) for b in range(bins)]
    source: list[int] = []
    while len(source) < n_source:
        for queue in queues:
            if queue and len(source) < n_source:
                source.append(int(queue.pop()))
    src = np.sort(np.asarray(source, dtype=np.int64))
    return src, np.setdiff1d(np.arange(acc.size), src)


@validate(n_models=Int(low=2), rng=_RNG, source_fraction=_FRACTION)
def random_split(n_models: int, *, rng: np.random.Generator | int | None = None,
                 source_fraction: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """The standard split of Zhang & Hardt's benchmark-prediction protocol: a uniformly random
    ``source_fraction`` of the models as sources (rounded down, at least 1), the rest as targets.

    Returns ``(source_idx, target_idx)``, both sorted.
    """
    n_models = int(n_models)
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    n_source = min(n_models - 1, max(1, int(n_models * float(source_fraction))))
    perm = rng.permutation(n_models)
    return np.sort(perm[:n_source]), np.sort(perm[n_source:])


@validate(acc=_SCORES, top_fraction=_FRACTION)
def stress_split(acc, *, top_fraction: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Zhang & Hardt's extrapolation stress test: the ``top_fraction`` best models (by full accuracy) are
    the targets, every weaker model is a source, so each target is stronger than every source.

    Args:
        acc: ``(M,)`` full-benchmark accuracies. Ties at the cut go to the sources (stable sort).
    Returns:
        ``(source_idx, target_idx)``, both sorted.
    """
    acc = np.asarray(acc, dtype=np.float64)
    if acc.size < 2:
        raise ValueError(f"acc must hold at least 2 accuracies, got shape {acc.shape}")
    n_top = min(acc.size - 1, max(1, int(round(acc.size * float(top_fraction)))))
    order = np.argsort(acc, kind="stable")  # weakest first
    return np.sort(order[:-n_top]), np.sort(order[-n_top:])


@validate(y_true=_SCORES, y_pred=_SCORES)
def evaluate(y_true, y_pred, *, prefix: str = "") -> dict[str, float]:
    """Error and rank agreement of predicted full scores (fractions in [0, 1]).

    Returns ``rmse_pp``, ``mae_pp`` (percentage points), ``spearman``, ``kendall`` (tau-b) and ``n``,
    keys prefixed by ``prefix``. Rank correlations are NaN when either side is constant.
    """
    t = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(y_pred, dtype=np.float64)
    if t.shape != p.shape or t.size < 2:
        raise ValueError(f"y_true and y_pred must be 1-D of equal length >= 2, got {t.shape} and {p.shape}")
    err = 100.0 * (p - t)
    const = np.ptp(t) == 0 or np.ptp(p) == 0
    out = {"rmse_pp": float(np.sqrt(np.mean(err**2))), "mae_pp": float(np.mean(np.abs(err))),
           "spearman": float("nan") if const else float(spearmanr(t, p).statistic),
           "kendall": float("nan") if const else float(kendalltau(t, p).statistic), "n": int(t.size)}
    return {prefix + k: v for k, v in out.items()}


@validate(y_source=_SCORES, pred_source=_SCORES, y_target=_SCORES, pred_target=_SCORES)
def evaluate_split(y_source, pred_source, y_target, pred_target) -> dict[str, float]:
    """Target-only metrics (keys ``target_*``, the honest ones) and the official pooled variant
    (keys ``pooled_*``: in-sample source predictions concatenated with the targets, which inflates
    rank correlations)."""
    for (nt, t), (np_, p) in (((("y_source", y_source), ("pred_source", pred_source))),
                              ((("y_target", y_target), ("pred_target", pred_target)))):
        t_arr, p_arr = np.asarray(t, dtype=np.float64), np.asarray(p, dtype=np.float64)
        if t_arr.shape != p_arr.shape:
            raise ValueError(f"{nt} and {np_} must be 1-D of equal length, got {t_arr.shape} and {p_arr.shape}")
    out = evaluate(y_target, pred_target, prefix="target_")
    out.update(evaluate(np.concatenate([y_source, y_target]), np.concatenate([pred_source, pred_target]),
                        prefix="pooled_"))
    return out


@validate(n_features=Int(low=1))
def nogueira_stability(coresets, n_features: int) -> float:
    """Nogueira et al. (2018) stability Phi of feature subsets (1 = identical, ~0 = random).

    .. math:: \\Phi = 1 - \\frac{\\frac1d \\sum_f s_f^2}{\\frac{\\bar k}{d}(1 - \\frac{\\bar k}{d})},
              \\quad s_f^2 = \\frac{R}{R-1} \\hat p_f (1 - \\hat p_f)

    with ``R`` subsets, ``p_f`` the fraction containing feature ``f``, ``k-bar`` the mean size.
    Args:
        coresets: ``R >= 2`` sequences of feature indices in ``[0, n_features)``.
    """
    if isinstance(coresets, str | bytes) or not hasattr(coresets, "__iter__"):
        raise TypeError(f"coresets must be a sequence of index sequences, got {type(coresets).__name__}")
    sets = []
    for r, c in enumerate(coresets):
        arr = np.asarray(c)
        if arr.ndim != 1 or not (arr.dtype.kind in "iu" or arr.size == 0):
            raise ValueError(f"coreset {r} (of coresets) must be a 1-D sequence of int indices, got {c!r}")
        sets.append(np.unique(arr.astype(np.int64)))
    if len(sets) < 2:
        raise ValueError(f"coresets needs at least 2 subsets, got {len(sets)}")
    Z = np.zeros((len(sets), n_features))
    for r, c in enumerate(sets):
        if c.size and (c.min() < 0 or c.max() >= n_features):
            raise ValueError(f"coreset {r} has an index outside [0, {n_features})")
        Z[r, c] = 1.0
    R = len(sets)
    p = Z.mean(0)
    s2 = R / (R - 1) * p * (1 - p)
    kbar = Z.sum(1).mean()
    denom = kbar / n_features * (1 - kbar / n_features)
    if denom == 0:
        return 1.0
    return float(1.0 - s2.mean() / denom)
