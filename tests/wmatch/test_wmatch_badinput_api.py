"""wmatch error contract, part 2 (issue 16): wasserstein_drift, the constructors, the metric matchers'
insert_many / ids, the LSH and faiss indexes and make_ann refuse bad input by name and change nothing."""

import math

import numpy as np
import pytest

from _badinput import BadInput, check_bad_inputs
from neurips26.wmatch import (
    BruteForceANN,
    DynamicWassersteinMatcher,
    FaissANN,
    GreedyOnline,
    IncrementalHungarian,
    MetricDynamicMatcher,
    MetricIncrementalHungarian,
    PStableLSH,
    RecomputeBaseline,
    exact_matching,
    make_ann,
    wasserstein_drift,
)

NAN = math.nan
RNG = np.random.default_rng(0)
STREAM = RNG.normal(size=(40, 2))


@pytest.mark.parametrize("case", [
    BadInput("stream-nan", (np.where(np.eye(40, 2) > 0, NAN, STREAM), 10), names="stream"),
    BadInput("stream-1d", (STREAM[:, 0], 10), names="stream"),
    BadInput("stream-str", ("abc", 10), names="stream"),
    BadInput("stream-overflow", (np.full((40, 2), 1e308), 10), names="stream"),
    BadInput("window-0", (STREAM, 0), names="window"),
    BadInput("window-bool", (STREAM, True), names="window"),
    BadInput("window-float", (STREAM, 10.0), names="window"),
    BadInput("window-too-long", (STREAM, 25), names="stream"),
    BadInput("every-0", (STREAM, 10), {"every": 0}, names="every"),
    BadInput("exact-every-negative", (STREAM, 10), {"exact_every": -1}, names="exact_every"),
    BadInput("exact-every-float", (STREAM, 10), {"exact_every": 0.5}, names="exact_every"),
    BadInput("reference-dim", (STREAM, 10), {"reference": np.zeros((10, 3))}, names="reference"),
    BadInput("reference-nan", (STREAM, 10), {"reference": np.full((10, 2), NAN)}, names="reference"),
    BadInput("reference-length", (STREAM, 10), {"reference": np.zeros((7, 2))}, names="reference"),
    BadInput("factory-not-callable", (STREAM, 10), {"matcher_factory": 3}, names="matcher_factory"),
    BadInput("factory-returns-junk", (STREAM, 10), {"matcher_factory": lambda d: object()},
             names="matcher_factory"),
], ids=lambda c: c.id)
def test_wasserstein_drift_refuses(case):
    check_bad_inputs(wasserstein_drift, case)


def test_wasserstein_drift_agrees_with_an_exact_solve_on_a_small_stream():
    """Independent reference: with exact_every=1 the recorded matching cost is a real matching's cost, so
    it is >= the optimum W_1 (LSA) of the same windows; the matcher's estimate is within its guarantee
    factor of the optimum (loose: the grid matcher is an O(log n)-approximation, here checked <= 10x)."""
    res = wasserstein_drift(STREAM, 10, every=5, exact_every=1)
    for t, est, true in zip(res.steps, res.estimate, res.matching_cost):
        opt, _ = exact_matching(STREAM[:10], STREAM[t - 10:t], normalize="sum")
        assert true * 10 >= opt - 1e-9
        assert est * 10 <= 10 * opt + 1e-9


@pytest.mark.parametrize("case", [
    BadInput("dim-0", (0,), names="dim"),
    BadInput("dim-bool", (True,), names="dim"),
    BadInput("eps-0", (2,), {"eps": 0.0}, names="eps"),
    BadInput("eps-nan", (2,), {"eps": NAN}, names="eps"),
    BadInput("eps-bool", (2,), {"eps": True}, names="eps"),
    BadInput("branching-1", (2,), {"branching": 1}, names="branching"),
    BadInput("branching-bool", (2,), {"branching": True}, names="branching"),
    BadInput("levels-33", (2,), {"levels": 33}, names="levels"),
    BadInput("ann", (2,), {"ann": "kd"}, names="ann"),
    BadInput("node-solver", (2,), {"node_solver": "lp"}, names="node_solver"),
    BadInput("exact-limit-0", (2,), {"exact_node_limit": 0}, names="exact_node_limit"),
    BadInput("exact-limit-float", (2,), {"exact_node_limit": 64.0}, names="exact_node_limit"),
    BadInput("norm-p-half", (2,), {"norm_p": 0.5}, names="norm_p"),
    BadInput("norm-p-nan", (2,), {"norm_p": NAN}, names="norm_p"),
    BadInput("w-p-float", (2,), {"wasserstein_p": 1.5}, names="wasserstein_p"),
    BadInput("bounds-scalar", (2,), {"bounds": 5}, names="bounds"),
    BadInput("bounds-order", (2,), {"bounds": ([1.0, 1.0], [0.0, 0.0])}, names="bounds"),
    BadInput("bounds-nan", (2,), {"bounds": ([NAN, 0.0], [1.0, 1.0])}, names="bounds"),
    BadInput("seed-str", (2,), {"seed": "0"}, names="seed"),
], ids=lambda c: c.id)
def test_grid_matcher_constructor_refuses(case):
    check_bad_inputs(DynamicWassersteinMatcher, case)


