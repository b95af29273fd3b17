"""effbench error contract, part 2 (issue 16): the baseline selectors beyond ``fit``, their native
predictors, the IRT and MI functions, k-medoids and the stability index."""

import math

import numpy as np
import pytest

from _badinput import BadInput, check_bad_inputs
from neurips26.effbench import (
    AnchorPointsSelector,
    GPIRTPredictor,
    IRTSelector,
    LassoSelector,
    LinearPredictor,
    anchor_points,
    estimate_ability,
    evaluate_split,
    fit_irt_2pl,
    jitter_target,
    k_medoids,
    kernel_ridge_loo,
    ksg_mi,
    make_predictor,
    make_selector,
    nogueira_stability,
    plugin_mi_binary,
    poly_kernel,
    ross_mi,
)


def _answers(m=30, n=12, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((m, n)) < rng.random(n)).astype(float)


S = _answers()
NAN = S.copy()
NAN[1, 2] = np.nan
Y = S.mean(1)

SELECTOR_FIT = [
    BadInput("nan", (NAN,), names="X"),
    BadInput("inf", (np.where(S > 0, np.inf, 0.0),), names="X"),
    BadInput("above-1", (S * 5,), names="X"),
    BadInput("negative", (S - 1,), names="X"),
    BadInput("1-d", (S[:, 0],), names="X"),
    BadInput("3-d", (S[None],), names="X"),
    BadInput("string", ("abc",), names="X"),
    BadInput("y-length", (S, np.ones(3)), names="y"),
    BadInput("y-nan", (S, np.full(30, np.nan)), names="y"),
]
MAKERS = {
    "anchor": lambda **kw: AnchorPointsSelector(3, **kw),
    "irt": lambda **kw: IRTSelector(3, steps=5, **kw),
    "lasso": lambda **kw: LassoSelector(3, **kw),
}


@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("case", SELECTOR_FIT, ids=lambda c: c.id)
def test_baseline_selector_fit_refuses_and_keeps_state(name, case):
    sel = MAKERS[name]().fit(S)
    check_bad_inputs(sel.fit, case, target=sel)


@pytest.mark.parametrize("name, kwargs, names", [
    ("anchor", {"n_questions": 0}, "n_questions"),
    ("anchor", {"n_questions": 13}, "n_questions"),
    ("anchor", {"n_questions": 1.5}, "n_questions"),
    ("anchor", {"n_questions": math.nan}, "n_questions"),
    ("lasso", {"n_questions": "3"}, "n_questions"),
    ("irt", {"n_questions": True}, "n_questions"),
    ("irt", {"dims": 0}, "dims"),
    ("irt", {"optimizer": "sgd"}, "optimizer"),
    ("irt", {"steps": 0}, "steps"),
    ("irt", {"steps": 2.5}, "steps"),
    ("irt", {"estimate": "best"}, "estimate"),
], ids=lambda x: str(x))
def test_baseline_selector_bad_hyperparameters_refused_at_fit(name, kwargs, names):
    sel = MAKERS[name]().fit(S)
    sel.set_params(**kwargs)
    check_bad_inputs(sel.fit, BadInput(str(kwargs), (S,), names=names), target=sel)


def test_irt_selector_refuses_non_binary_answers():
    sel = IRTSelector(3, steps=5).fit(S)
    check_bad_inputs(sel.fit, BadInput("fractional", (S * 0.5,), names="X", match="0/1"), target=sel)


def test_native_predictor_before_fit_is_not_fitted():
    from sklearn.exceptions import NotFittedError

    for make in MAKERS.values():
        with pytest.raises(NotFittedError):
            make().native_predictor()


@pytest.mark.parametrize("name", list(MAKERS))
@pytest.mark.parametrize("case", [
    BadInput("nan", (np.full((2, 3), np.nan),), names="X"),
    BadInput("columns", (np.zeros((2, 5)),), names="X"),
    BadInput("1-d", (np.zeros(3),), names="X"),
], ids=lambda c: c.id)
def test_native_predictors_refuse_bad_answers(name, case):
    sel = MAKERS[name]().fit(S)
    pred = sel.native_predictor()
    if name == "lasso" and sel.selected_.size != 3:
        pytest.skip("the lasso kept fewer than 3 questions")
    check_bad_inputs(pred.predict, case, targets=[pred, sel])


def test_gpirt_predictor_refuses_answers_outside_0_1():
    """The IRT likelihood needs answers in [0, 1]; the mean / linear natives take any finite reals, like
    the scikit-learn coreset regressors (EfficientBenchmark checks [0, 1] before them)."""
    pred = IRTSelector(3, steps=5).fit(S).native_predictor()
    check_bad_inputs(pred.predict, BadInput("above-1", (np.full((2, 3), 3.0),), names="X"), target=pred)


