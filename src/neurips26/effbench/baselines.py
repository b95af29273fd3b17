"""What the paper compares mRMR against: random questions, anchor points, tinyBenchmarks IRT, Lasso.

Every selector follows one small contract: ``fit(S, y=None)`` sets ``selected_`` (ordered question
indices, ``(n,)``) and ``native_predictor()`` returns the method's own fitted estimator from coreset
answers ``(m, n)`` to full scores ``(m,)``. The "+" / "++" variants replace that estimator by
:class:`~neurips26.effbench.regress.RidgePredictor` / :class:`~neurips26.effbench.regress.KRRPredictor`
fitted on the same coreset (the paper's refit), see :class:`~neurips26.effbench.pipeline.EfficientBenchmark`.
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from neurips26.constraints import Choice, Instance, Int, Real, check_arguments

from ._validation import (
    check_columns,
    check_indices,
    check_matrix,
    check_vector,
    commit_features,
    resolve_budget,
    sk_check,
)
from .irt import IRTParams, estimate_ability, fit_irt_2pl
from .regress import MeanPredictor

_ESTIMATE = Choice("gp-irt", "p-irt", "irt")
# GPIRTPredictor's parameters (checked at fit/predict, as scikit-learn does; anchors/weights need params first)
_GPIRT_PARAMS = {"params": Instance(IRTParams, "IRTParams"), "b_error": Real(low=0), "v": Real(low=0),
                 "estimate": _ESTIMATE}


def _all_or_nothing(fit):
    """A failed ``fit`` leaves the selector as it was: its attributes are restored before re-raising
    (every attribute is rebound by ``fit``, never mutated in place, so a shallow copy suffices)."""

    @functools.wraps(fit)
    def wrapper(self, X, y=None):
        saved = dict(vars(self))
        try:
            return fit(self, X, y)
        except BaseException:
            vars(self).clear()
            vars(self).update(saved)
            raise

    return wrapper


class _Selector(BaseEstimator):
    def _start(self, X, y, *, binary: bool | None = None, min_rows: int = 2):
        checked = sk_check(X, y, name="X", min_samples=min_rows, estimator=self, binary=binary, scores01=True)
        S, target = checked if y is not None else (checked, checked.mean(1))
        n = resolve_budget(self.n_questions, S.shape[1])
        commit_features(self, X)  # the caller's fit is wrapped by _all_or_nothing
        self.n_select_ = n
        return S, target, n

    def _fitted(self) -> None:
        check_is_fitted(self, "selected_")


# ----------------------------------------------------------------------------------------------------
# Random


class RandomSelector(_Selector):
    """``n_questions`` questions drawn uniformly without replacement; native estimate = their mean."""

    def __init__(self, n_questions: int | float = 0.1, *, random_state: int | None = 0):
        self.n_questions = n_questions
        self.random_state = random_state

    @_all_or_nothing
    def fit(self, X, y=None) -> RandomSelector:
        S, _, n = self._start(X, y, min_rows=1)
        rng = np.random.default_rng(self.random_state)
        self.selected_ = np.sort(rng.choice(S.shape[1], size=n, replace=False)).astype(np.int64)
        return self

    def native_predictor(self) -> MeanPredictor:
        self._fitted()
        return MeanPredictor().fit(np.zeros((1, self.selected_.size)))


# ----------------------------------------------------------------------------------------------------
# AIPW (Zhang & Hardt): a random coreset, per-model regression across questions, a debiasing residual


class AIPWPredictor(RegressorMixin, BaseEstimator):
    r"""Augmented inverse-propensity-weighted estimate of a model's score on the questions it did not run.

    For one target model with answers ``s_j`` on the random coreset ``C`` (``n`` questions), a ridge
    regression *across questions* maps the source models' answers on a question, ``z_j = S[:, j]``
    ``(M,)``, to the target's answer on it: fitted on ``j in C``, it predicts ``g(z_j)`` for the
    ``N_r`` remaining questions ``R``. The estimate adds the mean coreset residual, shrunk by the
    prediction-powered weight ``1 / (1 + n / N_r)``:

    .. math:: \hat\mu = rac{1}{N_r}\sum_{j \in R} g(z_j) + rac{1}{1 + n/N_r}\,rac1n\sum_{j\in C}(s_j - g(z_j)).

    This is benchpred 1.0.0's ``AIPWPred`` (``Ridge(alpha=10)``, with an intercept), solved for every
    target model at once: with the coreset design ``Z = S[:, C]^T`` ``(n, M)`` centred over questions,
    ``W = (Z_c^T Z_c + lpha I)^{-1} Z_c^T (Y - ar Y)`` holds one coefficient vector per target.
    Like benchpred, it estimates the mean over the *remaining* questions (the coreset's own answers are
    not averaged in).

    Args:
        source: ``(M, N)`` source answers in [0, 1]; coreset: ``(n,)`` question indices, ``1 <= n < N``;
        alpha: ridge penalty (benchpred: 10).
    ``fit`` only checks; ``predict(X)`` takes the ``(m, n)`` coreset answers and returns ``(m,)``.
    """

    def __init__(self, *, source: np.ndarray, coreset: np.ndarray, alpha: float = 10.0):
        self.source = source
        self.coreset = coreset
        self.alpha = alpha

    def _checked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        S = check_matrix(self.source, name="source", binary=False, min_rows=1)
        core = check_indices(self.coreset, name="coreset", n=S.shape[1])
        if not 1 <= np.unique(core).size == core.size < S.shape[1]:
            raise ValueError(f"coreset must hold 1 to {S.shape[1] - 1} distinct questions, got {core.size} "
                             f"({np.unique(core).size} distinct)")
        check_arguments("AIPWPredictor", {"alpha": Real(0, closed="neither")}, {"alpha": self.alpha})
        rest = np.setdiff1d(np.arange(S.shape[1]), core)
        return S, core, rest

    def fit(self, X=None, y=None) -> AIPWPredictor:
        _, core, _ = self._checked()
        self.n_features_in_ = core.size
        return self

    def predict(self, X) -> np.ndarray:
        S, core, rest = self._checked()
        Y = check_matrix(X, name="X", binary=False, columns=(core.size, "the coreset")).T  # [n, m]: a column per model
        Z, Z_rest = S[:, core].T, S[:, rest].T  # [n, M], [N_r, M]: questions as samples
        z_bar, y_bar = Z.mean(0), Y.mean(0)  # [M], [m]
        Zc = Z - z_bar
        # W = (Zc^T Zc + alpha I)^{-1} Zc^T (Y - y_bar): [M, m]
        W = np.linalg.solve(Zc.T @ Zc + self.alpha * np.eye(Zc.shape[1]), Zc.T @ (Y - y_bar))
        fit_core = Zc @ W + y_bar  # [n, m]
        pred_rest = (Z_rest - z_bar) @ W + y_bar  # [N_r, m]
        n, n_rest = core.size, rest.size
        return pred_rest.mean(0) + (Y - fit_core).mean(0) / (1 + n / n_rest)


# ----------------------------------------------------------------------------------------------------
# Anchor points (Vivek et al., EACL 2024): k-medoids on question-question correlation distance


def _nearest_two(D: np.ndarray, med: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per object: position of its nearest medoid, that distance, the second-nearest distance."""
    Dm = D[:, med]  # [N, k]
    if med.size == 1:
        return np.zeros(D.shape[0], dtype=np.int64), Dm[:, 0].copy(), np.full(D.shape[0], np.inf)
    two = np.argpartition(Dm, 1, axis=1)[:, :2]
    d2 = np.take_along_axis(Dm, two, axis=1)
    first = np.argmin(d2, axis=1)
    rows = np.arange(D.shape[0])
    return two[rows, first], d2[rows, first], d2[rows, 1 - first]


