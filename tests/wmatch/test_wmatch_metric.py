"""Design B (finite metric): valid perfect matchings, cost >= OPT, incremental repair equal to a full
re-pair on the same covers, and metric validation."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from neurips26.wmatch import MetricDynamicMatcher


def _metric(n, seed):
    X = np.random.default_rng(seed).uniform(size=(n, 2))
    return cdist(X, X)


def _full_repair_pairs(m):
    """Bottom-up pairing from scratch on the matcher's current covers (the reference)."""
    pool = set(m._side)
    pairs = []
    for level in range(m.n_levels):
        nxt = set()
        for members in m._members[level].values():
            made, left = m._pair_cluster(level, {p for p in members if p in pool})
            pairs += made
            nxt |= left
        pool = nxt
    return sorted(pairs)


@pytest.mark.parametrize("k, wp", [(1, 1), (2, 1), (3, 2)])
def test_random_updates_keep_a_valid_matching_equal_to_full_repair(k, wp):
    rng = np.random.default_rng(k)
    D = _metric(80, k)
    m = MetricDynamicMatcher(D, k=k, wasserstein_p=wp, eps=0.5, seed=k)
    perm = rng.permutation(80)
    a, b, spare = list(perm[:25]), list(perm[25:50]), list(perm[50:])
    m.insert_many(a, "A")
    m.insert_many(b, "B")
    for step in range(60):
        side, lst = ("A", a) if step % 2 == 0 else ("B", b)
        gone = lst.pop(int(rng.integers(len(lst))))
        m.delete(gone)
        new = spare.pop(0)
        spare.append(gone)
        m.insert(new, side)
        lst.append(new)
        pairs = m.matching()
        assert len(pairs) == 25 and {x for x, _ in pairs} == set(a) and {y for _, y in pairs} == set(b)
        assert sorted(pairs) == _full_repair_pairs(m)
        C = D[np.ix_(a, b)] ** wp
        r, c = linear_sum_assignment(C)
        assert m.matching_cost() >= C[r, c].sum() ** (1 / wp) - 1e-9


def test_callable_metric_gives_the_same_matching_as_the_matrix():
    D = _metric(40, 9)
    kwargs = dict(k=2, seed=0, scale_range=(D[D > 0].min(), D.max()))
    by_matrix = MetricDynamicMatcher(D, **kwargs)
    by_callable = MetricDynamicMatcher(lambda i, j: D[i, j], **kwargs)
    for m in (by_matrix, by_callable):
        m.insert_many(list(range(10)), "A")
        m.insert_many(list(range(10, 20)), "B")
        m.delete(3)
        m.insert(30, "A")
    assert sorted(by_matrix.matching()) == sorted(by_callable.matching())


@pytest.mark.parametrize("D, match", [
    (np.array([[0, -1], [-1, 0]]), "non-negative"),
    (np.array([[0, 1], [2, 0]]), "symmetric"),
    (np.array([[1, 1], [1, 0]]), "zero diagonal"),
    (np.ones((2, 3)), "square"),
    (np.array([[0, np.nan], [np.nan, 0]]), "finite"),
])
def test_non_metric_matrices_are_rejected(D, match):
    with pytest.raises(ValueError, match=match):
        MetricDynamicMatcher(D)


def test_bad_updates_leave_the_structure_unchanged():
    m = MetricDynamicMatcher(_metric(20, 1))
    m.insert_many([0, 1, 2], "A")
    m.insert_many([3, 4, 5], "B")
    before = sorted(m.matching())
    for call, match in [(lambda: m.delete(9), "unknown or already deleted"),
                        (lambda: m.insert(0, "B"), "already live"),
                        (lambda: m.insert(99, "A"), r"in \[0, 20\)"),
                        (lambda: m.insert(7, "X"), "side must be")]:
        with pytest.raises(ValueError, match=match):
            call()
    assert sorted(m.matching()) == before
    with pytest.raises(ValueError, match="scale_range"):
        MetricDynamicMatcher(lambda i, j: 1.0)