def _gp(**over):
    sel = IRTSelector(3, steps=5).fit(S)
    pred = sel.native_predictor()
    params = pred.get_params()
    params.update(over)
    return GPIRTPredictor(**params)


@pytest.mark.parametrize("case", [
    BadInput("params", kwargs={"params": {"a": 1}}, names="params"),
    BadInput("anchor-out-of-range", kwargs={"anchors": np.array([0, 1, 99])}, names="anchors"),
    BadInput("anchor-float", kwargs={"anchors": np.array([0.0, 1.0, 2.0])}, names="anchors"),
    BadInput("weights-length", kwargs={"weights": np.ones(2)}, names="weights"),
    BadInput("weights-nan", kwargs={"weights": np.array([np.nan, 0.5, 0.5])}, names="weights"),
    BadInput("b-error-nan", kwargs={"b_error": math.nan}, names="b_error"),
    BadInput("v-negative", kwargs={"v": -1.0}, names="v"),
    BadInput("estimate", kwargs={"estimate": "gp"}, names="estimate"),
], ids=lambda c: c.id)
def test_gpirt_predictor_refuses_bad_parameters(case):
    est = _gp(**case.kwargs)
    check_bad_inputs(est.fit, BadInput(case.id, names=case.names), target=est)
    check_bad_inputs(est.predict, BadInput(case.id, (np.zeros((1, 3)),), names=case.names), target=est)


@pytest.mark.parametrize("case", [
    BadInput("coef-nan", kwargs={"coef": np.array([np.nan, 1.0]), "intercept": 0.0}, names="coef"),
    BadInput("coef-2d", kwargs={"coef": np.ones((2, 2)), "intercept": 0.0}, names="coef"),
    BadInput("intercept-inf", kwargs={"coef": np.ones(2), "intercept": math.inf}, names="intercept"),
    BadInput("intercept-str", kwargs={"coef": np.ones(2), "intercept": "0"}, names="intercept"),
], ids=lambda c: c.id)
def test_linear_predictor_refuses_bad_parameters(case):
    est = LinearPredictor(**case.kwargs)
    check_bad_inputs(est.fit, BadInput(case.id, names=case.names), target=est)


def test_linear_predictor_refuses_bad_answers():
    est = LinearPredictor(coef=np.ones(2), intercept=0.0).fit()
    for case in [BadInput("cols", (np.zeros((1, 3)),), names="X"), BadInput("nan", (np.full((1, 2), np.nan),),
                 names="X")]:
        check_bad_inputs(est.predict, case, target=est)


IRT = fit_irt_2pl(S, steps=5)


