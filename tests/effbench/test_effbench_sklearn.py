"""effbench inside scikit-learn (issue 15): check_estimator, cross_val_score, GridSearchCV, clone, pickle,
feature names in pick order, and the predictors being sklearn's RidgeCV / KernelRidge."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import check_estimator

from neurips26.effbench import (
    EfficientBenchmark,
    KRRPredictor,
    MeanPredictor,
    MRMRSelector,
    RandomSelector,
    RidgePredictor,
    kernel_ridge_loo,
    ridge_loo,
)


def _answers(m=40, n=30, seed=0):
    """0/1 answers of ``m`` models on ``n`` questions from a one-ability logistic model."""
    rng = np.random.default_rng(seed)
    ability, difficulty = rng.normal(size=(m, 1)), rng.normal(size=(1, n))
    return (rng.random((m, n)) < 1 / (1 + np.exp(difficulty - 2 * ability))).astype(float)


@pytest.mark.parametrize("est", [MRMRSelector(3), KRRPredictor(), RidgePredictor(), MeanPredictor(),
                                 EfficientBenchmark(MRMRSelector(2), "krr")], ids=lambda e: type(e).__name__)
def test_check_estimator_passes_except_the_declared_checks(est):
    failed = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(est, on_fail=None, expected_failed_checks=type(est).sklearn_expected_failed_checks(),
                        callback=lambda **kw: failed.append(kw["check_name"]) if kw["status"] == "failed" else None)
    assert failed == []
    reasons = type(est).sklearn_expected_failed_checks()
    # only the [0, 1]-answer contradiction is excused (and the mean baseline learning nothing from y)
    assert all("[0, 1]" in why or "baseline" in why for why in reasons.values())


@pytest.mark.parametrize("est", [MRMRSelector(3), KRRPredictor(), EfficientBenchmark(RandomSelector(3))])
def test_unfitted_calls_raise_not_fitted_error(est):
    S = _answers()
    with pytest.raises(NotFittedError):
        (est.transform if hasattr(est, "transform") else est.predict)(S[:, : 3 if isinstance(est, KRRPredictor)
                                                                          else S.shape[1]])


def test_predict_takes_the_fit_matrix_and_predict_from_coreset_the_picks():
    S = _answers()
    bench = EfficientBenchmark(MRMRSelector(5), KRRPredictor()).fit(S[:30])
    full = bench.predict(S[30:])
    np.testing.assert_array_equal(full, bench.predict_from_coreset(S[30:, bench.coreset_]))
    # independent reference: sklearn KernelRidge on the same coreset at the chosen alpha, clipped
    ref = KernelRidge(alpha=bench.predictor_.alpha_, kernel="poly", degree=2, gamma=1 / 5, coef0=1)
    ref.fit(S[:30][:, bench.coreset_], S[:30].mean(1))
    np.testing.assert_allclose(full, np.clip(ref.predict(S[30:, bench.coreset_]), 0, 1), atol=1e-10)


def test_cross_val_score_and_grid_search_give_finite_scores():
    S = _answers(m=45)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few source models per fold
        scores = cross_val_score(EfficientBenchmark(MRMRSelector(4), "ridge"), S, cv=KFold(3))
        assert scores.shape == (3,) and np.all(np.isfinite(scores))
        rmse = cross_val_score(EfficientBenchmark(RandomSelector(6), "krr"), S, S.mean(1), cv=KFold(3),
                               scoring="neg_root_mean_squared_error")
        assert np.all(np.isfinite(rmse)) and np.all(rmse <= 0)
        grid = GridSearchCV(EfficientBenchmark(MRMRSelector(2), "ridge"),
                            {"selector__n_questions": [1, 8]}, cv=KFold(3)).fit(S)
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))
    # 8 questions predict the mean of 30 better than 1 does on this matrix: the choice is not arbitrary
    assert grid.best_params_ == {"selector__n_questions": 8}


def test_score_is_r2_against_the_row_means():
    S = _answers()
    bench = EfficientBenchmark(MRMRSelector(5), "ridge").fit(S[:30])
    y, p = S[30:].mean(1), bench.predict(S[30:])
    r2 = 1 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2)
    assert bench.score(S[30:]) == pytest.approx(r2)


def test_feature_names_survive_in_pick_order():
    S = _answers()
    names = [f"q{j:02d}" for j in range(S.shape[1])]
    df = pd.DataFrame(S, columns=names)
    sel = MRMRSelector(5).fit(df)
    assert list(sel.feature_names_in_) == names
    assert list(sel.get_feature_names_out()) == [names[j] for j in sel.selected_]
    assert not np.all(np.diff(sel.selected_) > 0), "the test wants a pick order that is not index order"
    np.testing.assert_array_equal(sel.transform(df), S[:, sel.selected_])  # pick order, not index order
    np.testing.assert_array_equal(sel.inverse_transform(sel.transform(df))[:, sel.selected_], S[:, sel.selected_])
    out = MRMRSelector(5).set_output(transform="pandas").fit(df).transform(df)
    assert list(out.columns) == [names[j] for j in sel.selected_]
    bench = EfficientBenchmark(MRMRSelector(5), "ridge").fit(df)
    assert bench.question_ids_ == names
    with pytest.raises(ValueError, match="feature names"):
        bench.predict(df[names[::-1]])


def test_clone_pickle_and_pipeline():
    S = _answers()
    bench = EfficientBenchmark(MRMRSelector(4), KRRPredictor()).fit(S[:30])
    again = pickle.loads(pickle.dumps(bench))
    np.testing.assert_array_equal(again.predict(S[30:]), bench.predict(S[30:]))
    assert not hasattr(clone(bench), "coreset_")
    pipe = make_pipeline(MRMRSelector(4), RidgePredictor()).fit(S[:30], S[:30].mean(1))
    direct = RidgePredictor().fit(S[:30][:, pipe[0].selected_], S[:30].mean(1))
    np.testing.assert_allclose(pipe.predict(S[30:]), direct.predict(S[30:, pipe[0].selected_]))


def test_ridge_is_ridgecv_and_matches_the_closed_form_loo():
    S = _answers()
    X, y = S[:, :8], S.mean(1)
    est = RidgePredictor().fit(X, y)
    assert isinstance(est.model_, RidgeCV)
    ref = ridge_loo(X, y)
    assert est.alpha_ == ref.alpha
    np.testing.assert_allclose(est.coef_, ref.coef, atol=1e-12)
    np.testing.assert_allclose(est.loo_mse_, ref.loo_mse, rtol=1e-9)


def test_krr_is_kernel_ridge_at_the_loo_alpha():
    S = _answers()
    X, y = S[:, :8], S.mean(1)
    est = KRRPredictor().fit(X, y)
    assert isinstance(est.model_, KernelRidge)
    ref = kernel_ridge_loo(X, y)
    assert est.alpha_ == ref.alpha
    np.testing.assert_allclose(est.dual_coef_, ref.coef, rtol=1e-8, atol=1e-10)


def test_save_load_stays_pickle_free_and_refuses_to_overwrite(tmp_path):
    S = _answers()
    for kind in ("krr", "ridge", "mean"):
        bench = EfficientBenchmark(MRMRSelector(4), kind).fit(S[:30])
        out = bench.save(tmp_path / kind)
        with np.load(out / "predictor.npz", allow_pickle=False) as arrays:
            assert all(arrays[k].dtype != object for k in arrays.files)
        np.testing.assert_allclose(EfficientBenchmark.load(out).predict(S[30:]), bench.predict(S[30:]))
        with pytest.raises(FileExistsError, match="overwrite"):
            bench.save(out)
        bench.save(out, overwrite=True)
        assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="directory"):
        bench.save(tmp_path / "file")
