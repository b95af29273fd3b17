"""effbench error contract (issue 16): every public entry point refuses bad input by name, hangs on none,
and a failed call leaves the object as it was; the CLI answers bad usage with one line and exit 2."""

import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from neurips26.effbench import (
    EfficientBenchmark,
    KRRPredictor,
    MeanPredictor,
    MRMRSelector,
    RandomSelector,
    RidgePredictor,
    binned_split,
    evaluate,
    kernel_ridge_loo,
    nogueira_stability,
    ridge_loo,
)
from neurips26.effbench.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _badinput import BadInput, check_bad_inputs  # noqa: E402


def _answers(m=30, n=12, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((m, n)) < rng.random(n)).astype(float)


S = _answers()
NAN = S.copy()
NAN[1, 2] = np.nan
INF = S.copy()
INF[0, 0] = np.inf


def _fitted_bench():
    return EfficientBenchmark(RandomSelector(4), "ridge").fit(S, question_ids=[f"q{j}" for j in range(12)])


@pytest.fixture()
def no_hang():
    """A call that hangs fails after 20 s instead of blocking the test run."""
    def boom(*_):
        raise TimeoutError("the call hung")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


BENCH_FIT = [
    BadInput("nan", (NAN,), names="S_source"),
    BadInput("inf", (INF,), names="S_source"),
    BadInput("above-1", (S * 5,), names="S_source"),  # was clipped to 1.0 silently
    BadInput("negative", (S - 1,), names="S_source"),
    BadInput("1-d", (S[:, 0],), names="S_source"),
    BadInput("one-model", (S[:1],), names="S_source"),
    BadInput("string", ("abc",), names="S_source"),
    BadInput("y-length", (S, np.ones(5)), names="y"),
    BadInput("y-nan", (S, np.full(30, np.nan)), names="y"),
    BadInput("ids-length", (S,), {"question_ids": ["a", "b"]}, names="question_ids"),
    BadInput("ids-dupes", (S,), {"question_ids": ["a"] * 12}, names="question_ids"),
    BadInput("ids-string", (S,), {"question_ids": "abcdefghijkl"}, names="question_ids"),
]


@pytest.mark.parametrize("case", BENCH_FIT, ids=lambda c: c.id)
def test_bench_fit_refuses_and_keeps_state(case):
    bench = _fitted_bench()
    check_bad_inputs(bench.fit, case, target=bench)


def test_refit_replaces_question_ids():
    bench = _fitted_bench()
    bench.fit(S)
    assert not hasattr(bench, "question_ids_")  # was stale from the first fit
    assert bench.predict_full_score({j: 1.0 for j in range(12)}) == pytest.approx(bench.predict(np.ones((1, 12)))[0])


BENCH_PREDICT = [
    # one NaN is a missing answer (filled, see test_effbench_missing.py); a model with none at all is refused
    BadInput("no-answers", (np.full((2, 12), np.nan),), names="X"),
    BadInput("inf", (INF,), names="X"),
    BadInput("above-1", (S * 5,), names="X"),
    BadInput("columns", (S[:, :5],), names="X"),
    BadInput("1-d", (S[0],), names="X"),
]


@pytest.mark.parametrize("case", BENCH_PREDICT, ids=lambda c: c.id)
def test_bench_predict_refuses(case):
    bench = _fitted_bench()
    check_bad_inputs(bench.predict, case, target=bench)


@pytest.mark.parametrize("case", [
    BadInput("columns", (S,), names="X_coreset"),
    BadInput("above-1", (np.full((2, 4), 3.0),), names="X_coreset"),
    BadInput("nan", (np.full((2, 4), np.nan),), names="X_coreset"),
], ids=lambda c: c.id)
def test_bench_predict_from_coreset_refuses(case):
    bench = _fitted_bench()
    check_bad_inputs(bench.predict_from_coreset, case, target=bench)


@pytest.mark.parametrize("case", [
    BadInput("not-dict", ([1, 0],), names="answers"),
    BadInput("missing", ({},), names="answers"),
    BadInput("text-value", ({f"q{j}": "yes" for j in range(12)},), names="answers"),
    BadInput("above-1", ({f"q{j}": 7.0 for j in range(12)},), names="X_coreset"),
], ids=lambda c: c.id)
def test_bench_predict_full_score_refuses(case):
    bench = _fitted_bench()
    check_bad_inputs(bench.predict_full_score, case, target=bench)


@pytest.mark.parametrize("make", [lambda: MRMRSelector(3), lambda: RandomSelector(3)], ids=["mrmr", "random"])
@pytest.mark.parametrize("case", [
    # NaN: refused by RandomSelector, a missing answer for MRMRSelector, whose refusal is a model without answers
    BadInput("nan", (np.where(np.arange(30)[:, None] == 1, np.nan, S),), names="X"),
    BadInput("inf", (INF,), names="X"),
    BadInput("above-1", (S * 5,), names="X"),
    BadInput("1-d", (S[:, 0],), names="X"),
    BadInput("y-length", (S, np.ones(3)), names="y"),
], ids=lambda c: c.id)
def test_selectors_refuse_and_keep_state(make, case):
    sel = make().fit(S)
    check_bad_inputs(sel.fit, case, target=sel)


