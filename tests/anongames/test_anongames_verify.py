"""The model-free verifier against brute-force expectation over all pure profiles of the others."""

from fractions import Fraction
from itertools import product

import numpy as np
import pytest

from neurips26.anongames import LinearAnonymousGame, poisson_binomial, verify_anonymous


def _brute_regrets(u1, u0, p):
    n = len(p)
    out = []
    for i in range(n):
        others = [j for j in range(n) if j != i]
        e1 = e0 = Fraction(0)
        for xs in product((0, 1), repeat=n - 1):  # all 2^(n-1) profiles of the others
            w = Fraction(1)
            for j, x in zip(others, xs):
                w *= p[j] if x else 1 - p[j]
            m = sum(xs)
            e1 += w * u1[i][m]
            e0 += w * u0[i][m]
        best = max(e1, e0)
        out.append(best - (p[i] * e1 + (1 - p[i]) * e0))
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 10])
def test_verifier_matches_brute_force_on_general_tables(n):
    rng = np.random.default_rng(n)
    # general (non-linear) anonymous tables: the verifier must not rely on linearity
    u1 = [[Fraction(int(x), 3) for x in rng.integers(-9, 10, n)] for _ in range(n)]
    u0 = [[Fraction(int(x), 2) for x in rng.integers(-9, 10, n)] for _ in range(n)]
    p = [Fraction(int(x), 7) for x in rng.integers(0, 8, n)]
    assert verify_anonymous(u1, u0, p) == _brute_regrets(u1, u0, p)


@pytest.mark.parametrize("seed", range(3))
def test_verifier_agrees_with_linear_formula(seed):
    g = LinearAnonymousGame.random(6, seed)
    rng = np.random.default_rng(seed)
    p = [Fraction(int(x), 5) for x in rng.integers(0, 6, 6)]
    assert verify_anonymous(*g.payoff_tables(), p) == g.regrets(p)


def test_poisson_binomial_small():
    d = poisson_binomial([Fraction(1, 2), Fraction(1, 3), Fraction(1), Fraction(0)])
    assert d == [0, Fraction(1, 3), Fraction(1, 2), Fraction(1, 6), 0]
    assert sum(d) == 1


def test_verifier_bad_input():
    with pytest.raises(ValueError, match="ragged"):
        verify_anonymous([[1, 2], [3]], [[0, 0], [0, 0]], [0, 0])
    with pytest.raises(ValueError, match="U0: expected 2 rows"):
        verify_anonymous([[1, 2], [3, 4]], [[0, 0]], [0, 0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        verify_anonymous([[1, 2], [3, 4]], [[0, 0], [0, 0]], [0, 2])
    with pytest.raises(ValueError, match="expected 2 probabilities"):
        verify_anonymous([[1, 2], [3, 4]], [[0, 0], [0, 0]], [0])
    with pytest.raises(ValueError, match="finite"):
        verify_anonymous([[1, float("nan")], [3, 4]], [[0, 0], [0, 0]], [0, 0])
    with pytest.raises(TypeError, match="refuse"):
        verify_anonymous([[1, 0.5], [3, 4]], [[0, 0], [0, 0]], [0, 0], floats="refuse")
    with pytest.raises(ValueError, match="n >= 1"):
        verify_anonymous([], [], [])