@pytest.mark.parametrize("call, case", [
    (fit_irt_2pl, BadInput("nan", (NAN,), names="S")),
    (fit_irt_2pl, BadInput("fractional", (S * 0.5,), names="S")),
    (fit_irt_2pl, BadInput("one-model", (S[:1],), names="S")),
    (fit_irt_2pl, BadInput("dims-float", (S, 1.5), names="dims")),
    (fit_irt_2pl, BadInput("steps-str", (S,), {"steps": "5"}, names="steps")),
    (fit_irt_2pl, BadInput("lr-nan", (S,), {"lr": math.nan, "optimizer": "adam"}, names="lr")),
    (fit_irt_2pl, BadInput("prior-0", (S,), {"prior_b_scale": 0.0}, names="prior_b_scale")),
    (fit_irt_2pl, BadInput("seed-negative", (S,), {"random_state": -1}, names="random_state")),
    (estimate_ability, BadInput("params", (S[:, :2], [0, 1], None), names="params")),
    (estimate_ability, BadInput("items-range", (S[:, :2], [0, 12], IRT), names="items")),
    (estimate_ability, BadInput("items-float", (S[:, :2], [0.5, 1.0], IRT), names="items")),
    (estimate_ability, BadInput("Y-nan", (NAN[:, :3], [0, 1, 2], IRT), names="Y")),
    (estimate_ability, BadInput("Y-above-1", (S[:, :2] * 4, [0, 1], IRT), names="Y")),
    (estimate_ability, BadInput("Y-columns", (S[:, :3], [0, 1], IRT), names="Y")),
    (estimate_ability, BadInput("iters-0", (S[:, :2], [0, 1], IRT), {"iters": 0}, names="iters")),
    (jitter_target, BadInput("nan", (np.array([0.1, np.nan]),), names="y")),
    (jitter_target, BadInput("2-d", (np.ones((2, 2)),), names="y")),
    (jitter_target, BadInput("empty", (np.ones(0),), names="y")),
    (ross_mi, BadInput("nan-X", (NAN, Y), names="X")),
    (ross_mi, BadInput("y-length", (S, Y[:5]), names="y")),
    (ross_mi, BadInput("y-inf", (S, np.full(30, np.inf)), names="y")),
    (ross_mi, BadInput("k-0", (S, Y), {"k": 0}, names="k")),
    (ross_mi, BadInput("k-float", (S, Y), {"k": 2.5}, names="k")),
    (ksg_mi, BadInput("nan-X", (NAN, Y), names="X")),
    (ksg_mi, BadInput("k-rows", (S, Y), {"k": 30}, names="k")),
    (ksg_mi, BadInput("y-length", (S, Y[:3]), names="y")),
    (plugin_mi_binary, BadInput("X-fractional", (S * 0.5, S[:, 0]), names="X")),
    (plugin_mi_binary, BadInput("x-length", (S, S[:3, 0]), names="x")),
    (plugin_mi_binary, BadInput("x-fractional", (S, Y), names="x")),
    (k_medoids, BadInput("D-nan", (np.full((3, 3), np.nan), 2), names="D")),
    (k_medoids, BadInput("D-rect", (np.zeros((3, 4)), 2), names="D")),
    (k_medoids, BadInput("D-1d", (np.zeros(3), 2), names="D")),
    (k_medoids, BadInput("k-float", (np.zeros((3, 3)), 1.5), names="k")),
    (k_medoids, BadInput("k-big", (np.zeros((3, 3)), 4), names="k")),
    (k_medoids, BadInput("passes-negative", (np.zeros((3, 3)), 2), {"max_passes": -1}, names="max_passes")),
    (anchor_points, BadInput("S-nan", (NAN, 3), names="S")),
    (anchor_points, BadInput("n-0", (S, 0), names="n")),
    (nogueira_stability, BadInput("n-features-0", ([[0], [0]], 0), names="n_features")),
    (nogueira_stability, BadInput("n-features-float", ([[0], [0]], 2.5), names="n_features")),
    (nogueira_stability, BadInput("float-indices", ([[0.5], [1.0]], 3), names="coreset")),
    (nogueira_stability, BadInput("not-a-sequence", (5, 3), names="coresets")),
    (make_selector, BadInput("name", ("best",), names=("name", "selector"))),
    (make_predictor, BadInput("name", ("best",), names=("name", "regressor"))),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_functions_refuse(call, case):
    check_bad_inputs(call, case)


def test_validated_functions_still_agree_with_brute_force():
    """k-medoids on 6 points against all 15 pairs of medoids (the total distance of PAM's result is the
    optimum here), and the stability index of identical sets is 1."""
    from itertools import combinations

    rng = np.random.default_rng(3)
    pts = rng.normal(size=(6, 2))
    D = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    med, _ = k_medoids(D, 2)
    best = min(D[:, list(c)].min(1).sum() for c in combinations(range(6), 2))
    assert D[:, med].min(1).sum() == pytest.approx(best)
    assert nogueira_stability([[0, 1], [1, 0]], 5) == pytest.approx(1.0)


@pytest.mark.parametrize("call, case", [
    (poly_kernel, BadInput("nan", (NAN, S), {"degree": 2, "gamma": 1.0, "coef0": 1.0}, names="A")),
    (poly_kernel, BadInput("columns", (S, S[:, :3]), {"degree": 2, "gamma": 1.0, "coef0": 1.0}, names="columns")),
    (poly_kernel, BadInput("degree-0", (S, S), {"degree": 0, "gamma": 1.0, "coef0": 1.0}, names="degree")),
    (poly_kernel, BadInput("degree-float", (S, S), {"degree": 2.0, "gamma": 1.0, "coef0": 1.0}, names="degree")),
    (poly_kernel, BadInput("gamma-nan", (S, S), {"degree": 2, "gamma": math.nan, "coef0": 1.0}, names="gamma")),
    (poly_kernel, BadInput("coef0-inf", (S, S), {"degree": 2, "gamma": 1.0, "coef0": math.inf}, names="coef0")),
    (kernel_ridge_loo, BadInput("degree-0", (S, Y), {"degree": 0}, names="degree")),  # silently fitted before
    (kernel_ridge_loo, BadInput("gamma-nan", (S, Y), {"gamma": math.nan}, names="gamma")),  # LinAlgError before
    (evaluate_split, BadInput("source-length", (np.ones(3), np.ones(2), np.ones(3), np.ones(3)),
                              names="y_source")),
    (evaluate_split, BadInput("target-nan", (np.ones(3), np.ones(3), np.ones(3), np.full(3, np.nan)),
                              names="pred_target")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_kernel_and_split_metrics_refuse(call, case):
    check_bad_inputs(call, case)
