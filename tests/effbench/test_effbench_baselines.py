"""Baselines against brute force (k-medoids), closed forms (p-IRT with every item seen, Phi) and
their contracts (sizes, weights, determinism)."""

import itertools

import numpy as np
import pytest

from neurips26.effbench import (
    AnchorPointsSelector,
    IRTSelector,
    LassoSelector,
    RandomSelector,
    anchor_points,
    binned_split,
    evaluate,
    evaluate_split,
    k_medoids,
    nogueira_stability,
)


def _cost(D, med):
    return D[:, med].min(1).sum()


def test_k_medoids_equals_exhaustive_optimum_on_small_problem():
    rng = np.random.default_rng(0)
    pts = np.concatenate([rng.normal(c, 0.3, size=(4, 2)) for c in ([0, 0], [5, 0], [0, 5])])
    D = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    med, labels = k_medoids(D, 3)
    best = min(_cost(D, list(c)) for c in itertools.combinations(range(len(D)), 3))
    assert _cost(D, med) == pytest.approx(best)
    np.testing.assert_array_equal(labels, np.argmin(D[:, med], axis=1))


def test_k_medoids_is_a_swap_local_optimum_on_random_data():
    rng = np.random.default_rng(1)
    pts = rng.random((25, 3))
    D = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    med, _ = k_medoids(D, 4)
    cost = _cost(D, med)
    for i in range(4):
        for c in range(25):
            if c in med:
                continue
            trial = med.copy()
            trial[i] = c
            assert _cost(D, trial) >= cost - 1e-12


def test_anchor_points_weights_and_determinism():
    rng = np.random.default_rng(2)
    S = (rng.random((30, 40)) < 0.5).astype(float)
    S[:, 5] = 1.0  # constant question: correlation set to 0
    idx, w = anchor_points(S, 6)
    assert len(set(idx.tolist())) == 6 and w.sum() == pytest.approx(1.0) and np.all(w > 0)
    idx2, _ = anchor_points(S, 6)
    np.testing.assert_array_equal(idx, idx2)
    sel = AnchorPointsSelector(6).fit(S)
    np.testing.assert_allclose(sel.native_predictor().predict(S[:, sel.selected_]), S[:, sel.selected_] @ w)


def _irt_matrix(seed=0, m=40, n=30):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=m), rng.normal(size=n)
    return (rng.random((m, n)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(float)


def test_p_irt_with_every_item_seen_is_the_exact_mean():
    S = _irt_matrix()
    sel = IRTSelector(1.0, estimate="p-irt").fit(S)
    pred = sel.native_predictor().predict(S[:, sel.selected_])
    np.testing.assert_allclose(pred, S.mean(1), atol=1e-12)


def test_gp_irt_is_a_convex_mix_of_anchor_mean_and_p_irt():
    S = _irt_matrix(seed=1)
    sel = IRTSelector(8).fit(S)
    native = sel.native_predictor()
    X = S[:, sel.selected_]
    gp = native.predict(X)
    anchor = X @ sel.weights_
    native.estimate = "p-irt"
    p = native.predict(X)
    lam = native.b_error**2 / (native.b_error**2 + native.v)
    np.testing.assert_allclose(gp, lam * anchor + (1 - lam) * p)
    assert len(set(sel.selected_.tolist())) == 8 and sel.weights_.sum() == pytest.approx(1.0)


def test_lasso_keeps_at_most_n_questions_and_predicts_linearly():
    S = _irt_matrix(seed=2, m=40, n=60)
    sel = LassoSelector(5).fit(S)
    assert 1 <= sel.selected_.size <= 5
    pred = sel.native_predictor().predict(S[:, sel.selected_])
    np.testing.assert_allclose(pred, S[:, sel.selected_] @ sel.coef_ + sel.intercept_)


def test_random_selector_is_seeded_and_distinct():
    S = _irt_matrix()
    a = RandomSelector(10, random_state=3).fit(S).selected_
    b = RandomSelector(10, random_state=3).fit(S).selected_
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == 10


def test_nogueira_closed_forms():
    assert nogueira_stability([[0, 1], [0, 1], [0, 1]], 4) == pytest.approx(1.0)
    # two disjoint halves: p_f = 1/2, s_f^2 = 2 * 1/4, kbar/d = 1/2 -> Phi = 1 - (1/2)/(1/4) = -1
    assert nogueira_stability([[0, 1], [2, 3]], 4) == pytest.approx(-1.0)
    rng = np.random.default_rng(0)
    random_sets = [rng.choice(500, 50, replace=False) for _ in range(40)]
    assert abs(nogueira_stability(random_sets, 500)) < 0.05
    with pytest.raises(ValueError, match="at least 2"):
        nogueira_stability([[0]], 3)
    with pytest.raises(ValueError, match="outside"):
        nogueira_stability([[0], [7]], 3)


def test_binned_split_draws_evenly_from_bins():
    acc = np.linspace(0, 1, 200)
    src, tgt = binned_split(acc, 30, rng=0)
    assert src.size == 30 and tgt.size == 170 and not set(src) & set(tgt)
    counts = np.histogram(acc[src], bins=np.linspace(0, 1, 11))[0]
    assert counts.min() == counts.max() == 3
    with pytest.raises(ValueError, match="n_source"):
        binned_split(acc, 200)


def test_metrics_closed_form_and_labels():
    t = np.array([0.1, 0.2, 0.3, 0.4])
    p = t + np.array([0.01, -0.01, 0.02, 0.0])
    out = evaluate(t, p)
    assert out["rmse_pp"] == pytest.approx(100 * np.sqrt(np.mean((p - t) ** 2)))
    assert out["mae_pp"] == pytest.approx(1.0)
    assert out["kendall"] == pytest.approx(1.0) and out["spearman"] == pytest.approx(1.0)
    both = evaluate_split(t, p, t, p)
    assert {"target_rmse_pp", "pooled_kendall"} <= set(both)
    with pytest.raises(ValueError, match="finite"):
        evaluate(t, p * np.nan)
