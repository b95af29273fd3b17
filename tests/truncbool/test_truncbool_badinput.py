"""truncbool's error contract (issue 16): every public entry point refuses bad input by name, never hangs,
and a failed call leaves the estimator (or oracle) exactly as it was."""

import numpy as np
import pytest

from _badinput import BadInput, check_bad_inputs
from neurips26.truncbool import (
    CallableOracle,
    ExactTruncatedMLE,
    IntHalfspace,
    NaiveBooleanProduct,
    Parity,
    SubcubeUnion,
    TruncatedBooleanProduct,
    TruncatedMLESGD,
    UntruncatedBooleanProduct,
    WeightBand,
    block_completions,
    composite_grad,
    composite_loss,
    composite_stats,
    enumerate_set,
    fatness,
    flip_feasible,
    influence,
    log_mass,
    make_blocks,
    sample_product,
    sample_truncated_product,
    truncated_pmf,
)

pytestmark = pytest.mark.timeout(20)

N = 6
BAND = WeightBand(3, n=N)
Z = np.linspace(-1.0, 1.0, N)
X = sample_truncated_product(Z, BAND, 80, rng=0)
XNAN = X.astype(float)
XNAN[0, 0] = np.nan
XINF = X.astype(float)
XINF[1, 1] = np.inf
OUTSIDE = X.copy()
OUTSIDE[0] = 1  # weight 6 > 3


# ------------------------------------------------------------------ samples X: one table for every estimator
X_CASES = [
    BadInput("nan", (XNAN,), names="X"),
    BadInput("inf", (XINF,), names="X"),
    BadInput("1-d", (X[0],), names="X"),
    BadInput("3-d", (X[None],), names="X"),
    BadInput("empty", (X[:0],), names="X"),
    BadInput("values-2", (X * 2,), names="X"),
    BadInput("half", (X * 0.5,), names="X"),
    BadInput("string", ("0101",), names="X"),
    BadInput("none", (None,), names="X"),
    BadInput("object", (np.array([[0, "a"]], dtype=object),), names="X"),
    BadInput("columns", (X[:, :4],), names="X"),
    BadInput("outside-S", (OUTSIDE,), names="X", match="outside S"),
]

