"""Dynamics: the path walk reaches an eps-NE in O(1/eps) steps; the sequential best response against a naive
Fraction implementation, the model-free verifier and its fixed points (exact NE stay put, others move)."""

import math
from fractions import Fraction

import pytest

from neurips26.anongames import (
    LinearAnonymousGame,
    path_dynamics,
    sequential_best_response,
    solve_exact,
    verify_anonymous,
)


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
        assert max(game.normalized_regrets(res.exact_profile)) <= Fraction(0.05)
        rr = sequential_best_response(game, 0.05, rule="round_robin", max_steps=20000)
        assert rr.converged


def test_best_response_cycles_are_real_cycles():
    # a hard game (no pure NE) on which the max-regret dynamic revisits a state at eps = 0.001
    game = LinearAnonymousGame.random(4, 1, "hard")
    res = sequential_best_response(game, 0.001, rule="max_regret", max_steps=100000)
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


# ---------------------------------------------------------------------------------------- real best response
def _naive_substitutes_first(game, eps, max_steps):
    """Independent re-implementation of the substitutes-first rule, player by player in Fractions."""
    grid = math.ceil(1 / (eps / 2) - 1e-12)
    n = game.n
    q = [0] * n
    norms = game.normalizers()
    eps_q = Fraction(eps)
    for steps in range(max_steps + 1):
        p = [Fraction(x, grid) for x in q]
        total = sum(p)
        gains = [(game.a[i] * (total - p[i]) + game.b[i]) / norms[i] if norms[i] else Fraction(0) for i in range(n)]
        regret = [max(g, 0) * (1 - p[i]) + max(-g, 0) * p[i] for i, g in enumerate(gains)]
        if max(regret) <= eps_q:
            return steps, p
        subs = [i for i in range(n) if game.a[i] < 0 and regret[i] > eps_q]
        group = subs or [i for i in range(n) if regret[i] > eps_q]
        i = max(group, key=lambda j: (regret[j], -j))       # largest regret, lowest index on ties
        q[i] = min(max(q[i] + (1 if gains[i] > 0 else -1), 0), grid)
    return None, None


@pytest.mark.parametrize("seed", range(4))
def test_substitutes_first_matches_a_naive_fraction_implementation(seed):
    # no exact ties of float regrets in these games, so the float screen picks the same reviser
    game = LinearAnonymousGame.random(5, seed, "random")
    res = sequential_best_response(game, 0.05, rule="substitutes_first", max_steps=5000)
    steps, prof = _naive_substitutes_first(game, 0.05, 5000)
    assert res.converged and steps == res.steps
    assert res.exact_profile == prof and res.profile == [float(x) for x in prof]


@pytest.mark.parametrize("rule", ["max_regret", "round_robin", "substitutes_first"])
@pytest.mark.parametrize("kind", ["random", "hard", "ties", "degenerate"])
def test_stopping_points_are_eps_equilibria_by_the_model_free_verifier(rule, kind):
    for seed in range(3):
        game = LinearAnonymousGame.random(6, seed, kind)
        res = sequential_best_response(game, 0.05, rule=rule, max_steps=20000)
        if not res.converged:
            assert res.cycle_length is not None or res.steps == 20000
            continue
        prof = res.exact_profile
        regrets = verify_anonymous(*game.payoff_tables(), prof)   # never uses S or linearity
        norms = game.normalizers()
        assert all(r <= Fraction(0.05) * nm for r, nm in zip(regrets, norms))


@pytest.mark.parametrize("rule", ["max_regret", "round_robin", "substitutes_first"])
def test_exact_equilibria_are_fixed_points_and_others_are_not(rule):
    for seed in range(4):
        game = LinearAnonymousGame.random(7, seed, "hard")
        ne = solve_exact(game).profile                       # half-integer data: p in {0, 1/2, 1, ...}
        assert sequential_best_response(game, 0.01, rule=rule, start=ne).steps == 0
        bad = [1 - x for x in ne]                            # flipping everybody is not an eps-NE
        assert max(game.normalized_regrets(bad)) > Fraction(0.01)
        assert sequential_best_response(game, 0.01, rule=rule, start=bad, max_steps=1).steps == 1


def test_each_revision_moves_one_player_by_one_grid_unit():
    game = LinearAnonymousGame.random(9, 2, "hard")
    eps = 0.02
    unit = 1 / math.ceil(1 / (eps / 2) - 1e-12)
    prev = sequential_best_response(game, eps, rule="substitutes_first", max_steps=0).profile
    for k in range(1, 60):
        cur = sequential_best_response(game, eps, rule="substitutes_first", max_steps=k, detect_cycles=False)
        if cur.steps < k:
            break
        moved = [abs(x - y) for x, y in zip(cur.profile, prev)]
        assert sum(d > 0 for d in moved) == 1 and max(moved) == pytest.approx(unit)
        prev = cur.profile


def test_round_robin_cycles_include_the_turn():
    # a cycle reported for round robin must repeat the whole state: replay it
    game = LinearAnonymousGame.random(4, 0, "hard")   # a game (no pure NE) on which round robin cycles
    res = sequential_best_response(game, 0.003, rule="round_robin", max_steps=20000)
    assert res.cycle_length is not None and not res.converged
    a = sequential_best_response(game, 0.003, rule="round_robin", max_steps=res.steps, detect_cycles=False)
    b = sequential_best_response(game, 0.003, rule="round_robin", max_steps=res.steps + res.cycle_length,
                                 detect_cycles=False)
    assert a.profile == b.profile and a.steps == res.steps and b.steps == res.steps + res.cycle_length


def test_start_profile_is_checked():
    game = LinearAnonymousGame([1, -1], [0, 1])
    with pytest.raises(ValueError, match="start"):
        sequential_best_response(game, 0.1, start=[0, 2])
    with pytest.raises(ValueError, match="start"):
        sequential_best_response(game, 0.1, start=[0])
