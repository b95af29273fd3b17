"""The game object: exact conversion rules, bad input, payoff tables, potential, pure equilibria."""

from decimal import Decimal
from fractions import Fraction
from itertools import product

import numpy as np
import pytest

from neurips26.anongames import GAME_KINDS, LinearAnonymousGame, as_fraction
from neurips26.anongames.baselines import brute_force_pure


def test_float_policies():
    assert as_fraction(0.1) == Fraction(3602879701896397, 36028797018963968)  # the binary value, exactly
    assert as_fraction(0.1, floats="decimal") == Fraction(1, 10)
    assert as_fraction(np.float32(0.5)) == Fraction(1, 2)
    assert as_fraction("3/7") == Fraction(3, 7)
    assert as_fraction(" 0.25 ") == Fraction(1, 4)
    assert as_fraction(Decimal("0.1")) == Fraction(1, 10)
    assert as_fraction(np.int64(-3)) == -3
    with pytest.raises(TypeError, match="refuse"):
        as_fraction(0.5, floats="refuse")
    for bad in (float("nan"), float("inf"), Decimal("NaN")):
        with pytest.raises(ValueError, match="finite"):
            as_fraction(bad, name="x")
    with pytest.raises(TypeError, match="bool"):
        as_fraction(True)
    with pytest.raises(ValueError, match="rational"):
        as_fraction("abc")
    with pytest.raises(ValueError, match="rational"):
        as_fraction("1/0")
    with pytest.raises(TypeError):
        as_fraction([1])
    with pytest.raises(ValueError, match="floats"):
        as_fraction(1, floats="fast")


def test_constructor_validation():
    with pytest.raises(ValueError, match="n >= 1"):
        LinearAnonymousGame([], [])
    with pytest.raises(ValueError, match="as many as a"):
        LinearAnonymousGame([1, 2], [1])
    with pytest.raises(ValueError, match=r"a\[1\].*finite"):
        LinearAnonymousGame([1, float("inf")], [0, 0])
    with pytest.raises(TypeError, match=r"b\[0\]"):
        LinearAnonymousGame([1], [0.5], floats="refuse")
    with pytest.raises(TypeError, match="sequence"):
        LinearAnonymousGame("12", "34")
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        LinearAnonymousGame.random(0)
    with pytest.raises(ValueError, match="kind"):
        LinearAnonymousGame.random(3, kind="weird")
    with pytest.raises(TypeError):
        LinearAnonymousGame.random(2.0)


def test_profile_validation():
    g = LinearAnonymousGame([1, -1], [0, 1])
    with pytest.raises(ValueError, match=r"p\[1\].*\[0, 1\]"):
        g.regrets([0, Fraction(3, 2)])
    with pytest.raises(ValueError, match=r"p\[0\]"):
        g.regrets([-0.1, 0])
    with pytest.raises(ValueError, match="expected 2"):
        g.regrets([0])
    with pytest.raises(ValueError, match="finite"):
        g.regrets([float("nan"), 0])
    with pytest.raises(ValueError, match="tol"):
        g.is_nash([0, 0], tol=-1)


def test_classes_thresholds():
    g = LinearAnonymousGame([2, -3, 0], [-1, 3, 5])
    assert g.classes == ["C", "U", "D"]
    assert g.thresholds == [Fraction(1, 2), Fraction(1), None]


def test_payoff_tables_match_definition_and_from_affine():
    g = LinearAnonymousGame.from_affine([1, 2, 0], [Fraction(1, 2), -1, 3], [0, 1, 1], [1, 1, 1])
    u1, u0 = g.payoff_tables()
    for i in range(3):
        for m in range(3):
            assert u1[i][m] - u0[i][m] == g.a[i] * m + g.b[i]
    # fraction form: x = m / (n - 1)
    h = LinearAnonymousGame.from_affine([0, 0, 0], [2, 2, 2], [0, 0, 0], [0, 0, 0], fraction_form=True)
    assert h.a == (1, 1, 1)
    back = LinearAnonymousGame.from_tables(*g.payoff_tables())
    assert back == g
    with pytest.raises(ValueError, match="not affine"):
        LinearAnonymousGame.from_tables([[0, 1, 3]] * 3, [[0, 0, 0]] * 3)


def _expected_utility_brute(g, p, i):
    u1, u0 = g.payoff_tables()
    total = Fraction(0)
    for prof in product((0, 1), repeat=g.n):
        w = Fraction(1)
        for j, x in enumerate(prof):
            w *= p[j] if x else 1 - p[j]
        m = sum(prof) - prof[i]
        total += w * (u1[i][m] if prof[i] else u0[i][m])
    return total


@pytest.mark.parametrize("seed", range(4))
def test_expected_utility_and_potential_identity(seed):
    rng = np.random.default_rng(seed)
    g = LinearAnonymousGame.from_affine(*[rng.integers(-4, 5, 5).tolist() for _ in range(4)])
    p = [Fraction(int(x), 6) for x in rng.integers(0, 7, 5)]
    for i in range(5):
        assert g.expected_utility(p)[i] == _expected_utility_brute(g, p, i)
    # E[u_i] = a_i * Phi + h_i(p_{-i}): changing p_i changes u_i by a_i times the change of Phi
    for i in range(5):
        if g.a[i] == 0:
            continue
        q = list(p)
        q[i] = Fraction(1, 3) if p[i] != Fraction(1, 3) else Fraction(4, 5)
        du = g.expected_utility(q)[i] - g.expected_utility(p)[i]
        assert du == g.a[i] * (g.potential(q) - g.potential(p))


@pytest.mark.parametrize("kind", GAME_KINDS)
def test_pure_nash_counts_match_brute_force(kind):
    for n in range(1, 8):
        for seed in range(6):
            g = LinearAnonymousGame.random(n, seed, kind)
            bf = brute_force_pure(g)
            assert sorted({sum(x) for x in bf}) == g.pure_nash_counts()


def test_hard_games_have_no_pure_nash_and_generators_are_seeded():
    for n in (2, 5, 9, 40):
        g = LinearAnonymousGame.random(n, 3, "hard")
        assert not g.has_pure_nash()
        assert g == LinearAnonymousGame.random(n, 3, "hard")
    assert LinearAnonymousGame.random(6, 1) != LinearAnonymousGame.random(6, 2)


def test_to_gambit_optional():
    pygambit = pytest.importorskip("pygambit")
    g = LinearAnonymousGame.random(3, 0, "hard")
    gg = g.to_gambit()
    assert isinstance(gg, pygambit.Game)
    assert len(list(gg.players)) == 3
