"""Each primitive's own update (closed form, homotopy, local solve) against a cold solve; the user options
(re-partition through set_params/Pipeline, standardize, sample_weight, sparse X, unpenalised groups)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from neurips26.groupshift import (
    GroupL1Classifier,
    GroupL1Regressor,
    GroupPartition,
    cold_refit,
    duality_gap,
    group_lambda_max,
    groupshift,
    solve_group_l1,
)
from neurips26.groupshift.homotopy import Gram, follow_primitive

TOL = 1e-11


def _data(n=120, d=48, seed=0, n_active=3, gsize=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.5 * rng.standard_normal((n, 1))
    w = np.zeros(d)
    for g in rng.choice(d // gsize, n_active, replace=False):
        w[g * gsize:(g + 1) * gsize] = rng.standard_normal(gsize)
    return X, X @ w + 0.5 * rng.standard_normal(n)


def _single_primitives(part, coef):
    """One transition per primitive type, each made of exactly one split or one merge (a move is two)."""
    active = np.unique(part.labels_[np.flatnonzero(coef)])
    inactive = np.setdiff1d(np.arange(part.n_groups), active)
    lab = part.labels_
    split_a, split_i = lab.copy(), lab.copy()
    split_a[part.groups[active[0]][:2]] = 10_000
    split_i[part.groups[inactive[0]][:2]] = 10_000
    out = {"split-active": split_a, "split-inactive": split_i,
           "merge-active+inactive": np.where(lab == inactive[0], active[0], lab),
           "merge-inactive": np.where(lab == inactive[1], inactive[0], lab),
           "move": part.moved(int(part.groups[active[0]][0]), int(inactive[0])).labels_}
    if active.size > 1:
        out["merge-active+active"] = np.where(lab == active[1], active[0], lab)
    return out


def _kkt_residual(X, y, w, part, lam):
    """max over groups of the p = 2 KKT violation (an independent optimality test)."""
    n = y.size
    grad = -X.T @ (y - X @ w) / n
    worst = 0.0
    for g in part.groups:
        om = math.sqrt(g.size)
        nrm = np.linalg.norm(w[g])
        if nrm == 0:
            worst = max(worst, np.linalg.norm(grad[g]) - lam * om)
        else:
            worst = max(worst, np.linalg.norm(grad[g] + lam * om * w[g] / nrm))
    return worst


@pytest.mark.parametrize("name", ["split-active", "split-inactive", "merge-active+inactive",
                                  "merge-active+active", "merge-inactive", "move"])
def test_each_primitive_update_matches_a_cold_solve(name):
    X, y = _data()
    old = GroupPartition.contiguous(4, 48)
    lam = 0.15 * group_lambda_max(X, y, old)
    first = solve_group_l1(X, y, old, lam, tol=TOL)
    new = GroupPartition.from_labels(_single_primitives(old, first.coef)[name])
    cold = cold_refit(X, y, new, lam, tol=TOL)
    w, info = groupshift(X, y, first.coef, old, new, lam, tol=TOL, old_dual_scale=first.dual_scale,
                         old_group_scores=first.extra["scores"])
    assert info["strategy"] == "path" and info["converged"]
    assert len(info["log"]) == info["n_primitives"] == (2 if name == "move" else 1)
    assert abs(info["primal"] - cold.primal) <= 1e-9 * cold.primal
    np.testing.assert_allclose(w, cold.coef, atol=1e-5 * np.abs(cold.coef).max())
    assert duality_gap(X, y, w, new, lam) <= 1.01 * info["tol_abs"]
    updates = {entry["update"] for entry in info["log"]}
    if name == "merge-inactive":  # two inactive groups always merge in closed form (auto weights, p = 2)
        assert updates == {"closed_form"} and info["n_epochs"] == 0
    if name in ("split-active", "merge-active+inactive", "merge-active+active"):
        assert updates == {"homotopy"}


@pytest.mark.parametrize("name", ["split-active", "merge-active+inactive", "merge-active+active", "move"])
def test_homotopy_endpoint_alone_is_the_new_optimum(name):
    """follow_primitive's t = 1 point, before any solver or certificate pass, satisfies the new KKT conditions."""
    X, y = _data(seed=3)
    old = GroupPartition.contiguous(4, 48)
    lam = 0.2 * group_lambda_max(X, y, old)
    w = solve_group_l1(X, y, old, lam, tol=1e-13).coef
    new = GroupPartition.from_labels(_single_primitives(old, w)[name])
    part = old
    for prim in old.transition_to(new):
        gram = Gram(X, y)
        rest = [g for g in part.keys() if g not in prim.sources and np.any(w[list(g)])]
        pieces = prim.targets if prim.kind == "split" else prim.sources
        union = prim.sources[0] if prim.kind == "split" else prim.targets[0]
        gram.add(np.array(list(union) + [j for g in rest for j in g], dtype=np.int64))
        w_new, info = follow_primitive(gram, w, prim.kind, [np.array(pc) for pc in pieces],
                                       [math.sqrt(len(pc)) for pc in pieces], math.sqrt(len(union)),
                                       [(np.array(g), math.sqrt(len(g))) for g in rest], lam)
        assert w_new is not None and info.converged, info.reason
        part = prim.apply(part)
        w = w_new
    assert part == new
    cold = cold_refit(X, y, new, lam, tol=1e-13)
    assert _kkt_residual(X, y, w, new, lam) <= 1e-8 * lam
    np.testing.assert_allclose(w, cold.coef, atol=1e-6 * np.abs(cold.coef).max())


