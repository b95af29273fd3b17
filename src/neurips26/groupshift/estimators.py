"""scikit-learn estimators for the group ℓ_{p,1} penalty, with a duality-gap certificate and partition refits.

``GroupL1Regressor`` minimises ``‖y - Xw - b‖²/(2n) + α Σ_g ω_g ‖w_g‖_p``; ``GroupL1Classifier`` (binary)
minimises the mean logistic loss plus the same penalty. Both expose ``dual_gap_`` (an upper bound on
``P(coef_) - P*``, same units as the objective) and ``refit_partition`` to move to a new partition.
"""

from __future__ import annotations

import copy
import hashlib
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from neurips26.constraints import Bool, Choice, Int, check_arguments

from .partition import GroupPartition, as_partition
from .shift import groupshift
from .solver import ALPHA, P_EXP, TOL, Problem, as_p, resolve_weights, weights_constraint

METHODS = ("groupshift", "groupshift-endpoint", "warm", "cold")


def _fingerprint(*arrays: np.ndarray, extra: str = "") -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.float64).view(np.uint8))
    h.update(extra.encode())
    return h.hexdigest()


@dataclass
class _Design:
    """The estimator's data in the solver's space, and the map back to the user's coefficients.

    Squared loss: with normalised sample weights ``s̃ = n s / Σ s``, weighted means ``x̄``, ``ȳ`` (with an
    intercept) and column scales ``σ`` (with ``standardize``),

        Σ_i s̃_i (y_i - x_iᵀβ - b)² / (2n) = ‖ỹ - X̃ w‖² / (2n),   X̃ = √s̃ (X - x̄)/σ,  ỹ = √s̃ (y - ȳ),  β = w/σ,

    at the optimal ``b = ȳ - x̄ᵀβ``: the same problem, solved exactly, without intercept. Unpenalised groups
    ``U`` (weight 0) are profiled out the same way: with ``Π`` the projection onto the columns of ``X̃_U``,
    ``min_{w_U}`` leaves ``‖(I - Π)(ỹ - X̃_R w_R)‖²``, so the group problem is solved on ``(I - Π)X̃_R`` and
    ``w_U = X̃_U⁺ (ỹ - X̃_R w_R)`` afterwards. Logistic loss: ``X`` is scaled by ``σ`` and centred; the
    intercept stays in the solver (Newton on ``b``).
    """

    Xs: np.ndarray  # [n, d_R] solver columns (penalised groups only)
    ys: np.ndarray  # [n]
    scale: np.ndarray  # [d] σ
    x_mean: np.ndarray  # [d]
    y_mean: float
    pen_cols: np.ndarray  # [d_R] the penalised columns, in order
    unpen_cols: np.ndarray  # [d_U]
    XU: np.ndarray | None  # [n, d_U] X̃_U (before projection)
    XR_raw: np.ndarray | None  # [n, d_R] X̃_R before projection (to recover w_U)
    ys_raw: np.ndarray  # [n] ỹ before projection
    solver_intercept: bool  # the solver fits b (logistic with intercept)
    fingerprint: str

    def coef_from(self, w_R: np.ndarray) -> np.ndarray:
        """User coefficients ``β [d]`` from the solver's ``w_R``."""
        w = np.zeros(self.scale.size)
        w[self.pen_cols] = w_R
        if self.unpen_cols.size:
            resid = self.ys_raw - self.XR_raw @ w_R
            w[self.unpen_cols] = np.linalg.lstsq(self.XU, resid, rcond=None)[0]
        return w / self.scale

    def solver_coef(self, beta: np.ndarray) -> np.ndarray:
        """The solver's ``w_R`` for user coefficients ``β``."""
        return (beta * self.scale)[self.pen_cols]