def k_medoids(D: np.ndarray, k: int, *, max_passes: int = 20) -> tuple[np.ndarray, np.ndarray]:
    r"""PAM k-medoids: greedy BUILD, then FasterPAM-style eager SWAP passes (Schubert & Rousseeuw).

    BUILD adds the point with the largest decrease of the total distance (gains updated
    incrementally: only objects that move to the new medoid change). SWAP scans candidates ``c``;
    removing medoid ``i`` and adding ``c`` changes the total distance by

    .. math:: \Delta(c, i) = \sum_o \min(d_{oc} - d^n_o, 0)
              + \sum_{o: n(o) = i} [\min(d_{oc}, d^s_o) - d^n_o - \min(d_{oc} - d^n_o, 0)]

    (``d^n``/``d^s``: nearest / second-nearest medoid distance), all ``i`` at once in ``O(N)``; the
    best negative swap for ``c`` is applied at once. Stops after a pass without a swap. Deterministic.

    Args:
        D: ``(N, N)`` symmetric dissimilarities with zero diagonal.
        k: number of medoids, ``1 <= k <= N``.
    Returns:
        ``(medoids (k,), labels (N,))`` with ``labels[o]`` = position in ``medoids`` of o's medoid.
    """
    D = check_matrix(D, name="D")
    n = D.shape[0]
    check_columns(D, "D", (n, "a square matrix"))
    check_arguments("k_medoids", {"k": Int(low=1, high=n), "max_passes": Int(low=0)},
                    {"k": k, "max_passes": max_passes})
    k, max_passes = int(k), int(max_passes)
    # BUILD: gain_c = sum_o max(nearest_o - D_oc, 0), the decrease if c were added
    medoids = [int(np.argmin(D.sum(0)))]
    nearest = D[:, medoids[0]].copy()
    gain = np.maximum(nearest[:, None] - D, 0.0).sum(0)
    for _ in range(1, k):
        gain[medoids] = -np.inf
        c = int(np.argmax(gain))
        medoids.append(c)
        moved = D[:, c] < nearest
        new_nearest = np.minimum(nearest, D[:, c])
        rows = D[moved]
        gain -= (np.maximum(nearest[moved, None] - rows, 0.0) - np.maximum(new_nearest[moved, None] - rows, 0.0)).sum(0)
        nearest = new_nearest
    med = np.asarray(medoids, dtype=np.int64)
    if k == n:
        return med, np.argmin(D[:, med], axis=1)
    is_med = np.zeros(n, dtype=bool)
    is_med[med] = True
    label, dn, ds = _nearest_two(D, med)
    for _ in range(max_passes):
        swapped = False
        for c in range(n):
            if is_med[c]:
                continue
            d = D[:, c]
            closer = np.minimum(d - dn, 0.0)
            own = np.minimum(d, ds) - dn - closer
            delta = closer.sum() + np.bincount(label, weights=own, minlength=k)  # [k]
            i = int(np.argmin(delta))
            if delta[i] < -1e-12:
                is_med[med[i]] = False
                med[i] = c
                is_med[c] = True
                label, dn, ds = _nearest_two(D, med)
                swapped = True
        if not swapped:
            break
    return med, label