def test_homotopy_locates_an_activation_event():
    """Merging an active with an inactive group that the new optimum activates: one activation along the path."""
    X, y = _data(seed=3)
    old = GroupPartition.contiguous(4, 48)
    lam = 0.2 * group_lambda_max(X, y, old)
    w = solve_group_l1(X, y, old, lam, tol=1e-13).coef
    lab = _single_primitives(old, w)["merge-active+inactive"]
    new = GroupPartition.from_labels(lab)
    _, info = groupshift(X, y, w, old, new, lam, tol=TOL)
    cold = cold_refit(X, y, new, lam, tol=TOL)
    merged = [g for g in new.keys() if g not in old.keys()][0]
    entry = info["log"][0]
    # the inactive half becomes nonzero in the new optimum exactly when the path reports an activation
    assert (entry["activations"] > 0) == bool(np.all(cold.coef[list(merged)] != 0))


@pytest.mark.parametrize("p, loss", [(math.inf, "squared"), (3.0, "squared"), (2.0, "logistic")])
def test_local_solve_primitives_match_a_cold_solve(p, loss):
    X, y = _data(n=100, d=24, seed=4)
    if loss == "logistic":
        y = (y > np.median(y)).astype(float)
    fit_b = loss == "logistic"
    old = GroupPartition.contiguous(4, 24)
    lam = (0.5 if fit_b else 0.2) * group_lambda_max(X, y, old, p, loss=loss, fit_intercept=fit_b)
    first = solve_group_l1(X, y, old, lam, p, loss=loss, fit_intercept=fit_b, tol=TOL)
    for name, lab in _single_primitives(old, first.coef).items():
        new = GroupPartition.from_labels(lab)
        cold = cold_refit(X, y, new, lam, p, loss=loss, fit_intercept=fit_b, tol=TOL)
        _, info = groupshift(X, y, first.coef, old, new, lam, p, loss=loss, fit_intercept=fit_b,
                             intercept_old=first.intercept, tol=TOL)
        assert info["converged"], name
        assert abs(info["primal"] - cold.primal) <= 1e-8 * abs(cold.primal), name
        assert {e["update"] for e in info["log"]} <= {"closed_form", "bcd"}, name


def test_endpoint_variant_still_available_and_exact():
    X, y = _data(seed=6)
    old = GroupPartition.contiguous(4, 48)
    lam = 0.1 * group_lambda_max(X, y, old)
    first = solve_group_l1(X, y, old, lam, tol=TOL)
    new = GroupPartition.from_labels(np.roll(old.labels_, 3))
    cold = cold_refit(X, y, new, lam, tol=TOL)
    for strategy in ("path", "endpoint"):
        _, info = groupshift(X, y, first.coef, old, new, lam, tol=TOL, strategy=strategy)
        assert info["strategy"] == strategy and abs(info["primal"] - cold.primal) <= 1e-9 * cold.primal
    with pytest.raises(ValueError, match="strategy must be one of"):
        groupshift(X, y, first.coef, old, new, lam, strategy="fast")


# ------------------------------------------------------------------------------------------- user options
def test_repartition_through_set_params_in_a_pipeline():
    X, y = _data(seed=7)
    old, new = GroupPartition.contiguous(4, 48), GroupPartition.from_labels(np.roll(np.arange(48) // 4, 2))
    alpha = 0.1
    pipe = Pipeline([("scale", StandardScaler()),
                     ("gl", GroupL1Regressor(old, alpha=alpha, tol=TOL, warm_start=True))]).fit(X, y)
    pipe.set_params(gl__groups=new).fit(X, y)
    est = pipe.named_steps["gl"]
    assert est.groups is new and est.groups_ == new and len(est.transition_log_) > 0
    ref = GroupL1Regressor(new, alpha=alpha, tol=TOL).fit(StandardScaler().fit_transform(X), y)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-9)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-6)
    # clone keeps the parameter (the new partition), not the fitted state
    fresh = clone(pipe)
    assert fresh.named_steps["gl"].groups is new and not hasattr(fresh.named_steps["gl"], "coef_")
    # without warm_start, a changed partition is a plain cold fit (no transition log)
    cold = GroupL1Regressor(old, alpha=alpha, tol=TOL).fit(X, y).set_params(groups=new).fit(X, y)
    assert cold.transition_log_ == [] and cold.groups_ == new


