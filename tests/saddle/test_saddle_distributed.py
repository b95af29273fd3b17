"""The two-process gloo runner gives the single-process iterates."""

import numpy as np

from neurips26.saddle import QuadraticGame, decoupled_method
from neurips26.saddle.distributed import run_two_process


def test_two_process_equals_single_process():
    g = QuadraticGame.random(6, 0.1, 20.0, 0.2, 5.0, 1.0, seed=1)
    x0, y0 = np.zeros(6), np.ones(6)
    two = run_two_process(g, x0, y0, tol=1e-7)
    one = decoupled_method(g, x0, y0, tol=1e-7)
    assert two.converged and one.converged
    assert (two.rounds, two.calls) == (one.rounds, one.calls)
    np.testing.assert_array_equal(two.x, one.x)
    np.testing.assert_array_equal(two.y, one.y)
