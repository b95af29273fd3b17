"""Graded answers, missing answers, the continuous MI estimator, AIPW and the splits, each against an
independent reference: a closed form, a naive loop over complete rows, scikit-learn, or a counting formula."""

import math

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from neurips26.effbench import (
    AIPWPredictor,
    EfficientBenchmark,
    KRRPredictor,
    MRMRSelector,
    RandomSelector,
    binned_relevance,
    jitter_target,
    ksg_mi,
    masked_columns,
    plugin_mi_binary,
    plugin_mi_binary_masked,
    random_split,
    ross_mi,
    stress_split,
)


def _answers(m=40, n=15, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(m)
    b = rng.standard_normal(n)
    return (rng.random((m, n)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))).astype(float)


def _with_holes(S, frac=0.15, seed=1):
    S = S.copy()
    S[np.random.default_rng(seed).random(S.shape) < frac] = np.nan
    return S


# ---- the continuous MI estimator on a known Gaussian case
@pytest.mark.parametrize("rho", [0.0, 0.6, 0.9])
def test_ksg_matches_the_gaussian_closed_form(rho):
    r"""For a bivariate normal with correlation rho, $I = -\frac12 \log(1 - \rho^2)$ nats."""
    rng = np.random.default_rng(0)
    n = 2000
    x = rng.standard_normal(n)
    y = rho * x + math.sqrt(1 - rho**2) * rng.standard_normal(n)
    truth = -0.5 * math.log(1 - rho**2)
    est = ksg_mi(x[:, None], y, k=5)[0]
    assert est == pytest.approx(truth, abs=0.03)


# ---- missing answers: masked estimates equal the estimate on the complete rows, computed one column at a time
def test_plugin_mi_masked_equals_the_table_of_the_pairwise_complete_rows():
    S = _with_holes(_answers())
    x = S[:, 3]
    ours = plugin_mi_binary_masked(S, x)
    for j in range(S.shape[1]):
        rows = ~np.isnan(S[:, j]) & ~np.isnan(x)
        a, b = S[rows, j], x[rows]
        mi = 0.0
        for u in (0, 1):
            for v in (0, 1):
                puv = np.mean((a == u) & (b == v))
                if puv > 0:
                    mi += puv * math.log(puv / (np.mean(a == u) * np.mean(b == v)))
        assert ours[j] == pytest.approx(max(mi, 0.0), abs=1e-12)


def test_plugin_mi_masked_without_holes_is_the_plain_estimator():
    S = _answers()
    np.testing.assert_allclose(plugin_mi_binary_masked(S, S[:, 0]), plugin_mi_binary(S, S[:, 0]), atol=1e-14)


def test_masked_relevance_is_ross_on_the_answered_rows():
    S = _with_holes(_answers(), seed=2)
    y = jitter_target(np.nanmean(S, axis=1))
    ours = masked_columns(lambda A, b: ross_mi(A, b, k=3), S, y)
    for j in range(S.shape[1]):
        rows = ~np.isnan(S[:, j])
        assert ours[j] == pytest.approx(ross_mi(S[rows, j:j + 1], y[rows], k=3)[0], abs=1e-12)


def test_mrmr_with_missing_answers_equals_a_naive_masked_greedy():
    """The first pick is the masked-relevance argmax; the second maximises relevance / masked redundancy."""
    S = _with_holes(_answers(60, 12, seed=3), seed=4)
    sel = MRMRSelector(3, mi_k=3, random_state=0).fit(S)
    y = jitter_target(np.nanmean(S, axis=1), 0)
    rel = np.array([ross_mi(S[~np.isnan(S[:, j]), j:j + 1], y[~np.isnan(S[:, j])], k=3)[0]
                    for j in range(S.shape[1])])
    np.testing.assert_allclose(sel.relevance_, rel, atol=1e-12)
    first = int(np.argmax(rel))
    red = plugin_mi_binary_masked(S, S[:, first])
    score = np.where(np.arange(S.shape[1]) == first, -np.inf, rel / (red + 1e-10))
    assert sel.selected_[:2].tolist() == [first, int(np.argmax(score))] and sel.missing_


def test_bench_fills_missing_coreset_answers_with_the_source_column_mean():
    S = _answers(50, 20, seed=5)
    holes = _with_holes(S, seed=6)
    bench = EfficientBenchmark(MRMRSelector(5, mi_k=3), KRRPredictor()).fit(holes)
    fill = np.array([np.nanmean(holes[:, j]) for j in bench.coreset_])
    np.testing.assert_allclose(bench.fill_, fill, atol=1e-15)
    # naive reference: impute by hand, fit the same KRR, predict
    X = holes[:, bench.coreset_]
    X = np.where(np.isnan(X), fill, X)
    ref = KRRPredictor().fit(X, np.nanmean(holes, axis=1))
    new = S[:3].copy()
    new[0, bench.coreset_[0]] = np.nan
    expect = np.clip(ref.predict(np.where(np.isnan(new[:, bench.coreset_]), fill, new[:, bench.coreset_])), 0, 1)
    np.testing.assert_allclose(bench.predict(new), expect, atol=1e-12)


