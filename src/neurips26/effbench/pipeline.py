"""Selector + regressor = an efficient benchmark: fit on source models, predict full scores of new ones.

    bench = EfficientBenchmark(MRMRSelector(0.1), KRRPredictor()).fit(S_source)
    bench.coreset_                          # ordered question indices to run on a new model
    bench.predict(S_target)                 # (m, N), same columns as fit -> (m,) full scores in [0, 1]
    bench.predict_from_coreset(answers)     # (m, n) answers on coreset_ only -> (m,)
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from neurips26.constraints import Bool, Choice, Instance, check_arguments, validate

from ._validation import check_predict_input, commit_features, sk_check
from .baselines import AnchorPointsSelector, IRTSelector, LassoSelector, RandomSelector
from .mrmr import _OUTSIDE_01_CHECKS, _OUTSIDE_01_REASON, MRMRSelector
from .regress import KRRPredictor, MeanPredictor, RidgePredictor

_OUTSIDE_01_CHECKS_BENCH: tuple[str, ...] = _OUTSIDE_01_CHECKS + (
    "check_regressor_data_not_an_array",
    "check_regressors_int",
    "check_regressors_no_decision_function",
    "check_regressors_train",
)

FEW_SOURCE_MODELS = 20

# EfficientBenchmark's hyper-parameters, checked at fit (scikit-learn style); a predictor that is not a string is
# a regressor object (duck-typed: fit/predict)
_PARAMS = {"clip": Bool()}
_PREDICTOR_NAME = {"predictor": Choice("native", "krr", "ridge", "mean")}


def _masks_missing(selector) -> bool:
    """Whether a selector declares (scikit-learn tag ``allow_nan``) that it reads NaN as a missing answer."""
    try:
        return bool(selector.__sklearn_tags__().input_tags.allow_nan)
    except AttributeError:
        return False


def _column_fill(X: np.ndarray) -> np.ndarray:
    """Per-column mean of the answered entries of ``X`` ``(M, n)``; a column nobody answered gets the mean of
    every answer (0.5 when there is none). Returns ``(n,)``."""
    seen = ~np.isnan(X)
    overall = float(np.nanmean(X)) if seen.any() else 0.5
    with np.errstate(invalid="ignore", divide="ignore"):
        col = np.nansum(X, axis=0) / seen.sum(0)
    return np.where(seen.any(0), col, overall)


def atomic_write(target: Path, write) -> None:
    """``write(binary file)`` into a temporary file beside ``target``, fsync, then ``os.replace`` it onto
    ``target``: a reader sees the old file or the complete new one, never a partial one."""
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
FORMAT_VERSION = 1
_SAVED = {"format_version": Choice(FORMAT_VERSION), "kind": Choice("krr", "ridge", "mean")}  # what load reads


@validate(name=Choice("mrmr", "random", "anchor", "irt", "lasso"))
def make_selector(name: str, n_questions: int | float = 0.1, *, mi_k: int = 3, random_state: int | None = 0):
    """``"mrmr" | "random" | "anchor" | "irt" | "lasso"`` -> an unfitted selector."""
    if name == "mrmr":
        return MRMRSelector(n_questions, mi_k=mi_k, random_state=random_state)
    if name == "random":
        return RandomSelector(n_questions, random_state=random_state)
    if name == "anchor":
        return AnchorPointsSelector(n_questions, random_state=random_state)
    if name == "irt":
        return IRTSelector(n_questions, random_state=random_state)
    return LassoSelector(n_questions)  # "lasso"


@validate(name=Choice("krr", "ridge", "mean"))
def make_predictor(name: str, *, degree: int = 2, alphas=None):
    """``"krr" | "ridge" | "mean"`` -> an unfitted regressor (``"native"`` is resolved by the pipeline)."""
    if name == "krr":
        return KRRPredictor(degree=degree, alphas=alphas)
    if name == "ridge":
        return RidgePredictor(alphas=alphas)
    return MeanPredictor()  # "mean"


class EfficientBenchmark(RegressorMixin, BaseEstimator):
    """A question selector followed by a score regressor.

    ``fit`` and ``predict`` take the same full answer matrix ``(models, N questions)``; ``predict`` reads
    only the coreset columns. ``predict_from_coreset`` takes the ``(m, n)`` coreset answers alone (what a
    new model is actually run on). ``score(X, y=None)`` is R^2 against ``y`` (default the row means, the
    full-benchmark scores), so ``cross_val_score(bench, S)`` over models works.

    Args:
        selector: any object with ``fit(S, y)`` setting ``selected_`` (e.g. :class:`MRMRSelector`).
        predictor: a regressor with ``fit(X, y)`` / ``predict(X)`` (e.g. :class:`KRRPredictor`), or
            ``"native"`` for the selector's own estimator (random mean, anchor weights, gp-IRT, Lasso).
        clip: clip predictions to [0, 1] (the official code does not clip; inferred).

    Fitted: ``coreset_`` ``(n,)`` ordered question indices, ``selector_``, ``predictor_``,
    ``n_questions_total_`` (= ``n_features_in_``), ``feature_names_in_`` (DataFrame input),
    ``question_ids_`` (given to ``fit``, else the column names, else absent), ``fit_seconds_``.
    """

    def __init__(self, selector=None, predictor: Any = "krr", *, clip: bool = True):
        self.selector = selector
        self.predictor = predictor
        self.clip = clip

    def fit(self, S_source, y=None, *, question_ids=None) -> EfficientBenchmark:
        """``S_source``: ``(M, N)`` answers in [0, 1] of source models; ``y``: ``(M,)``, default row means.

        Every input is checked before anything is set; a refit replaces every fitted attribute."""
        import time

        checked = sk_check(S_source, y, name="S_source", min_samples=2, estimator=self, scores01=True,
                           allow_nan=True)
        # y_m = the mean of model m's answered questions (NaN = no answer)
        S, target = checked if y is not None else (checked, np.nanmean(checked, axis=1))
        check_arguments("EfficientBenchmark", _PARAMS | (_PREDICTOR_NAME if isinstance(self.predictor, str) else {}),
                        vars(self))
        ids = None
        if question_ids is None and hasattr(S_source, "columns"):
            question_ids = list(S_source.columns)
        if question_ids is not None:
            if isinstance(question_ids, (str, bytes)):
                raise TypeError(f"question_ids must be a sequence of {S.shape[1]} ids, got a string")
            ids = [str(q) for q in question_ids]
            if len(ids) != S.shape[1] or len(set(ids)) != len(ids):
                raise ValueError(f"question_ids must be {S.shape[1]} unique ids, got {len(ids)} "
                                 f"({len(set(ids))} unique)")
        if S.shape[0] < FEW_SOURCE_MODELS:
            warnings.warn(f"only {S.shape[0]} source models: regressors are unreliable below "
                          f"{FEW_SOURCE_MODELS} (the paper's M = 15 results favour IRT / the plain mean)",
                          UserWarning, stacklevel=2)
        start = time.perf_counter()
        selector = MRMRSelector() if self.selector is None else clone(self.selector)
        if np.isnan(S).any() and not _masks_missing(selector):
            bad = np.argwhere(np.isnan(S))[0]
            raise ValueError(f"S_source has a missing answer (NaN) at (model {bad[0]}, question {bad[1]}); "
                             f"{type(selector).__name__} needs complete answers: impute them first, or use "
                             "MRMRSelector, which masks them")
        selector.fit(S, target)
        select_seconds = time.perf_counter() - start
        coreset = np.asarray(selector.selected_, dtype=np.int64)
        # a missing coreset answer is filled with the question's mean over the source models that answered it
        # (inferred; the selection itself masks, see MRMRSelector), and so is one missing at predict time
        fill = _column_fill(S[:, coreset])
        X = np.where(np.isnan(S[:, coreset]), fill, S[:, coreset])
        if isinstance(self.predictor, str) and self.predictor == "native":
            predictor = selector.native_predictor()
        elif isinstance(self.predictor, str):
            predictor = make_predictor(self.predictor).fit(X, target)
        else:
            predictor = clone(self.predictor).fit(X, target)
        # -- commit: every fitted attribute is replaced together (no stale question_ids_) --
        for key in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, key)
        commit_features(self, S_source)
        if ids is not None:
            self.question_ids_ = ids
        self.select_seconds_ = select_seconds
        self.selector_ = selector
        self.coreset_ = coreset
        self.fill_ = fill
        self.predictor_ = predictor
        self.fit_seconds_ = time.perf_counter() - start
        self.n_questions_total_ = S.shape[1]
        return self

    def _check_fitted(self) -> None:
        check_is_fitted(self, "coreset_")

    def predict(self, X) -> np.ndarray:
        """``(m, N)`` answers on all questions, as given to ``fit`` (only the coreset is read) ->
        ``(m,)`` predicted full scores."""
        arr = check_predict_input(self, X, scores01=True, allow_nan=True)
        return self._predict_coreset(arr[:, self.coreset_])

    def predict_full(self, S_target) -> np.ndarray:
        """The same as :meth:`predict` (kept for the earlier API)."""
        return self.predict(S_target)

    def predict_from_coreset(self, X_coreset) -> np.ndarray:
        """``(m, n)`` answers on ``coreset_`` only (in that order) -> ``(m,)`` predicted full scores."""
        self._check_fitted()
        X = sk_check(X_coreset, name="X_coreset", scores01=True, allow_nan=True,
                     columns=(self.coreset_.size, "the coreset, in coreset_ order; predict takes all "
                              f"{self.n_questions_total_} questions"))
        return self._predict_coreset(X)

    def _predict_coreset(self, X: np.ndarray) -> np.ndarray:
        fill = getattr(self, "fill_", None)  # models saved before missing answers were supported have none
        if np.isnan(X).any():
            X = np.where(np.isnan(X), fill if fill is not None else np.nan, X)
        pred = np.asarray(self.predictor_.predict(X), dtype=np.float64)
        return np.clip(pred, 0.0, 1.0) if self.clip else pred

    def score(self, X, y=None, sample_weight=None) -> float:
        """R^2 of ``predict(X)`` against ``y`` (default ``X.mean(1)``, the full-benchmark scores)."""
        if y is None:
            y = np.nanmean(sk_check(X, name="X", scores01=True, allow_nan=True), axis=1)
        return super().score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False  # y defaults to the row means
        tags.input_tags.positive_only = True  # answers are scores in [0, 1]
        # NaN = a missing answer, masked in mRMR selection (other selectors refuse it)
        tags.input_tags.allow_nan = isinstance(self.selector, MRMRSelector) or self.selector is None
        return tags

    @classmethod
    def sklearn_expected_failed_checks(cls) -> dict[str, str]:
        """``check_estimator`` checks that feed answers outside [0, 1], with the reason."""
        return dict.fromkeys(_OUTSIDE_01_CHECKS_BENCH, _OUTSIDE_01_REASON)

    def predict_full_score(self, answers: dict) -> float:
        """One model's answers keyed by question id -> its predicted full score (lm-eval-harness style).

        Ids are those given to ``fit(question_ids=...)``, else the integer column indices. Every
        coreset question must be present; extra keys are ignored.
        """
        self._check_fitted()
        check_arguments("predict_full_score", {"answers": Instance(dict, "dict {question_id: score}")},
                        {"answers": answers})
        ids = getattr(self, "question_ids_", None)
        keys = [ids[j] for j in self.coreset_] if ids is not None else [int(j) for j in self.coreset_]
        lookup = {str(k): v for k, v in answers.items()}
        missing = [k for k in keys if str(k) not in lookup]
        if missing:
            raise ValueError(f"answers lacks {len(missing)} coreset question(s), e.g. {missing[:3]}")
        try:
            row = np.array([[float(lookup[str(k)]) for k in keys]])
        except (TypeError, ValueError) as err:
            raise TypeError(f"answers must map question ids to numbers in [0, 1]; {err}") from err
        return float(self.predict_from_coreset(row)[0])

    # -- saving without pickle: arrays in npz, the rest in json --------------------------------------
    def save(self, directory, *, overwrite: bool = False) -> Path:
        """Write ``predictor.npz`` + ``predictor.json`` into ``directory`` (created). Supports the
        KRR, ridge and mean predictors. Each file is written to a temporary name and renamed into place
        (atomic); an existing model is replaced only with ``overwrite=True`` (else ``FileExistsError``)."""
        self._check_fitted()
        path = Path(directory)
        if path.exists() and not path.is_dir():
            raise NotADirectoryError(f"directory must be a folder, got the file {path}")
        existing = [name for name in ("predictor.json", "predictor.npz") if (path / name).exists()]
        if existing and not overwrite:
            raise FileExistsError(f"directory {path} already holds a model ({', '.join(existing)}); "
                                  "pass overwrite=True (CLI: --force) to replace it")
        p = self.predictor_
        arrays: dict[str, np.ndarray] = {"coreset": self.coreset_}
        if getattr(self, "fill_", None) is not None:
            arrays["fill"] = self.fill_
        if isinstance(p, KRRPredictor):
            meta = {"kind": "krr", "degree": p.degree, "gamma": p.gamma_, "coef0": p.coef0, "alpha": p.alpha_}
            arrays.update(dual_coef=p.dual_coef_, X_fit=p.X_fit_)
        elif isinstance(p, RidgePredictor):
            meta = {"kind": "ridge", "alpha": p.alpha_, "intercept": p.intercept_}
            arrays.update(coef=p.coef_)
        elif isinstance(p, MeanPredictor):
            meta = {"kind": "mean"}
            arrays.update(weights=p.weights_)
        else:
            raise TypeError(f"save supports KRR, ridge and mean predictors, got {type(p).__name__}")
        meta.update(format_version=FORMAT_VERSION, n_questions_total=self.n_questions_total_, clip=self.clip,
                    question_ids=getattr(self, "question_ids_", None))
        path.mkdir(parents=True, exist_ok=True)
        atomic_write(path / "predictor.npz", lambda fh: np.savez(fh, **arrays))
        atomic_write(path / "predictor.json", lambda fh: fh.write(json.dumps(meta, indent=1).encode("utf-8")))
        return path

    @classmethod
    def load(cls, directory) -> EfficientBenchmark:
        """Read what :meth:`save` wrote (no pickle)."""
        path = Path(directory)
        meta_path, arr_path = path / "predictor.json", path / "predictor.npz"
        if not meta_path.is_file() or not arr_path.is_file():
            raise FileNotFoundError(f"{path} has no predictor.json/predictor.npz (write them with `select`)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        check_arguments(str(meta_path), _SAVED, {key: meta.get(key) for key in _SAVED})
        with np.load(arr_path, allow_pickle=False) as arrays:
            data = {k: arrays[k] for k in arrays.files}
        kind = meta["kind"]
        if kind == "krr":
            from sklearn.kernel_ridge import KernelRidge

            p = KRRPredictor(degree=int(meta["degree"]), gamma=float(meta["gamma"]), coef0=float(meta["coef0"]))
            p.alpha_, p.gamma_, p.dual_coef_, p.X_fit_ = meta["alpha"], meta["gamma"], data["dual_coef"], data["X_fit"]
            p.model_ = KernelRidge(alpha=p.alpha_, kernel="poly", degree=p.degree, gamma=p.gamma_, coef0=p.coef0)
            p.model_.dual_coef_, p.model_.X_fit_ = p.dual_coef_, p.X_fit_
            p.model_.n_features_in_ = p.n_features_in_ = p.X_fit_.shape[1]
        elif kind == "ridge":
            p = RidgePredictor()
            p.alpha_, p.intercept_, p.coef_ = float(meta["alpha"]), float(meta["intercept"]), data["coef"]
            p.n_features_in_ = p.coef_.size
        else:  # "mean"
            p = MeanPredictor()
            p.weights_ = data["weights"]
            p.n_features_in_ = p.weights_.size
        bench = cls(predictor=kind, clip=bool(meta["clip"]))
        bench.coreset_ = data["coreset"].astype(np.int64)
        bench.predictor_ = p
        bench.fill_ = data["fill"] if "fill" in data else None
        bench.n_questions_total_ = bench.n_features_in_ = int(meta["n_questions_total"])
        if meta.get("question_ids") is not None:
            bench.question_ids_ = list(meta["question_ids"])
        return bench


class BenchmarkPredictor(EfficientBenchmark):
    """:class:`EfficientBenchmark` configured by names, as in the paper's tables.

    ``BenchmarkPredictor("mrmr", "krr")`` = mRMR++, ``("anchor", "native")`` = AnchorPts,
    ``("anchor", "krr")`` = AnchorPts++, ``("irt", "native")`` = gp-IRT, ``("random", "mean")`` = Random.

    Args:
        selector: ``"mrmr" | "random" | "anchor" | "irt" | "lasso"`` or a selector object.
        regressor: ``"krr" | "ridge" | "mean" | "native"``.
        n_select: questions, int or fraction of N.
        degree, alphas: KRR degree and the alpha grid of "+"/"++".
        mi_k: kNN neighbours of mRMR; random_state: seed of the selector.
    """

    def __init__(self, selector: Any = "mrmr", regressor: str = "krr", *, n_select: int | float = 0.1,
                 degree: int = 2, alphas=None, mi_k: int = 3, random_state: int | None = 0, clip: bool = True):
        self.selector = selector
        self.regressor = regressor
        self.n_select = n_select
        self.degree = degree
        self.alphas = alphas
        self.mi_k = mi_k
        self.random_state = random_state
        self.clip = clip

    def fit(self, S_source, y=None, *, question_ids=None) -> BenchmarkPredictor:
        sel = (make_selector(self.selector, self.n_select, mi_k=self.mi_k, random_state=self.random_state)
               if isinstance(self.selector, str) else self.selector)
        pred = (self.regressor if self.regressor == "native"
                else make_predictor(self.regressor, degree=self.degree, alphas=self.alphas))
        inner = EfficientBenchmark(sel, pred, clip=self.clip)
        inner.fit(S_source, y, question_ids=question_ids)
        for key in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, key)
        for key, value in vars(inner).items():
            if key.endswith("_"):
                setattr(self, key, value)
        return self

