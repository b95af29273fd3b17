"""Counters against hand counts of one iteration, and iterates against hand-computed formulas."""

import numpy as np
import pytest

from neurips26.saddle import (
    BilinearGame,
    CostCounter,
    QuadraticGame,
    decoupled_method,
    decoupled_sgda,
    extragradient,
    gda,
    optimistic_gda,
)


def _F(g, x, y):
    # F(z) = (Ax + By + a, −(Bᵀx − Cy − c)), written from the matrices
    return g.A @ x + g.B @ y + g.a, -(g.B.T @ x - g.C @ y - g.c)


class NoSolution:
    """The same game without solution(): solvers must stop on the residual."""

    def __init__(self, g):
        self.g, self.constants, self.d_x, self.d_y = g, g.constants, g.d_x, g.d_y

    def grad_x(self, x, y):
        return self.g.grad_x(x, y)

    def grad_y(self, x, y):
        return self.g.grad_y(x, y)


@pytest.fixture
def game():
    return QuadraticGame.random(5, 0.5, 4.0, 0.3, 3.0, 1.0, seed=3)


def test_extragradient_one_iteration(game):
    x0, y0 = np.ones(5), -np.ones(5)
    r = extragradient(game, x0, y0, lr=0.05, max_rounds=2, tol=1e-12)
    assert (r.rounds, r.calls, r.stop_rounds, r.iterations) == (2, {"x": 2, "y": 2}, 0, 1)
    fx, fy = _F(game, x0, y0)
    xh, yh = x0 - 0.05 * fx, y0 - 0.05 * fy
    fx2, fy2 = _F(game, xh, yh)
    np.testing.assert_allclose(r.x, x0 - 0.05 * fx2, rtol=1e-13)
    np.testing.assert_allclose(r.y, y0 - 0.05 * fy2, rtol=1e-13)


def test_extragradient_residual_mode_counts(game):
    r = extragradient(NoSolution(game), np.ones(5), np.zeros(5), lr=0.05, max_rounds=2, tol=1e-12)
    # F(z0), F(z½), F(z1) per agent; one scalar exchange at the start and one per test
    assert (r.rounds, r.calls, r.stop_rounds) == (2, {"x": 3, "y": 3}, 2)


def test_ogda_gda_dsgda_one_round(game):
    x0, y0 = np.ones(5), np.zeros(5)
    r = optimistic_gda(game, x0, y0, lr=0.05, max_rounds=1, tol=1e-12)
    assert (r.rounds, r.calls) == (1, {"x": 2, "y": 2})  # F(z0) then F(z½_0)
    fx, fy = _F(game, x0, y0)
    fx2, fy2 = _F(game, x0 - 0.05 * fx, y0 - 0.05 * fy)
    np.testing.assert_allclose(r.x, x0 - 0.05 * fx2, rtol=1e-13)
    r = gda(game, x0, y0, lr=0.05, max_rounds=1, tol=1e-12)
    assert (r.rounds, r.calls) == (1, {"x": 1, "y": 1})
    np.testing.assert_allclose(r.y, y0 - 0.05 * fy, rtol=1e-13)
    r = decoupled_sgda(game, x0, y0, local_steps=5, lr=0.05, max_rounds=1, tol=1e-12)
    assert (r.rounds, r.calls) == (1, {"x": 5, "y": 5})
    x = x0.copy()
    for _ in range(5):  # X against the stale y0
        x = x - 0.05 * (game.A @ x + game.B @ y0 + game.a)
    np.testing.assert_allclose(r.x, x, rtol=1e-13)


def test_decoupled_exact_one_iteration(game):
    x0, y0 = np.ones(5), np.zeros(5)
    ex, ey = 0.3, 0.2
    r = decoupled_method(game, x0, y0, eta_x=ex, eta_y=ey, inner="exact", max_rounds=2, tol=1e-12)
    # labelled ablation: one charged exact solve + one correction call per agent, 2 rounds
    assert (r.rounds, r.calls) == (2, {"x": 2, "y": 2})
    A, B, C, a, c = game.A, game.B, game.C, game.a, game.c
    xh = np.linalg.solve(A + np.eye(5) / ex, x0 / ex - B @ y0 - a)
    yh = np.linalg.solve(C + np.eye(5) / ey, y0 / ey + B.T @ x0 - c)
    x1 = xh - ex * (B @ yh - B @ y0)        # ∇_x f(x½, y½) − ∇_x f(x½, y0) = B(y½ − y0)
    y1 = yh + ey * (B.T @ xh - B.T @ x0)
    np.testing.assert_allclose(r.x, x1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r.y, y1, rtol=1e-10, atol=1e-12)


def test_decoupled_agd_hand_count_bilinear():
    # A = μI: κ_inner = 1, AGD is exact after one step: calls at x_k and at the minimiser (which passes the test),
    # then one correction call; per agent 3 calls, 2 rounds.
    rng = np.random.default_rng(0)
    g = BilinearGame(rng.standard_normal((4, 4)), 0.2, rng.standard_normal(4), rng.standard_normal(4))
    x0, y0 = rng.standard_normal(4), rng.standard_normal(4)
    ex = ey = 0.4
    r = decoupled_method(g, x0, y0, eta_x=ex, eta_y=ey, max_rounds=2, tol=1e-12)
    assert (r.rounds, r.calls) == (2, {"x": 3, "y": 3})
    mu = 0.2
    xh = (x0 / ex - g.B @ y0 - g.a) / (mu + 1 / ex)
    yh = (y0 / ey + g.B.T @ x0 - g.c) / (mu + 1 / ey)
    np.testing.assert_allclose(r.x, xh - ex * g.B @ (yh - y0), rtol=1e-12)
    np.testing.assert_allclose(r.y, yh + ey * g.B.T @ (xh - x0), rtol=1e-12)


def test_counter_counts_and_checks_shape(game):
    c = CostCounter(game)
    c.grad_x(np.zeros(5), np.zeros(5))
    c.grad_y(np.zeros(5), np.zeros(5))
    c.grad_y(np.zeros(5), np.zeros(5))
    c.exchange()
    assert (c.rounds, c.calls) == (1, {"x": 1, "y": 2})

    class Bad(NoSolution):
        def grad_x(self, x, y):
            return np.zeros(3)

    with pytest.raises(ValueError, match="grad_x returned shape"):
        extragradient(Bad(game), np.zeros(5), np.zeros(5))
