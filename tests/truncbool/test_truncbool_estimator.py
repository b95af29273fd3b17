"""TruncatedBooleanProduct against independent references: closed form, brute-force flip counts, a
per-sample Python loss minimised by SciPy, finite differences, and coverage of the standard errors."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone

from neurips26.truncbool import (
    CallableOracle,
    IntHalfspace,
    NaiveBooleanProduct,
    Parity,
    SubcubeUnion,
    TruncatedBooleanProduct,
    UnidentifiableWarning,
    WeightBand,
    composite_grad,
    composite_loss,
    composite_stats,
    make_blocks,
    sample_truncated_product,
)


def _naive_loss(z, X, member, blocks):
    """ℓ̂(z) by a Python loop: per sample and block, enumerate the completions and ask membership."""
    total = 0.0
    for x in X.tolist():
        for blk in blocks:
            feas = []
            for c in range(2 ** len(blk)):
                y = list(x)
                for k, j in enumerate(blk):
                    y[j] = (c >> (len(blk) - 1 - k)) & 1
                if member(y):
                    feas.append(sum(z[j] * y[j] for j in blk))
            top = max(feas)
            total -= sum(z[j] * x[j] for j in blk) - (top + math.log(sum(math.exp(f - top) for f in feas)))
    return total / len(X)


def _band_data(n=10, k=3, m=800, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.uniform(-1, 1, n)
    return z, WeightBand(k), sample_truncated_product(z, WeightBand(k), m, rng=seed + 1)


def test_gd_equals_closed_form():
    z, S, X = _band_data(n=12, m=3000)
    gd = TruncatedBooleanProduct(S, tol=1e-10).fit(X)
    cf = TruncatedBooleanProduct(S, solver="closed_form").fit(X)
    assert gd.converged_
    np.testing.assert_allclose(gd.natural_params_, cf.natural_params_, atol=1e-6)
    lb = TruncatedBooleanProduct(S, solver="lbfgs", tol=1e-10).fit(X)
    np.testing.assert_allclose(lb.natural_params_, cf.natural_params_, atol=1e-5)


def test_informative_counts_brute_force():
    z, S, X = _band_data(n=9, k=2, m=400)
    est = TruncatedBooleanProduct(S).fit(X)
    N = np.zeros(9, dtype=int)
    K = np.zeros(9, dtype=int)
    for x in X.tolist():
        for i in range(9):
            y = list(x)
            y[i] ^= 1
            if sum(y) <= 2:
                N[i] += 1
                K[i] += x[i]
    np.testing.assert_array_equal(est.n_informative_, N)
    np.testing.assert_allclose(est.fatness_, N / 400)
    want = np.clip(np.log(K) - np.log(N - K), -8, 8)
    np.testing.assert_allclose(TruncatedBooleanProduct(S, solver="closed_form").fit(X).natural_params_, want)
    assert est.n_oracle_calls_ == 400 * 9 + 400


@pytest.mark.parametrize("case", ["band_r1", "halfspace_r1", "parity_r2", "band_r2_all"])
def test_loss_and_grad_match_python_loop(case):
    rng = np.random.default_rng(5)
    if case.startswith("band"):
        n, S, member = 6, WeightBand(2), (lambda y: sum(y) <= 2)
    elif case.startswith("halfspace"):
        a = [1, 2, -1, 3, 1, 2]
        n, S, member = 6, IntHalfspace(a, 3), (lambda y: sum(ai * v for ai, v in zip(a, y)) <= 3)
    else:
        n, S, member = 6, Parity(True), (lambda y: sum(y) % 2 == 0)
    r = 1 if case.endswith("r1") else 2
    X = sample_truncated_product(rng.uniform(-1, 1, n), S, 150, rng=6)
    blocks = make_blocks(n, r, "all" if case.endswith("all") else "cyclic")
    # the generic path (CallableOracle) and the fast path must give the same statistics
    for oracle in (S, CallableOracle(lambda A: S(A))):
        stats = composite_stats(X, oracle, blocks)
        for _ in range(3):
            v = rng.uniform(-2, 2, n)
            assert abs(composite_loss(v, stats) - _naive_loss(v, X, member, blocks.tolist())) < 1e-10
            h = 1e-6
            fd = [(composite_loss(v + h * e, stats) - composite_loss(v - h * e, stats)) / (2 * h) for e in np.eye(n)]
            np.testing.assert_allclose(composite_grad(v, stats), fd, atol=1e-7)


def test_r2_parity_matches_direct_minimisation():
    n = 5
    z_true = np.array([1.0, -0.5, 0.8, 0.2, -1.2])
    X = sample_truncated_product(z_true, Parity(True), 200, rng=7)
    blocks = make_blocks(n, 2, "cyclic").tolist()
    member = lambda y: sum(y) % 2 == 0  # noqa: E731
    # SciPy BFGS with finite-difference gradients on the per-sample Python loss (no library code)
    ref = minimize(lambda v: _naive_loss(v, X, member, blocks), np.zeros(n), method="BFGS",
                   options={"gtol": 1e-9})
    for solver in ("gd", "lbfgs"):
        est = TruncatedBooleanProduct(Parity(True), block_order=2, solver=solver, tol=1e-10).fit(X)
        np.testing.assert_allclose(est.natural_params_, ref.x, atol=1e-4)


def test_recovers_band_and_beats_naive():
    z, S, X = _band_data(n=64, k=16, m=4000, seed=3)
    est = TruncatedBooleanProduct(S).fit(X)
    err = np.abs(est.natural_params_ - z).max()
    naive = np.abs(NaiveBooleanProduct().fit(X).natural_params_ - z).max()
    assert err < 0.35 and err < 0.5 * naive
    assert est.converged_ and est.n_clipped_ == 0


def test_parity_r2_recovers_width_two():
    z = np.full(16, 2.0)
    X = sample_truncated_product(z, Parity(True), 8000, rng=8)
    est = TruncatedBooleanProduct(Parity(True), block_order=2).fit(X)
    assert np.abs(est.natural_params_ - z).max() < 0.3
    # singletons carry nothing on parity: every coordinate unidentifiable
    with pytest.warns(UnidentifiableWarning):
        r1 = TruncatedBooleanProduct(Parity(True)).fit(X)
    assert np.isnan(r1.natural_params_).all()


def test_unidentifiable_coordinate_is_nan_and_named():
    S = SubcubeUnion(["1*****"])  # coordinate 0 frozen at 1
    X = sample_truncated_product(np.zeros(6), S, 200, rng=9)
    with pytest.warns(UnidentifiableWarning, match=r"\[0\]"):
        est = TruncatedBooleanProduct(S).fit(X)
    assert np.isnan(est.natural_params_[0]) and np.isnan(est.stderr_[0])
    assert np.all(np.isfinite(est.natural_params_[1:]))
    np.testing.assert_array_equal(est.unidentifiable_, [0])


def _null_space_brute_force(X, member, blocks, n):
    """Null space of the span of every observed completion difference c - c' (embedded), by SVD."""
    rows = []
    for x in X.tolist():
        for blk in blocks:
            feas = []
            for c in range(2 ** len(blk)):
                y = list(x)
                for k, j in enumerate(blk):
                    y[j] = (c >> (len(blk) - 1 - k)) & 1
                if member(y):
                    feas.append(np.array([y[j] for j in blk], dtype=float))
            for f in feas[1:]:
                v = np.zeros(n)
                v[list(blk)] = f - feas[0]
                rows.append(v)
    _, sv, vt = np.linalg.svd(np.array(rows) if rows else np.zeros((1, n)))
    rank = int((sv > 1e-9).sum())
    return vt[rank:]


