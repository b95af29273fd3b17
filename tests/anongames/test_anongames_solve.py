"""solve_exact against independent references: model-free verifier, support enumeration, brute force."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.anongames import (
    GAME_KINDS,
    LinearAnonymousGame,
    NashResult,
    enumerate_equilibria,
    solve_exact,
    verify_anonymous,
)
from neurips26.anongames.baselines import brute_force_pure, complements_pure, substitutes_pure
from neurips26.anongames.solve import linear_max_regret


def _pattern(p):
    return tuple(0 if v == 0 else 1 if v == 1 else 2 for v in p)


def _check_against_enumeration(game, result):
    """The solver's NE has a support pattern the enumeration finds; when that pattern's NE is isolated
    (not exactly one strategic mixer), it is the very same profile."""
    eqs = list(enumerate_equilibria(game))
    assert eqs, "every game has an equilibrium"
    patterns = {_pattern(e): e for e in eqs}
    pat = _pattern(result.profile)
    assert pat in patterns
    strategic_mixers = [i for i, x in enumerate(pat) if x == 2 and game.a[i] != 0]
    if len(strategic_mixers) != 1:
        assert patterns[pat] == result.profile
    return eqs


@pytest.mark.parametrize("kind", GAME_KINDS)
def test_solve_exact_is_exact_nash_small(kind):
    for n in range(1, 8):
        for seed in range(5):
            game = LinearAnonymousGame.random(n, seed, kind)
            res = solve_exact(game)
            assert isinstance(res, NashResult) and res.verified
            assert max(verify_anonymous(*game.payoff_tables(), res.profile)) == 0  # model-free
            assert res.total == sum(res.profile)
            eqs = _check_against_enumeration(game, res)
            for e in eqs:
                assert max(verify_anonymous(*game.payoff_tables(), e)) == 0
            pure = sorted(tuple(int(v) for v in e) for e in eqs if all(v in (0, 1) for v in e))
            if not any(a == 0 and b == 0 for a, b in zip(game.a, game.b)):
                assert pure == sorted(map(tuple, brute_force_pure(game)))


@pytest.mark.parametrize("kind", ["random", "hard", "ties", "degenerate"])
def test_backends_and_scan_agree(kind):
    for n in (3, 9, 30):
        for seed in range(3):
            game = LinearAnonymousGame.random(n, seed, kind)
            fast = solve_exact(game, backend="int")
            slow = solve_exact(game, backend="fraction")
            assert fast.profile == slow.profile  # same point on the path
            scan = solve_exact(game, method="scan")  # first zero along the path: a NE, maybe another one
            assert game.max_regret(scan.profile) == 0


def test_large_games_verified_by_plain_regrets():
    for kind in ("random", "hard", "ties"):
        game = LinearAnonymousGame.random(2000, 1, kind)
        res = solve_exact(game)
        assert game.max_regret(res.profile) == 0  # plain Fraction formula, independent of the fast check


def test_fast_regret_matches_plain_on_non_equilibria():
    game = LinearAnonymousGame([3, -2, Fraction(1, 2), 0, -1], [-2, 3, Fraction(-1, 3), 1, 0])
    for p in ([0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [Fraction(1, 2), 0, 1, 1, Fraction(1, 3)]):
        p = [Fraction(x) for x in p]
        assert linear_max_regret(game, p) == game.max_regret(p)


def test_special_case_algorithms_are_nash():
    for seed in range(5):
        for n in (1, 4, 11):
            g = LinearAnonymousGame.random(n, seed, "complements")
            assert g.max_regret(complements_pure(g)) == 0
            h = LinearAnonymousGame.random(n, seed, "substitutes")
            assert h.max_regret(substitutes_pure(h)) == 0
    with pytest.raises(ValueError, match="a_i > 0"):
        complements_pure(LinearAnonymousGame([1, -1], [0, 0]))


def test_edge_cases():
    # n = 1: a is irrelevant (m = 0), only the sign of b matters
    assert solve_exact(LinearAnonymousGame([5], [-1])).profile == [0]
    assert solve_exact(LinearAnonymousGame([-5], [1])).profile == [1]
    # everybody indifferent
    assert solve_exact(LinearAnonymousGame([0, 0], [0, 0])).profile == [0, 0]
    # thresholds far outside [0, n - 1]
    g = LinearAnonymousGame([1, 1, -1, -1], [100, -100, 100, -100])
    assert g.max_regret(solve_exact(g).profile) == 0
    # matching pennies-like 2-player game: unique mixed NE
    mp = LinearAnonymousGame([2, -2], [-1, 1])
    assert solve_exact(mp).profile == [Fraction(1, 2), Fraction(1, 2)]
    assert list(enumerate_equilibria(mp)) == [[Fraction(1, 2), Fraction(1, 2)]]


def test_enumerate_equilibria_count_and_limit():
    # equal substitute thresholds: C(n, k) pure equilibria
    g = LinearAnonymousGame([-1] * 5, [Fraction(3, 2)] * 5)  # tau = 3/2: exactly 2 players at 1
    eqs = list(enumerate_equilibria(g))
    assert sum(1 for e in eqs if all(v in (0, 1) for v in e)) == 10
    assert len(list(enumerate_equilibria(g, limit=3))) == 3
    with pytest.raises(ValueError, match="limit"):
        list(enumerate_equilibria(g, limit=-1))
    with pytest.raises(ValueError, match="max_players"):
        list(enumerate_equilibria(LinearAnonymousGame.random(20)))


def test_solve_bad_input():
    with pytest.raises(TypeError, match="LinearAnonymousGame"):
        solve_exact([1, 2])
    g = LinearAnonymousGame([1], [1])
    with pytest.raises(ValueError, match="method"):
        solve_exact(g, method="magic")
    with pytest.raises(ValueError, match="backend"):
        solve_exact(g, backend="gpu")


def test_model_free_certificate():
    res = solve_exact(LinearAnonymousGame.random(8, 2, "hard"), model_free=True)
    assert res.certificate["model_free_max_regret"] == "0"
    assert res.certificate["max_regret"] == "0"


_rationals = st.builds(Fraction, st.integers(-12, 12), st.integers(1, 4))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(st.lists(_rationals, min_size=n, max_size=n),
                                                      st.lists(_rationals, min_size=n, max_size=n))))
def test_property_random_rational_games(ab):
    a, b = ab
    game = LinearAnonymousGame(a, b)
    res = solve_exact(game)
    assert max(verify_anonymous(*game.payoff_tables(), res.profile)) == 0
    assert solve_exact(game, backend="fraction").profile == res.profile
    _check_against_enumeration(game, res)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 10**6), st.sampled_from(GAME_KINDS))
def test_property_generated_games(n, seed, kind):
    game = LinearAnonymousGame.random(n, seed, kind)
    res = solve_exact(game)
    assert game.max_regret(res.profile) == 0


def test_huge_denominators_switch_to_fraction_path():
    primes = [p for p in range(1000, 3000) if all(p % d for d in range(2, int(p ** 0.5) + 1))][:120]
    # distinct prime denominators in a and b: thresholds and gains have common denominators > 256 bits
    a = [Fraction((-1) ** i * (i + 1), p) for i, p in enumerate(primes[:60])]
    b = [Fraction(30 * q - i * q // 2, q) + Fraction(1, q) for i, q in enumerate(primes[60:])]
    game = LinearAnonymousGame(a, b)
    assert game._int_gains is None
    res = solve_exact(game)
    assert res.certificate["backend"] == "fraction"
    assert game.max_regret(res.profile) == 0
    assert solve_exact(game, backend="int").profile == res.profile
