"""scikit-learn estimators for the group ℓ_{p,1} penalty, with a duality-gap certificate and partition refits.

``GroupL1Regressor`` minimises ``‖y - Xw - b‖²/(2n) + α Σ_g ω_g ‖w_g‖_p``; ``GroupL1Classifier`` (binary)
minimises the mean logistic loss plus the same penalty. Both expose ``dual_gap_`` (an upper bound on
``P(coef_) - P*``, same units as the objective) and ``refit_partition`` to move to a new partition.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .partition import GroupPartition, as_partition
from .shift import groupshift
from .solver import (
    Problem,
    from_centred_intercept,
    prepare,
    resolve_weights,
    to_centred_intercept,
    validate_alpha,
    validate_p,
    validate_tol,
)

METHODS = ("groupshift", "warm", "cold")


def _fingerprint(X: np.ndarray, fit_intercept: bool) -> str:
    h = hashlib.blake2b(np.ascontiguousarray(X).view(np.uint8), digest_size=16)
    h.update(bytes([fit_intercept]))
    return h.hexdigest()


class _GroupL1Base(BaseEstimator):
    _loss: str = "squared"

    def _validated_params(self) -> tuple[float, float, float, int]:
        p = validate_p(self.p)
        alpha = validate_alpha(self.alpha)
        tol = validate_tol(self.tol)
        if isinstance(self.max_epochs, bool) or not isinstance(self.max_epochs, (int, np.integer)) \
                or self.max_epochs < 1:
            raise ValueError(f"max_epochs must be an int >= 1, got {self.max_epochs!r}")
        for flag in ("fit_intercept", "warm_start"):
            if not isinstance(getattr(self, flag), bool | np.bool_):
                raise TypeError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        return p, alpha, tol, int(self.max_epochs)

    def _prepare(self, X: np.ndarray, y: np.ndarray):
        """Data in the solver's form (centred when fitting an intercept; see ``solver.prepare``)."""
        return prepare(X, y, self._loss, bool(self.fit_intercept))

    def _lip_cache_for(self, X: np.ndarray) -> dict:
        fp = _fingerprint(X, bool(self.fit_intercept))
        if getattr(self, "_lip_fp", None) != fp:
            self._lip_fp, self._lip_cache = fp, {}
        return self._lip_cache

    def _store(self, res, part: GroupPartition, wts: np.ndarray, x_mean, y_mean) -> None:
        self.coef_ = res.coef
        self.intercept_ = (from_centred_intercept(res.intercept, res.coef, x_mean, y_mean, self._loss)
                           if self.fit_intercept else 0.0)
        self.dual_gap_ = float(res.dual_gap)
        self.objective_ = float(res.primal)
        self.n_epochs_ = int(res.n_epochs)
        self.n_iter_ = int(res.n_outer)
        self.n_flops_ = float(res.n_flops)
        self.groups_ = part
        self.weights_ = wts
        self._dual_scale = float(res.dual_scale)
        self._group_scores = res.extra.get("scores")

    def _fit_arrays(self, X: np.ndarray, y01: np.ndarray) -> None:
        p, alpha, tol, max_epochs = self._validated_params()
        part = as_partition(self.groups, X.shape[1])
        wts = resolve_weights(self.weights, part, p)
        Xs, ys, x_mean, y_mean = self._prepare(X, y01)
        w0, b0 = None, 0.0
        if self.warm_start and hasattr(self, "coef_") and np.shape(self.coef_) == (X.shape[1],):
            w0 = self.coef_
            b0 = to_centred_intercept(self.intercept_, w0, x_mean, self._loss) if self.fit_intercept else 0.0
        prob = Problem(Xs, ys, part, wts, alpha, p, self._loss, fit_intercept=self.fit_intercept,
                       lipschitz_cache=self._lip_cache_for(X))
        res = prob.solve(w0, b0, tol=tol, max_epochs=max_epochs)
        self._store(res, part, wts, x_mean, y_mean)
        self._data_fp = _fingerprint(np.column_stack([X, y01]), bool(self.fit_intercept)) + repr((alpha, p))

    def _refit(self, X: np.ndarray, y01: np.ndarray, new_groups: Any, method: str, weights: Any) -> list[dict]:
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        p, alpha, tol, max_epochs = self._validated_params()
        new_part = as_partition(new_groups, X.shape[1], "new_groups")
        if weights is None:
            if not (isinstance(self.weights, str) and self.weights == "auto"):
                raise ValueError("this estimator has explicit group weights: pass weights= (one per group of "
                                 "new_groups) to refit_partition")
            weights = "auto"
        new_wts = resolve_weights(weights, new_part, p)
        cache = self._lip_cache_for(X)
        # The old per-group certificate scores are only valid for the same data and (alpha, p).
        data_fp = _fingerprint(np.column_stack([X, y01]), bool(self.fit_intercept)) + repr((alpha, p))
        same = getattr(self, "_data_fp", None) == data_fp
        log: list[dict] = []
        if method == "groupshift":
            w, info = groupshift(X, y01, self.coef_, self.groups_, new_part, alpha, p, weights=new_wts,
                                 old_weights=self.weights_, loss=self._loss, fit_intercept=self.fit_intercept,
                                 intercept_old=self.intercept_, old_dual_scale=self._dual_scale if same else None,
                                 old_group_scores=self._group_scores if same else None, tol=tol,
                                 max_epochs=max_epochs, lipschitz_cache=cache)
            self.coef_ = w
            self.intercept_ = float(info["intercept"]) if self.fit_intercept else 0.0
            self.dual_gap_, self.objective_ = float(info["dual_gap"]), float(info["primal"])
            self.n_epochs_, self.n_iter_ = int(info["n_epochs"]), int(info["n_outer"])
            self.n_flops_ = float(info["n_flops"])
            self.groups_, self.weights_, self._dual_scale = new_part, new_wts, float(info["dual_scale"])
            self._group_scores = info["group_scores"]
            log = info["log"]
        else:
            Xs, ys, x_mean, y_mean = self._prepare(X, y01)
            w0, b0 = (self.coef_, self.intercept_) if method == "warm" else (None, 0.0)
            b0 = to_centred_intercept(b0, w0, x_mean, self._loss) if (self.fit_intercept and w0 is not None) else 0.0
            # "cold" is a retrain from scratch: it does not reuse the Lipschitz constants of the old fit.
            prob = Problem(Xs, ys, new_part, new_wts, alpha, p, self._loss, fit_intercept=self.fit_intercept,
                           lipschitz_cache=cache if method == "warm" else {})
            res = prob.solve(w0, b0, tol=tol, max_epochs=max_epochs)
            self._store(res, new_part, new_wts, x_mean, y_mean)
        self._data_fp = data_fp
        self.groups = new_part
        if not (isinstance(self.weights, str) and self.weights == "auto"):
            self.weights = new_wts
        self.transition_log_ = log
        return log


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
        warm_start: start ``fit`` from the previous ``coef_``.

    Attributes:
        coef_ ``[d]``, intercept_, dual_gap_ (certificate, ``>= P(coef_) - P*``), objective_, n_epochs_,
        n_iter_ (outer working-set iterations), n_flops_, groups_ (:class:`GroupPartition`), weights_,
        transition_log_ (after :meth:`refit_partition`).
    """

    _loss = "squared"

    def __init__(self, groups: Any, *, alpha: float = 1.0, p: float = 2.0, weights: Any = "auto",
                 tol: float = 1e-8, max_epochs: int = 50_000, fit_intercept: bool = True,
                 warm_start: bool = False):
        self.groups = groups
        self.alpha = alpha
        self.p = p
        self.weights = weights
        self.tol = tol
        self.max_epochs = max_epochs
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start

    def fit(self, X: Any, y: Any) -> GroupL1Regressor:
        """Fit on ``X [n, d]``, ``y [n]``; returns ``self``."""
        with _unchanged_on_error(self):
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
            self._fit_arrays(X, y)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """``X coef_ + intercept_``, shape ``[n]``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_

    def refit_partition(self, X: Any, y: Any, new_groups: Any,
                        method: Literal["groupshift", "warm", "cold"] = "groupshift", *,
                        weights: Any = None, return_log: bool = False):
        """Move the fitted model to ``new_groups`` (same ``alpha``, ``p``, data ``X``, ``y``).

        ``method="groupshift"`` applies the split/merge primitives with local work and a global certificate;
        ``"warm"`` re-solves from ``coef_``; ``"cold"`` from zero. Updates ``groups``, ``groups_``, ``coef_``,
        ``dual_gap_``, ... and ``transition_log_`` (one dict per primitive). Returns ``self`` (and the log
        if ``return_log``).
        """
        check_is_fitted(self)
        with _unchanged_on_error(self):
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, reset=False)
            log = self._refit(X, y, new_groups, method, weights)
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
                 warm_start: bool = False):
        self.groups = groups
        self.alpha = alpha
        self.p = p
        self.weights = weights
        self.tol = tol
        self.max_epochs = max_epochs
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start

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
        """Fit on ``X [n, d]`` and binary labels ``y [n]``; returns ``self``."""
        with _unchanged_on_error(self):
            X, y = validate_data(self, X, y, dtype=np.float64)
            y01 = self._encode(y, reset=True)
            self._fit_arrays(X, y01)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Logit of ``classes_[1]``, shape ``[n]``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_

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
                        method: Literal["groupshift", "warm", "cold"] = "groupshift", *,
                        weights: Any = None, return_log: bool = False):
        """As :meth:`GroupL1Regressor.refit_partition`, for the logistic loss."""
        check_is_fitted(self)
        with _unchanged_on_error(self):
            X, y = validate_data(self, X, y, dtype=np.float64, reset=False)
            y01 = self._encode(y, reset=False)
            log = self._refit(X, y01, new_groups, method, weights)
        return (self, log) if return_log else self