@pytest.mark.parametrize("method", ["groupshift", "groupshift-endpoint", "warm", "cold"])
def test_repartition_parameter_methods(method):
    X, y = _data(seed=8)
    old, new = GroupPartition.contiguous(4, 48), GroupPartition.from_labels(np.roll(np.arange(48) // 4, 1))
    est = GroupL1Regressor(old, alpha=0.1, tol=TOL, warm_start=True, repartition=method).fit(X, y)
    est.set_params(groups=new).fit(X, y)
    ref = GroupL1Regressor(new, alpha=0.1, tol=TOL).fit(X, y)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-9)
    with pytest.raises(ValueError, match="repartition must be one of"):
        GroupL1Regressor(old, repartition="fast").fit(X, y)


@pytest.mark.parametrize("cls", [GroupL1Regressor, GroupL1Classifier])
def test_standardize_equals_a_fit_on_standardised_columns(cls):
    X, y = _data(seed=9)
    if cls is GroupL1Classifier:
        y = (y > 0).astype(int)
    scales = np.exp(np.random.default_rng(0).uniform(-4, 4, size=48))  # badly scaled columns
    Xb = X * scales
    alpha = 0.05 if cls is GroupL1Regressor else 0.01
    std = cls(4, alpha=alpha, tol=TOL, standardize=True).fit(Xb, y)
    Z = (Xb - Xb.mean(axis=0)) / Xb.std(axis=0)
    ref = cls(4, alpha=alpha, tol=TOL).fit(Z, y)
    # the penalty acts on standardised coefficients: coef_ · σ is the fit on the standardised columns
    np.testing.assert_allclose(std.coef_ * Xb.std(axis=0), ref.coef_, atol=1e-6 * np.abs(ref.coef_).max())
    np.testing.assert_allclose(std.predict(Xb), ref.predict(Z), atol=1e-6)


def test_sample_weight_equals_repeated_rows():
    X, y = _data(n=60, seed=10)
    counts = np.random.default_rng(1).integers(0, 4, size=60)
    est = GroupL1Regressor(4, alpha=0.05, tol=TOL).fit(X, y, sample_weight=counts)
    ref = GroupL1Regressor(4, alpha=0.05, tol=TOL).fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-7)
    assert est.intercept_ == pytest.approx(ref.intercept_, abs=1e-7)
    with pytest.raises(ValueError, match="sample_weight"):
        GroupL1Regressor(4).fit(X, y, sample_weight=-np.ones(60))


def test_sparse_input_equals_dense():
    X, y = _data(seed=11)
    X[np.abs(X) < 0.8] = 0.0
    dense = GroupL1Regressor(4, alpha=0.05, tol=TOL).fit(X, y)
    sparse = GroupL1Regressor(4, alpha=0.05, tol=TOL).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, atol=1e-10)
    np.testing.assert_allclose(sparse.predict(sp.csc_matrix(X)), dense.predict(X), atol=1e-10)


def test_unpenalised_group_is_profiled_out_exactly():
    X, y = _data(seed=12)
    weights = np.full(12, 2.0)
    weights[[0, 5]] = 0.0  # groups 0 and 5 unpenalised
    alpha = 0.5  # large: every penalised group would be zero, the unpenalised ones are not
    est = GroupL1Regressor(4, alpha=alpha, weights=weights, tol=TOL).fit(X, y)
    resid = y - est.predict(X)
    unpen = np.r_[0:4, 20:24]
    # KKT of an unpenalised group: its gradient vanishes (a least-squares normal equation), and with the intercept
    np.testing.assert_allclose(X[:, unpen].T @ resid / 120, 0.0, atol=1e-8)
    assert abs(resid.mean()) < 1e-10
    assert np.all(est.coef_[unpen] != 0)
    # the penalised groups satisfy their own KKT conditions (weight 2, not √|g|)
    grad = -(X - X.mean(0)).T @ (resid - resid.mean()) / 120
    for g in range(12):
        if weights[g] == 0:
            continue
        cols = np.r_[4 * g:4 * g + 4]
        nrm = np.linalg.norm(est.coef_[cols])
        viol = (np.linalg.norm(grad[cols]) - alpha * 2.0 if nrm == 0
                else np.linalg.norm(grad[cols] + alpha * 2.0 * est.coef_[cols] / nrm))
        assert viol <= 1e-6
    # a re-partition of the penalised groups keeps the unpenalised ones
    pair = {0: 0, 5: 5, 1: 1, 2: 1, 3: 3, 4: 3, 6: 6, 7: 6, 8: 8, 9: 8, 10: 10, 11: 10}
    new_groups = GroupPartition.from_labels([pair[g] for g in np.arange(48) // 4])
    w_new = np.array([0.0 if k in (new_groups.labels_[0], new_groups.labels_[20]) else 2.0
                      for k in range(new_groups.n_groups)])
    est.refit_partition(X, y, new_groups, weights=w_new)
    ref = GroupL1Regressor(new_groups, alpha=alpha, weights=w_new, tol=TOL).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-6)
    with pytest.raises(ValueError, match="> 0 or exactly 0"):
        GroupL1Regressor(4, weights=-weights).fit(X, y)
    with pytest.raises(ValueError, match="GroupL1Regressor only"):
        GroupL1Classifier(4, weights=weights).fit(X, (y > 0).astype(int))
