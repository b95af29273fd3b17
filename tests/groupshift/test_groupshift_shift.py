"""groupshift / refit_partition: same optimum as a cold solve, certificates, closed-form path, tangent."""

import math

import numpy as np
import pytest
from scipy.optimize import root

from neurips26.groupshift import (
    GroupL1Classifier,
    GroupL1Regressor,
    GroupPartition,
    cold_refit,
    duality_gap,
    group_lambda_max,
    groupshift,
    homotopy_tangent,
    solve_group_l1,
)


def _data(n=100, d=40, seed=0, n_active=3, gsize=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.5 * rng.standard_normal((n, 1))
    w = np.zeros(d)
    for g in rng.choice(d // gsize, n_active, replace=False):
        w[g * gsize:(g + 1) * gsize] = rng.standard_normal(gsize)
    return X, X @ w + 0.5 * rng.standard_normal(n)


def _transitions(part, coef, rng):
    active = np.unique(part.labels_[np.flatnonzero(coef)])
    inactive = np.setdiff1d(np.arange(part.n_groups), active)
    lab = part.labels_
    split = lab.copy()
    split[part.groups[active[0]][:2]] = 10_000
    merge_ai = np.where(lab == inactive[0], active[0], lab)
    merge_ii = np.where(lab == inactive[1], inactive[0], lab)
    shift = np.roll(lab, 3)
    rand = rng.integers(0, part.n_groups, size=lab.size)
    return {"split": split, "merge_active_inactive": merge_ai, "merge_inactive": merge_ii, "shift": shift,
            "random": rand, "move": part.moved(int(part.groups[active[0]][0]), int(inactive[0])).labels_}


@pytest.mark.parametrize("p", [2.0, math.inf])
def test_groupshift_recovers_the_cold_optimum(p):
    X, y = _data()
    old = GroupPartition.contiguous(4, 40)
    lam = 0.2 * group_lambda_max(X, y, old, p)
    tol = 1e-10
    first = solve_group_l1(X, y, old, lam, p, tol=tol)
    for name, labels in _transitions(old, first.coef, np.random.default_rng(1)).items():
        new = GroupPartition.from_labels(labels)
        cold = cold_refit(X, y, new, lam, p, tol=tol)
        w, info = groupshift(X, y, first.coef, old, new, lam, p, tol=tol, old_dual_scale=first.dual_scale,
                             old_group_scores=first.extra["scores"])
        assert info["converged"] and info["dual_gap"] <= info["tol_abs"], name
        # independent certificate and the same objective as the cold solve
        assert duality_gap(X, y, w, new, lam, p) <= 1.01 * info["tol_abs"], name
        assert abs(info["primal"] - cold.primal) <= 1e-7 * cold.primal, name
        assert len(info["log"]) == len(old.transition_to(new))


def test_inactive_merge_is_certified_in_closed_form_without_a_full_pass():
    X, y = _data(n=120, d=60, seed=2)
    old = GroupPartition.contiguous(4, 60)
    lam = 0.3 * group_lambda_max(X, y, old)
    first = solve_group_l1(X, y, old, lam, tol=1e-10)
    inactive = np.setdiff1d(np.arange(old.n_groups), np.unique(old.labels_[np.flatnonzero(first.coef)]))
    new = GroupPartition.from_labels(np.where(old.labels_ == inactive[1], inactive[0], old.labels_))
    w, info = groupshift(X, y, first.coef, old, new, lam, tol=1e-10, old_dual_scale=first.dual_scale,
                         old_group_scores=first.extra["scores"])
    assert info["certified_without_solve"] and info["n_full_passes"] == 0 and info["n_epochs"] == 0
    assert all(entry["closed_form"] for entry in info["log"])
    np.testing.assert_array_equal(w, first.coef)
    # the locally computed global gap equals the independently computed one
    assert info["dual_gap"] == pytest.approx(duality_gap(X, y, w, new, lam), rel=1e-6, abs=1e-15)
    assert info["n_flops"] < X.size  # less than one pass over the data


def test_homotopy_tangent_matches_finite_differences_of_the_path():
    """Split primitive g -> (g1, g2): dw/dt from the closed form vs central differences of KKT roots."""
    rng = np.random.default_rng(3)
    n, d = 60, 6
    X = rng.standard_normal((n, d))
    y = X @ np.array([1.0, -1.5, 0.8, 1.2, 0.5, -0.7]) + 0.1 * rng.standard_normal(n)
    lam = 0.05
    g, g1, g2 = [0, 1, 2, 3], [0, 1], [2, 3]
    rest = [[4, 5]]

    def kkt(w, t):  # written independently: ∇L + λ Σ c ω w_g/‖w_g‖
        out = X.T @ (X @ w - y) / n
        for grp, c in [(rest[0], 1.0), (g, 1 - t), (g1, t), (g2, t)]:
            out[grp] += lam * c * math.sqrt(len(grp)) * w[grp] / np.linalg.norm(w[grp])
        return out

    w0 = np.linalg.lstsq(X, y, rcond=None)[0]
    path = {}
    for t in (0.5 - 1e-5, 0.5, 0.5 + 1e-5):
        sol = root(kkt, w0, args=(t,), tol=1e-14)
        assert np.abs(kkt(sol.x, t)).max() < 1e-12
        path[t] = sol.x
    fd = (path[0.5 + 1e-5] - path[0.5 - 1e-5]) / 2e-5
    tangent = homotopy_tangent(X, y, path[0.5], [g], [g1, g2], rest, lam, 0.5)
    np.testing.assert_allclose(tangent, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("method", ["groupshift", "warm", "cold"])
def test_refit_partition_methods_agree(method):
    X, y = _data(seed=5)
    y = y + 3.0  # intercept matters
    est = GroupL1Regressor(4, alpha=0.1, tol=1e-10).fit(X, y)
    new = GroupPartition.from_labels(np.roll(est.groups_.labels_, 2))
    ref = GroupL1Regressor(new, alpha=0.1, tol=1e-10).fit(X, y)
    est.refit_partition(X, y, new, method=method)
    # the fitted partition moves; the constructor parameter is the user's and stays as given
    assert est.groups_ == new and est.groups == 4
    assert abs(est.objective_ - ref.objective_) <= 1e-7 * ref.objective_
    assert est.dual_gap_ <= 1e-10 * np.var(y) / 2 * 1.0001
    np.testing.assert_allclose(est.predict(X), ref.predict(X), atol=1e-3)
    if method == "groupshift":
        assert len(est.transition_log_) == len(GroupPartition.contiguous(4, 40).transition_to(new))


def test_classifier_refit_partition_groupshift():
    X, y = _data(seed=6)
    yb = (y > np.median(y)).astype(int)
    est = GroupL1Classifier(4, alpha=0.02, tol=1e-10).fit(X, yb)
    new = GroupPartition.from_labels(np.roll(est.groups_.labels_, 1))
    ref = GroupL1Classifier(new, alpha=0.02, tol=1e-10).fit(X, yb)
    est.refit_partition(X, yb, new)
    assert abs(est.objective_ - ref.objective_) <= 1e-7 * ref.objective_
    assert duality_gap(X, yb.astype(float), est.coef_, new, 0.02, loss="logistic", fit_intercept=True) <= 1e-9


def test_newton_and_plain_local_bcd_reach_the_same_certified_optimum():
    X, y = _data(seed=8)
    old = GroupPartition.contiguous(4, 40)
    new = GroupPartition.from_labels(np.where(old.labels_ == 3, 2, old.labels_))
    lam = 0.1 * group_lambda_max(X, y, new)
    first = solve_group_l1(X, y, old, lam, tol=1e-10)
    w1, i1 = groupshift(X, y, first.coef, old, new, lam, tol=1e-10)
    w2, i2 = groupshift(X, y, first.coef, old, new, lam, tol=1e-10, newton=False)
    assert i1["dual_gap"] <= i1["tol_abs"] and i2["dual_gap"] <= i2["tol_abs"]
    assert abs(i1["primal"] - i2["primal"]) <= 1e-9 * i2["primal"]
    assert not i2["newton"]["used"]


def test_cold_newton_baseline_reaches_the_certified_optimum():
    from neurips26.groupshift.baselines import cold_newton_refit

    X, y = _data(seed=9)
    part = GroupPartition.contiguous(4, 40)
    lam = 0.1 * group_lambda_max(X, y, part)
    ref = cold_refit(X, y, part, lam, tol=1e-10)
    res = cold_newton_refit(X, y, part, lam, tol=1e-10)
    assert res.dual_gap <= res.tol_abs
    assert abs(res.primal - ref.primal) <= 1e-9 * ref.primal
