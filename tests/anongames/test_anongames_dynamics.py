"""Dynamics: the path walk reaches an eps-NE in O(1/eps) steps; best response converges on random games."""

import math
from fractions import Fraction

import pytest

from neurips26.anongames import LinearAnonymousGame, path_dynamics, sequential_best_response


@pytest.mark.parametrize("kind", ["random", "hard", "ties", "degenerate", "complements", "substitutes"])
def test_path_dynamics_reaches_eps_nash(kind):
    for n in (1, 2, 5, 16):
        for seed in range(3):
            game = LinearAnonymousGame.random(n, seed, kind)
            for eps in (0.1, 0.01):
                res = path_dynamics(game, eps)
                assert res.converged
                # independent check of the returned profile with exact normalised regrets
                prof = [Fraction(x) for x in res.profile]
                assert max(game.normalized_regrets(prof)) <= Fraction(eps)


def test_path_dynamics_steps_scale_as_one_over_eps():
    game = LinearAnonymousGame.random(16, 0, "hard")
    steps = [path_dynamics(game, eps).steps for eps in (0.1, 0.01, 0.001)]
    slope = math.log(steps[-1] / steps[0]) / math.log(100)
    assert 0.9 <= slope <= 1.1
    # the documented bound: steps <= (path length within [0, n]) / h, path length <= 3n
    n, n_c = 16, game.classes.count("C")
    h = 0.001 * (n - 1) / (2 * max(1, n_c))
    assert steps[-1] <= 3 * n / h + 1


def test_path_dynamics_raw_units():
    game = LinearAnonymousGame.random(6, 1, "hard")
    res = path_dynamics(game, 0.05, normalize=False)
    assert res.converged and max(game.regrets([Fraction(x) for x in res.profile])) <= Fraction(0.05)


def test_best_response_converges_on_random_games():
    for seed in range(5):
        game = LinearAnonymousGame.random(6, seed, "random")
        res = sequential_best_response(game, 0.05, max_steps=20000)
        assert res.converged and res.cycle_length is None
        assert max(game.normalized_regrets([Fraction(x) for x in res.profile])) <= Fraction(0.05)
        rr = sequential_best_response(game, 0.05, rule="round_robin", max_steps=20000)
        assert rr.converged


def test_best_response_cycles_are_real_cycles():
    # a hard game (no pure NE) on which the max-regret dynamic revisits a state at eps = 0.001
    game = LinearAnonymousGame.random(4, 1, "hard")
    res = sequential_best_response(game, 0.001, max_steps=100000)
    assert not res.converged and res.cycle_length is not None and res.cycle_length > 0
    # replay without cycle detection: the state after `cycle_length` more steps is identical
    a = sequential_best_response(game, 0.001, max_steps=res.steps, detect_cycles=False)
    b = sequential_best_response(game, 0.001, max_steps=res.steps + res.cycle_length, detect_cycles=False)
    assert a.profile == b.profile and not b.converged


def test_dynamics_bad_input():
    game = LinearAnonymousGame([1, -1], [0, 1])
    for eps in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="eps"):
            path_dynamics(game, eps)
        with pytest.raises(ValueError, match="eps"):
            sequential_best_response(game, eps)
    with pytest.raises(TypeError, match="eps"):
        path_dynamics(game, "0.1")
    with pytest.raises(ValueError, match="step"):
        path_dynamics(game, 0.1, step=0)
    with pytest.raises(ValueError, match="rule"):
        sequential_best_response(game, 0.1, rule="random")
    with pytest.raises(ValueError, match="max_steps"):
        sequential_best_response(game, 0.1, max_steps=-1)
    with pytest.raises(TypeError, match="LinearAnonymousGame"):
        path_dynamics(None, 0.1)
