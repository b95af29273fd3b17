"""Selector + regressor = an efficient benchmark: fit on source models, predict full scores of new ones.

    bench = EfficientBenchmark(MRMRSelector(0.1), KRRPredictor()).fit(S_source)
    bench.coreset_                          # ordered question indices to run on a new model
    bench.predict(answers_on_coreset)       # (m, n) -> (m,) full-benchmark scores in [0, 1]
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone

from ._validation import check_matrix, check_target
from .baselines import AnchorPointsSelector, IRTSelector, LassoSelector, RandomSelector
from .mrmr import MRMRSelector
from .regress import KRRPredictor, MeanPredictor, RidgePredictor

FEW_SOURCE_MODELS = 20
FORMAT_VERSION = 1


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
    if name == "lasso":
        return LassoSelector(n_questions)
    raise ValueError(f"selector must be 'mrmr', 'random', 'anchor', 'irt' or 'lasso', got {name!r}")


def make_predictor(name: str, *, degree: int = 2, alphas=None):
    """``"krr" | "ridge" | "mean"`` -> an unfitted regressor (``"native"`` is resolved by the pipeline)."""
    if name == "krr":
        return KRRPredictor(degree=degree, alphas=alphas)
    if name == "ridge":
        return RidgePredictor(alphas=alphas)
    if name == "mean":
        return MeanPredictor()
    raise ValueError(f"regressor must be 'krr', 'ridge', 'mean' or 'native', got {name!r}")


class EfficientBenchmark(RegressorMixin, BaseEstimator):
    """A question selector followed by a score regressor.

    Args:
        selector: any object with ``fit(S, y)`` setting ``selected_`` (e.g. :class:`MRMRSelector`).
        predictor: a regressor with ``fit(X, y)`` / ``predict(X)`` (e.g. :class:`KRRPredictor`), or
            ``"native"`` for the selector's own estimator (random mean, anchor weights, gp-IRT, Lasso).
        clip: clip predictions to [0, 1] (the official code does not clip; inferred).

    Fitted: ``coreset_`` ``(n,)`` ordered question indices, ``selector_``, ``predictor_``,
    ``n_questions_total_``, ``question_ids_`` (when given to ``fit``), ``fit_seconds_``.
    """

    def __init__(self, selector=None, predictor: Any = "krr", *, clip: bool = True):
        self.selector = selector
        self.predictor = predictor
        self.clip = clip

    def fit(self, S_source, y=None, *, question_ids=None) -> EfficientBenchmark:
        """``S_source``: ``(M, N)`` answers of source models; ``y``: ``(M,)``, default row means."""
        import time

        S = check_matrix(S_source, name="S_source", min_rows=2)
        target = S.mean(1) if y is None else check_target(y, S.shape[0])
        if S.shape[0] < FEW_SOURCE_MODELS:
            warnings.warn(f"only {S.shape[0]} source models: regressors are unreliable below "
                          f"{FEW_SOURCE_MODELS} (the paper's M = 15 results favour IRT / the plain mean)",
                          UserWarning, stacklevel=2)
        if question_ids is not None:
            ids = [str(q) for q in question_ids]
            if len(ids) != S.shape[1] or len(set(ids)) != len(ids):
                raise ValueError(f"question_ids must be {S.shape[1]} unique ids, got {len(ids)} "
                                 f"({len(set(ids))} unique)")
            self.question_ids_ = ids
        start = time.perf_counter()
        selector = MRMRSelector() if self.selector is None else clone(self.selector)
        selector.fit(S, target)
        self.select_seconds_ = time.perf_counter() - start
        self.selector_ = selector
        self.coreset_ = np.asarray(selector.selected_, dtype=np.int64)
        X = S[:, self.coreset_]
        if isinstance(self.predictor, str) and self.predictor == "native":
            self.predictor_ = selector.native_predictor()
        elif isinstance(self.predictor, str):
            self.predictor_ = make_predictor(self.predictor).fit(X, target)
        else:
            self.predictor_ = clone(self.predictor).fit(X, target)
        self.fit_seconds_ = time.perf_counter() - start
        self.n_questions_total_ = S.shape[1]
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "coreset_"):
            raise RuntimeError("EfficientBenchmark is not fitted; call fit(S_source) first")

    def predict(self, S_target_coreset) -> np.ndarray:
        """``(m, n)`` answers on ``coreset_`` (in that order) -> ``(m,)`` predicted full scores."""
        self._check_fitted()
        X = check_matrix(S_target_coreset, name="S_target_coreset")
        if X.shape[1] != self.coreset_.size:
            raise ValueError(f"S_target_coreset must have {self.coreset_.size} columns (the coreset, in "
                             f"coreset_ order), got {X.shape[1]}; use predict_full for all questions")
        pred = np.asarray(self.predictor_.predict(X), dtype=np.float64)
        return np.clip(pred, 0.0, 1.0) if self.clip else pred

    def predict_full(self, S_target) -> np.ndarray:
        """``(m, N)`` answers on all questions (only the coreset is read) -> ``(m,)``."""
        self._check_fitted()
        S = check_matrix(S_target, name="S_target")
        if S.shape[1] != self.n_questions_total_:
            raise ValueError(f"S_target must have {self.n_questions_total_} questions as at fit time, "
                             f"got {S.shape[1]}")
        return self.predict(S[:, self.coreset_])

    def predict_full_score(self, answers: dict) -> float:
        """One model's answers keyed by question id -> its predicted full score (lm-eval-harness style).

        Ids are those given to ``fit(question_ids=...)``, else the integer column indices. Every
        coreset question must be present; extra keys are ignored.
        """
        self._check_fitted()
        if not isinstance(answers, dict):
            raise TypeError(f"answers must be a dict {{question_id: score}}, got {type(answers).__name__}")
        ids = getattr(self, "question_ids_", None)
        keys = [ids[j] for j in self.coreset_] if ids is not None else [int(j) for j in self.coreset_]
        lookup = {str(k): v for k, v in answers.items()}
        missing = [k for k in keys if str(k) not in lookup]
        if missing:
            raise ValueError(f"answers lacks {len(missing)} coreset question(s), e.g. {missing[:3]}")
        row = np.array([[float(lookup[str(k)]) for k in keys]])
        return float(self.predict(row)[0])

    # -- saving without pickle: arrays in npz, the rest in json --------------------------------------
    def save(self, directory) -> Path:
        """Write ``predictor.npz`` + ``predictor.json`` into ``directory`` (created). Supports the
        KRR, ridge and mean predictors."""
        self._check_fitted()
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        p = self.predictor_
        arrays: dict[str, np.ndarray] = {"coreset": self.coreset_}
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
        np.savez(path / "predictor.npz", **arrays)
        (path / "predictor.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        return path

    @classmethod
    def load(cls, directory) -> EfficientBenchmark:
        """Read what :meth:`save` wrote (no pickle)."""
        path = Path(directory)
        meta_path, arr_path = path / "predictor.json", path / "predictor.npz"
        if not meta_path.is_file() or not arr_path.is_file():
            raise FileNotFoundError(f"{path} has no predictor.json/predictor.npz (write them with `select`)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{meta_path}: format_version {meta.get('format_version')!r}, expected {FORMAT_VERSION}")
        with np.load(arr_path, allow_pickle=False) as arrays:
            data = {k: arrays[k] for k in arrays.files}
        kind = meta["kind"]
        if kind == "krr":
            p = KRRPredictor(degree=int(meta["degree"]), gamma=float(meta["gamma"]), coef0=float(meta["coef0"]))
            p.alpha_, p.gamma_, p.dual_coef_, p.X_fit_ = meta["alpha"], meta["gamma"], data["dual_coef"], data["X_fit"]
            p.n_features_in_ = p.X_fit_.shape[1]
        elif kind == "ridge":
            p = RidgePredictor()
            p.alpha_, p.intercept_, p.coef_ = meta["alpha"], meta["intercept"], data["coef"]
            p.n_features_in_ = p.coef_.size
        elif kind == "mean":
            p = MeanPredictor()
            p.weights_ = data["weights"]
            p.n_features_in_ = p.weights_.size
        else:
            raise ValueError(f"{meta_path}: unknown predictor kind {kind!r}")
        bench = cls(predictor=kind, clip=bool(meta["clip"]))
        bench.coreset_ = data["coreset"].astype(np.int64)
        bench.predictor_ = p
        bench.n_questions_total_ = int(meta["n_questions_total"])
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
        for key, value in vars(inner).items():
            if key.endswith("_"):
                setattr(self, key, value)
        return self