SLICE4 = CallableOracle(lambda A: A.sum(axis=1) == 4, name="slice |x| = 4")


@pytest.mark.parametrize("case", ["slice-cyclic", "slice-disjoint", "parity-cyclic", "parity-disjoint",
                                  "cube-frozen", "band-r1"])
def test_identifiability_matches_brute_force_null_space(case):
    n = 8
    z = np.random.default_rng(11).uniform(-1, 1, n)
    S, blocks = {
        "slice-cyclic": (SLICE4, make_blocks(n, 2)),
        "slice-disjoint": (SLICE4, np.array([[0, 1], [2, 3], [4, 5], [6, 7]])),
        "parity-cyclic": (Parity(True), make_blocks(n, 2)),
        "parity-disjoint": (Parity(True), np.array([[0, 1], [2, 3], [4, 5], [6, 7]])),
        # x_0 + x_1 = 1 and x_2 = 0 on every row: (0, 1) is a difference edge, 2 carries nothing
        "cube-frozen": (SubcubeUnion(["100*****", "010*****"]), make_blocks(n, 2)),
        "band-r1": (WeightBand(3), make_blocks(n, 1)),
    }[case]
    X = sample_truncated_product(z, S, 150, rng=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = TruncatedBooleanProduct(S, block_order=blocks.shape[1], pairs=blocks if blocks.shape[1] == 2
                                      else "cyclic").fit(X)
    ref = _null_space_brute_force(X, lambda y: bool(S(np.array([y], dtype=np.int8))[0]), blocks.tolist(), n)
    ours = est.null_space_
    np.testing.assert_allclose(ours.T @ ours, ref.T @ ref, atol=1e-9)     # same projector
    identified_ref = np.abs(ref).sum(axis=0) < 1e-9 if ref.size else np.ones(n, dtype=bool)
    np.testing.assert_array_equal(est.identified_, identified_ref)


def test_slice_warns_gives_nan_stderr_and_keeps_differences():
    """On {|x| = 4} only z_i - z_j are identified: a warning names the all-ones direction; no coordinate
    gets a standard error; the differences are still estimated."""
    n = 10
    z = np.random.default_rng(0).uniform(-1, 1, n)
    X = sample_truncated_product(z, SLICE4, 4000, rng=1)
    with pytest.warns(UnidentifiableWarning, match="all-ones direction"):
        est = TruncatedBooleanProduct(SLICE4, block_order=2).fit(X)
    assert np.all(np.isnan(est.stderr_)) and not est.identified_.any()
    assert np.all(np.isnan(est.confidence_intervals(0.95)))
    np.testing.assert_allclose(est.null_space_, np.full((1, n), 1 / np.sqrt(n)), atol=1e-12)
    d_hat, d = est.natural_params_ - est.natural_params_.mean(), z - z.mean()
    assert np.abs(d_hat - d).max() < 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # parity with pairs is fully identified: no warning, finite errors
        par = TruncatedBooleanProduct(Parity(True), block_order=2).fit(
            sample_truncated_product(z, Parity(True), 2000, rng=2))
    assert par.identified_.all() and np.all(np.isfinite(par.stderr_))


@pytest.mark.parametrize("r", [1, 2])
def test_standard_errors_cover(r):
    """Per-coordinate 90% intervals cover z* about 90% of the time over repeated draws."""
    n, reps = 6, 60
    rng = np.random.default_rng(10)
    z = rng.uniform(-1, 1, n)
    S = WeightBand(2) if r == 1 else Parity(True)
    hits = []
    for rep in range(reps):
        X = sample_truncated_product(z, S, 1500, rng=100 + rep)
        est = TruncatedBooleanProduct(S, block_order=r).fit(X)
        ci = est.confidence_intervals(0.9, union=False)
        hits.extend((ci[:, 0] <= z) & (z <= ci[:, 1]))
    assert 0.84 <= np.mean(hits) <= 0.96
    assert np.all(est.confidence_intervals(0.9, union=True)[:, 1] - est.confidence_intervals(0.9, union=True)[:, 0]
                  > ci[:, 1] - ci[:, 0])


def test_score_is_mean_pseudo_loglik_and_sklearn_contract():
    z, S, X = _band_data(n=6, k=2, m=300)
    est = TruncatedBooleanProduct(S, width_bound=5.0).fit(X)
    member = lambda y: sum(y) <= 2  # noqa: E731
    assert abs(est.score(X) + _naive_loss(est.natural_params_, X, member, [[i] for i in range(6)])) < 1e-10
    c = clone(est)
    assert c.get_params()["width_bound"] == 5.0 and not hasattr(c, "natural_params_")
    c.set_params(solver="closed_form").fit(X)
    np.testing.assert_allclose(c.natural_params_, est.natural_params_, atol=1e-5)


@pytest.mark.parametrize("X, kwargs, exc, match", [
    (np.zeros(5), {}, ValueError, r"X must be an array \[M, N\]"),
    (np.full((3, 4), 2), {}, ValueError, "only 0 and 1"),
    (np.array([[0, np.nan, 0, 0]]), {}, ValueError, "finite"),
    (np.ones((4, 4)), {}, ValueError, "4 of 4 rows of X are outside S"),
    (np.zeros((4, 4)), {"width_bound": 0}, ValueError, "width_bound"),
    (np.zeros((4, 4)), {"width_bound": np.inf}, ValueError, "width_bound"),
    (np.zeros((4, 4)), {"block_order": 3}, ValueError, "block_order"),
    (np.zeros((4, 4)), {"solver": "newton"}, ValueError, "solver"),
    (np.zeros((4, 4)), {"solver": "closed_form", "block_order": 2}, ValueError, "closed_form"),
    (np.zeros((4, 70)), {"block_order": 2, "pairs": "all"}, ValueError, "n <= 64"),
    (np.zeros((4, 4)), {"block_order": 2, "pairs": np.array([[0, 0]])}, ValueError, "distinct"),
    (np.zeros((4, 4)), {"max_iter": 0}, ValueError, "max_iter"),
    (np.zeros((4, 4)), {"oracle": None}, TypeError, "oracle"),
    ([["a", "b"]], {}, TypeError, "X must be an array"),
])
def test_bad_input(X, kwargs, exc, match):
    params = {"oracle": WeightBand(1)} | kwargs
    with pytest.raises(exc, match=match):
        TruncatedBooleanProduct(**params).fit(X)


def test_malformed_oracle_in_fit():
    est = TruncatedBooleanProduct(lambda A: np.ones(A.shape[0] + 1, dtype=bool))
    with pytest.raises(ValueError, match="shape"):
        est.fit(np.zeros((3, 3)))


def test_convergence_warning_at_cap():
    z, S, X = _band_data(n=8, m=500)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(Warning, match="max_iter"):
            TruncatedBooleanProduct(S, max_iter=2).fit(X)


def test_predict_proba_and_sample_follow_the_fitted_law():
    """The fitted law against brute-force enumeration: pmf on S, zero off S, untruncated product pmf."""
    import itertools

    z, S, X = _band_data(n=8, k=3, m=2000)
    est = TruncatedBooleanProduct(S).fit(X)
    zh = est.natural_params_
    pts = np.array(list(itertools.product((0, 1), repeat=8)), dtype=np.int8)
    w = np.exp(pts @ zh)
    inS = pts.sum(axis=1) <= 3
    np.testing.assert_allclose(est.predict_proba(pts), w * inS / (w * inS).sum(), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(est.predict_proba(pts, truncated=False), w / w.sum(), rtol=1e-10)
    np.testing.assert_allclose(est.score_samples(pts[inS]), np.log(w[inS] / (w * inS).sum()), rtol=1e-10)
    draws = est.sample(20_000, random_state=3)
    assert draws.shape == (20_000, 8) and np.all(draws.sum(axis=1) <= 3)
    exact_mean = (w * inS / (w * inS).sum()) @ pts
    np.testing.assert_allclose(draws.mean(axis=0), exact_mean, atol=0.015)
    np.testing.assert_allclose(est.sample(20_000, truncated=False, random_state=4).mean(axis=0),
                               1 / (1 + np.exp(-zh)), atol=0.015)
    with pytest.raises(ValueError, match="n_samples"):
        est.sample(-1)
    with pytest.raises(TypeError, match="truncated"):
        est.predict_proba(pts, truncated="yes")


def test_fitted_law_refuses_unidentified_models():
    S = SubcubeUnion(["1*****"])
    X = sample_truncated_product(np.zeros(6), S, 200, rng=9)
    with pytest.warns(UnidentifiableWarning):
        est = TruncatedBooleanProduct(S).fit(X)
    with pytest.raises(ValueError, match=r"\[0\]"):
        est.sample(3)
    Xs = sample_truncated_product(np.zeros(10), SLICE4, 500, rng=1)
    with pytest.warns(UnidentifiableWarning):
        sl = TruncatedBooleanProduct(SLICE4, block_order=2).fit(Xs)
    with pytest.raises(ValueError, match="flat directions"):
        sl.predict_proba(Xs, truncated=False)
