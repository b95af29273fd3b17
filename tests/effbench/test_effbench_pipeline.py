"""EfficientBenchmark / BenchmarkPredictor: consistency of the predict paths, save/load, warnings."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from neurips26.effbench import (
    BenchmarkPredictor,
    EfficientBenchmark,
    KRRPredictor,
    MRMRSelector,
    RandomSelector,
    RidgePredictor,
)


@pytest.fixture(scope="module")
def split():
    from neurips26.data import load_effbench
    from neurips26.data.testing import require_dataset

    require_dataset("effbench/correctness")

    S = load_effbench("mmlu")[0].astype(float)
    return S[:40], S[40:]


def test_predict_paths_agree_and_are_clipped(split):
    src, tgt = split
    bench = EfficientBenchmark(MRMRSelector(0.05), KRRPredictor()).fit(src)
    full = bench.predict_full(tgt)
    np.testing.assert_array_equal(full, bench.predict_from_coreset(tgt[:, bench.coreset_]))
    np.testing.assert_array_equal(full, bench.predict(tgt))
    assert np.all((0 <= full) & (1 >= full))
    answers = {int(j): tgt[0, j] for j in range(tgt.shape[1])}
    assert bench.predict_full_score(answers) == pytest.approx(full[0])
    raw = EfficientBenchmark(MRMRSelector(0.05), KRRPredictor(), clip=False).fit(src)
    direct = KRRPredictor().fit(src[:, raw.coreset_], src.mean(1)).predict(tgt[:, raw.coreset_])
    np.testing.assert_allclose(raw.predict_full(tgt), direct)


def test_question_ids_and_missing_answers(split):
    src, tgt = split
    ids = [f"q{j}" for j in range(src.shape[1])]
    bench = EfficientBenchmark(RandomSelector(5), RidgePredictor()).fit(src, question_ids=ids)
    answers = {ids[j]: tgt[1, j] for j in bench.coreset_}
    assert bench.predict_full_score(answers) == pytest.approx(bench.predict_full(tgt)[1])
    with pytest.raises(ValueError, match="lacks"):
        bench.predict_full_score({})
    with pytest.raises(ValueError, match="unique"):
        EfficientBenchmark(RandomSelector(5)).fit(src, question_ids=["a"] * src.shape[1])


def test_save_load_roundtrip_without_pickle(split, tmp_path):
    src, tgt = split
    for pred in ("krr", "ridge", "mean"):
        bench = EfficientBenchmark(MRMRSelector(0.05), pred).fit(src)
        loaded = EfficientBenchmark.load(bench.save(tmp_path / pred))
        np.testing.assert_allclose(loaded.predict_full(tgt), bench.predict_full(tgt))
        with np.load(tmp_path / pred / "predictor.npz", allow_pickle=False) as arr:
            assert "coreset" in arr.files


@pytest.mark.parametrize("selector", ["mrmr", "random", "anchor", "irt", "lasso"])
@pytest.mark.parametrize("regressor", ["krr", "native"])
def test_every_configuration_runs(split, selector, regressor):
    src, tgt = split
    bench = BenchmarkPredictor(selector, regressor, n_select=0.05).fit(src)
    pred = bench.predict_full(tgt)
    assert pred.shape == (tgt.shape[0],) and np.all(np.isfinite(pred))
    assert clone(bench).get_params()["selector"] == selector


def test_errors_and_small_source_warning(split):
    src, tgt = split
    with pytest.warns(UserWarning, match="source models"):
        EfficientBenchmark(RandomSelector(5)).fit(src[:10])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bench = EfficientBenchmark(RandomSelector(5)).fit(src)
    with pytest.raises(ValueError, match="features"):
        bench.predict(tgt[:, :10])
    with pytest.raises(ValueError, match="coreset"):
        bench.predict_from_coreset(tgt)
    with pytest.raises(NotFittedError):
        EfficientBenchmark().predict(tgt)
    with pytest.raises(ValueError, match="make_selector: name must be one of"):
        BenchmarkPredictor("best").fit(src)
    with pytest.raises(ValueError, match="make_predictor: name must be one of"):
        BenchmarkPredictor("random", "gp").fit(src)
