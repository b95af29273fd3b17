"""Bad input gives clear errors naming the argument."""

import math

import numpy as np
import pytest

from neurips26.saddle import (
    BilinearGame,
    QuadraticGame,
    communication_lower_bound,
    decoupled_method,
    decoupled_sgda,
    extragradient,
    gda,
)


@pytest.fixture
def game():
    return QuadraticGame.random(4, 0.1, 2.0, 0.1, 2.0, 1.0, seed=0)


@pytest.mark.parametrize("kwargs, match", [
    ({"theta": 1.0}, "theta"), ({"theta": 0.0}, "theta"), ({"sigma": 1.5}, "sigma"), ({"sigma": 0}, "sigma"),
    ({"tol": 0.0}, "tol"), ({"tol": -1.0}, "tol"), ({"max_rounds": 0}, "max_rounds"),
    ({"inner": "newton"}, "inner"), ({"inner_rule": "abs"}, "inner_rule"), ({"eta_x": -1.0, "eta_y": 1.0}, "eta_x"),
    ({"eta_x": math.nan, "eta_y": 1.0}, "eta_x"),
])
def test_decoupled_bad_arguments(game, kwargs, match):
    with pytest.raises(ValueError, match=match):
        decoupled_method(game, np.zeros(4), np.zeros(4), **kwargs)


def test_bad_start_vectors(game):
    with pytest.raises(ValueError, match="x0 must be a vector of length 4"):
        decoupled_method(game, np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="y0 must be finite"):
        extragradient(game, np.zeros(4), np.array([0, 0, np.inf, 0]))


def test_constants_errors():
    with pytest.raises(ValueError, match="mu_x"):
        QuadraticGame.random(4, -0.1, 2.0, 0.1, 2.0, 1.0)
    with pytest.raises(ValueError, match="L_xy"):
        QuadraticGame.random(4, 0.1, 2.0, 0.1, 2.0, 0.0)
    g = QuadraticGame.random(4, 0.1, 2.0, 0.1, 2.0, 1.0)

    class Missing:
        constants = {"L_xx": 1.0, "mu_x": 0.1, "mu_y": 0.1, "L_yy": 1.0}
        d_x = d_y = 4
        grad_x, grad_y = staticmethod(g.grad_x), staticmethod(g.grad_y)

    with pytest.raises(ValueError, match="no 'L_xy'"):
        decoupled_method(Missing(), np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="no 'L_xy'"):
        extragradient(Missing(), np.zeros(4), np.zeros(4))

    class OneZeroMu(Missing):
        constants = {"L_xx": 1.0, "mu_x": 0.0, "mu_y": 0.1, "L_yy": 1.0, "L_xy": 1.0}

    with pytest.raises(ValueError, match="mu_x"):
        decoupled_method(OneZeroMu(), np.zeros(4), np.zeros(4))

    class Negative(Missing):
        constants = {"L_xx": -1.0, "mu_x": 0.1, "mu_y": 0.1, "L_yy": 1.0, "L_xy": 1.0}

    with pytest.raises(ValueError, match="L_xx"):
        decoupled_method(Negative(), np.zeros(4), np.zeros(4))
    bil = BilinearGame(np.eye(4), 0.0)
    with pytest.raises(ValueError, match="GDA"):
        gda(bil, np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="local_steps"):
        decoupled_sgda(g, np.zeros(4), np.zeros(4), local_steps=0)
    with pytest.raises(ValueError, match="eps"):
        communication_lower_bound(1.0, 0.1, 0.1, 1.5)


def test_divergence_is_a_result_not_a_crash(game):
    r = extragradient(game, np.ones(4), np.ones(4), lr=5.0)
    assert r.diverged and not r.converged
    r = decoupled_sgda(BilinearGame(5 * np.eye(4), 0.1, np.ones(4)), np.zeros(4), np.zeros(4), local_steps=100)
    assert r.diverged and not r.converged