def _grid():
    m = DynamicWassersteinMatcher(2, seed=0)
    m.insert_many(STREAM[:20], "A")
    m.insert_many(STREAM[20:], "B")
    return m


@pytest.mark.parametrize("method, case", [
    ("insert_many", BadInput("nan", (np.full((3, 2), NAN), "A"), names="X")),
    ("insert_many", BadInput("overflow", (np.full((3, 2), 1e308), "A"), names="X")),
    ("insert_many", BadInput("dim", (np.zeros((3, 3)), "A"), names="X")),
    ("insert_many", BadInput("side", (np.zeros((3, 2)), "a"), names="side")),
    ("partner", BadInput("unknown", (999,), names="id")),
    ("partner", BadInput("bool", (True,), names="pid")),
    ("matching_cost", BadInput("normalize", ("avg",), names="normalize")),
], ids=lambda c: c.id if isinstance(c, BadInput) else c)
def test_grid_matcher_methods_refuse_and_keep_state(method, case):
    m = _grid()
    check_bad_inputs(getattr(m, method), case, target=m)


D6 = np.abs(np.subtract.outer(np.arange(6.0), np.arange(6.0)))


@pytest.mark.parametrize("case", [
    BadInput("dist-nan", (np.full((3, 3), NAN),), names="dist"),
    BadInput("dist-rect", (np.zeros((3, 4)),), names="dist"),
    BadInput("dist-asym", (np.triu(np.ones((3, 3)), 1),), names="dist"),
    BadInput("dist-negative", (-D6,), names="dist"),
    BadInput("w-0", (D6,), {"wasserstein_p": 0}, names="wasserstein_p"),
    BadInput("k-0", (D6,), {"k": 0}, names="k"),
    BadInput("w-2", (D6,), {"wasserstein_p": 2}, names="wasserstein_p"),
    BadInput("k-bool", (D6,), {"k": True}, names="k"),
    BadInput("callable-no-n-points", (lambda i, j: abs(i - j),), names="n_points"),
    BadInput("n-points-bool", (lambda i, j: abs(i - j),), {"n_points": True}, names="n_points"),
    BadInput("callable-nan", (lambda i, j: NAN,), {"n_points": 3}, names="dist"),
    BadInput("callable-str", (lambda i, j: "1",), {"n_points": 3}, names="dist"),
    BadInput("seed-float", (D6,), {"seed": 0.5}, names="seed"),
], ids=lambda c: c.id)
def test_metric_matcher_constructor_refuses(case):
    check_bad_inputs(MetricDynamicMatcher, case)


def _metric():
    m = MetricDynamicMatcher(D6, seed=0)
    m.insert_many([0, 1], "A")
    m.insert_many([2, 3], "B")
    return m


@pytest.mark.parametrize("method, case", [
    ("insert", BadInput("out-of-range", (6, "A"), names="id")),
    ("insert", BadInput("negative", (-1, "A"), names="id")),
    ("insert", BadInput("live", (0, "B"), names="live")),
    ("insert", BadInput("float", (4.0, "A"), names="pid")),
    ("insert", BadInput("side", (4, "C"), names="side")),
    ("insert_many", BadInput("not-iterable", (4, "A"), names="ids")),
    ("insert_many", BadInput("repeated", ([4, 4], "A"), names="ids")),
    ("insert_many", BadInput("live", ([4, 0], "A"), names="ids")),
    ("insert_many", BadInput("bool", ([True], "A"), names="pid")),
    ("delete", BadInput("unknown", (5,), names="id")),
    ("matching_cost", BadInput("normalize", ("avg",), names="normalize")),
], ids=lambda c: c.id if isinstance(c, BadInput) else c)
def test_metric_matcher_methods_refuse_and_keep_state(method, case):
    m = _metric()
    check_bad_inputs(getattr(m, method), case, target=m)


