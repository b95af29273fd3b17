"""Every solver reaches independently computed saddle points; AGD prox vs exact solve; span property on H."""

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize

from neurips26.saddle import (
    BilinearGame,
    ChainHardInstance,
    CostCounter,
    DROLogistic,
    MultiPlayerQuadraticGame,
    QuadraticGame,
    agd_prox,
    communication_lower_bound,
    decoupled_method,
    decoupled_method_vi,
    decoupled_sgda,
    extragradient,
    extragradient_vi,
    fit_lower_bound_constant,
    gda,
    optimistic_gda,
    project_simplex,
)


def kkt_solution(g):
    # ∇_x f = 0 and ∇_y f = 0:  [[A, B], [Bᵀ, −C]] z = (−a, c), solved by scipy (independent of game.solution)
    K = np.block([[g.A, g.B], [g.B.T, -g.C]])
    z = scipy.linalg.solve(K, np.concatenate([-g.a, g.c]))
    return z[: g.d_x], z[g.d_x:]


SOLVERS = {
    "decoupled": lambda g, x, y: decoupled_method(g, x, y, tol=1e-8),
    "decoupled_hpe": lambda g, x, y: decoupled_method(g, x, y, tol=1e-8, inner_rule="hpe"),
    "decoupled_exact": lambda g, x, y: decoupled_method(g, x, y, tol=1e-8, inner="exact"),
    "extragradient": lambda g, x, y: extragradient(g, x, y, tol=1e-8),
    "optimistic_gda": lambda g, x, y: optimistic_gda(g, x, y, tol=1e-8),
    "gda": lambda g, x, y: gda(g, x, y, tol=1e-8),
    "decoupled_sgda": lambda g, x, y: decoupled_sgda(g, x, y, local_steps=5, tol=1e-8),
}


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_solver_reaches_linear_solve_saddle(name):
    g = QuadraticGame.random(8, 0.5, 5.0, 0.5, 4.0, 0.3, seed=1)
    xs, ys = kkt_solution(g)
    r = SOLVERS[name](g, np.zeros(8), np.zeros(8))
    assert r.converged and not r.diverged
    scale = math.hypot(np.linalg.norm(xs), np.linalg.norm(ys))
    assert math.hypot(np.linalg.norm(r.x - xs), np.linalg.norm(r.y - ys)) <= 1.01e-8 * scale + 1e-12


def test_residual_stopping_without_solution():
    g = QuadraticGame.random(6, 0.2, 10.0, 0.2, 10.0, 1.0, seed=2)

    class Plain:
        constants, d_x, d_y = g.constants, 6, 6
        grad_x, grad_y = staticmethod(g.grad_x), staticmethod(g.grad_y)

    for solve in (decoupled_method, extragradient):
        r = solve(Plain(), np.zeros(6), np.zeros(6), tol=1e-9)
        assert r.converged and r.stop_rounds == r.iterations + 1
        F = np.concatenate(_grads(g, r.x, r.y))
        F0 = np.concatenate(_grads(g, np.zeros(6), np.zeros(6)))
        assert np.linalg.norm(F) <= 1e-9 * np.linalg.norm(F0) * 1.0001


def _grads(g, x, y):
    return g.A @ x + g.B @ y + g.a, g.B.T @ x - g.C @ y - g.c


def test_bilinear_convex_concave():
    rng = np.random.default_rng(4)
    g = BilinearGame(rng.standard_normal((6, 6)) + 3 * np.eye(6), 0.0, rng.standard_normal(6),
                     rng.standard_normal(6))
    xs, ys = kkt_solution(g)
    r = decoupled_method(g, np.zeros(6), np.zeros(6), tol=1e-6)
    assert r.converged and "x_avg" in r.info
    np.testing.assert_allclose(r.x, xs, atol=1e-5 * np.linalg.norm(xs))
    assert not gda(g, np.zeros(6), np.zeros(6), lr=0.05, max_rounds=2000).converged  # diverges on bilinear