def _split_weights(weights: Any, part: GroupPartition, p: float, name: str = "weights"):
    """``(penalised group indices, their weights, unpenalised group indices)``; weight 0 = unpenalised."""
    if isinstance(weights, str):
        return np.arange(part.n_groups), resolve_weights(weights, part, p, name), np.zeros(0, dtype=int)
    check_arguments("groupshift", {name: weights_constraint(part)}, {name: weights})
    arr = np.asarray(weights, dtype=float)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be finite, each > 0 or exactly 0 (an unpenalised group), got "
                         f"min {arr.min()}")
    pen = np.flatnonzero(arr > 0)
    if pen.size == 0:
        raise ValueError(f"{name}: every group is unpenalised (all weights 0); use LinearRegression")
    return pen, arr[pen], np.flatnonzero(arr == 0)


def _sub_partition(part: GroupPartition, groups: np.ndarray, cols: np.ndarray) -> GroupPartition:
    """The groups ``groups`` of ``part`` re-indexed onto the columns ``cols`` (which hold exactly them)."""
    local = np.full(part.n_features, -1, dtype=np.int64)
    local[cols] = np.arange(cols.size)
    return GroupPartition([local[part.groups[k]] for k in groups], cols.size)


class _GroupL1Base(BaseEstimator):
    _loss: str = "squared"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # the estimator's parameters, declared once (neurips26.constraints); the weights are checked against the
    # partition (their count depends on it)
    _option_constraints = {"p": P_EXP, "alpha": ALPHA, "tol": TOL, "max_epochs": Int(low=1), "fit_intercept": Bool(),
                           "warm_start": Bool(), "standardize": Bool(), "repartition": Choice(*METHODS)}

    def _validated_params(self) -> tuple[float, float, float, int]:
        check_arguments(type(self).__name__, self._option_constraints,
                        {name: getattr(self, name) for name in self._option_constraints})
        return as_p(self.p), float(self.alpha), float(self.tol), int(self.max_epochs)

    # -- data ------------------------------------------------------------------------------------------
    def _design(self, X: np.ndarray, y: np.ndarray, sample_weight: Any, part: GroupPartition,
                unpen_groups: np.ndarray) -> _Design:
        n, d = X.shape
        logistic = self._loss == "logistic"
        if sample_weight is not None:
            if logistic:
                raise ValueError("sample_weight is supported by GroupL1Regressor only (the logistic duality gap "
                                 "with sample weights is not implemented); got sample_weight for "
                                 "GroupL1Classifier")
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            if not np.all(np.isfinite(sw)) or sw.sum() <= 0:
                raise ValueError("sample_weight must be finite, >= 0 and not all 0")
            sw = sw * (n / sw.sum())
        else:
            sw = np.ones(n)
        fit_b = bool(self.fit_intercept)
        x_mean = (sw @ X) / n if fit_b else np.zeros(d)
        y_mean = float(sw @ y) / n if (fit_b and not logistic) else 0.0
        Xc = X - x_mean
        if self.standardize:
            scale = np.sqrt((sw @ (Xc * Xc)) / n)
            scale[~(scale > 1e-12 * max(1.0, float(np.abs(X).max(initial=0.0))))] = 1.0  # constant columns
        else:
            scale = np.ones(d)
        root = np.sqrt(sw)
        Xt = Xc / scale if logistic else root[:, None] * Xc / scale
        yt = y.astype(float) if logistic else root * (y - y_mean)
        unpen_cols = (np.sort(np.concatenate([part.groups[k] for k in unpen_groups])) if unpen_groups.size
                      else np.zeros(0, dtype=np.int64))
        if unpen_cols.size and logistic:
            raise ValueError("unpenalised groups (weight 0) are supported by GroupL1Regressor only")
        pen_cols = np.setdiff1d(np.arange(d), unpen_cols)
        XR, XU = Xt[:, pen_cols], None
        Xs, ys = XR, yt
        if unpen_cols.size:
            XU = Xt[:, unpen_cols]
            U, sv, _ = np.linalg.svd(XU, full_matrices=False)
            Q = U[:, sv > 1e-10 * sv.max()] if sv.size and sv.max() > 0 else U[:, :0]
            Xs = XR - Q @ (Q.T @ XR)  # (I - Π) X̃_R
            ys = yt - Q @ (Q.T @ yt)
        fp = _fingerprint(Xs, ys, extra=repr((self._loss, fit_b)))
        return _Design(Xs=np.ascontiguousarray(Xs), ys=ys, scale=scale, x_mean=x_mean, y_mean=y_mean,
                       pen_cols=pen_cols, unpen_cols=unpen_cols, XU=XU, XR_raw=XR if unpen_cols.size else None,
                       ys_raw=yt, solver_intercept=logistic and fit_b, fingerprint=fp)

    def _lip_cache_for(self, design: _Design) -> dict:
        if getattr(self, "_lip_fp", None) != design.fingerprint:
            self._lip_fp, self._lip_cache = design.fingerprint, {}
        return self._lip_cache

    # -- fitting ---------------------------------------------------------------------------------------
    def _fit_arrays(self, X: np.ndarray, y01: np.ndarray, sample_weight: Any) -> None:
        """``fit``: a cold solve, a warm start, or (``warm_start`` and ``groups`` changed) a re-partition."""
        p, alpha, tol, max_epochs = self._validated_params()
        part = as_partition(self.groups, X.shape[1])
        previous = getattr(self, "groups_", None)
        if (self.warm_start and previous is not None and np.shape(getattr(self, "coef_", None)) == (X.shape[1],)
                and previous != part):
            # re-partition through the parameter path: set_params(groups=G') then fit (Pipeline, clone-safe)
            self._transition(X, y01, sample_weight, part, self.weights, self.repartition)
            return
        pen, wts, unpen = _split_weights(self.weights, part, p)
        design = self._design(X, y01, sample_weight, part, unpen)
        sub = _sub_partition(part, pen, design.pen_cols)
        w0, b0 = None, 0.0
        if self.warm_start and hasattr(self, "coef_") and np.shape(self.coef_) == (X.shape[1],):
            w0 = design.solver_coef(self.coef_)
            b0 = self._b_solver if design.solver_intercept else 0.0
        prob = Problem(design.Xs, design.ys, sub, wts, alpha, p, self._loss, fit_intercept=design.solver_intercept,
                       lipschitz_cache=self._lip_cache_for(design))
        res = prob.solve(w0, b0, tol=tol, max_epochs=max_epochs)
        self._store(res.coef, res.intercept, res, design, part, sub, wts, (alpha, p))
        self.transition_log_ = []

    def _store(self, w_R, b_solver, res, design: _Design, part, sub, wts, key) -> None:
        self.coef_ = design.coef_from(w_R)
        self.intercept_ = (float(b_solver) - float(design.x_mean @ self.coef_) if design.solver_intercept
                           else (design.y_mean - float(design.x_mean @ self.coef_) if self.fit_intercept else 0.0))
        self._b_solver = float(b_solver)
        get = (lambda k: res[k]) if isinstance(res, dict) else (lambda k: getattr(res, k))
        self.dual_gap_ = float(get("dual_gap"))
        self.objective_ = float(get("primal"))
        self.n_epochs_ = int(get("n_epochs"))
        self.n_iter_ = int(get("n_outer"))
        self.n_flops_ = float(get("n_flops"))
        self.converged_ = bool(get("converged"))
        self.groups_ = part
        self.weights_ = np.asarray(self.weights, float) if not isinstance(self.weights, str) else \
            resolve_weights("auto", part, as_p(self.p))
        self._sub, self._sub_weights, self._pen_cols = sub, wts, design.pen_cols
        self._dual_scale = float(get("dual_scale"))
        self._group_scores = res["group_scores"] if isinstance(res, dict) else res.extra.get("scores")
        self._data_fp = design.fingerprint + repr(key)
        if not self.converged_ and not self.standardize:
            spread = design.Xs.std(axis=0)
            spread = spread[spread > 0]
            if spread.size and spread.max() > 1e3 * spread.min():
                warnings.warn(f"the solver stalled (gap {self.dual_gap_:.3g}) and the column scales of X differ "
                              f"by {spread.max() / spread.min():.3g}x: pass standardize=True (or scale X, e.g. "
                              "StandardScaler) so block coordinate descent is well conditioned",
                              ConvergenceWarning, stacklevel=4)

    def _transition(self, X: np.ndarray, y01: np.ndarray, sample_weight: Any, new_part: GroupPartition,
                    weights: Any, method: str) -> list[dict]:
        """Move the fitted model from ``groups_`` to ``new_part`` (same data, α, p) by ``method``."""
        check_arguments(f"{type(self).__name__}.refit_partition", {"method": Choice(*METHODS)}, {"method": method})
        p, alpha, tol, max_epochs = self._validated_params()
        pen, new_wts, unpen = _split_weights(weights, new_part, p)
        old_pen_cols = self._pen_cols
        design = self._design(X, y01, sample_weight, new_part, unpen)
        if not np.array_equal(design.pen_cols, old_pen_cols):
            raise ValueError("the unpenalised features (groups with weight 0) must be the same before and after a "
                             "re-partition; refit from scratch (warm_start=False) to change them")
        sub = _sub_partition(new_part, pen, design.pen_cols)
        cache = self._lip_cache_for(design)
        same = getattr(self, "_data_fp", None) == design.fingerprint + repr((alpha, p))
        w_old = design.solver_coef(self.coef_)
        log: list[dict] = []
        if method.startswith("groupshift"):
            w, info = groupshift(design.Xs, design.ys, w_old, self._sub, sub, alpha, p, weights=new_wts,
                                 old_weights=self._sub_weights, loss=self._loss,
                                 fit_intercept=design.solver_intercept, intercept_old=self._b_solver,
                                 old_dual_scale=self._dual_scale if same else None,
                                 old_group_scores=self._group_scores if same else None, tol=tol,
                                 max_epochs=max_epochs, lipschitz_cache=cache,
                                 strategy="endpoint" if method == "groupshift-endpoint" else "path")
            self._store(w, info["intercept"], info, design, new_part, sub, new_wts, (alpha, p))
            log = info["log"]
        else:
            w0 = w_old if method == "warm" else None
            b0 = self._b_solver if (method == "warm" and design.solver_intercept) else 0.0
            # "cold" is a retrain from scratch: it does not reuse the Lipschitz constants of the old fit.
            prob = Problem(design.Xs, design.ys, sub, new_wts, alpha, p, self._loss,
                           fit_intercept=design.solver_intercept, lipschitz_cache=cache if method == "warm" else {})
            res = prob.solve(w0, b0, tol=tol, max_epochs=max_epochs)
            self._store(res.coef, res.intercept, res, design, new_part, sub, new_wts, (alpha, p))
        self.weights_ = (np.asarray(weights, float) if not isinstance(weights, str)
                         else resolve_weights("auto", new_part, p))
        self.transition_log_ = log
        return log

    def _refit_weights(self, weights: Any) -> Any:
        if weights is None:
            if not (isinstance(self.weights, str) and self.weights == "auto"):
                raise ValueError("this estimator has explicit group weights: pass weights= (one per group of "
                                 "new_groups) to refit_partition")
            return "auto"
        return weights


