"""groupshift error contract, part 2 (issue 16): partitions and primitives, the solvers' integer options,
groupshift's extra arguments, homotopy_tangent, group_norms and the baselines refuse bad input by name."""

import math

import numpy as np
import pytest

from _badinput import BadInput, check_bad_inputs
from neurips26.groupshift import (
    GroupL1Classifier,
    GroupL1Regressor,
    GroupPartition,
    Primitive,
    apply_primitives,
    cold_newton_refit,
    cold_refit,
    duality_gap,
    group_lambda_max,
    group_norms,
    groupshift,
    homotopy_tangent,
    solve_group_l1,
    warm_refit,
)

NAN = math.nan


def _data(n=30, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] - 2 * X[:, 3] + 0.1 * rng.normal(size=n)


X, Y = _data()
G = GroupPartition.from_labels([0, 0, 1, 1, 2, 2])
G2 = GroupPartition.from_labels([0, 0, 0, 1, 1, 2])


@pytest.mark.parametrize("call, case", [
    (GroupPartition.from_labels, BadInput("empty", ([],), names="labels")),
    (GroupPartition.from_labels, BadInput("2d", ([[0, 1]],), names="labels")),
    (GroupPartition.from_lists, BadInput("overlap", ([[0, 1], [1, 2]], 3), names="overlap")),
    (GroupPartition.from_lists, BadInput("not-covering", ([[0, 1]], 3), names="cover")),
    (GroupPartition.from_lists, BadInput("out-of-range", ([[0, 5]], 3), names="groups[0]")),
    (GroupPartition.from_lists, BadInput("float-index", ([[0.0, 1.0, 2.0]], 3), names="groups[0]")),
    (GroupPartition.from_lists, BadInput("empty-group", ([[0, 1, 2], []], 3), names="groups[1]")),
    (GroupPartition.from_lists, BadInput("n-0", ([[0]], 0), names="n_features")),
    (GroupPartition.from_lists, BadInput("string", ("012", 3), names="groups")),
    (GroupPartition.contiguous, BadInput("size-0", (0, 6), names="size")),
    (GroupPartition.contiguous, BadInput("n-0", (2, 0), names="n_features")),
    (GroupPartition.contiguous, BadInput("n-float", (2, 6.0), names="n_features")),
    (Primitive, BadInput("kind", ("swap", ((0,),), ((0,),)), names="kind")),
    (Primitive, BadInput("counts", ("split", ((0, 1),), ((0, 1),)), names="split")),
    (Primitive, BadInput("cover", ("split", ((0, 1),), ((0,), (2,))), names="cover")),
    (Primitive, BadInput("sources-int", ("split", 5, ((0,), (1,))), names="sources")),
    (Primitive, BadInput("targets-str", ("merge", ((0,), (1,)), "01"), names="targets")),
    (apply_primitives, BadInput("not-a-partition", ([0, 1], []), names="partition")),
    (apply_primitives, BadInput("not-primitives", (G, [("split", (0, 1))]), names="primitives")),
    (apply_primitives, BadInput("unknown-source", (G, [Primitive("split", ((0, 1, 2),), ((0,), (1, 2)))]),
                                names="source")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_partition_api_refuses(call, case):
    check_bad_inputs(call, case)


@pytest.mark.parametrize("method, case", [
    ("meet", BadInput("type", ([0, 1],), names="other")),
    ("meet", BadInput("size", (GroupPartition.from_labels([0, 1]),), names="other")),
    ("moved", BadInput("feature-range", (6, 0), names="feature")),
    ("moved", BadInput("feature-float", (1.5, 0), names="feature")),  # IndexError before
    ("moved", BadInput("feature-bool", (True, 0), names="feature")),
    ("moved", BadInput("group-range", (0, 3), names="to_group")),
    ("moved", BadInput("group-float", (0, 0.5), names="to_group")),
    ("transition_to", BadInput("order", (G2,), {"order": "merge_first"}, names="order")),
    ("transition_to", BadInput("type", ("G2",), names="other")),
], ids=lambda c: c.id if isinstance(c, BadInput) else c)
def test_partition_methods_refuse(method, case):
    check_bad_inputs(getattr(G, method), case, target=G)


@pytest.mark.parametrize("case", [
    BadInput("v-nan", (np.array([NAN, 1.0]), np.array([0, 0]), 1, 2.0), names="v"),
    BadInput("v-2d", (np.ones((2, 2)), np.array([0, 0]), 1, 2.0), names="v"),
    BadInput("labels-length", (np.ones(3), np.array([0, 0]), 1, 2.0), names="labels"),
    BadInput("labels-range", (np.ones(2), np.array([0, 3]), 2, 2.0), names="labels"),
    BadInput("labels-float", (np.ones(2), np.array([0.0, 1.0]), 2, 2.0), names="labels"),
    BadInput("n-groups-0", (np.ones(2), np.array([0, 0]), 0, 2.0), names="n_groups"),
    BadInput("p-0.5", (np.ones(2), np.array([0, 0]), 1, 0.5), names="p"),
    BadInput("p-nan", (np.ones(2), np.array([0, 0]), 1, NAN), names="p"),
], ids=lambda c: c.id)
def test_group_norms_refuses(case):
    check_bad_inputs(group_norms, case)


def test_group_norms_matches_a_loop():
    v = np.array([3.0, -4.0, 1.0, 0.0, 2.0])
    labels = np.array([0, 0, 1, 2, 1])
    for p in (1.0, 2.0, 3.0, math.inf):
        ref = [np.linalg.norm(v[labels == k], ord=p) for k in range(3)]
        np.testing.assert_allclose(group_norms(v, labels, 3, p), ref)


@pytest.mark.parametrize("call, case", [
    (solve_group_l1, BadInput("max-epochs-0", (X, Y, G, 0.1), {"max_epochs": 0}, names="max_epochs")),
    (solve_group_l1, BadInput("max-epochs-float", (X, Y, G, 0.1), {"max_epochs": 10.5}, names="max_epochs")),
    (solve_group_l1, BadInput("p0-0", (X, Y, G, 0.1), {"p0": 0}, names="p0")),
    (solve_group_l1, BadInput("loss", (X, Y, G, 0.1), {"loss": "hinge"}, names="loss")),
    (solve_group_l1, BadInput("intercept-str", (X, Y, G, 0.1), {"fit_intercept": "yes"}, names="fit_intercept")),
    (solve_group_l1, BadInput("w0-shape", (X, Y, G, 0.1), {"w0": np.zeros(5)}, names="w0")),
    (solve_group_l1, BadInput("weights-negative", (X, Y, G, 0.1), {"weights": [1.0, -1.0, 1.0]},
                              names="weights")),
    (solve_group_l1, BadInput("cache-type", (X, Y, G, 0.1), {"lipschitz_cache": [1]}, names="lipschitz_cache")),
    (solve_group_l1, BadInput("alpha-str", (X, Y, G, "0.1"), names="alpha")),
    (solve_group_l1, BadInput("tol-nan", (X, Y, G, 0.1), {"tol": NAN}, names="tol")),
    (solve_group_l1, BadInput("logistic-labels", (X, Y, G, 0.1), {"loss": "logistic"}, names="y")),
    (group_lambda_max, BadInput("groups-wrong-d", (X, Y, GroupPartition.from_labels([0, 1])), names="groups")),
    (group_lambda_max, BadInput("p-1", (X, Y, G, 1.0), names="p")),
    (group_lambda_max, BadInput("loss", (X, Y, G), {"loss": "hinge"}, names="loss")),
    (duality_gap, BadInput("w-nan", (X, Y, np.full(6, NAN), G, 0.1), names="w")),
    (cold_refit, BadInput("alpha-0", (X, Y, G, 0.0), names="alpha")),
    (warm_refit, BadInput("w-old-shape", (X, Y, np.zeros(3), G, 0.1), names="w0")),
    (cold_newton_refit, BadInput("X-nan", (np.full((30, 6), NAN), Y, G, 0.1), names="X")),
    (cold_newton_refit, BadInput("switch-tol-0", (X, Y, G, 0.1), {"switch_tol": 0.0}, names="switch_tol")),
    (cold_newton_refit, BadInput("max-epochs-0", (X, Y, G, 0.1), {"max_epochs": 0}, names="max_epochs")),
    (cold_newton_refit, BadInput("tol-0", (X, Y, G, 0.1), {"tol": 0.0}, names="tol")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_solvers_refuse(call, case):
    check_bad_inputs(call, case)


W_OLD = solve_group_l1(X, Y, G, 0.1).coef


@pytest.mark.parametrize("case", [
    BadInput("w-old-nan", (X, Y, np.full(6, NAN), G, G2, 0.1), names="w_old"),
    BadInput("old-groups", (X, Y, W_OLD, "G", G2, 0.1), names="old_groups"),
    BadInput("new-groups-d", (X, Y, W_OLD, G, GroupPartition.from_labels([0, 1]), 0.1), names="new_groups"),
    BadInput("old-weights", (X, Y, W_OLD, G, G2, 0.1), {"old_weights": [1.0]}, names="old_weights"),
    BadInput("intercept-old-nan", (X, Y, W_OLD, G, G2, 0.1), {"intercept_old": NAN}, names="intercept_old"),
    BadInput("dual-scale-nan", (X, Y, W_OLD, G, G2, 0.1), {"old_dual_scale": NAN}, names="old_dual_scale"),
    BadInput("dual-scale-str", (X, Y, W_OLD, G, G2, 0.1), {"old_dual_scale": "1"}, names="old_dual_scale"),
    BadInput("scores-length", (X, Y, W_OLD, G, G2, 0.1), {"old_group_scores": np.ones(2)},
             names="old_group_scores"),
    BadInput("scores-nan", (X, Y, W_OLD, G, G2, 0.1), {"old_group_scores": np.full(3, NAN)},
             names="old_group_scores"),
    BadInput("max-epochs-0", (X, Y, W_OLD, G, G2, 0.1), {"max_epochs": 0}, names="max_epochs"),
    BadInput("p0-float", (X, Y, W_OLD, G, G2, 0.1), {"p0": 2.5}, names="p0"),
    BadInput("newton-str", (X, Y, W_OLD, G, G2, 0.1), {"newton": "no"}, names="newton"),
    BadInput("cache-type", (X, Y, W_OLD, G, G2, 0.1), {"lipschitz_cache": 3}, names="lipschitz_cache"),
], ids=lambda c: c.id)
def test_groupshift_refuses(case):
    cache = {}
    check_bad_inputs(groupshift, case, target=cache)


REST = [[4, 5]]
OLD = [[0, 1, 2, 3]]
NEW = [[0, 1], [2, 3]]


@pytest.mark.parametrize("case", [
    BadInput("X-nan", (np.full((30, 6), NAN), Y, W_OLD, OLD, NEW, REST, 0.1, 0.5), names="X"),
    BadInput("y-length", (X, Y[:5], W_OLD, OLD, NEW, REST, 0.1, 0.5), names="y"),
    BadInput("w-shape", (X, Y, W_OLD[:4], OLD, NEW, REST, 0.1, 0.5), names="w"),
    BadInput("t-2", (X, Y, W_OLD, OLD, NEW, REST, 0.1, 2.0), names="t"),
    BadInput("t-nan", (X, Y, W_OLD, OLD, NEW, REST, 0.1, NAN), names="t"),
    BadInput("t-str", (X, Y, W_OLD, OLD, NEW, REST, 0.1, "0.5"), names="t"),
    BadInput("alpha-0", (X, Y, W_OLD, OLD, NEW, REST, 0.0, 0.5), names="alpha"),
    BadInput("term-range", (X, Y, W_OLD, [[0, 9]], NEW, REST, 0.1, 0.5), names="old_terms"),
    BadInput("weights-length", (X, Y, W_OLD, OLD, NEW, REST, 0.1, 0.5), {"new_weights": [1.0]},
             names="new_weights"),
    BadInput("weights-nan", (X, Y, W_OLD, OLD, NEW, REST, 0.1, 0.5), {"rest_weights": [NAN]},
             names="rest_weights"),
], ids=lambda c: c.id)
def test_homotopy_tangent_refuses(case):
    check_bad_inputs(homotopy_tangent, case)


@pytest.mark.parametrize("cls", [GroupL1Regressor, GroupL1Classifier])
@pytest.mark.parametrize("param, value", [("alpha", NAN), ("alpha", "1"), ("p", 1.0), ("tol", -1.0),
                                          ("max_epochs", 0), ("max_epochs", True), ("weights", [1.0]),
                                          ("groups", "abc"), ("fit_intercept", "no")])
def test_estimator_hyperparameters_refused_and_state_kept(cls, param, value):
    y = Y if cls is GroupL1Regressor else (Y > 0).astype(int)
    est = cls(G, alpha=0.05).fit(X, y)
    est.set_params(**{param: value})
    check_bad_inputs(est.fit, BadInput(param, (X, y), names=param), target=est)


@pytest.mark.parametrize("cls", [GroupL1Regressor, GroupL1Classifier])
def test_estimator_predict_refuses(cls):
    y = Y if cls is GroupL1Regressor else (Y > 0).astype(int)
    est = cls(G, alpha=0.05).fit(X, y)
    for case in [BadInput("columns", (X[:, :4],), names=("features", "X")),
                 BadInput("nan", (np.full((2, 6), NAN),), names=("NaN", "X")),
                 BadInput("1d", (X[0],), names=("2D", "X"))]:
        check_bad_inputs(est.predict, case, target=est)