@pytest.mark.parametrize("make", [KRRPredictor, RidgePredictor, MeanPredictor], ids=lambda m: m.__name__)
@pytest.mark.parametrize("case", [
    BadInput("nan", (NAN, S.mean(1)), names="X"),
    BadInput("inf", (INF, S.mean(1)), names="X"),
    BadInput("y-length", (S, np.ones(3)), names="y"),
    BadInput("y-inf", (S, np.full(30, np.inf)), names="y"),
    BadInput("1-d", (S[:, 0], S.mean(1)), names="X"),
], ids=lambda c: c.id)
def test_predictors_refuse_and_keep_state(make, case):
    est = make().fit(S[:, :3], S.mean(1))
    if make is MeanPredictor and case.id in ("y-length", "y-inf"):
        case = BadInput(case.id, case.args, names="y")
    check_bad_inputs(est.fit, case, target=est)
    check_bad_inputs(est.predict, BadInput("columns", (S,), names="X"), target=est)


@pytest.mark.parametrize("case", [
    BadInput("bins-0", (np.linspace(0, 1, 20), 5), {"bins": 0}, names="bins"),  # hung before
    BadInput("bins-negative", (np.linspace(0, 1, 20), 5), {"bins": -3}, names="bins"),
    BadInput("bins-float", (np.linspace(0, 1, 20), 5), {"bins": 2.5}, names="bins"),
    BadInput("n_source-float", (np.linspace(0, 1, 20), 5.5), names="n_source"),
    BadInput("n_source-all", (np.linspace(0, 1, 20), 20), names="n_source"),
    BadInput("acc-nan", (np.array([0.1, np.nan, 0.3]), 1), names="acc"),
    BadInput("acc-2d", (np.ones((3, 3)), 1), names="acc"),
    BadInput("rng-str", (np.linspace(0, 1, 20), 5), {"rng": "seed"}, names="rng"),
], ids=lambda c: c.id)
def test_binned_split_refuses_without_hanging(case, no_hang):
    check_bad_inputs(binned_split, case)


@pytest.mark.parametrize("call,case", [
    (evaluate, BadInput("length", (np.ones(3), np.ones(4)), names="y_pred")),
    (evaluate, BadInput("nan", (np.ones(3), np.array([0.1, np.nan, 0.2])), names="y_pred")),
    (nogueira_stability, BadInput("one-set", ([[1, 2]], 5), names="coresets")),
    (nogueira_stability, BadInput("out-of-range", ([[1, 2], [3, 9]], 5), names="coreset")),
    (kernel_ridge_loo, BadInput("nan", (NAN, S.mean(1)), names="X")),
    (kernel_ridge_loo, BadInput("alphas", (S, S.mean(1)), {"alphas": [0.0]}, names="alphas")),
    (ridge_loo, BadInput("y-length", (S, np.ones(2)), names="y")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_functions_refuse(call, case):
    check_bad_inputs(call, case)


# ------------------------------------------------------------------------------------------------- CLI
def _cli_error(capsys, rc, needle):
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1, err
    assert needle in err, err


@pytest.fixture()
def src_npz(tmp_path):
    np.savez(tmp_path / "src.npz", s=_answers(m=30, n=40))
    return tmp_path


def test_cli_select_out_is_a_file(src_npz, capsys):
    (src_npz / "taken").write_text("x")
    rc = main(["select", "--matrix", str(src_npz / "src.npz"), "--budget", "5", "--out", str(src_npz / "taken")])
    _cli_error(capsys, rc, "--out")


def test_cli_select_refuses_to_overwrite_without_force(src_npz, capsys):
    args = ["select", "--matrix", str(src_npz / "src.npz"), "--budget", "5", "--out", str(src_npz / "m")]
    assert main(args) == 0
    before = (src_npz / "m" / "predictor.npz").read_bytes()
    capsys.readouterr()
    _cli_error(capsys, main(args[:-3] + ["3", "--out", str(src_npz / "m")]), "--force")
    assert (src_npz / "m" / "predictor.npz").read_bytes() == before
    assert main(args[:-3] + ["3", "--out", str(src_npz / "m"), "--force"]) == 0
    assert len(EfficientBenchmark.load(src_npz / "m").coreset_) == 3
    assert not [p for p in (src_npz / "m").iterdir() if p.name.endswith(".tmp")]


def test_cli_numeric_header_is_read_as_ids(tmp_path, capsys):
    A = _answers(m=25, n=10)
    header = ",".join(str(100 + j) for j in range(10))
    np.savetxt(tmp_path / "s.csv", A, fmt="%d", delimiter=",", header=header, comments="")
    assert main(["select", "--matrix", str(tmp_path / "s.csv"), "--budget", "3", "--out", str(tmp_path / "m")]) == 0
    bench = EfficientBenchmark.load(tmp_path / "m")
    assert bench.question_ids_ == [str(100 + j) for j in range(10)]
    capsys.readouterr()
    # an explicit --header no makes the first row a model, which is then refused by value
    rc = main(["select", "--matrix", str(tmp_path / "s.csv"), "--budget", "3", "--out", str(tmp_path / "n"),
               "--header", "no"])
    _cli_error(capsys, rc, "0/1")
