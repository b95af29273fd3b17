"""wmatch against POT's convention (issue 15) and its error contract (issue 16)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from neurips26.wmatch import (
    BruteForceANN,
    DynamicWassersteinMatcher,
    GreedyOnline,
    IncrementalHungarian,
    MetricDynamicMatcher,
    PStableLSH,
    RecomputeBaseline,
    exact_matching,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _badinput import BadInput, assert_unchanged, snapshot  # noqa: E402
from _badinput import check_bad_inputs as _check_call  # noqa: E402


def _state(obj):
    """``vars(obj)`` with numpy Generators replaced by their bit-generator state (the shared harness compares
    Generators by identity, so a deep copy never equals the original)."""
    return {k: (v.bit_generator.state if isinstance(v, np.random.Generator) else v) for k, v in vars(obj).items()}


def check_bad_inputs(call, case, *, target=None):
    before = snapshot(_state(target)) if target is not None else None
    err = _check_call(call, case)
    if target is not None:
        assert_unchanged(before, _state(target), f"{type(target).__name__} after [{case.id}]")
    return err

ot = pytest.importorskip("ot")


def _clouds(n=300, d=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(n, d)) + 0.5


@pytest.mark.parametrize("w", [1, 2])
def test_mean_normalisation_is_pot_emd2_on_uniform_weights(w):
    A, B = _clouds()
    n = len(A)
    C = ot.dist(A, B, metric="euclidean") ** w
    pot = ot.emd2(np.full(n, 1 / n), np.full(n, 1 / n), C) ** (1 / w)  # W_w of the empirical measures
    mean, _ = exact_matching(A, B, wasserstein_p=w, normalize="mean")
    total, _ = exact_matching(A, B, wasserstein_p=w)
    assert mean == pytest.approx(pot, rel=1e-9)
    assert total == pytest.approx(pot * n ** (1 / w), rel=1e-9)  # "sum" is n^{1/w} larger: 300x at w = 1
    exact = RecomputeBaseline(2, wasserstein_p=w)
    for a, b in zip(A[:40], B[:40]):
        exact.insert(a, "A")
        exact.insert(b, "B")
    C40 = ot.dist(A[:40], B[:40], metric="euclidean") ** w
    assert exact.matching_cost("mean") == pytest.approx(ot.emd2(np.full(40, 1 / 40), np.full(40, 1 / 40), C40)
                                                        ** (1 / w), rel=1e-9)


def test_every_matcher_accepts_normalize_and_mean_is_sum_over_pairs():
    A, B = _clouds(n=30)
    m = DynamicWassersteinMatcher(2, seed=0)
    m.insert_many(A, "A")
    m.insert_many(B, "B")
    k = len(m.matching())
    assert m.matching_cost("mean") == pytest.approx(m.matching_cost() / k)
    for cls in (IncrementalHungarian, GreedyOnline):
        b = cls(2)
        for a, bb in zip(A, B):
            b.insert(a, "A")
            b.insert(bb, "B")
        assert b.matching_cost("mean") == pytest.approx(b.matching_cost("sum") / len(b.matching()))
    with pytest.raises(ValueError, match="normalize"):
        m.matching_cost("avg")


def _grid():
    m = DynamicWassersteinMatcher(2, seed=0)
    A, B = _clouds(n=31)
    m.insert_many(A, "A")
    m.insert_many(B[:30], "B")
    return m


POINT_CASES = [
    BadInput("overflow", ([1e308, -1e308], "A"), names="x"),  # OverflowError with the point left live before
    BadInput("nan", ([np.nan, 0.0], "A"), names="x"),
    BadInput("inf", ([np.inf, 0.0], "B"), names="x"),
    BadInput("wrong-dim", ([1.0, 2.0, 3.0], "A"), names="x"),
    BadInput("string", ("ab", "A"), names="x"),
    BadInput("side", ([0.0, 0.0], "C"), names="side"),
]


@pytest.mark.parametrize("case", POINT_CASES, ids=lambda c: c.id)
def test_grid_insert_refuses_and_keeps_state(case):
    m = _grid()
    check_bad_inputs(m.insert, case, target=m)
    assert (m.n_a, m.n_b, len(m.matching())) == (31, 30, 30)


@pytest.mark.parametrize("case", [
    BadInput("bool", (True,), names="pid"),  # deleted id 1 before
    BadInput("unknown", (10_000,), names="id"),
    BadInput("float", (1.0,), names="pid"),
], ids=lambda c: c.id)
def test_grid_delete_refuses_and_keeps_state(case):
    m = _grid()
    check_bad_inputs(m.delete, case, target=m)


@pytest.mark.parametrize("make", [RecomputeBaseline, IncrementalHungarian, GreedyOnline], ids=lambda c: c.__name__)
def test_baselines_refuse_and_keep_state(make):
    m = make(2)
    A, B = _clouds(n=5)
    for a, b in zip(A, B):
        m.insert(a, "A")
        m.insert(b, "B")
    for case in POINT_CASES:
        check_bad_inputs(m.insert, case, target=m)
    check_bad_inputs(m.delete, BadInput("bool", (True,), names="pid"), target=m)
    check_bad_inputs(m.matching_cost, BadInput("normalize", ("avg",), names="normalize"), target=m)


def test_metric_matcher_refuses_bool_ids():
    D = np.abs(np.subtract.outer(np.arange(6.0), np.arange(6.0)))
    m = MetricDynamicMatcher(D)
    m.insert(0, "A")
    m.insert(1, "B")
    check_bad_inputs(m.delete, BadInput("bool", (True,), names="pid"), target=m)
    check_bad_inputs(m.insert, BadInput("bool", (True, "A"), names="pid"), target=m)


@pytest.mark.parametrize("make", [lambda: BruteForceANN(2), lambda: PStableLSH(2, seed=0)], ids=["brute", "lsh"])
def test_ann_add_and_query_refuse_and_keep_state(make):
    index = make()
    index.add([0, 1, 2], np.eye(3)[:, :2])
    for call, case in [
        (index.add, BadInput("duplicate-live", ([5, 1], np.ones((2, 2))), names="ids")),  # added 5 before raising
        (index.add, BadInput("duplicate-within", ([7, 7], np.ones((2, 2))), names="ids")),
        (index.add, BadInput("length", ([8, 9], np.ones((3, 2))), names="ids")),
        (index.add, BadInput("nan", ([8], [[np.nan, 0.0]]), names="X")),
        (index.add, BadInput("bool-ids", ([True], [[0.0, 0.0]]), names="ids")),
        (index.query, BadInput("wrong-dim", ([0.0, 0.0, 0.0],), names="x")),  # broadcast before
        (index.query, BadInput("nan", ([np.nan, 0.0],), names="x")),
        (index.query, BadInput("k-0", ([0.0, 0.0],), {"k": 0}, names="k")),
        (index.remove, BadInput("unknown", ([42],), names="id")),
        (index.remove, BadInput("repeated", ([1, 1],), names="ids")),
    ]:
        check_bad_inputs(call, case, target=index)
    assert len(index) == 3


@pytest.mark.parametrize("case", [
    BadInput("dims", (np.ones((3, 2)), np.ones((3, 3))), names="B", match=r"D = 2 \(from A\)"),
    BadInput("nan", (np.full((3, 2), np.nan), np.ones((3, 2))), names="A"),
    BadInput("overflow", (np.full((3, 2), 1e308), -np.full((3, 2), 1e308)), names="A"),
    BadInput("method", (np.ones((3, 2)), np.ones((3, 2))), {"method": "hungarian"}, names="method"),
    BadInput("normalize", (np.ones((3, 2)), np.ones((3, 2))), {"normalize": "avg"}, names="normalize"),
    BadInput("w", (np.ones((3, 2)), np.ones((3, 2))), {"wasserstein_p": 0}, names="wasserstein_p"),
], ids=lambda c: c.id)
def test_exact_matching_refuses(case):
    check_bad_inputs(exact_matching, case)
