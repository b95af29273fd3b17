"""WLIA and baseline attacks: planted closed-form settings, estimators, and bad input."""

import numpy as np
import pytest
import torch

from neurips26.wlia import (
    WLIA,
    BiasAnalytic,
    LLGRowSum,
    UniformGuess,
    label_distribution_metrics,
    local_train,
    make_model,
    scores_to_distribution,
)


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: one torch thread (two spin-wait when the other core is busy)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _planted_update(pi, u, *, n=200, a=3.0, lr=0.01, bias=True):
    """One full-batch SGD step of a logistic head whose rows all equal a·u/‖u‖ (so p_ic = 1/C) on
    samples that all have features u. Closed form: W'_c = W_c + η n (π_c − 1/C) u, collinear with u."""
    C, H = len(pi), len(u)
    counts = np.round(np.asarray(pi) * n).astype(int)
    y = torch.as_tensor(np.repeat(np.arange(C), counts), dtype=torch.int64)
    X = torch.as_tensor(np.tile(u, (y.numel(), 1)), dtype=torch.float32)
    model = make_model("logistic", H, C, bias=bias, seed=0)
    with torch.no_grad():
        model.fc.weight.copy_(torch.as_tensor(np.tile(a * u / np.linalg.norm(u), (C, 1))))
        if bias:
            model.fc.bias.zero_()
    g = {k: v.clone() for k, v in model.state_dict().items()}
    local_train(model, X, y, epochs=1, lr=lr, batch_size=y.numel(), seed=0)
    return g, model.state_dict(), counts / counts.sum()


@pytest.mark.parametrize("pi", [[0.5, 0.3, 0.2, 0.0], [0.0, 0.1, 0.0, 0.6, 0.3], [0.25, 0.0, 0.75]])
def test_planted_linear_setting_recovers_label_mix(pi):
    # With one absent class the linear estimator's min-subtraction removes the 1/C offset exactly.
    u = np.array([1.0, 2.0, 0.5, 1.5])
    g, local, truth = _planted_update(pi, u)
    for attack in (WLIA(), LLGRowSum(), BiasAnalytic(), WLIA(relative=True)):
        attack.observe(0, 1, g, local)
        np.testing.assert_allclose(attack.infer(0), truth, atol=2e-4, err_msg=repr(attack))


def test_rowsum_fails_on_signed_features_where_wlia_does_not():
    pi = [0.6, 0.3, 0.1, 0.0]
    u = np.array([1.0, -2.0, 0.5, 0.5])  # Σ_j u_j = 0: the row sums carry no signal
    g, local, truth = _planted_update(pi, u)
    wlia, rowsum = WLIA(), LLGRowSum()
    for attack in (wlia, rowsum):
        attack.observe("c", 1, g, local)
    np.testing.assert_allclose(wlia.infer("c"), truth, atol=2e-4)
    assert label_distribution_metrics(truth, rowsum.infer("c"))["js"] > 0.1


def test_wlia_score_is_row_norm_change():
    rng = np.random.default_rng(0)
    wg, wl = rng.normal(size=(5, 7)), rng.normal(size=(5, 7))
    attack = WLIA(weight_key="head")
    s = attack.observe(1, 0, {"head": wg}, {"head": torch.as_tensor(wl)})
    expected = [np.sqrt((wl[c] ** 2).sum()) - np.sqrt((wg[c] ** 2).sum()) for c in range(5)]
    np.testing.assert_allclose(s, expected, rtol=1e-12)
    # a bare array is accepted as the layer itself
    attack2 = WLIA()
    np.testing.assert_allclose(attack2.observe(1, 0, wg, wl), expected, rtol=1e-12)