def test_metric_incremental_hungarian_refuses_and_keeps_state():
    check_bad_inputs(MetricIncrementalHungarian, BadInput("dist-nan", (np.full((3, 3), NAN),), names="dist"))
    m = MetricIncrementalHungarian(D6)
    m.insert(0, "A")
    m.insert(3, "B")
    for case in [BadInput("out-of-range", (6, "A"), names="id"), BadInput("live", (0, "A"), names="live"),
                 BadInput("bool", (True, "A"), names="pid"), BadInput("side", (1, "C"), names="side"),
                 BadInput("delete-unknown", (5,), names="id")]:
        call = m.delete if case.id.startswith("delete") else m.insert
        check_bad_inputs(call, case, target=m)


@pytest.mark.parametrize("make", [RecomputeBaseline, IncrementalHungarian, GreedyOnline], ids=lambda c: c.__name__)
@pytest.mark.parametrize("case", [
    BadInput("dim-0", (0,), names="dim"),
    BadInput("dim-bool", (True,), names="dim"),
    BadInput("norm-p-0", (2,), {"norm_p": 0}, names="norm_p"),
    BadInput("w-p-0", (2,), {"wasserstein_p": 0}, names="wasserstein_p"),
], ids=lambda c: c.id)
def test_baseline_constructors_refuse(make, case):
    check_bad_inputs(make, case)


def test_baseline_specific_options_refused():
    check_bad_inputs(RecomputeBaseline, BadInput("method", (2,), {"method": "simplex"}, names="method"))
    check_bad_inputs(GreedyOnline, BadInput("ann", (2,), {"ann": "kd"}, names="ann"))


@pytest.mark.parametrize("case", [
    BadInput("dim-0", (0,), names="dim"),
    BadInput("dim-bool", (True,), names="dim"),
    BadInput("norm-3", (2,), {"norm_p": 3}, names="norm_p"),
    BadInput("width-nan", (2,), {"bucket_width": NAN}, names="bucket_width"),
    BadInput("width-inf", (2,), {"bucket_width": math.inf}, names="bucket_width"),
    BadInput("hashes-0", (2,), {"n_hashes": 0}, names="n_hashes"),
    BadInput("tables-bool", (2,), {"n_tables": True}, names="n_tables"),
    BadInput("approx-nan", (2,), {"approx_factor": NAN}, names="approx_factor"),
    BadInput("approx-below-1", (2,), {"approx_factor": 0.5}, names="approx_factor"),
    BadInput("seed-str", (2,), {"seed": "0"}, names="seed"),
], ids=lambda c: c.id)
def test_lsh_constructor_refuses(case):
    check_bad_inputs(PStableLSH, case)


@pytest.mark.parametrize("case", [
    BadInput("kind", ("kd", 2, 2.0), names="ann"),
    BadInput("dim", ("bruteforce", 0, 2.0), names="dim"),
    BadInput("norm", ("bruteforce", 2, 0.5), names="norm_p"),
], ids=lambda c: c.id)
def test_make_ann_refuses(case):
    check_bad_inputs(make_ann, case)


def test_brute_force_norm_p_refused():
    check_bad_inputs(BruteForceANN, BadInput("norm", (2,), {"norm_p": 0.5}, names="norm_p"))


faiss = pytest.importorskip("faiss")


def test_faiss_index_refuses_and_keeps_state():
    for case in [BadInput("dim-0", (0,), names="dim"), BadInput("dim-float", (2.0,), names="dim"),
                 BadInput("norm-3", (2,), {"norm_p": 3.0}, names="norm_p")]:
        check_bad_inputs(FaissANN, case)
    index = FaissANN(2)
    index.add([0, 1, 2], np.eye(3)[:, :2])
    for call, case in [
        (index.add, BadInput("duplicate-live", ([5, 1], np.ones((2, 2))), names="ids")),
        (index.add, BadInput("length", ([8, 9], np.ones((3, 2))), names="ids")),
        (index.add, BadInput("nan", ([8], [[NAN, 0.0]]), names="X")),
        (index.add, BadInput("bool-ids", ([True], [[0.0, 0.0]]), names="ids")),
        (index.query, BadInput("wrong-dim", ([0.0, 0.0, 0.0],), names="x")),
        (index.query, BadInput("k-0", ([0.0, 0.0],), {"k": 0}, names="k")),
        (index.remove, BadInput("unknown", ([42],), names="ids")),
    ]:
        check_bad_inputs(call, case)
        assert len(index) == 3
    ids, _ = index.query([0.0, 0.0], k=3)
    assert sorted(ids.tolist()) == [0, 1, 2]
