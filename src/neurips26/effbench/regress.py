"""Regressors from coreset answers to the full-benchmark score, with closed-form leave-one-out alpha.

"+"  = ridge regression with intercept, alpha by LOO over ``logspace(-1, 1, 5)``.
"++" = kernel ridge with the polynomial kernel ``k(x, x') = (gamma x.x' + coef0)^degree`` (default
degree 2, ``gamma = 1/n``, ``coef0 = 1``, no intercept, as scikit-learn's ``KernelRidge``), alpha by LOO.

Both are linear smoothers ``yhat = H y``, so the leave-one-out residual needs no refit:

.. math:: e_i^{LOO} = \\frac{y_i - \\hat y_i}{1 - H_{ii}}.

With one eigendecomposition (KRR) or SVD (ridge) every alpha of the grid costs ``O(M^2)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from neurips26.constraints import Int, Optional, Real, check_arguments

from ._validation import (
    check_matrix,
    check_predict_input,
    check_target,
    commit_features,
    sk_check,
)

DEFAULT_ALPHAS = tuple(np.logspace(-1, 1, 5))


def _check_alphas(alphas) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(DEFAULT_ALPHAS if alphas is None else alphas, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"alphas must be a non-empty 1-D sequence of positive numbers, got {alphas!r}")
    return arr


def poly_kernel(A: np.ndarray, B: np.ndarray, *, degree: int, gamma: float, coef0: float) -> np.ndarray:
    """``K[i, j] = (gamma A_i . B_j + coef0)^degree``; ``A`` ``(p, n)``, ``B`` ``(q, n)`` -> ``(p, q)``."""
    A = check_matrix(A, name="A")
    B = check_matrix(B, name="B", columns=(A.shape[1], "as many as A"))
    _check_kernel_params(degree, gamma, coef0)
    return (gamma * (A @ B.T) + coef0) ** degree


_KERNEL = {"degree": Int(low=1), "gamma": Optional(Real(0, closed="neither")), "coef0": Real()}


def _check_kernel_params(degree, gamma, coef0, where: str = "") -> None:
    check_arguments(where, _KERNEL, {"degree": degree, "gamma": gamma, "coef0": coef0})


@dataclass
class LOOResult:
    """Closed-form leave-one-out over an alpha grid: ``loo_mse[a]`` for each alpha, the chosen one."""

    alphas: np.ndarray
    loo_mse: np.ndarray
    alpha: float
    coef: np.ndarray
    intercept: float = 0.0


def kernel_ridge_loo(X, y, *, degree: int = 2, gamma: float | None = None, coef0: float = 1.0,
                     alphas=None) -> LOOResult:
    """Polynomial kernel ridge (no intercept) with alpha chosen by exact leave-one-out MSE.

    With ``K = U diag(lam) U^T``: ``H(alpha) = U diag(lam / (lam + alpha)) U^T`` and the dual
    coefficients are ``(K + alpha I)^{-1} y = U diag(1 / (lam + alpha)) U^T y``.

    Args:
        X: ``(M, n)`` coreset answers of the source models.
        y: ``(M,)`` full-benchmark scores (fraction in [0, 1]).
    Returns:
        :class:`LOOResult` with ``coef`` = dual coefficients ``(M,)``; ties in LOO MSE go to the
        smaller alpha (first in the grid).
    """
    X = check_matrix(X, name="X")
    y = check_target(y, X.shape[0])
    grid = _check_alphas(alphas)
    _check_kernel_params(degree, gamma, coef0)
    g = 1.0 / X.shape[1] if gamma is None else float(gamma)
    K = poly_kernel(X, X, degree=degree, gamma=g, coef0=coef0)  # [M, M]
    lam, U = np.linalg.eigh(K)
    Uty = U.T @ y  # [M]
    loo = np.empty(grid.size)
    for a, alpha in enumerate(grid):
        shrink = lam / (lam + alpha)  # [M]
        y_hat = U @ (shrink * Uty)
        h = (U * U) @ shrink  # H_ii
        with np.errstate(divide="ignore", invalid="ignore"):  # only a 1-model fold hits h = 1
            loo[a] = np.mean(((y - y_hat) / (1.0 - h)) ** 2)
    best = int(np.argmin(np.nan_to_num(loo, nan=np.inf)))
    dual = U @ (Uty / (lam + grid[best]))
    return LOOResult(grid, loo, float(grid[best]), dual)


def ridge_loo(X, y, *, alphas=None) -> LOOResult:
    """Ridge with unpenalised intercept, alpha by exact LOO MSE.

    Centre ``X_c = X - mean``, ``y_c = y - mean``, ``X_c = U diag(s) V^T``;
    ``H = 11^T / M + U diag(s^2 / (s^2 + alpha)) U^T``, ``w = V diag(s / (s^2 + alpha)) U^T y_c``.
    """
    X = check_matrix(X, name="X")
    y = check_target(y, X.shape[0])
    grid = _check_alphas(alphas)
    m = X.shape[0]
    x_mean, y_mean = X.mean(0), y.mean()
    U, s, Vt = np.linalg.svd(X - x_mean, full_matrices=False)
    Uty = U.T @ (y - y_mean)
    loo = np.empty(grid.size)
    for a, alpha in enumerate(grid):
        shrink = s**2 / (s**2 + alpha)
        y_hat = y_mean + U @ (shrink * Uty)
        h = 1.0 / m + (U * U) @ shrink
        with np.errstate(divide="ignore", invalid="ignore"):
            loo[a] = np.mean(((y - y_hat) / (1.0 - h)) ** 2)
    best = int(np.argmin(np.nan_to_num(loo, nan=np.inf)))
    w = Vt.T @ (s / (s**2 + grid[best]) * Uty)
    return LOOResult(grid, loo, float(grid[best]), w, float(y_mean - x_mean @ w))


def check_folds(cv, n_models: int) -> int | None:
    """``cv``: ``None`` (closed-form leave-one-out) or an int ``2 <= k <= n_models``."""
    # at most one fold per source model
    check_arguments("", {"cv": Optional(Int(low=2, high=n_models))}, {"cv": cv})
    return None if cv is None else int(cv)


def _fold_ids(n_models: int, folds: int) -> np.ndarray:
    """Fold of each model: a fixed permutation (seed 0) dealt round robin."""
    perm = np.random.default_rng(0).permutation(n_models)
    ids = np.empty(n_models, dtype=np.int64)
    ids[perm] = np.arange(n_models) % folds
    return ids


def kfold_alpha(X, y, *, kind: str, folds: int, alphas=None, degree: int = 2, gamma: float | None = None,
                coef0: float = 1.0) -> tuple[float, np.ndarray]:
    """Alpha by ``folds``-fold CV MSE (direct solves per fold) for ``kind`` ``"krr"`` or ``"ridge"``.
    Returns ``(alpha, cv_mse per alpha)``."""
    X = check_matrix(X, name="X")
    y = check_target(y, X.shape[0])
    grid = _check_alphas(alphas)
    ids = _fold_ids(X.shape[0], folds)
    sq = np.zeros(grid.size)
    for f in range(folds):
        tr, te = ids != f, ids == f
        for a, alpha in enumerate(grid):
            if kind == "krr":
                res_dual = kernel_ridge_loo(X[tr], y[tr], degree=degree, gamma=gamma, coef0=coef0, alphas=[alpha])
                g = 1.0 / X.shape[1] if gamma is None else gamma
                pred = poly_kernel(X[te], X[tr], degree=degree, gamma=g, coef0=coef0) @ res_dual.coef
            else:
                res = ridge_loo(X[tr], y[tr], alphas=[alpha])
                pred = X[te] @ res.coef + res.intercept
            sq[a] += np.sum((y[te] - pred) ** 2)
    mse = sq / X.shape[0]
    return float(grid[int(np.argmin(mse))]), mse


class _CoresetRegressor(RegressorMixin, BaseEstimator):
    """The shared scikit-learn contract: ``validate_data`` / ``check_is_fitted``, finite input, ``y`` 1-D."""

    _min_samples = 2

    def _check_fit_input(self, X, y):
        return sk_check(X, y, name="X", min_samples=self._min_samples, y_required=True, estimator=self)

    def _check_predict_input(self, X) -> np.ndarray:
        return check_predict_input(self, X)

    @classmethod
    def sklearn_expected_failed_checks(cls) -> dict[str, str]:
        """Checks of ``check_estimator`` this estimator is known to fail, with the reason (none)."""
        return {}


class KRRPredictor(_CoresetRegressor):
    """Degree-``degree`` polynomial kernel ridge with LOO-selected alpha (the paper's "++").

    Alpha is chosen by the closed-form leave-one-out of :func:`kernel_ridge_loo` (scikit-learn has no
    LOO for kernel ridge), then the model is scikit-learn's ``KernelRidge(kernel="poly")`` at that alpha:
    the same computation, so ``model_`` is a plain ``KernelRidge`` a user can inspect.

    Args:
        degree: polynomial degree (paper: 2; 3 and 4 are ablations).
        alphas: alpha grid, default ``logspace(-1, 1, 5)``.
        gamma: kernel scale, default ``1 / n_features`` (so ``k = (x.x'/n + 1)^2`` on 0/1 answers).
        coef0: kernel offset.
        cv: ``None`` = exact closed-form leave-one-out (default); an int = that many CV folds.

    Fitted: ``alpha_``, ``loo_mse_`` (per alpha), ``dual_coef_`` ``(M,)``, ``X_fit_`` ``(M, n)``,
    ``gamma_``, ``model_`` (the fitted ``KernelRidge``), ``n_features_in_``.
    """

    def __init__(self, *, degree: int = 2, alphas=None, gamma: float | None = None, coef0: float = 1.0,
                 cv: int | None = None):
        self.degree = degree
        self.alphas = alphas
        self.gamma = gamma
        self.coef0 = coef0
        self.cv = cv

    def fit(self, X, y) -> KRRPredictor:
        """``X``: ``(M, n)`` coreset answers of the source models; ``y``: ``(M,)`` full scores."""
        from sklearn.kernel_ridge import KernelRidge

        _check_kernel_params(self.degree, self.gamma, self.coef0, "KRRPredictor")
        arr, target = self._check_fit_input(X, y)
        _check_alphas(self.alphas)
        folds = check_folds(self.cv, arr.shape[0])
        alphas, cv_mse = self.alphas, None
        if folds is not None:
            best, cv_mse = kfold_alpha(arr, target, kind="krr", folds=folds, alphas=alphas, degree=self.degree,
                                       gamma=self.gamma, coef0=self.coef0)
            alphas = [best]
        res = kernel_ridge_loo(arr, target, degree=self.degree, gamma=self.gamma, coef0=self.coef0, alphas=alphas)
        gamma = 1.0 / arr.shape[1] if self.gamma is None else float(self.gamma)
        model = KernelRidge(alpha=res.alpha, kernel="poly", degree=int(self.degree), gamma=gamma,
                            coef0=float(self.coef0)).fit(arr, target)
        # -- commit (every check passed) --
        commit_features(self, X)
        if cv_mse is not None:
            self.cv_mse_ = cv_mse
        self.alpha_, self.loo_mse_, self.gamma_, self.model_ = res.alpha, res.loo_mse, gamma, model
        self.dual_coef_, self.X_fit_ = model.dual_coef_, model.X_fit_
        return self

    def predict(self, X) -> np.ndarray:
        """``X``: ``(m, n)`` coreset answers -> ``(m,)`` predicted scores (not clipped):
        ``K(X, X_fit) @ dual_coef``."""
        arr = self._check_predict_input(X)
        return np.asarray(self.model_.predict(arr), dtype=np.float64)


class RidgePredictor(_CoresetRegressor):
    """Linear ridge with intercept and LOO-selected alpha (the paper's "+"): scikit-learn's ``RidgeCV``.

    ``RidgeCV(cv=None)`` is the same efficient leave-one-out as :func:`ridge_loo` (same alpha chosen,
    coefficients equal to ~1e-15), so the model is ``RidgeCV`` itself.
    ``cv``: ``None`` = closed-form leave-one-out; an int = that many CV folds (alpha by
    :func:`kfold_alpha`'s fixed folds, then ``RidgeCV`` at that alpha).
    Fitted: ``alpha_``, ``loo_mse_``, ``coef_`` ``(n,)``, ``intercept_``, ``model_``, ``n_features_in_``.
    """

    def __init__(self, *, alphas=None, cv: int | None = None):
        self.alphas = alphas
        self.cv = cv

    def fit(self, X, y) -> RidgePredictor:
        """``X``: ``(M, n)`` coreset answers of the source models; ``y``: ``(M,)`` full scores."""
        from sklearn.linear_model import RidgeCV

        arr, target = self._check_fit_input(X, y)
        grid = _check_alphas(self.alphas)
        folds = check_folds(self.cv, arr.shape[0])
        cv_mse = None
        if folds is not None:
            best, cv_mse = kfold_alpha(arr, target, kind="ridge", folds=folds, alphas=grid)
            grid = np.asarray([best])
        model = RidgeCV(alphas=grid, fit_intercept=True, store_cv_results=True).fit(arr, target)
        # -- commit --
        commit_features(self, X)
        if cv_mse is not None:
            self.cv_mse_ = cv_mse
        self.model_ = model
        self.alpha_ = float(model.alpha_)
        # cv_results_[i, a]: squared LOO error of model i at alpha a
        self.loo_mse_ = model.cv_results_.mean(0)
        self.coef_, self.intercept_ = model.coef_, float(model.intercept_)
        return self

    def predict(self, X) -> np.ndarray:
        """``X``: ``(m, n)`` -> ``(m,)``: ``X @ coef_ + intercept_``."""
        arr = self._check_predict_input(X)
        return arr @ self.coef_ + self.intercept_


class MeanPredictor(_CoresetRegressor):
    """The coreset's (weighted) mean answer as the full score; nothing is learned from ``y``.

    Args:
        weights: ``(n,)`` non-negative weights summing to 1 (anchor points' cluster shares), or
            ``None`` for the plain mean.
    """

    _min_samples = 1

    def __init__(self, *, weights=None):
        self.weights = weights

    def fit(self, X, y=None) -> MeanPredictor:
        """``X``: ``(M, n)`` (only its width is read); ``y`` ignored."""
        arr = sk_check(X, name="X", min_samples=1, estimator=self)
        if y is not None:
            sk_check(X, y, name="X", min_samples=1, estimator=self)
        n = arr.shape[1]
        if self.weights is None:
            weights = np.full(n, 1.0 / n)
        else:
            w = np.asarray(self.weights, dtype=np.float64)
            if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
                raise ValueError(f"weights must be {n} finite non-negative numbers summing to 1, got shape "
                                 f"{w.shape}, sum {w.sum() if w.size else 0}")
            weights = w
        commit_features(self, X)
        self.weights_ = weights
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        return tags

    @classmethod
    def sklearn_expected_failed_checks(cls) -> dict[str, str]:
        """``check_regressors_train`` wants R^2 > 0.5 on a random regression; the coreset mean learns nothing
        from ``y`` by design (it is the baseline the regressors are compared with)."""
        return {"check_regressors_train": "the coreset mean learns nothing from y by design (the baseline)"}

    def predict(self, X) -> np.ndarray:
        """``X``: ``(m, n)`` -> ``(m,)``: ``X @ weights_``."""
        arr = self._check_predict_input(X)
        return arr @ self.weights_