def test_round_averaging_and_std_weighting():
    attack = WLIA(round_weighting="std")
    plain = WLIA()
    base = np.ones((3, 2))
    deltas = {1: np.array([0.3, 0.0, -0.3]), 2: np.array([3.0, 0.0, -3.0]) * 0 + np.array([0.0, 1.0, -1.0])}
    for t, d in deltas.items():
        # rows of norm sqrt(2) scaled so that the norm changes by exactly d
        local = base * (1 + d[:, None] / np.sqrt(2))
        attack.observe(0, t, base, local)
        plain.observe(0, t, base, local)
    np.testing.assert_allclose(plain.scores(0), (deltas[1] + deltas[2]) / 2, atol=1e-12)
    w = np.array([1 / deltas[1].std(), 1 / deltas[2].std()])
    np.testing.assert_allclose(attack.scores(0), (w[0] * deltas[1] + w[1] * deltas[2]) / w.sum(), atol=1e-12)
    np.testing.assert_allclose(plain.scores(0, rounds=[2]), deltas[2], atol=1e-12)
    assert plain.rounds_of(0) == [1, 2]


@pytest.mark.parametrize("estimator", ["linear", "softmax", "zero_aware"])
def test_estimators_give_distributions(estimator):
    rng = np.random.default_rng(1)
    for _ in range(20):
        s = rng.normal(size=rng.integers(2, 30))
        p = scores_to_distribution(s, estimator)
        assert np.all(p >= 0) and abs(p.sum() - 1) < 1e-12
        # order preserving (weakly)
        order = np.argsort(s)
        assert np.all(np.diff(p[order]) >= -1e-15)
    np.testing.assert_allclose(scores_to_distribution(np.full(4, 2.5), estimator), np.full(4, 0.25))


def test_uniform_guess():
    attack = UniformGuess()
    attack.observe(0, 1, {"fc.weight": np.zeros((4, 3))}, {"fc.weight": np.ones((4, 3))})
    np.testing.assert_allclose(attack.infer(0), np.full(4, 0.25))


# ------------------------------------------------------------------------- bad input
def test_mismatched_update_shapes():
    attack = WLIA()
    with pytest.raises(ValueError, match="shape"):
        attack.observe(0, 1, {"fc.weight": np.zeros((4, 3))}, {"fc.weight": np.zeros((4, 2))})
    attack.observe(0, 1, {"fc.weight": np.zeros((4, 3))}, {"fc.weight": np.ones((4, 3))})
    with pytest.raises(ValueError, match="earlier updates"):
        attack.observe(1, 1, {"fc.weight": np.zeros((5, 3))}, {"fc.weight": np.ones((5, 3))})
    with pytest.raises(ValueError, match="2-D"):
        attack.observe(2, 1, {"fc.weight": np.zeros(4)}, {"fc.weight": np.ones(4)})


def test_missing_classifier_key():
    with pytest.raises(ValueError, match="classifier key"):
        WLIA(weight_key="head.weight").observe(0, 1, {"fc.weight": np.zeros((2, 2))}, {"fc.weight": np.ones((2, 2))})
    model = make_model("mlp-relu", 4, 3, bias=False)
    sd = model.state_dict()
    with pytest.raises(ValueError, match="fc.bias"):
        BiasAnalytic().observe(0, 1, sd, sd)


def test_other_bad_inputs():
    w = {"fc.weight": np.ones((3, 2))}
    with pytest.raises(ValueError, match="estimator"):
        WLIA(estimator="max")
    with pytest.raises(ValueError, match="round_idx"):
        WLIA().observe(0, -1, w, w)
    with pytest.raises(ValueError, match="NaN"):
        WLIA().observe(0, 1, w, {"fc.weight": np.full((3, 2), np.nan)})
    attack = WLIA()
    attack.observe(0, 1, w, w)
    with pytest.raises(ValueError, match="already observed"):
        attack.observe(0, 1, w, w)
    with pytest.raises(ValueError, match="never observed"):
        attack.infer(5)
    with pytest.raises(ValueError, match="non-zero"):
        WLIA(relative=True).observe(0, 1, {"fc.weight": np.zeros((3, 2))}, w)
    with pytest.raises(TypeError, match="hashable"):
        WLIA().observe([0], 1, w, w)