def anchor_points(S, n: int, *, random_state: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Anchor points of a score matrix ``S`` ``(M, N)``: PAM k-medoids of the questions under
    ``1 - corr(S[:, i], S[:, j])`` (correlation across models), weights = cluster size / N.

    Constant questions get correlation 0 with every other question. ``random_state`` is accepted for
    API symmetry; PAM with BUILD is deterministic. Returns ``(idx (n,), weights (n,))``.
    """
    S = check_matrix(S, name="S", min_rows=2)
    n = resolve_budget(n, S.shape[1], name="n")
    with np.errstate(divide="ignore", invalid="ignore"):
        C = np.corrcoef(S.T) if S.shape[1] > 1 else np.ones((1, 1))
    C = np.nan_to_num(np.atleast_2d(C), nan=0.0)
    np.fill_diagonal(C, 1.0)
    med, labels = k_medoids(1.0 - C, n)
    weights = np.bincount(labels, minlength=n) / S.shape[1]
    return med.astype(np.int64), weights


class AnchorPointsSelector(_Selector):
    """Anchor points (weighted): native estimate = ``sum_i w_i * answer(anchor_i)``."""

    def __init__(self, n_questions: int | float = 0.1, *, random_state: int | None = 0):
        self.n_questions = n_questions
        self.random_state = random_state

    @_all_or_nothing
    def fit(self, X, y=None) -> AnchorPointsSelector:
        S, _, n = self._start(X, y)
        self.selected_, self.weights_ = anchor_points(S, n, random_state=self.random_state)
        return self

    def native_predictor(self) -> MeanPredictor:
        self._fitted()
        return MeanPredictor(weights=self.weights_).fit(np.zeros((1, self.selected_.size)))


# ----------------------------------------------------------------------------------------------------
# tinyBenchmarks (Polo et al., ICML 2024): IRT anchors, p-IRT and gp-IRT


class GPIRTPredictor(RegressorMixin, BaseEstimator):
    """tinyBenchmarks' estimators from answers on the anchor items ``(m, n)`` -> full score ``(m,)``.

    * ``"irt"``: mean over all N items of ``P(correct | theta_hat)``.
    * ``"p-irt"``: ``lam * mean(seen answers) + (1 - lam) * mean_{unseen} P_j(theta_hat)``, ``lam = n/N``.
    * ``"gp-irt"`` (default): ``lam2 * anchor_estimate + (1 - lam2) * p-irt`` with
      ``lam2 = b^2 / (b^2 + v)``; ``anchor_estimate = sum_i w_i y_i``, ``b`` = held-out IRT error,
      ``v`` = mean row variance / (4n) (as our spec states it; inferred).
    Built by :meth:`IRTSelector.native_predictor`; ``fit`` is a no-op that only checks shapes.
    """

    def __init__(self, *, params: IRTParams, anchors: np.ndarray, weights: np.ndarray, b_error: float,
                 v: float, estimate: Literal["gp-irt", "p-irt", "irt"] = "gp-irt"):
        self.params = params
        self.anchors = anchors
        self.weights = weights
        self.b_error = b_error
        self.v = v
        self.estimate = estimate

    def _check_params(self) -> tuple[np.ndarray, np.ndarray]:
        check_arguments("GPIRTPredictor", _GPIRT_PARAMS, vars(self))
        anchors = check_indices(self.anchors, name="anchors", n=self.params.b.shape[0])
        if anchors.size == 0:
            raise ValueError("anchors must hold at least one item, got none")
        weights = check_vector(self.weights, name="weights", length=anchors.size)
        return anchors, weights

    def fit(self, X=None, y=None) -> GPIRTPredictor:
        anchors, _ = self._check_params()
        self.n_features_in_ = anchors.size
        return self

    def predict(self, X) -> np.ndarray:
        self._check_params()
        Y = check_matrix(X, name="X", binary=False, columns=(len(self.anchors), "the anchors"))
        theta = estimate_ability(Y, self.anchors, self.params)
        P = self.params.proba(theta)  # [m, N]
        n_all = P.shape[1]
        if self.estimate == "irt":
            return P.mean(1)
        unseen = np.ones(n_all, dtype=bool)
        unseen[self.anchors] = False
        lam = len(self.anchors) / n_all
        p_irt = lam * Y.mean(1) + (1 - lam) * (P[:, unseen].mean(1) if unseen.any() else 0.0)
        if self.estimate == "p-irt":
            return p_irt
        b2 = self.b_error**2
        lam2 = b2 / (b2 + self.v) if b2 + self.v > 0 else 0.0
        return lam2 * (Y @ self.weights) + (1 - lam2) * p_irt


class IRTSelector(_Selector):
    """tinyBenchmarks anchors: fit a 2PL, KMeans on item parameters ``[a_j, b_j]``, take the item
    nearest each centroid (weight = cluster share). Native predictor: :class:`GPIRTPredictor`.

    Args:
        dims, optimizer, steps: passed to :func:`~neurips26.effbench.irt.fit_irt_2pl` (lean default:
            1-D L-BFGS; reference-style: ``dims=10, optimizer="adam", steps=2000``).
        estimate: the native estimator, ``"gp-irt"`` | ``"p-irt"`` | ``"irt"``.
    """

    def __init__(self, n_questions: int | float = 0.1, *, dims: int = 1,
                 optimizer: Literal["lbfgs", "adam"] = "lbfgs", steps: int | None = None,
                 estimate: Literal["gp-irt", "p-irt", "irt"] = "gp-irt", random_state: int | None = 0):
        self.n_questions = n_questions
        self.dims = dims
        self.optimizer = optimizer
        self.steps = steps
        self.estimate = estimate
        self.random_state = random_state

    def _fit_irt(self, S: np.ndarray) -> IRTParams:
        return fit_irt_2pl(S, self.dims, optimizer=self.optimizer, steps=self.steps,
                           random_state=0 if self.random_state is None else int(self.random_state))

    @_all_or_nothing
    def fit(self, X, y=None) -> IRTSelector:
        from sklearn.cluster import KMeans

        check_arguments("IRTSelector", {"estimate": _ESTIMATE}, {"estimate": self.estimate})
        S, _, n = self._start(X, y, binary=True)
        self.irt_ = self._fit_irt(S)
        emb = np.column_stack([self.irt_.a, self.irt_.b])  # [N, D + 1]
        km = KMeans(n_clusters=n, n_init=1, random_state=self.random_state).fit(emb)
        dist = ((emb[:, None, :] - km.cluster_centers_[None]) ** 2).sum(-1)  # [N, n]
        anchors: list[int] = []
        taken = np.zeros(S.shape[1], dtype=bool)
        for c in range(n):  # nearest unused item to each centroid
            order = np.argsort(dist[:, c], kind="stable")
            pick = int(order[~taken[order]][0])
            anchors.append(pick)
            taken[pick] = True
        self.selected_ = np.asarray(anchors, dtype=np.int64)
        self.weights_ = np.bincount(km.labels_, minlength=n) / S.shape[1]
        self._S = S
        return self

    def native_predictor(self) -> GPIRTPredictor:
        """Builds gp-IRT; estimates ``b`` on held-out source models (every 5th): item parameters from
        the other source models, ``theta`` from the even items, error of the predicted mean on the odd
        items (root mean square). Inferred details; see the README."""
        self._fitted()
        S = self._S
        m, n_all = S.shape
        held = np.arange(4, m, 5)
        rest = np.setdiff1d(np.arange(m), held)
        b_error = 0.0
        if held.size and rest.size >= 2:
            params = self._fit_irt(S[rest])
            even, odd = np.arange(0, n_all, 2), np.arange(1, n_all, 2)
            if odd.size:
                theta = estimate_ability(S[held][:, even], even, params)
                pred = params.proba(theta)[:, odd].mean(1)
                b_error = float(np.sqrt(np.mean((pred - S[held][:, odd].mean(1)) ** 2)))
        v = float(S.var(axis=1).mean() / (4 * self.selected_.size))
        return GPIRTPredictor(params=self.irt_, anchors=self.selected_, weights=self.weights_,
                              b_error=b_error, v=v, estimate=self.estimate).fit()


# ----------------------------------------------------------------------------------------------------
# Lasso tuned to n non-zero coefficients


class LinearPredictor(RegressorMixin, BaseEstimator):
    """``X @ coef + intercept`` with fixed coefficients (the Lasso baseline's own estimator)."""

    def __init__(self, *, coef: np.ndarray, intercept: float):
        self.coef = coef
        self.intercept = intercept

    def fit(self, X=None, y=None) -> LinearPredictor:
        coef = check_vector(self.coef, name="coef")
        check_arguments("LinearPredictor", {"intercept": Real()}, {"intercept": self.intercept})
        self.n_features_in_ = coef.size
        return self

    def predict(self, X) -> np.ndarray:
        check_vector(self.coef, name="coef")
        check_arguments("LinearPredictor", {"intercept": Real()}, {"intercept": self.intercept})
        X = check_matrix(X, name="X", columns=(len(self.coef), ""))  # any finite reals, like the coreset regressors
        return X @ np.asarray(self.coef) + self.intercept


class LassoSelector(_Selector):
    """Lasso of ``y`` on all questions, at the smallest penalty on the LARS-lasso path with at most
    ``n`` non-zero coefficients; the coreset is the non-zero set (it can be smaller than ``n``: the
    lasso has at most ``M - 1`` non-zeros with an intercept), ordered by entry into the path."""

    def __init__(self, n_questions: int | float = 0.1):
        self.n_questions = n_questions

    @_all_or_nothing
    def fit(self, X, y=None) -> LassoSelector:
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import lars_path

        S, target, n = self._start(X, y)
        x_mean, y_mean = S.mean(0), target.mean()
        Xc, yc = S - x_mean, target - y_mean
        with warnings.catch_warnings():  # LARS on 0/1 columns with few models: degenerate-set notices
            warnings.simplefilter("ignore", ConvergenceWarning)
            _, active, coefs = lars_path(Xc, yc, method="lasso", max_iter=4 * n + 10)
        nnz = (coefs != 0).sum(0)
        col = int(np.nonzero(nnz <= n)[0][-1])
        coef = coefs[:, col]
        nonzero = set(np.nonzero(coef)[0].tolist())
        order = [j for j in active if j in nonzero] + sorted(nonzero - set(active))
        if not order:  # y constant: keep the first question so the coreset is never empty
            order = [0]
        self.selected_ = np.asarray(order, dtype=np.int64)
        self.coef_ = coef[self.selected_]
        self.intercept_ = float(y_mean - x_mean[self.selected_] @ self.coef_)
        return self

    def native_predictor(self) -> LinearPredictor:
        self._fitted()
        return LinearPredictor(coef=self.coef_, intercept=self.intercept_).fit()
