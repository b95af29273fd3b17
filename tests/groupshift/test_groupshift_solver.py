"""Solver, certificates, λ_max: checked against KKT conditions written here, scipy, and skglm."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from neurips26.groupshift import (
    GroupPartition,
    duality_gap,
    group_lambda_max,
    prox_group_norm,
    skglm_group_lasso,
    solve_group_l1,
)


def _data(n=60, d=12, seed=0, logistic=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.3 * rng.standard_normal((n, 1))
    w = np.zeros(d)
    w[:3] = [1.5, -2.0, 1.0]
    z = X @ w + 0.3 * rng.standard_normal(n)
    y = (z > 0).astype(float) if logistic else z
    return X, y


def _kkt_violation(X, y, w, b, part, alpha, p, loss="squared"):
    """Max relative KKT violation, computed independently of the package (gradients by hand)."""
    n = y.size
    z = X @ w + b
    grad = (-(X.T @ (y - z)) if loss == "squared" else X.T @ (1 / (1 + np.exp(-z)) - y)) / n
    q = 1.0 if math.isinf(p) else p / (p - 1)
    worst = 0.0
    for g in part.groups:
        om = len(g) ** (1 / q)
        gg, wg = grad[g], w[g]
        if not np.any(wg):
            worst = max(worst, np.linalg.norm(gg, q) / (alpha * om) - 1)
            continue
        v = -gg / (alpha * om)  # must be a subgradient of ‖·‖_p at w_g
        if math.isinf(p):
            m = np.abs(wg).max()
            off = np.abs(wg) < m * (1 - 1e-6)
            worst = max(worst, abs(np.abs(v).sum() - 1), np.abs(v[off]).max(initial=0),
                        -np.min(v[~off] * np.sign(wg[~off])))
        else:
            sub = np.sign(wg) * np.abs(wg) ** (p - 1) / np.linalg.norm(wg, p) ** (p - 1)
            worst = max(worst, np.abs(v - sub).max())
    return worst


@pytest.mark.parametrize("p", [2.0, math.inf, 1.5, 3.0])
def test_kkt_at_solution(p):
    X, y = _data(d=9)
    part = GroupPartition.contiguous(3, 9)
    lam = 0.2 * group_lambda_max(X, y, part, p)
    res = solve_group_l1(X, y, part, lam, p, tol=1e-13)
    assert res.converged and res.dual_gap <= res.tol_abs
    assert _kkt_violation(X, y, res.coef, 0.0, part, lam, p) < 1e-4
    assert 0 < np.count_nonzero(res.coef) < 9


def test_lambda_max_closed_form_and_zero_solution():
    X, y = _data()
    part = GroupPartition.contiguous(4, 12)
    lmax = group_lambda_max(X, y, part)
    ref = max(np.linalg.norm(X[:, g].T @ y) / (len(y) * math.sqrt(len(g))) for g in part.groups)
    assert lmax == pytest.approx(ref, rel=1e-12)
    assert not np.any(solve_group_l1(X, y, part, lmax * (1 + 1e-9)).coef)
    assert np.any(solve_group_l1(X, y, part, lmax * 0.98).coef)


@pytest.mark.slow  # skglm JIT-compiles with numba (~50 s on 2 busy cores)
def test_matches_skglm_group_lasso():
    X, y = _data(n=80, d=20, seed=3)
    part = GroupPartition.from_labels(np.arange(20) % 5)  # non-contiguous groups
    lam = 0.1 * group_lambda_max(X, y, part)
    ours = solve_group_l1(X, y, part, lam, tol=1e-12)
    sk = skglm_group_lasso(X, y, part, lam, tol=1e-12)

    def obj(w):
        return np.sum((y - X @ w) ** 2) / (2 * len(y)) + lam * sum(
            math.sqrt(len(g)) * np.linalg.norm(w[g]) for g in part.groups)

    assert abs(obj(ours.coef) - obj(sk.coef_)) <= 1e-9 * obj(sk.coef_)
    np.testing.assert_allclose(ours.coef, sk.coef_, atol=1e-5)


def test_p_inf_matches_scipy_epigraph_qp():
    """p = ∞ as a smooth QP: min L(w) + λ Σ ω_g t_g  s.t.  -t_g <= w_j <= t_g (SLSQP), tiny problem."""
    X, y = _data(n=40, d=6, seed=5)
    part = GroupPartition.contiguous(2, 6)
    lam = 0.15 * group_lambda_max(X, y, part, math.inf)
    n, d, G = 40, 6, part.n_groups

    def f(v):
        w, t = v[:d], v[d:]
        return np.sum((y - X @ w) ** 2) / (2 * n) + lam * 2 * t.sum()

    cons = []
    for k, g in enumerate(part.groups):
        for j in g:
            cons.append({"type": "ineq", "fun": lambda v, j=j, k=k: v[d + k] - v[j]})
            cons.append({"type": "ineq", "fun": lambda v, j=j, k=k: v[d + k] + v[j]})
    ref = minimize(f, np.zeros(d + G), constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    ours = solve_group_l1(X, y, part, lam, math.inf, tol=1e-12)
    assert ours.primal <= ref.fun + 1e-9
    assert ours.primal >= ref.fun - 1e-7
    np.testing.assert_allclose(ours.coef, ref.x[:d], atol=1e-4)


def test_logistic_l1_matches_lbfgsb_split_variables():
    """Singleton groups + p = 2 = ℓ1-logistic; reference: L-BFGS-B on w = w⁺ - w⁻ >= 0 with a free intercept."""
    X, y = _data(n=80, d=5, seed=7, logistic=True)
    part = GroupPartition.contiguous(1, 5)
    lam = 0.2 * group_lambda_max(X, y, part, loss="logistic", fit_intercept=True)

    def f(v):
        w = v[:5] - v[5:10]
        z = X @ w + v[10]
        val = np.mean(np.logaddexp(0, z) - y * z) + lam * (v[:10].sum())
        r = (1 / (1 + np.exp(-z)) - y) / len(y)
        gw = X.T @ r
        return val, np.concatenate([gw + lam, -gw + lam, [r.sum()]])

    ref = minimize(f, np.zeros(11), jac=True, method="L-BFGS-B", bounds=[(0, None)] * 10 + [(None, None)],
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 5000})
    ours = solve_group_l1(X, y, part, lam, loss="logistic", fit_intercept=True, tol=1e-12)
    assert abs(ours.primal - ref.fun) <= 1e-7
    np.testing.assert_allclose(ours.coef, ref.x[:5] - ref.x[5:10], atol=1e-4)
    assert _kkt_violation(X, y, ours.coef, ours.intercept, part, lam, 2.0, "logistic") < 1e-4


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_duality_gap_bounds_suboptimality(loss):
    X, y = _data(n=50, d=8, seed=2, logistic=loss == "logistic")
    part = GroupPartition.contiguous(2, 8)
    lam = 0.1 * group_lambda_max(X, y, part, loss=loss)
    best = solve_group_l1(X, y, part, lam, loss=loss, tol=1e-13)
    rng = np.random.default_rng(0)
    for _ in range(10):
        w = best.coef + 0.3 * rng.standard_normal(8) * (rng.random(8) < 0.5)
        gap = duality_gap(X, y, w, part, lam, loss=loss)
        z = X @ w
        val = (np.sum((y - z) ** 2) / (2 * len(y)) if loss == "squared"
               else np.mean(np.logaddexp(0, z) - y * z)) + lam * sum(
            math.sqrt(len(g)) * np.linalg.norm(w[g]) for g in part.groups)
        assert gap >= val - best.primal - 1e-12
    assert duality_gap(X, y, best.coef, part, lam, loss=loss) <= 1e-10


def test_certificate_decreases_to_tolerance():
    X, y = _data(n=60, d=12, seed=4)
    part = GroupPartition.contiguous(3, 12)
    lam = 0.05 * group_lambda_max(X, y, part)
    exact = solve_group_l1(X, y, part, lam, tol=1e-14).primal
    gaps = []
    for tol in (1e-2, 1e-5, 1e-8, 1e-11):
        res = solve_group_l1(X, y, part, lam, tol=tol)
        assert res.dual_gap <= res.tol_abs
        assert res.primal - exact <= res.dual_gap + 1e-14
        gaps.append(res.dual_gap)
    assert gaps[-1] < gaps[0]


@pytest.mark.parametrize("p", [2.0, math.inf, 1.5, 4.0])
def test_prox_is_the_minimiser(p):
    rng = np.random.default_rng(0)
    for _ in range(5):
        v, t = rng.standard_normal(4), float(rng.uniform(0.1, 1.5))
        x = prox_group_norm(v, t, p)

        def h(z, v=v, t=t):
            return 0.5 * np.sum((z - v) ** 2) + t * np.linalg.norm(z, p)

        # optimality: no random nearby point and no Nelder-Mead refinement does better
        ref = minimize(h, v, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000})
        assert h(x) <= ref.fun + 1e-9
        for _ in range(50):
            assert h(x) <= h(x + 1e-3 * rng.standard_normal(4)) + 1e-12
