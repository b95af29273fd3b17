"""Problems and partition transitions used by the claim check and the benchmark (all offline, seeded).

Each builder returns ``X [n, d]`` standardised, ``y [n]`` centred (or 0/1 for logistic) and a list of
``(name, kind, G, G')`` transitions; ``kind`` is ``"local"`` (split, merge, move) or ``"global"``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .baselines import cold_newton_refit, cold_refit, warm_refit
from .partition import GroupPartition
from .shift import groupshift
from .solver import group_lambda_max, group_norms, solve_group_l1


def _standardise(X: np.ndarray) -> np.ndarray:
    X = X - X.mean(axis=0)
    sd = X.std(axis=0)
    return X[:, sd > 0] / sd[sd > 0]


def breast_cancer(logistic: bool = False):
    """569×30; A = 10 groups by measurement {j, 10+j, 20+j}, B = 3 groups by statistic (mean, SE, worst)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X = _standardise(data.data)
    y = data.target.astype(float)
    if not logistic:
        y = y - y.mean()
    A = GroupPartition.from_labels(np.arange(30) % 10)
    B = GroupPartition.from_labels(np.arange(30) // 10)
    return X, y, [("A->B", "global", A, B), ("B->A", "global", B, A)]


def digits():
    """1797×61 (zero-variance pixels dropped); pixel rows -> columns, rows -> 2×2 tiles."""
    from sklearn.datasets import load_digits

    data = load_digits()
    keep = data.data.std(axis=0) > 0
    X = _standardise(data.data[:, keep])
    y = data.target.astype(float) - data.target.mean()
    pix = np.flatnonzero(keep)
    r, c = pix // 8, pix % 8
    rows = GroupPartition.from_labels(r)
    cols = GroupPartition.from_labels(c)
    tiles = GroupPartition.from_labels((r // 2) * 4 + c // 2)
    return X, y, [("rows->cols", "global", rows, cols), ("rows->tiles", "global", rows, tiles)]


def diabetes_spline():
    """442×70: 10 features × 7 cubic B-splines (n_knots=5); groups by feature <-> 5 |corr| clusters."""
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import SplineTransformer

    data = load_diabetes()
    Z = SplineTransformer(n_knots=5, degree=3).fit_transform(data.data)  # feature-major: [f*7 .. f*7+6]
    keep = Z.std(axis=0) > 0  # the binary 'sex' feature leaves some spline columns constant
    feat = (np.arange(Z.shape[1]) // (Z.shape[1] // 10))[keep]
    X = _standardise(Z)
    y = data.target - data.target.mean()
    dist = 1.0 - np.abs(np.corrcoef(data.data, rowvar=False))
    clusters = AgglomerativeClustering(n_clusters=5, metric="precomputed", linkage="average").fit_predict(dist)
    by_feature = GroupPartition.from_labels(feat)
    by_cluster = GroupPartition.from_labels(clusters[feat])
    return X, y, [("features->clusters", "global", by_feature, by_cluster),
                  ("clusters->features", "global", by_cluster, by_feature)]


def synthetic(seed: int, n: int = 500, d: int = 2000, group_size: int = 10, n_active: int = 10,
              which: tuple[str, ...] | None = None):
    """``X = N(0,1) + 0.5·shared factor``, 10 active groups, noise 0.5; six transitions of the spec."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.5 * rng.standard_normal((n, 1))
    X = _standardise(X)
    n_groups = d // group_size
    active = rng.choice(n_groups, n_active, replace=False)
    w = np.zeros(d)
    for g in active:
        w[g * group_size:(g + 1) * group_size] = rng.standard_normal(group_size)
    y = X @ w + 0.5 * rng.standard_normal(n)
    y -= y.mean()
    G = GroupPartition.contiguous(group_size, d)
    lab = G.labels_
    inactive = np.setdiff1d(np.arange(n_groups), active)
    a0, i0, i1 = int(active[0]), int(inactive[0]), int(inactive[1])
    split = lab.copy()
    split[G.groups[a0][: group_size // 2]] = n_groups
    trans = {
        "split-active": ("local", GroupPartition.from_labels(split)),
        "merge-active+inactive": ("local", GroupPartition.from_labels(np.where(lab == i0, a0, lab))),
        "move-1-feature": ("local", G.moved(int(G.groups[a0][0]), i0)),
        "merge-2-inactive": ("local", GroupPartition.from_labels(np.where(lab == i1, i0, lab))),
        "cyclic-shift-3": ("global", GroupPartition.from_labels(np.roll(lab, 3))),
        "random": ("global", GroupPartition.from_labels(rng.integers(0, n_groups, size=d))),
    }
    names = which if which is not None else tuple(trans)
    return X, y, [(name, trans[name][0], G, trans[name][1]) for name in names]


def _support(w: np.ndarray, part: GroupPartition) -> set[int]:
    norms = group_norms(w, part.labels_, part.n_groups, 2.0)
    return set(np.flatnonzero(norms > 1e-8 * max(norms.max(), 1e-300)).tolist())


def run_case(X: np.ndarray, y: np.ndarray, old: GroupPartition, new: GroupPartition, lam_rel: float, *,
             p: float = 2.0, loss: str = "squared", tol: float = 1e-9) -> dict[str, Any]:
    """Fit on ``old`` at ``λ = lam_rel · λ_max(new)``, then move to ``new`` by every method (flops, one run each).

    Arms: ``cold`` (retrain from zero, same BCD), ``warm`` (same solver from ``w_old``), ``path`` (groupshift,
    primitive by primitive: the method), ``endpoint`` (groupshift's endpoint variant) and, for p = 2 and the
    squared loss, ``cold_newton`` (retrain from zero with BCD, then the same active-set Newton endpoint step).
    Returns per-arm flops, epochs, objective and gap, plus certificate statistics, and ``state``: what a timing
    needs to re-run each arm (not JSON; callers pop it).
    """
    fit_b = loss == "logistic"
    lam = lam_rel * group_lambda_max(X, y, new, p, loss=loss, fit_intercept=fit_b)
    cache: dict = {}
    first = solve_group_l1(X, y, old, lam, p, loss=loss, fit_intercept=fit_b, tol=tol, lipschitz_cache=cache)
    out: dict[str, Any] = {"lambda": lam, "lam_rel": lam_rel, "p": p, "loss": loss, "d": X.shape[1],
                           "n": X.shape[0], "old_support": len(_support(first.coef, old)),
                           "old_converged": bool(first.converged)}

    def shift(strategy: str):
        return groupshift(X, y, first.coef, old, new, lam, p, loss=loss, fit_intercept=fit_b,
                          intercept_old=first.intercept, old_dual_scale=first.dual_scale,
                          old_group_scores=first.extra["scores"], tol=tol, lipschitz_cache=dict(cache),
                          strategy=strategy)

    arms = {
        "cold": lambda: cold_refit(X, y, new, lam, p, loss=loss, fit_intercept=fit_b, tol=tol),
        "warm": lambda: warm_refit(X, y, first.coef, new, lam, p, loss=loss, fit_intercept=fit_b, tol=tol,
                                   lipschitz_cache=dict(cache)),
        "path": lambda: shift("path"),
        "endpoint": lambda: shift("endpoint"),
    }
    if p == 2.0 and loss == "squared":
        arms["cold_newton"] = lambda: cold_newton_refit(X, y, new, lam, tol=tol)
    coefs = {}
    for name, run in arms.items():
        t = time.perf_counter()
        res = run()
        wall = time.perf_counter() - t
        if isinstance(res, tuple):
            w, info = res
            out[name] = {"wall_s": wall, "flops": info["n_flops"], "epochs": info["n_epochs"],
                         "primal": info["primal"], "gap": info["dual_gap"], "tol_abs": info["tol_abs"],
                         "converged": bool(info["converged"] and info["dual_gap"] <= info["tol_abs"]),
                         "n_primitives": info["n_primitives"], "n_closed_form": info["n_closed_form"],
                         "n_homotopy": info["n_homotopy"], "n_local_bcd": info["n_local_bcd"],
                         "certified_without_solve": bool(info["certified_without_solve"])}
        else:
            w = res.coef
            out[name] = {"wall_s": wall, "flops": res.n_flops, "epochs": res.n_epochs, "primal": res.primal,
                         "gap": res.dual_gap, "tol_abs": res.tol_abs,
                         "converged": bool(res.converged and res.dual_gap <= res.tol_abs)}
        coefs[name] = w
    cold = out["cold"]
    out["rel_obj_diff"] = max(abs(out[m]["primal"] - cold["primal"]) / abs(cold["primal"]) for m in arms)
    out["same_support"] = all(_support(coefs[m], new) == _support(coefs["cold"], new) for m in arms)
    out["all_converged"] = all(out[m]["converged"] for m in arms)
    for m in arms:
        if m != "path":
            out[f"ratio_{m}"] = out[m]["flops"] / out["path"]["flops"]
    out["state"] = {"arms": arms, "first": first, "lam": lam}
    return out
