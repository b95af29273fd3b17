"""Closed-form LOO ridge / kernel ridge against direct solves and scikit-learn's LeaveOneOut loops."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.model_selection import LeaveOneOut, cross_val_predict

from neurips26.effbench import KRRPredictor, MeanPredictor, RidgePredictor, kernel_ridge_loo, ridge_loo

ALPHAS = np.logspace(-1, 1, 5)


def _data(m=25, n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.random((m, n)) < rng.random(n)).astype(float)
    y = X.mean(1) * 0.8 + 0.1 * rng.random(m)
    return X, y


def test_krr_loo_equals_sklearn_leave_one_out_and_direct_solve():
    X, y = _data()
    res = kernel_ridge_loo(X, y, alphas=ALPHAS)
    for a, alpha in enumerate(ALPHAS):
        model = KernelRidge(alpha=alpha, kernel="poly", degree=2, gamma=1 / X.shape[1], coef0=1)
        pred = cross_val_predict(model, X, y, cv=LeaveOneOut())
        assert res.loo_mse[a] == pytest.approx(np.mean((y - pred) ** 2), rel=1e-8)
    K = (X @ X.T / X.shape[1] + 1) ** 2
    np.testing.assert_allclose(res.coef, np.linalg.solve(K + res.alpha * np.eye(len(y)), y), rtol=1e-8, atol=1e-10)
    est = KRRPredictor(alphas=ALPHAS).fit(X, y)
    ref = KernelRidge(alpha=est.alpha_, kernel="poly", degree=2, gamma=1 / X.shape[1], coef0=1).fit(X, y)
    X_new, _ = _data(7, 12, seed=1)
    np.testing.assert_allclose(est.predict(X_new), ref.predict(X_new), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("degree", [1, 3])
def test_krr_other_degrees_match_sklearn(degree):
    X, y = _data(seed=2)
    est = KRRPredictor(degree=degree).fit(X, y)
    ref = KernelRidge(alpha=est.alpha_, kernel="poly", degree=degree, gamma=1 / X.shape[1], coef0=1).fit(X, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-8, atol=1e-10)


def test_ridge_loo_equals_sklearn_leave_one_out_and_ridge():
    X, y = _data(seed=3)
    res = ridge_loo(X, y, alphas=ALPHAS)
    for a, alpha in enumerate(ALPHAS):
        pred = cross_val_predict(Ridge(alpha=alpha), X, y, cv=LeaveOneOut())
        assert res.loo_mse[a] == pytest.approx(np.mean((y - pred) ** 2), rel=1e-8)
    ref = Ridge(alpha=res.alpha).fit(X, y)
    np.testing.assert_allclose(res.coef, ref.coef_, rtol=1e-8, atol=1e-12)
    assert res.intercept == pytest.approx(ref.intercept_)
    est = RidgePredictor().fit(X, y)
    np.testing.assert_allclose(est.predict(X), Ridge(alpha=est.alpha_).fit(X, y).predict(X), rtol=1e-8)


def test_kfold_with_one_model_per_fold_matches_loo_choice():
    X, y = _data(m=12, seed=4)
    assert KRRPredictor(cv=12).fit(X, y).alpha_ == KRRPredictor().fit(X, y).alpha_
    assert RidgePredictor(cv=12).fit(X, y).alpha_ == RidgePredictor().fit(X, y).alpha_
    assert KRRPredictor(cv=3).fit(X, y).alpha_ in ALPHAS


@pytest.mark.parametrize("est, match", [
    (KRRPredictor(cv=50), r"cv must be None or an int in \[2, 12\], got 50"),
    (RidgePredictor(cv=1), r"cv must be None or an int in \[2, 12\], got 1"),
    (KRRPredictor(alphas=[-1.0]), "alphas"),
    (KRRPredictor(alphas=[]), "alphas"),
    (KRRPredictor(degree=0), "degree"),
])
def test_bad_regressor_settings(est, match):
    X, y = _data(m=12)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


def test_predict_checks_columns_and_fitted_state():
    X, y = _data()
    with pytest.raises(NotFittedError):
        KRRPredictor().predict(X)
    est = KRRPredictor().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :3])
    with pytest.raises(ValueError, match="shape"):
        KRRPredictor().fit(X, y[:-1])


def test_mean_predictor_weights():
    X, _ = _data()
    np.testing.assert_allclose(MeanPredictor().fit(X).predict(X), X.mean(1))
    w = np.arange(1, 13) / np.arange(1, 13).sum()
    np.testing.assert_allclose(MeanPredictor(weights=w).fit(X).predict(X), X @ w)
    with pytest.raises(ValueError, match="summing to 1"):
        MeanPredictor(weights=np.ones(12)).fit(X)