def test_agd_prox_matches_exact_local_solve():
    g = QuadraticGame.random(10, 0.1, 50.0, 0.1, 30.0, 1.0, seed=5)
    rng = np.random.default_rng(0)
    xk, yk = rng.standard_normal(10), rng.standard_normal(10)
    eta = 0.4
    exact = np.linalg.solve(g.A + np.eye(10) / eta, xk / eta - g.B @ yk - g.a)
    c = CostCounter(g)
    v, gv, calls = agd_prox(lambda x: c.grad_x(x, yk), xk, eta, 50.0, 0.1, sigma=1e-10)
    np.testing.assert_allclose(v, exact, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(gv, g.A @ v + g.B @ yk + g.a, rtol=1e-12)
    assert calls == c.calls["x"]
    # relative rule: ‖∇φ(v)‖ ≤ σ‖∇φ(x_k)‖ holds at the returned point
    v, _, _ = agd_prox(lambda x: g.grad_x(x, yk), xk, eta, 50.0, 0.1, sigma=0.05)
    phi_grad = lambda x: g.grad_x(x, yk) + (x - xk) / eta  # noqa: E731
    assert np.linalg.norm(phi_grad(v)) <= 0.05 * np.linalg.norm(phi_grad(xk))


@pytest.mark.parametrize("solve", [decoupled_method, extragradient, optimistic_gda, gda])
def test_span_property_on_chain(solve):
    h = ChainHardInstance(40, 1.0, 0.2)
    c = CostCounter(h, record_support=True)
    r = solve(h, np.zeros(40), np.zeros(40), tol=1e-4, counter=c)
    assert r.converged
    # any query made after r rounds touches only coordinates 0..r
    assert all(max(ix, iy) <= rounds for rounds, _, ix, iy in c.support_log)
    assert r.rounds >= h.span_lower_bound_rounds(1e-4)


def test_chain_lower_bound_fit_and_formula():
    h = ChainHardInstance(200, 1.0, 0.1)
    c_fit = fit_lower_bound_constant(h)
    assert 0 < c_fit < 10
    k = h.constants["L_xy"] / 0.1
    assert communication_lower_bound(h.constants["L_xy"], 0.1, 0.1, 1e-6, c=2.0) == pytest.approx(
        2.0 * k * math.log(1e6))
    # brute force: the truncated solution is the best point with support {0..r}
    xs, ys = h.solution()
    r = h.span_lower_bound_rounds(1e-3)
    tail = lambda r: math.sqrt(np.sum(xs[r + 1:] ** 2) + np.sum(ys[r + 1:] ** 2))  # noqa: E731
    total = math.hypot(np.linalg.norm(xs), np.linalg.norm(ys))
    assert tail(r) <= 1e-3 * total < tail(r - 1)


def test_vi_solvers_reach_solution():
    game = MultiPlayerQuadraticGame.random(3, 6, mu=0.2, L_local=20.0, L_cross=1.0, seed=0)
    z = scipy.linalg.solve(game.M, -game.a)
    for solve in (decoupled_method_vi, extragradient_vi):
        r = solve(game, [np.zeros(6)] * 3, tol=1e-8)
        assert r.converged and r.y is None and set(r.calls) == {"0", "1", "2"}
        np.testing.assert_allclose(np.concatenate(r.x), z, atol=1e-7 * np.linalg.norm(z))
    # strongly monotone: sym(M) ⪰ μ I with the reported μ > 0
    assert np.linalg.eigvalsh((game.M + game.M.T) / 2)[0] >= game.constants["mu"] - 1e-12 > 0


def test_project_simplex_against_bisection():
    rng = np.random.default_rng(1)
    for _ in range(20):
        v = rng.standard_normal(7) * 3
        p = project_simplex(v)
        # τ solves Σ max(v − τ, 0) = 1 (bisection, independent of the sort)
        tau = scipy.optimize.brentq(lambda t, v=v: np.maximum(v - t, 0).sum() - 1, v.min() - 1, v.max())
        np.testing.assert_allclose(p, np.maximum(v - tau, 0), atol=1e-12)


def test_dro_against_primal_minimisation():
    full = DROLogistic.breast_cancer(mu=0.1, rho=1.0)
    prob = DROLogistic(full.X[:80, :6], full.t[:80], mu=0.1, rho=1.0)
    n = 80

    # inner max in closed form: q*(w) = P_Δ(1/n + ℓ(w)/(ρn)); primal φ(w) by Danskin
    def phi(w):
        q = project_simplex(1 / n + prob.losses(w) / (prob.rho * n))
        val = q @ prob.losses(w) + prob.mu / 2 * w @ w - prob.rho * n / 2 * np.sum((q - 1 / n) ** 2)
        return val, prob.grad_x(w, q)

    ref = scipy.optimize.minimize(phi, np.zeros(6), jac=True, method="L-BFGS-B", options={"gtol": 1e-12}).x
    w0, q0 = prob.initial_point()
    for solve in (decoupled_method, extragradient):
        r = solve(prob, w0, q0, tol=1e-8, max_rounds=200_000)
        assert r.converged
        np.testing.assert_allclose(r.x, ref, atol=1e-5)
        assert abs(r.y.sum() - 1) < 1e-12 and r.y.min() >= 0


def test_torch_backend_matches_numpy_solution():
    torch = pytest.importorskip("torch")
    g = QuadraticGame.random(6, 0.2, 8.0, 0.2, 8.0, 1.0, seed=0, backend="torch")
    K = np.block([[g.A.numpy(), g.B.numpy()], [g.B.numpy().T, -g.C.numpy()]])
    z = scipy.linalg.solve(K, np.concatenate([-g.a.numpy(), g.c.numpy()]))
    for solve in (decoupled_method, extragradient):
        r = solve(g, torch.zeros(6, dtype=torch.float64), torch.zeros(6, dtype=torch.float64), tol=1e-8)
        assert r.converged and isinstance(r.x, torch.Tensor)
        np.testing.assert_allclose(np.concatenate([r.x.numpy(), r.y.numpy()]), z, atol=1e-7 * np.linalg.norm(z))


# --- the accelerated primal-dual peer (issue 43) ---------------------------------------------------------------


def test_apd_reaches_the_linear_solve_saddle_point():
    from neurips26.saddle import accelerated_primal_dual

    for seed in range(3):
        g = QuadraticGame.random(12, 0.2, 30.0, 0.5, 10.0, 2.0, seed=seed)
        r = accelerated_primal_dual(g, np.zeros(12), np.zeros(12), tol=1e-9)
        x_star, y_star = np.linalg.solve(g.operator_matrix(), -np.concatenate([g.a, g.c])).reshape(2, 12)
        assert r.converged
        np.testing.assert_allclose(np.concatenate([r.x, r.y]), np.concatenate([x_star, y_star]), atol=1e-7)


def test_apd_counts_two_rounds_and_one_call_per_agent_per_iteration():
    from neurips26.saddle import accelerated_primal_dual

    g = QuadraticGame.random(6, 0.2, 5.0, 0.2, 5.0, 1.0, seed=0)
    r = accelerated_primal_dual(g, np.zeros(6), np.zeros(6), max_rounds=10, tol=1e-300)
    assert (r.rounds, r.calls, r.iterations) == (10, {"x": 5, "y": 5}, 5)


def test_apd_calls_grow_like_the_square_root_of_L_xx():
    # the accelerated rate: calls(L_xx = 1000)/calls(L_xx = 10) ≈ √100 = 10, where EG's grow ≈ 100×
    from neurips26.saddle import accelerated_primal_dual

    calls = []
    for L in (10.0, 1000.0):
        g = QuadraticGame.random(10, 0.1, L, 0.1, L, 1.0, seed=0)
        r = accelerated_primal_dual(g, np.zeros(10), np.zeros(10))
        assert r.converged
        calls.append(r.max_calls)
    assert 5 <= calls[1] / calls[0] <= 20, calls


def test_apd_refuses_a_zero_modulus_and_a_bad_scale():
    from neurips26.saddle import accelerated_primal_dual

    g = QuadraticGame.random(4, 0.0, 2.0, 0.5, 2.0, 1.0)  # μ_x at round-off: 0
    with pytest.raises(ValueError, match="mu_x"):
        accelerated_primal_dual(g, np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="step_scale"):
        accelerated_primal_dual(QuadraticGame.random(4, 0.1, 1.0, 0.1, 1.0, 1.0), np.zeros(4), np.zeros(4),
                                step_scale=-1.0)
