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
    IntHalfspace,
    NaiveBooleanProduct,
    Parity,
    RejectionLimitError,
    TruncatedMLESGD,
    UntruncatedBooleanProduct,
    WeightBand,
    fatness,
    influence,
    log_influence,
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


def test_sgd_ball_is_fkt_delphi_radius_around_naive_logits():
    # ρ = r · log(1/√α): α = e^{-10}, r = 1 gives ρ = 5; r = 2 doubles it
    assert TruncatedMLESGD.ball_radius(1.0, math.exp(-10)) == pytest.approx(5.0)
    assert TruncatedMLESGD.ball_radius(2.0, math.exp(-10)) == pytest.approx(10.0)
    c = np.zeros(2)
    # ball only: the radial projection of (6, 8) onto ‖y‖ ≤ 5 is (3, 4)
    np.testing.assert_allclose(TruncatedMLESGD.project(np.array([6.0, 8.0]), c, 5.0, 100.0), [3.0, 4.0], atol=1e-9)
    # ball ∩ box |y_i| ≤ 3.8, by hand: y_2 = 3.8 on the box, y_1 = sqrt(25 - 3.8²) on the sphere
    hand = [math.sqrt(25 - 3.8 ** 2), 3.8]
    np.testing.assert_allclose(TruncatedMLESGD.project(np.array([6.0, 8.0]), c, 5.0, 3.8), hand, atol=1e-9)
    # the same on random instances against a generic constrained solver (SLSQP)
    rng = np.random.default_rng(0)
    for _ in range(5):
        z, cen = rng.normal(0, 4, 5), rng.uniform(-1, 1, 5)
        ours = TruncatedMLESGD.project(z, cen, 2.0, 2.5)
        ref = minimize(lambda y, z=z: ((y - z) ** 2).sum(), cen, method="SLSQP", bounds=[(-2.5, 2.5)] * 5,
                       constraints=[{"type": "ineq", "fun": lambda y, c=cen: 4.0 - ((y - c) ** 2).sum()}],
                       options={"ftol": 1e-12, "maxiter": 500}).x
        np.testing.assert_allclose(ours, ref, atol=1e-5)


def test_sgd_restarts_until_interior_and_stays_in_its_ball():
    z = np.array([0.5, -0.5, 1.0, 0.0, -1.0, 0.3])
    S = WeightBand(2)
    X = sample_truncated_product(z, S, 2000, rng=3)
    z0 = NaiveBooleanProduct().fit(X).natural_params_
    # α = 0.99 (a wrong "lower bound"): ρ_0 = 0.005, far too small, so the trials end on the surface
    small = TruncatedMLESGD(S, lr=1.0, alpha=0.99, n_steps=200, n_trials=3, random_state=0).fit(X)
    rho0 = TruncatedMLESGD.ball_radius(1.0, 0.99)
    assert small.n_trials_ == 3 and not small.interior_
    assert small.radius_ == pytest.approx(rho0 * 1.5 ** 2)
    assert np.linalg.norm(small.natural_params_ - z0) <= small.radius_ + 1e-9
    assert {t["trial"] for t in small.trajectory_} == {0, 1, 2}
    # a valid lower bound α = 1e-6 (ρ = 6.9) holds z*: one trial ends inside
    big = TruncatedMLESGD(S, lr=1.0, alpha=1e-6, n_steps=200, n_trials=3, random_state=0).fit(X)
    assert big.n_trials_ == 1 and big.interior_
    # ball-free variant: one trial, box only
    free = TruncatedMLESGD(S, lr=1.0, n_steps=200, random_state=0).fit(X)
    assert free.n_trials_ == 1 and free.radius_ == math.inf


def test_sgd_budget_stop_is_a_failed_run_not_an_error():
    z = np.array([0.5, -0.5, 1.0, 0.0, -1.0, 0.3])
    S = WeightBand(2)
    X = sample_truncated_product(z, S, 500, rng=3)
    est = TruncatedMLESGD(S, lr=1.0, n_steps=1000, max_oracle_calls=2000, on_limit="stop", random_state=0).fit(X)
    assert est.limit_reached_ and est.n_oracle_calls_ > 2000 and est.n_steps_ < 1000
    assert np.all(np.isfinite(est.natural_params_))
    assert not TruncatedMLESGD(S, lr=1.0, n_steps=20, random_state=0).fit(X).limit_reached_


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
    np.testing.assert_allclose(fatness(WeightBand(k), z, n_mc=40_000, rng=5, method="mc"), alpha, atol=0.015)
    np.testing.assert_allclose(fatness(WeightBand(k), z), alpha, rtol=1e-10)          # exact DP
    for i in (0, 5):
        assert abs(influence(WeightBand(k), z, i, n_mc=40_000, rng=6, method="mc") - inf[i]) < 0.015
        assert influence(WeightBand(k), z, i) == pytest.approx(inf[i], rel=1e-10)      # exact DP
    with pytest.raises(ValueError, match="coordinate index"):
        influence(WeightBand(k), z, n)


def test_exact_influence_halfspace_parity_and_tiny_mass():
    n = 8
    rng = np.random.default_rng(7)
    z = rng.uniform(-1, 1, n)
    a = np.array([1, 2, 3, 1, 2, 3, 1, 2])
    S = IntHalfspace(a, 6)
    pts = np.array(_cube(n))
    mu = np.exp(pts @ z)
    mu /= mu.sum()
    inS = pts @ a <= 6
    for i in (1, 2, 7):
        flipped = pts.copy()
        flipped[:, i] ^= 1
        ref = float((mu * (inS != (flipped @ a <= 6))).sum())
        assert influence(S, z, i) == pytest.approx(ref, rel=1e-10)
        pi = mu * inS / (mu * inS).sum()
        assert fatness(S, z)[i] == pytest.approx(float((pi * (flipped @ a <= 6)).sum()), rel=1e-10)
    assert influence(Parity(True), z, 3) == pytest.approx(1.0)   # a flip always changes the parity
    # the abstract's regime: band n = 1024, k = 256 at z = 0. Flipping i changes membership iff the other
    # coordinates weigh exactly k: Inf_i = C(1023, 256) / 2^1023 ≈ 1e-68 (closed form, in logs)
    closed = math.lgamma(1024) - math.lgamma(257) - math.lgamma(768) - 1023 * math.log(2)
    assert log_influence(WeightBand(256), np.zeros(1024), 5) == pytest.approx(closed, rel=1e-10)
    assert influence(WeightBand(256), np.zeros(1024), 5) == pytest.approx(math.exp(closed), rel=1e-8)


def test_monte_carlo_influence_refuses_when_uninformative():
    tiny = CallableOracle(lambda A: A.sum(axis=1) == 0, name="all_zero")   # μ(S) = 2^-20 at z = 0
    with pytest.warns(UserWarning, match="no disagreement"):
        assert math.isnan(influence(tiny, np.zeros(20), 0, n_mc=1000, rng=0))
    with pytest.raises(ValueError, match="automaton"):
        influence(tiny, np.zeros(20), 0, method="exact")
