"""Baselines and diagnostics against brute force: the exact MLE vs a Python-loop likelihood, fatness and
influence vs enumeration, the SGD baseline's caps and cost accounting."""

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from neurips26.truncbool import (
    CallableOracle,
    ExactTruncatedMLE,
    NaiveBooleanProduct,
    RejectionLimitError,
    TruncatedMLESGD,
    UntruncatedBooleanProduct,
    WeightBand,
    fatness,
    influence,
    sample_product,
    sample_truncated_product,
)


def _cube(n):
    return [list(x) for x in itertools.product((0, 1), repeat=n)]


def test_exact_mle_matches_brute_force():
    n, k = 5, 2
    z = np.array([0.7, -0.4, 1.1, 0.0, -0.9])
    X = sample_truncated_product(z, WeightBand(k), 500, rng=0)
    pts = [x for x in _cube(n) if sum(x) <= k]
    xbar = X.mean(axis=0)

    def nll(v):  # log Σ_{x∈S} e^{<v,x>} - <v, x̄>, by a Python loop
        return math.log(sum(math.exp(sum(a * b for a, b in zip(v, x))) for x in pts)) - float(np.dot(v, xbar))

    ref = minimize(nll, np.zeros(n), method="BFGS", options={"gtol": 1e-10})
    est = ExactTruncatedMLE(WeightBand(k)).fit(X)
    assert est.converged_
    np.testing.assert_allclose(est.natural_params_, ref.x, atol=1e-5)
    # moment matching: E_{ẑ,S}[x] = x̄
    w = np.array([math.exp(float(np.dot(est.natural_params_, x))) for x in pts])
    np.testing.assert_allclose((w[:, None] * np.array(pts)).sum(0) / w.sum(), xbar, atol=1e-9)


def test_exact_mle_respects_box():
    X = np.array([[0, 1, 0], [0, 0, 1], [0, 1, 1], [0, 0, 0]], dtype=np.int8)  # x_0 never 1
    est = ExactTruncatedMLE(WeightBand(2), width_bound=3.0).fit(X)
    assert est.natural_params_[0] == pytest.approx(-3.0)
    assert np.all(np.abs(est.natural_params_) <= 3.0)
    with pytest.raises(ValueError, match="n <= 20"):
        ExactTruncatedMLE(WeightBand(2)).fit(np.zeros((2, 21)))


def test_naive_and_untruncated():
    z = np.array([1.0, -1.0, 0.5, 0.0])
    X = sample_product(z, 40_000, rng=1)
    np.testing.assert_allclose(UntruncatedBooleanProduct().fit(X).natural_params_, z, atol=0.06)
    Xt = sample_truncated_product(z, WeightBand(1), 20_000, rng=2)
    naive = NaiveBooleanProduct().fit(Xt).natural_params_
    np.testing.assert_allclose(naive, np.log(Xt.mean(0) / (1 - Xt.mean(0))))
    assert np.all(naive < z)  # truncation to light rows biases every logit down


def test_sgd_improves_on_naive_and_counts_calls():
    z = np.array([0.5, -0.5, 1.0, 0.0, -1.0, 0.3])
    S = WeightBand(2)
    X = sample_truncated_product(z, S, 3000, rng=3)
    sgd = TruncatedMLESGD(S, lr=1.0, n_steps=1500, random_state=0).fit(X)
    naive = NaiveBooleanProduct().fit(X).natural_params_
    assert np.abs(sgd.natural_params_ - z).max() < 0.7 * np.abs(naive - z).max()
    assert sgd.n_oracle_calls_ >= 1500 * 10
    calls = [t["oracle_calls"] for t in sgd.trajectory_]
    assert calls == sorted(calls) and sgd.trajectory_[-1]["step"] == 1500


def test_sgd_caps():
    S = CallableOracle(lambda A: A.sum(axis=1) == 0, name="all_zero")
    X = np.zeros((5, 12), dtype=np.int8)
    # at least batch_size = 10 calls per step: 50 steps exceed a budget of 100 calls
    with pytest.raises(RejectionLimitError):
        TruncatedMLESGD(S, n_steps=50, max_oracle_calls=100, random_state=0).fit(X)
    tiny = CallableOracle(lambda A: A.sum(axis=1) == A.shape[1], name="all_one")
    with pytest.raises(RejectionLimitError, match="max_tries"):
        # naive start clipped at W = 0.5: μ(S) = σ(0.5)^12 ≈ 3e-3, so 10 draws need far more than 50 tries
        TruncatedMLESGD(tiny, n_steps=5, max_tries=50, width_bound=0.5,
                        random_state=0).fit(np.ones((3, 12), dtype=np.int8))


@pytest.mark.parametrize("kwargs, match", [({"lr": 0}, "lr"), ({"batch_size": 0}, "batch_size"),
                                           ({"alpha": 1.5}, "alpha"), ({"max_oracle_calls": 0}, "max_oracle_calls")])
def test_sgd_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TruncatedMLESGD(WeightBand(1), **kwargs).fit(np.zeros((3, 3)))


def test_fatness_and_influence_vs_enumeration():
    n, k = 8, 3
    rng = np.random.default_rng(4)
    z = rng.uniform(-1, 1, n)
    pts = np.array(_cube(n))
    w = np.exp(pts @ z)
    inS = pts.sum(1) <= k
    pi = w * inS / (w * inS).sum()
    mu = w / w.sum()
    alpha, inf = [], []
    for i in range(n):
        flipped = pts.copy()
        flipped[:, i] ^= 1
        fS = flipped.sum(1) <= k
        alpha.append(float((pi * fS).sum()))
        inf.append(float((mu * (inS != fS)).sum()))
    np.testing.assert_allclose(fatness(WeightBand(k), z, n_mc=40_000, rng=5), alpha, atol=0.015)
    for i in (0, 5):
        assert abs(influence(WeightBand(k), z, i, n_mc=40_000, rng=6) - inf[i]) < 0.015
    with pytest.raises(ValueError, match="coordinate index"):
        influence(WeightBand(k), z, n)