def test_bench_refuses_missing_answers_for_a_selector_that_cannot_mask_them():
    holes = _with_holes(_answers())
    with pytest.raises(ValueError, match="S_source.*RandomSelector"):
        EfficientBenchmark(RandomSelector(3), "ridge").fit(holes)


# ---- graded answers in [0, 1]
def test_graded_relevance_is_ksg_on_the_jittered_columns():
    rng = np.random.default_rng(7)
    S = np.clip(_answers(50, 10, seed=7) * 0.7 + 0.3 * rng.random((50, 10)), 0, 1)  # graded scores
    sel = MRMRSelector(3, mi_k=4, random_state=0).fit(S)
    assert not sel.binary_
    y = jitter_target(S.mean(1), 0)
    ref = [ksg_mi(jitter_target(S[:, j], 0)[:, None], y, k=4)[0] for j in range(10)]
    np.testing.assert_allclose(sel.relevance_, ref, atol=1e-12)
    assert sel.selected_[0] == int(np.argmax(ref))


def test_graded_with_missing_answers_reads_only_the_answered_rows():
    rng = np.random.default_rng(8)
    S = _with_holes(rng.random((40, 6)), seed=9)
    sel = MRMRSelector(2, mi_k=3, random_state=0).fit(S)
    y = jitter_target(np.nanmean(S, axis=1), 0)
    for j in range(6):
        rows = ~np.isnan(S[:, j])
        ref = ksg_mi(jitter_target(S[rows, j], 0)[:, None], y[rows], k=3)[0]
        assert sel.relevance_[j] == pytest.approx(ref, abs=1e-12)


# ---- the naive binned estimator
def test_binned_relevance_matches_counting_mi():
    rng = np.random.default_rng(0)
    S = (rng.random((40, 7)) < 0.4).astype(float)
    y = S.mean(1) + 0.01 * rng.random(40)
    ours = binned_relevance(S, y, bins=4)
    edges = np.quantile(y, [0.25, 0.5, 0.75])
    b = [int(sum(v >= e for e in edges)) for v in y]
    for j in range(S.shape[1]):
        mi = 0.0
        for u in (0, 1):
            for v in set(b):
                puv = sum(1 for i in range(40) if S[i, j] == u and b[i] == v) / 40
                pu = sum(1 for i in range(40) if S[i, j] == u) / 40
                if puv > 0:
                    mi += puv * math.log(puv / (pu * b.count(v) / 40))
        assert ours[j] == pytest.approx(mi, abs=1e-12)
    sel = MRMRSelector(3, mi="binned").fit(S)
    assert sel.selected_[0] == int(np.argmax(binned_relevance(S, S.mean(1))))


# ---- AIPW against a per-model loop over scikit-learn's Ridge (benchpred's own formulation)
def test_aipw_equals_a_loop_over_sklearn_ridge():
    S = _answers(60, 30, seed=10)
    src, tgt = np.arange(0, 60, 2), np.arange(1, 60, 2)
    core = np.array([1, 4, 7, 9, 15, 22, 28])
    rest = np.setdiff1d(np.arange(30), core)
    ours = AIPWPredictor(source=S[src], coreset=core, alpha=10.0).fit().predict(S[tgt][:, core])
    ref = []
    for i in tgt:
        reg = Ridge(alpha=10.0).fit(S[src][:, core].T, S[i, core])
        resid = S[i, core] - reg.predict(S[src][:, core].T)
        ref.append(reg.predict(S[src][:, rest].T).mean() + resid.mean() / (1 + len(core) / len(rest)))
    np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_aipw_refuses_a_coreset_of_every_question():
    S = _answers(10, 5)
    with pytest.raises(ValueError, match="coreset"):
        AIPWPredictor(source=S, coreset=np.arange(5)).fit()


# ---- splits
def test_random_split_is_a_seeded_disjoint_half():
    src, tgt = random_split(11, rng=3)
    assert len(src) == 5 and len(tgt) == 6 and sorted([*src, *tgt]) == list(range(11))
    assert (random_split(11, rng=3)[0] == src).all() and not (random_split(11, rng=4)[0] == src).all()


def test_stress_split_targets_are_stronger_than_every_source():
    acc = np.random.default_rng(0).random(40)
    src, tgt = stress_split(acc)
    assert len(tgt) == 10 and sorted([*src, *tgt]) == list(range(40))
    assert acc[tgt].min() > acc[src].max()
    with pytest.raises(ValueError, match="top_fraction"):
        stress_split(acc, top_fraction=1.0)
