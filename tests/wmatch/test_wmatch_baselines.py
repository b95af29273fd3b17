"""Baselines and the ANN oracles against brute-force references."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.wmatch import (
    BruteForceANN,
    FaissANN,
    GreedyOnline,
    IncrementalHungarian,
    PStableLSH,
    RecomputeBaseline,
    exact_matching,
    wasserstein_drift,
)


def _brute_force_opt(A, B, p_norm, wp):
    best = math.inf
    for perm in itertools.permutations(range(len(B))):
        total = sum(np.linalg.norm(A[i] - B[j], ord=p_norm) ** wp for i, j in enumerate(perm))
        best = min(best, total)
    return best ** (1 / wp)


@pytest.mark.parametrize("p_norm, wp", [(1, 1), (2, 1), (2, 2), (np.inf, 1)])
def test_exact_matching_equals_permutation_search(p_norm, wp):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    want = _brute_force_opt(A, B, p_norm, wp)
    for method in ("lsa", "emd"):
        cost, pairs = exact_matching(A, B, norm_p=float(p_norm), wasserstein_p=wp, method=method)
        assert cost == pytest.approx(want, rel=1e-9)
        assert sorted(pairs[:, 0]) == list(range(6)) and sorted(pairs[:, 1]) == list(range(6))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), wp=st.integers(1, 2), steps=st.integers(1, 25))
def test_incremental_hungarian_is_exact_on_balanced_states(seed, wp, steps):
    rng = np.random.default_rng(seed)
    ih = IncrementalHungarian(2, wasserstein_p=wp)
    live = {"A": [], "B": []}
    pts = {}
    for _ in range(int(rng.integers(1, 8))):
        for side in "AB":
            x = rng.normal(size=2)
            pid = ih.insert(x, side)
            live[side].append(pid)
            pts[pid] = x
    for _ in range(steps):
        side = "AB"[int(rng.integers(2))]
        gone = live[side].pop(int(rng.integers(len(live[side]))))
        ih.delete(gone)
        x = rng.normal(size=2)
        pid = ih.insert(x, side)
        live[side].append(pid)
        pts[pid] = x
        A = np.array([pts[i] for i in live["A"]])
        B = np.array([pts[i] for i in live["B"]])
        opt, _ = exact_matching(A, B, wasserstein_p=wp)
        assert ih.matching_cost() == pytest.approx(opt, rel=1e-9, abs=1e-12)
        assert len(ih.matching()) == len(A)


def test_recompute_and_greedy_keep_valid_matchings():
    rng = np.random.default_rng(3)
    rec, greedy = RecomputeBaseline(2), GreedyOnline(2)
    ids = []
    for _ in range(12):
        x, y = rng.normal(size=2), rng.normal(size=2)
        ids.append((rec.insert(x, "A"), greedy.insert(x, "A")))
        rec.insert(y, "B"), greedy.insert(y, "B")
    rec.delete(ids[0][0]), greedy.delete(ids[0][1])
    assert len(rec.matching()) == 11 and len(greedy.matching()) == 11
    assert greedy.matching_cost() >= rec.matching_cost() - 1e-12


@pytest.mark.parametrize("factory", [
    lambda: BruteForceANN(4, norm_p=1.0), lambda: BruteForceANN(4), lambda: FaissANN(4),
    lambda: FaissANN(4, norm_p=1.0),
])
def test_exact_ann_backends_equal_brute_force(factory):
    if "Faiss" in repr(factory.__code__.co_names):
        pytest.importorskip("faiss")
    rng = np.random.default_rng(4)
    index = factory()
    X = rng.normal(size=(60, 4))
    index.add(np.arange(60), X)
    index.remove([3, 7, 11])
    live = np.setdiff1d(np.arange(60), [3, 7, 11])
    p = index.norm_p
    for q in rng.normal(size=(10, 4)):
        d = np.linalg.norm(X[live] - q, ord=p, axis=1)
        ids, dists = index.query(q, k=3)
        np.testing.assert_allclose(dists, np.sort(d)[:3], rtol=1e-5)
        assert set(ids.tolist()) == set(live[np.argsort(d)[:3]].tolist())


def test_lsh_answers_and_is_mostly_within_its_nominal_factor():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 8))
    lsh = PStableLSH(8, bucket_width=4.0, n_hashes=3, n_tables=10, seed=0)
    lsh.add(np.arange(500), X)
    lsh.remove(np.arange(0, 500, 5))
    live = np.setdiff1d(np.arange(500), np.arange(0, 500, 5))
    within = 0
    for q in rng.normal(size=(50, 8)):
        ids, dists = lsh.query(q)
        true = np.linalg.norm(X[live] - q, axis=1).min()
        assert ids[0] in set(live.tolist())
        assert dists[0] >= true - 1e-12
        within += dists[0] <= lsh.approx_factor * true
    assert within >= 45  # probabilistic guarantee: measured, not assumed


def test_ann_bad_input():
    index = BruteForceANN(3)
    index.add([1], np.zeros((1, 3)))
    with pytest.raises(ValueError, match="already in the index"):
        index.add([1], np.zeros((1, 3)))
    with pytest.raises(ValueError, match="not in the index"):
        index.remove([2])
    with pytest.raises(ValueError, match=r"\[n, 3\]"):
        index.add([2], np.zeros((1, 4)))


def test_drift_detects_a_mean_shift():
    rng = np.random.default_rng(6)
    X = np.concatenate([rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + 3.0])
    result = wasserstein_drift(X, 100, every=25, exact_every=1)
    before = result.matching_cost[result.steps <= 300]
    after = result.matching_cost[result.steps >= 500]
    assert after.min() > 2 * before.max()
    with pytest.raises(ValueError, match="window"):
        wasserstein_drift(X, 0)


# ---------------------------------------------------------------- weighted static transport (issue 55)
from scipy.optimize import linear_sum_assignment  # noqa: E402
from scipy.spatial.distance import cdist  # noqa: E402

from neurips26.wmatch import exact_transport  # noqa: E402


@pytest.mark.parametrize("wp, norm_p", [(1, 2.0), (2, 2.0), (1, 1.0)])
def test_integer_masses_equal_replicated_points_solved_by_lsa(wp, norm_p):
    """Independent reference: mass k_i on x_i is k_i copies of x_i; an assignment (SciPy LSA) on the copies."""
    rng = np.random.default_rng(wp)
    X, Y = rng.normal(size=(7, 2)), rng.normal(size=(5, 2)) + 0.3
    a = np.array([1, 2, 3, 1, 1, 2, 2])  # total 12
    b = np.array([3, 2, 4, 1, 2])  # total 12
    cost, plan = exact_transport(a, b, X, Y, norm_p=norm_p, wasserstein_p=wp)
    C = cdist(np.repeat(X, a, axis=0), np.repeat(Y, b, axis=0), "minkowski", p=norm_p) ** wp
    r, c = linear_sum_assignment(C)
    assert cost == pytest.approx(C[r, c].sum() ** (1 / wp), rel=1e-9)
    assert np.allclose(plan.sum(1), a) and np.allclose(plan.sum(0), b) and (plan >= -1e-12).all()


def test_probability_weights_match_pot_emd2_and_a_cost_matrix_gives_the_same():
    import ot

    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(30, 3)), rng.normal(size=(20, 3))
    a, b = rng.dirichlet(np.ones(30)), rng.dirichlet(np.ones(20))
    M = ot.dist(X, Y)  # squared Euclidean: W_2^2 costs
    cost, _ = exact_transport(a, b, X, Y, wasserstein_p=2)
    assert cost == pytest.approx(ot.emd2(a, b, M) ** 0.5, rel=1e-9)
    assert exact_transport(a, b, M=M, wasserstein_p=2)[0] == pytest.approx(cost, rel=1e-12)
    # uniform weights: W_w of the empirical measures = exact_matching(normalize="mean")
    n = 20
    w = np.full(n, 1 / n)
    assert exact_transport(w, w, X[:n], Y)[0] == pytest.approx(exact_matching(X[:n], Y, normalize="mean")[0])


@pytest.mark.parametrize("kwargs, match", [
    ({"a": [1.0, -1.0], "b": [0.0, 0.0]}, "non-negative"),
    ({"a": [1.0, 1.0], "b": [1.0, 2.0]}, "same total mass"),
    ({"a": [1.0, np.nan], "b": [1.0, 1.0]}, "a must be"),
    ({"a": [1.0, 1.0], "b": [1.0, 1.0], "M": np.ones((2, 2))}, "not both"),
    ({"a": [1.0, 1.0], "b": [1.0, 1.0], "X": None}, "either"),
    ({"a": [1.0, 1.0], "b": [1.0, 1.0], "Y": np.ones((3, 2))}, "shape"),
    ({"a": [1.0, 1.0], "b": [1.0, 1.0], "wasserstein_p": 0}, "wasserstein_p"),
])
def test_exact_transport_refuses(kwargs, match):
    args = {"X": np.zeros((2, 2)), "Y": np.ones((2, 2))}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        exact_transport(**args)