def _dense(X: Any) -> np.ndarray:
    """Sparse input is accepted and densified (the BCD solver and the certificates are dense)."""
    return X.toarray() if sp.issparse(X) else X


@contextmanager
def _unchanged_on_error(estimator: BaseEstimator) -> Iterator[None]:
    """A failed ``fit``/``refit_partition`` leaves the estimator exactly as it was.

    scikit-learn's ``validate_data`` sets ``n_features_in_`` before our own checks (group count vs
    columns) can fail, and a solve can fail midway: the learned state is restored from a deep copy.
    """
    saved = copy.deepcopy(estimator.__dict__)
    try:
        yield
    except BaseException:
        estimator.__dict__.clear()
        estimator.__dict__.update(saved)
        raise


class GroupL1Regressor(RegressorMixin, _GroupL1Base):
    """Least squares with the group ℓ_{p,1} penalty: ``‖y - Xw - b‖²/(2n) + α Σ_g ω_g ‖w_g‖_p``.

    Args:
        groups: the partition: a :class:`GroupPartition`, an int (contiguous blocks of that size), a list of
            index lists, or one label per feature.
        alpha: penalty strength α >= 0 (units of the loss); ``α >= group_lambda_max`` gives ``coef_ = 0``.
        p: the within-group norm, ``p ∈ (1, ∞]`` (2: group lasso, ``np.inf``: ℓ_∞ groups; others: exact but slow).
        weights: ``"auto"`` (``ω_g = |g|^{1/q}``, ``q = p/(p-1)``) or one positive weight per group.
        tol: stop when the duality gap ``<= tol · P(0)`` with ``P(0) = ‖y - ȳ‖²/(2n)``.
        max_epochs: cap on BCD epochs (a ``ConvergenceWarning`` if reached).
        fit_intercept: unpenalised intercept (X and y are centred internally).
        warm_start: start ``fit`` from the previous ``coef_``; when ``groups`` was changed since (e.g.
            ``set_params(groups=G')`` on the estimator or through a Pipeline), ``fit`` moves the model from the
            fitted ``groups_`` to the new ``groups`` by ``repartition``.
        standardize: solve on columns scaled to unit (weighted) standard deviation and map ``coef_`` back, so
            the penalty acts on standardised coefficients (as glmnet's ``standardize=TRUE``); ``False``: ``X`` as
            given (a ``ConvergenceWarning`` names badly scaled columns when the solver stalls).
        repartition: how ``fit`` re-partitions under ``warm_start``: ``"groupshift"`` (primitive by primitive,
            :func:`groupshift` ``strategy="path"``), ``"groupshift-endpoint"`` (the endpoint variant),
            ``"warm"`` (the solver from the old ``coef_``) or ``"cold"`` (from zero).

    ``fit(X, y, sample_weight=None)``: ``X`` dense or scipy sparse (densified: the solver is dense),
    ``sample_weight [n]`` >= 0 (the loss becomes ``Σ_i s_i (y_i - x_iᵀw - b)² / (2 Σ_i s_i)``). Group weight 0
    marks an unpenalised group (profiled out exactly).

    Attributes:
        coef_ ``[d]``, intercept_, dual_gap_ (certificate, ``>= P(coef_) - P*``, in the solver's (scaled)
        problem), objective_, converged_, n_epochs_, n_iter_ (outer working-set iterations), n_flops_, groups_
        (the fitted :class:`GroupPartition`), weights_, transition_log_ (one dict per primitive after a
        re-partition).
    """

    _loss = "squared"

    def __init__(self, groups: Any, *, alpha: float = 1.0, p: float = 2.0, weights: Any = "auto",
                 tol: float = 1e-8, max_epochs: int = 50_000, fit_intercept: bool = True,
                 warm_start: bool = False, standardize: bool = False, repartition: str = "groupshift"):
        self.groups = groups
        self.alpha = alpha
        self.p = p
        self.weights = weights
        self.tol = tol
        self.max_epochs = max_epochs
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start
        self.standardize = standardize
        self.repartition = repartition

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> GroupL1Regressor:
        """Fit on ``X [n, d]``, ``y [n]`` (optional ``sample_weight [n]``); returns ``self``."""
        with _unchanged_on_error(self):
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, accept_sparse=("csr", "csc"))
            self._fit_arrays(_dense(X), y, sample_weight)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """``X coef_ + intercept_``, shape ``[n]``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=("csr", "csc"))
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def refit_partition(self, X: Any, y: Any, new_groups: Any,
                        method: Literal["groupshift", "groupshift-endpoint", "warm", "cold"] = "groupshift", *,
                        weights: Any = None, sample_weight: Any = None, return_log: bool = False):
        """Move the fitted model to ``new_groups`` (same ``alpha``, ``p``, data ``X``, ``y``).

        ``method="groupshift"`` applies the split/merge primitives one by one (closed-form certificate, else the
        primitive's homotopy or a local solve) and ends with the global certificate; ``"groupshift-endpoint"``
        the endpoint variant; ``"warm"`` re-solves from ``coef_``; ``"cold"`` from zero. Updates ``groups_``,
        ``coef_``, ``dual_gap_``, ... and ``transition_log_``; the constructor parameter ``groups`` is left as it
        is (the parameter path is ``set_params(groups=new_groups)`` + ``fit`` with ``warm_start=True``).
        Returns ``self`` (and the log if ``return_log``).
        """
        check_is_fitted(self)
        with _unchanged_on_error(self):
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, reset=False,
                                 accept_sparse=("csr", "csc"))
            new_part = as_partition(new_groups, X.shape[1], "new_groups")
            log = self._transition(_dense(X), y, sample_weight, new_part, self._refit_weights(weights), method)
        return (self, log) if return_log else self


class GroupL1Classifier(ClassifierMixin, _GroupL1Base):
    """Binary logistic regression with the group ℓ_{p,1} penalty.

    Objective: ``(1/n) Σ_i log(1 + exp(z_i)) - t_i z_i + α Σ_g ω_g ‖w_g‖_p``, ``z = Xw + b``,
    ``t_i = 1`` for ``classes_[1]``. Parameters as :class:`GroupL1Regressor`; the default ``alpha`` is 0.01
    because the logistic loss's ``λ_max`` is at most ``0.5 · max_g ‖X_g‖/(√n ω_g)``, so 1.0 zeroes every model.
    ``tol`` is relative to ``P(0)`` (the loss of the intercept-only model). Binary targets only.
    """

    _loss = "logistic"

    def __init__(self, groups: Any, *, alpha: float = 0.01, p: float = 2.0, weights: Any = "auto",
                 tol: float = 1e-8, max_epochs: int = 50_000, fit_intercept: bool = True,
                 warm_start: bool = False, standardize: bool = False, repartition: str = "groupshift"):
        self.groups = groups
        self.alpha = alpha
        self.p = p
        self.weights = weights
        self.tol = tol
        self.max_epochs = max_epochs
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start
        self.standardize = standardize
        self.repartition = repartition

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _encode(self, y: np.ndarray, reset: bool) -> np.ndarray:
        check_classification_targets(y)
        if reset:
            classes = np.unique(y)
            if classes.size > 2:
                raise ValueError(f"Only binary classification is supported. GroupL1Classifier got "
                                 f"{classes.size} classes: {classes[:5].tolist()}")
            if classes.size < 2:
                raise ValueError(f"GroupL1Classifier needs samples of 2 classes; y holds 1 class: "
                                 f"{classes.tolist()}")
            self.classes_ = classes
        elif not np.all(np.isin(y, self.classes_)):
            raise ValueError(f"y has labels outside the fitted classes {self.classes_.tolist()}")
        return (y == self.classes_[1]).astype(np.float64)

    def fit(self, X: Any, y: Any) -> GroupL1Classifier:
        """Fit on ``X [n, d]`` (dense or sparse) and binary labels ``y [n]``; returns ``self``.

        (No ``sample_weight`` yet: the weighted logistic duality gap is not implemented.)"""
        with _unchanged_on_error(self):
            X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=("csr", "csc"))
            y01 = self._encode(y, reset=True)
            self._fit_arrays(_dense(X), y01, None)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Logit of ``classes_[1]``, shape ``[n]``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=("csr", "csc"))
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``[n, 2]`` in the order of ``classes_``."""
        from scipy.special import expit

        s = expit(self.decision_function(X))
        return np.column_stack([1 - s, s])

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels ``[n]`` (``classes_[1]`` where the logit is > 0)."""
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def refit_partition(self, X: Any, y: Any, new_groups: Any,
                        method: Literal["groupshift", "groupshift-endpoint", "warm", "cold"] = "groupshift", *,
                        weights: Any = None, return_log: bool = False):
        """As :meth:`GroupL1Regressor.refit_partition`, for the logistic loss."""
        check_is_fitted(self)
        with _unchanged_on_error(self):
            X, y = validate_data(self, X, y, dtype=np.float64, reset=False, accept_sparse=("csr", "csc"))
            y01 = self._encode(y, reset=False)
            new_part = as_partition(new_groups, X.shape[1], "new_groups")
            log = self._transition(_dense(X), y01, None, new_part, self._refit_weights(weights), method)
        return (self, log) if return_log else self

