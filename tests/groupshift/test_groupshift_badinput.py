"""groupshift's error contract (issue 16): bad input is refused by name, never hangs, never changes state."""

import math

import numpy as np
import pytest

from _badinput import BadInput, check_bad_inputs
from neurips26.groupshift import (
    GroupL1Classifier,
    GroupL1Regressor,
    GroupPartition,
    duality_gap,
    group_lambda_max,
    groupshift,
    prox_group_norm,
    solve_group_l1,
)


def _data(n=40, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] - 2 * X[:, 3] + 0.1 * rng.normal(size=n)


GROUPS = GroupPartition.from_labels([0, 0, 1, 1, 2, 2])


# ------------------------------------------------------------------ prox: the hangs and wrong results of the issue
@pytest.mark.timeout(10)
@pytest.mark.parametrize("case", [
    BadInput("p=0.5 (hung)", args=(np.ones(3), 0.5), kwargs={"p": 0.5}, names="p"),
    BadInput("p=-2 (wrong result)", args=(np.ones(3), 0.5), kwargs={"p": -2.0}, names="p"),
    BadInput("p=1 (divided by zero)", args=(np.ones(3), 0.5), kwargs={"p": 1.0}, names="p"),
    BadInput("p=nan", args=(np.ones(3), 0.5), kwargs={"p": math.nan}, names="p"),
    BadInput("t<0", args=(np.ones(3), -0.5), kwargs={"p": 2.0}, names="t"),
    BadInput("t=nan", args=(np.ones(3), math.nan), kwargs={"p": 2.0}, names="t"),
    BadInput("v nan", args=(np.array([1.0, np.nan]), 0.5), kwargs={"p": 2.0}, names="v"),
    BadInput("v 2-D", args=(np.ones((2, 2)), 0.5), kwargs={"p": 2.0}, names="v"),
], ids=lambda c: c.id)
def test_prox_refuses_bad_input_quickly(case):
    check_bad_inputs(prox_group_norm, case)


def test_prox_still_matches_closed_forms():
    v = np.array([3.0, 4.0])
    assert np.allclose(prox_group_norm(v, 1.0, 2.0), v * (1 - 1 / 5))  # group soft-thresholding
    assert np.allclose(prox_group_norm(v, 0.0, 3.0), v)
    assert np.allclose(prox_group_norm(v, 10.0, math.inf), 0.0)


# ------------------------------------------------------------------ estimators: a failed fit changes nothing
def _fitted(cls=GroupL1Regressor):
    X, y = _data()
    if cls is GroupL1Classifier:
        y = (y > 0).astype(int)
    return cls(GROUPS, alpha=0.1).fit(X, y), X, y


@pytest.mark.parametrize("cls", [GroupL1Regressor, GroupL1Classifier])
def test_fit_with_the_wrong_column_count_leaves_the_estimator_unchanged(cls):
    est, X, y = _fitted(cls)
    check_bad_inputs(est.fit, BadInput("5 columns", args=(X[:, :5], y), names=("groups", "features", "columns")),
                     target=est)
    assert est.n_features_in_ == 6


@pytest.mark.parametrize("case", [
    BadInput("nan X", args=(np.full((40, 6), np.nan), np.zeros(40)), names=("NaN", "nan", "infinity")),
    BadInput("y length", args=(np.zeros((40, 6)), np.zeros(39)), names=("samples", "y")),
    BadInput("inf y", args=(np.zeros((40, 6)), np.full(40, np.inf)), names=("NaN", "nan", "infinity")),
], ids=lambda c: c.id)
def test_fit_refuses_bad_arrays_without_changing_a_fitted_model(case):
    est, _, _ = _fitted()
    check_bad_inputs(est.fit, case, target=est)


def test_refit_partition_with_a_bad_partition_changes_nothing():
    est, X, y = _fitted()
    check_bad_inputs(est.refit_partition, BadInput("7 features", args=(X, y, GroupPartition.from_labels(
        [0, 0, 1, 1, 2, 2, 2])), names=("groups", "features", "new_groups")), target=est)
    check_bad_inputs(est.refit_partition, BadInput("method", args=(X, y, GROUPS), kwargs={"method": "magic"},
                                                   names="method"), target=est)


@pytest.mark.parametrize("fn,extra", [(group_lambda_max, ()), (solve_group_l1, (0.1,))])
def test_solvers_refuse_non_finite_data(fn, extra):
    X, y = _data()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="(?i)nan|finite|infinity"):
        fn(X, y, GROUPS, *extra)


def test_groupshift_and_gap_refuse_a_wrong_length_coefficient_vector():
    X, y = _data()
    with pytest.raises(ValueError):
        groupshift(X, y, np.zeros(5), GROUPS, GROUPS, 0.1)
    with pytest.raises(ValueError):
        duality_gap(X, y, np.zeros(5), GROUPS, 0.1)
