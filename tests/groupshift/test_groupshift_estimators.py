"""scikit-learn contract (parametrize_with_checks) and the bad-input errors the issue lists."""

import math

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from neurips26.groupshift import (
    GroupL1Classifier,
    GroupL1Regressor,
    GroupPartition,
    duality_gap,
    group_lambda_max,
    groupshift,
    solve_group_l1,
)

# groups=2: contiguous blocks of two features, valid for any number of features the checks use.
ESTIMATORS = [GroupL1Regressor(2, alpha=0.01), GroupL1Regressor(1, alpha=0.01, p=math.inf),
              GroupL1Classifier(2, alpha=0.01)]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_contract(estimator, check):
    check(estimator)


def _xy():
    rng = np.random.default_rng(0)
    return rng.standard_normal((20, 6)), rng.standard_normal(20)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"alpha": -0.1}, ValueError, "alpha"),
    ({"alpha": 0.0}, ValueError, "alpha must be a finite number > 0"),
    ({"p": 1.0}, ValueError, "p must be a number > 1"),
    ({"p": 0.5}, ValueError, "p must be a number > 1"),
    ({"p": "two"}, ValueError, "p must be"),
    ({"tol": 0}, ValueError, "tol"),
    ({"max_epochs": 0}, ValueError, "max_epochs"),
    ({"weights": [1.0, 2.0]}, ValueError, r"weights must be .auto. or an array \[3\]"),
    ({"weights": [1.0, -1.0, 1.0]}, ValueError, "> 0"),
    ({"weights": "uniform"}, ValueError, "auto"),
])
def test_bad_parameters(kwargs, exc, match):
    X, y = _xy()
    with pytest.raises(exc, match=match):
        GroupL1Regressor(2, **kwargs).fit(X, y)


@pytest.mark.parametrize("groups, match", [
    ([[0, 1], [2, 3]], "do not cover"),
    ([[0, 1, 2], [2, 3, 4, 5]], "overlap"),
    ([[0, 1, 2], [], [3, 4, 5]], "empty"),
    (GroupPartition.contiguous(2, 7), "7 features but X has 6"),
    ([0, 0, 1, 1, 2], "one label per feature"),
])
def test_bad_groups(groups, match):
    X, y = _xy()
    with pytest.raises(ValueError, match=match):
        GroupL1Regressor(groups).fit(X, y)
    with pytest.raises(ValueError, match=match):
        group_lambda_max(X, y, groups)


def test_bad_data():
    X, y = _xy()
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        GroupL1Regressor(2).fit(X, y[:-1])
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        GroupL1Regressor(2).fit(Xn, y)
    with pytest.raises(ValueError, match="X must be an array .* of finite values"):
        duality_gap(Xn, y, np.zeros(6), 2, 0.1)
    with pytest.raises(ValueError, match="y must be an array .* with N = 20"):
        groupshift(X, y[:-1], np.zeros(6), 2, 3, 0.1)
    with pytest.raises(ValueError, match="w_old must be"):
        groupshift(X, y, np.zeros(5), 2, 3, 0.1)
    with pytest.raises(ValueError, match="p must be a number > 1"):
        solve_group_l1(X, y, 2, 0.1, p=1)
    with pytest.raises(ValueError, match="Only binary"):
        GroupL1Classifier(2).fit(X, np.arange(20) % 3)
    with pytest.raises(ValueError, match="0/1"):
        solve_group_l1(X, y, 2, 0.1, loss="logistic")


def test_refit_partition_bad_input():
    X, y = _xy()
    est = GroupL1Regressor(2, alpha=0.05).fit(X, y)
    with pytest.raises(ValueError, match="method"):
        est.refit_partition(X, y, 3, method="fast")
    with pytest.raises(ValueError, match="do not cover"):
        est.refit_partition(X, y, [[0, 1], [2]])
    with pytest.raises(ValueError, match="features"):
        est.refit_partition(X[:, :5], y, 3)
    weighted = GroupL1Regressor(2, alpha=0.05, weights=[1.0, 2.0, 1.0]).fit(X, y)
    with pytest.raises(ValueError, match="pass weights="):
        weighted.refit_partition(X, y, 3)
    weighted.refit_partition(X, y, 3, weights=[1.0, 1.0])
    assert weighted.dual_gap_ <= 1e-8 * np.var(y) / 2 * 1.0001