ESTIMATORS = {
    "pl": lambda: TruncatedBooleanProduct(BAND),
    "pl-pairs": lambda: TruncatedBooleanProduct(BAND, block_order=2),
    "naive": lambda: NaiveBooleanProduct(),
    "untrunc": lambda: UntruncatedBooleanProduct(),
    "sgd": lambda: TruncatedMLESGD(BAND, n_steps=5, random_state=0),
    "exact": lambda: ExactTruncatedMLE(BAND),
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("case", X_CASES, ids=lambda c: c.id)
def test_fit_refuses_bad_samples_and_keeps_state(name, case):
    if name in ("naive", "untrunc") and case.id in ("columns", "outside-S"):
        pytest.skip("the naive products do not know S")
    est = ESTIMATORS[name]()
    est.fit(X)
    check_bad_inputs(est.fit, case, target=est)


@pytest.mark.parametrize("params,names", [
    ({"oracle": None}, "oracle"),
    ({"oracle": 3}, "oracle"),
    ({"block_order": 3}, "block_order"),
    ({"block_order": True}, "block_order"),
    ({"width_bound": 0.0}, "width_bound"),
    ({"width_bound": np.inf}, "width_bound"),
    ({"width_bound": np.nan}, "width_bound"),
    ({"width_bound": "8"}, "width_bound"),
    ({"solver": "newton"}, "solver"),
    ({"solver": "closed_form", "block_order": 2}, "closed_form"),
    ({"tol": -1.0}, "tol"),
    ({"tol": np.nan}, "tol"),
    ({"max_iter": 0}, "max_iter"),
    ({"max_iter": 2.5}, "max_iter"),
    ({"pairs": "ring", "block_order": 2}, "pairs"),
    ({"pairs": np.array([[0, 0]]), "block_order": 2}, "pairs"),
    ({"pairs": np.array([[0, 9]]), "block_order": 2}, "pairs"),
    ({"pairs": np.array([[0.0, 1.0]]), "block_order": 2}, "pairs"),
], ids=lambda v: str(v)[:40])
def test_pl_refuses_bad_params_and_keeps_state(params, names):
    est = TruncatedBooleanProduct(BAND).fit(X)
    est.set_params(**params)
    check_bad_inputs(est.fit, BadInput("param", (X,), names=names), target=est)


def test_pl_score_and_intervals_refuse():
    est = TruncatedBooleanProduct(BAND).fit(X)
    for case in X_CASES:
        check_bad_inputs(est.score, case, target=est)
    for level in (0.0, 1.0, 1.5, np.nan, "0.9", True):
        check_bad_inputs(est.confidence_intervals, BadInput(f"level={level}", (level,), names="level"), target=est)
    with pytest.raises(Exception, match="fit"):
        TruncatedBooleanProduct(BAND).score(X)


@pytest.mark.parametrize("params,names", [
    ({"lr": 0.0}, "lr"), ({"lr": np.nan}, "lr"), ({"radius": -1.0}, "radius"), ({"alpha": 1.0}, "alpha"),
    ({"alpha": 0.0}, "alpha"), ({"alpha": np.nan}, "alpha"), ({"batch_size": 0}, "batch_size"),
    ({"n_steps": 1.5}, "n_steps"), ({"n_trials": 0}, "n_trials"),
    ({"rate": 1.0}, "rate"), ({"on_limit": "x"}, "on_limit"), ({"max_tries": 0}, "max_tries"),
    ({"max_oracle_calls": 0}, "max_oracle_calls"), ({"width_bound": np.inf}, "width_bound"),
    ({"random_state": "seed"}, "rng"), ({"oracle": None}, "oracle"),
], ids=lambda v: str(v)[:40])
def test_sgd_refuses_bad_params_and_keeps_state(params, names):
    est = TruncatedMLESGD(BAND, n_steps=5, random_state=0).fit(X)
    for k, v in params.items():
        setattr(est, k, v)
    check_bad_inputs(est.fit, BadInput("param", (X,), names=names), target=est)


@pytest.mark.parametrize("params,names", [
    ({"width_bound": -1.0}, "width_bound"), ({"tol": np.inf}, "tol"), ({"max_iter": 0}, "max_iter"),
    ({"oracle": "S"}, "oracle"),
], ids=lambda v: str(v)[:40])
def test_exact_refuses_bad_params_and_keeps_state(params, names):
    est = ExactTruncatedMLE(BAND).fit(X)
    for k, v in params.items():
        setattr(est, k, v)
    check_bad_inputs(est.fit, BadInput("param", (X,), names=names), target=est)


def test_exact_refuses_large_n():
    big = np.zeros((3, 21), dtype=int)
    check_bad_inputs(ExactTruncatedMLE(WeightBand(2)).fit, BadInput("n>20", (big,), names="n"))


def test_naive_refuses_bad_width():
    est = NaiveBooleanProduct().fit(X)
    for w in (0.0, -1.0, np.inf, np.nan, "8", None):
        est.width_bound = w
        check_bad_inputs(est.fit, BadInput(f"w={w}", (X,), names="width_bound"), target=est)


# ------------------------------------------------------------------ a malformed oracle is named
@pytest.mark.parametrize("answer", [
    lambda A: np.ones(A.shape[0] + 1, dtype=bool),
    lambda A: np.full(A.shape[0], 0.5),
    lambda A: np.full(A.shape[0], 2),
    lambda A: np.full(A.shape[0], np.nan),
    lambda A: None,
], ids=["length", "float", "two", "nan", "none"])
def test_malformed_oracle_answers_are_refused(answer):
    oracle = CallableOracle(answer, name="bad")
    est = TruncatedBooleanProduct(oracle)
    check_bad_inputs(est.fit, BadInput("oracle", (X,), names="oracle"), target=est)


# ------------------------------------------------------------------ oracles
@pytest.mark.parametrize("make,case", [
    (WeightBand, BadInput("k<0", (-1,), names="k")),
    (WeightBand, BadInput("k-float", (1.5,), names="k")),
    (WeightBand, BadInput("k-nan", (np.nan,), names="k")),
    (WeightBand, BadInput("n=0", (2,), {"n": 0}, names="n")),
    (WeightBand, BadInput("n-bool", (2,), {"n": True}, names="n")),
    (Parity, BadInput("even-int", (1,), names="even")),
    (Parity, BadInput("n-neg", (True,), {"n": -3}, names="n")),
    (IntHalfspace, BadInput("a-float", ([1.5, 2.0], 1), names="a")),
    (IntHalfspace, BadInput("a-nan", ([np.nan, 1.0], 1), names="a")),
    (IntHalfspace, BadInput("a-2d", ([[1, 2]], 1), names="a")),
    (IntHalfspace, BadInput("a-empty", ([], 1), names="a")),
    (IntHalfspace, BadInput("a-string", ("12", 1), names="a")),
    (IntHalfspace, BadInput("b-float", ([1, 2], 1.5), names="b")),
    (IntHalfspace, BadInput("b-inf", ([1, 2], np.inf), names="b")),
    (SubcubeUnion, BadInput("one-string", ("01*",), names="cubes")),
    (SubcubeUnion, BadInput("letters", (["01x"],), names="cube")),
    (SubcubeUnion, BadInput("lengths", (["01", "011"],), names="cubes")),
    (SubcubeUnion, BadInput("empty", ([],), names="cubes")),
    (SubcubeUnion, BadInput("array-2", ([[0, 2]],), names="cube")),
    (SubcubeUnion, BadInput("not-iterable", (5,), names="cubes")),
    (CallableOracle, BadInput("not-callable", (5,), names="fn")),
], ids=lambda v: getattr(v, "id", getattr(v, "__name__", "")))
def test_oracle_constructors_refuse(make, case):
    check_bad_inputs(make, case)


@pytest.mark.parametrize("oracle", [BAND, Parity(n=N), IntHalfspace(np.ones(N, dtype=int), 3),
                                    SubcubeUnion(["0" * N, "1" + "*" * (N - 1)])], ids=repr)
@pytest.mark.parametrize("case", [
    BadInput("1-d", (np.zeros(N, dtype=int),), names="X"),
    BadInput("columns", (np.zeros((2, N + 1), dtype=int),), names="X"),
    BadInput("values", (np.full((2, N), 3),), names="X"),
    BadInput("nan", (np.full((2, N), np.nan),), names="X"),
], ids=lambda c: c.id)
def test_oracle_calls_refuse(oracle, case):
    check_bad_inputs(oracle, case, target=oracle)


# ------------------------------------------------------------------ helpers of the oracle layer
@pytest.mark.parametrize("case", [
    BadInput("i-out", (BAND, X, N), names="i"),
    BadInput("i-neg", (BAND, X, -1), names="i"),
    BadInput("i-float", (BAND, X, 1.0), names="i"),
    BadInput("i-bool", (BAND, X, True), names="i"),
    BadInput("X-nan", (BAND, XNAN, 0), names="X"),
    BadInput("X-1d", (BAND, X[0], 0), names="X"),
    BadInput("X-values", (BAND, X * 3, 0), names="X"),
    BadInput("oracle", (None, X, 0), names="oracle"),
], ids=lambda c: c.id)
def test_flip_feasible_refuses(case):
    check_bad_inputs(flip_feasible, case)


@pytest.mark.parametrize("case", [
    BadInput("block-out", (BAND, X, [0, N]), names="block"),
    BadInput("block-repeat", (BAND, X, [1, 1]), names="block"),
    BadInput("block-empty", (BAND, X, []), names="block"),
    BadInput("block-float", (BAND, X, [0.5]), names="block"),
    BadInput("block-long", (BAND, X, list(range(N)) * 2), names="block"),
    BadInput("X-nan", (BAND, XNAN, [0, 1]), names="X"),
    BadInput("X-values", (BAND, X * 3, [0, 1]), names="X"),
], ids=lambda c: c.id)
def test_block_completions_refuses(case):
    check_bad_inputs(block_completions, case)


@pytest.mark.parametrize("case", [
    BadInput("n-0", (0, 1), names="n"),
    BadInput("n-float", (3.5, 1), names="n"),
    BadInput("n-string", ("6", 1), names="n"),
    BadInput("order-3", (6, 3), names="block_order"),
    BadInput("order-bool", (6, True), names="block_order"),
    BadInput("pairs-1", (1, 2), names="n"),
    BadInput("pairs-name", (6, 2, "ring"), names="pairs"),
    BadInput("pairs-shape", (6, 2, np.array([[0, 1, 2]])), names="pairs"),
], ids=lambda c: c.id)
def test_make_blocks_refuses(case):
    check_bad_inputs(make_blocks, case)


def test_composite_stats_loss_grad_refuse():
    blocks = make_blocks(N, 1)
    for case in [BadInput("X-nan", (XNAN, BAND, blocks), names="X"),
                 BadInput("X-outside", (OUTSIDE, BAND, blocks), names="X"),
                 BadInput("blocks-out", (X, BAND, np.array([[N]])), names="blocks"),
                 BadInput("blocks-1d", (X, BAND, np.arange(N)), names="blocks"),
                 BadInput("blocks-float", (X, BAND, blocks.astype(float)), names="blocks"),
                 BadInput("blocks-order-3", (X, BAND, np.array([[0, 1, 2]])), names="blocks")]:
        check_bad_inputs(composite_stats, case)
    stats = composite_stats(X, BAND, blocks)
    for fn in (composite_loss, composite_grad):
        for case in [BadInput("z-nan", (np.full(N, np.nan), stats), names="z"),
                     BadInput("z-length", (np.zeros(N + 1), stats), names="z"),
                     BadInput("z-2d", (np.zeros((1, N)), stats), names="z"),
                     BadInput("stats", (np.zeros(N), {"m": 3}), names="stats")]:
            check_bad_inputs(fn, case, target=stats)


# ------------------------------------------------------------------ samplers and diagnostics
Z_CASES = [
    BadInput("z-nan", (np.array([0.0, np.nan, 0, 0, 0, 0]),), names="z"),
    BadInput("z-inf", (np.array([0.0, np.inf, 0, 0, 0, 0]),), names="z"),
    BadInput("z-2d", (np.zeros((2, N)),), names="z"),
    BadInput("z-empty", (np.zeros(0),), names="z"),
    BadInput("z-string", ("abc",), names="z"),
    BadInput("z-length", (np.zeros(N + 2),), names="z"),
]


@pytest.mark.parametrize("case", Z_CASES, ids=lambda c: c.id)
def test_params_refused_everywhere(case):
    z = case.args[0]
    calls = [lambda: sample_truncated_product(z, BAND, 5, rng=0), lambda: log_mass(z, BAND),
             lambda: truncated_pmf(z, BAND), lambda: fatness(BAND, z, 10, rng=0),
             lambda: influence(BAND, z, 0, 10, rng=0)]
    if case.id != "z-length":
        calls.append(lambda: sample_product(z, 5, rng=0))
    for call in calls:
        check_bad_inputs(call, BadInput(case.id, names="z"))


@pytest.mark.parametrize("case", [
    BadInput("m-neg", (Z, BAND, -1), names="m"),
    BadInput("m-float", (Z, BAND, 2.5), names="m"),
    BadInput("m-bool", (Z, BAND, True), names="m"),
    BadInput("m-nan", (Z, BAND, np.nan), names="m"),
    BadInput("rng", (Z, BAND, 3), {"rng": "seed"}, names="rng"),
    BadInput("max_tries", (Z, SubcubeUnion(["0" * N]), 3), {"max_tries": -1}, names="max_tries"),
    BadInput("oracle-none", (Z, None, 3), names="oracle"),
], ids=lambda c: c.id)
def test_sample_truncated_product_refuses(case):
    rng = np.random.default_rng(0)
    check_bad_inputs(sample_truncated_product, BadInput(case.id, case.args, {"rng": rng, **case.kwargs},
                                                         names=case.names), targets=[rng])


def test_counts_and_indices_refused():
    for case in [BadInput("n-0", (BAND, 0), names="n"), BadInput("n-21", (BAND, 21), names="n"),
                 BadInput("n-float", (BAND, 2.0), names="n"), BadInput("oracle", (None, 3), names="oracle")]:
        check_bad_inputs(enumerate_set, case)
    for n_mc in (0, -5, 2.5, np.inf, True):
        check_bad_inputs(fatness, BadInput(f"n_mc={n_mc}", (BAND, Z, n_mc), names="n_mc"))
    for i in (N, -1, 1.0, True, "0"):
        check_bad_inputs(influence, BadInput(f"i={i}", (BAND, Z, i), names="i"))
    check_bad_inputs(sample_product, BadInput("m", (Z, -2), names="m"))


# ------------------------------------------------------------------ caps: rejection sampling stops, never hangs
def test_rejection_sampling_stops_at_its_cap():
    from neurips26.truncbool import RejectionLimitError

    tiny = SubcubeUnion(["1" * N])  # mass of one point: 1 / 2^6 at z = 0, much less at z = -3
    rng = np.random.default_rng(0)
    check_bad_inputs(sample_truncated_product,
                     BadInput("cap", (np.full(N, -3.0), tiny, 50), {"rng": rng, "max_tries": 100},
                              exc=RejectionLimitError, names="max_tries"))
    est = TruncatedMLESGD(tiny, n_steps=50, batch_size=10, max_tries=5, random_state=0)  # 10 draws, 5 tries
    check_bad_inputs(est.fit, BadInput("sgd-cap", (np.ones((5, N), dtype=int),), exc=RejectionLimitError,
                                       names="max_tries"), target=est)
    est = TruncatedMLESGD(BAND, n_steps=50, max_oracle_calls=30, random_state=0)
    check_bad_inputs(est.fit, BadInput("sgd-calls", (X,), exc=RejectionLimitError, names="max_oracle_calls"),
                     target=est)
