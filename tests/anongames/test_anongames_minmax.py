"""The min-max view: the Hessian of Phi read off by second differences, and its eigenvalues per team,
against hand-computed matrices and the closed form J - I (eigenvalues k - 1 once and -1, k - 1 times)."""

from fractions import Fraction

import numpy as np
import pytest

from neurips26.anongames import LinearAnonymousGame, minmax_curvature, potential_hessian


def test_hessian_of_a_hand_game():
    # players: C (a=1), U (a=-2), D (a=0, fixed at 1), C (a=3)
    game = LinearAnonymousGame([1, -2, 0, 3], [0, 1, 1, -1])
    players, hess = potential_hessian(game)
    assert players == [0, 1, 3]
    assert hess == [[0, 1, 1], [1, 0, 1], [1, 1, 0]]   # J - I on the strategic players, D does not enter


@pytest.mark.parametrize("a, nonconcave, nonconvex", [
    ([1, 1, -1, -1], True, True),          # 2 C, 2 U: both blocks [[0,1],[1,0]], eigenvalues -1, 1
    ([1, -1, -1, -1], False, True),        # 1 C: block [0] (linear, concave); 3 U: eigenvalues -1, -1, 2
    ([1, 2, 3], True, False),              # all C: no min block
    ([-1, -2], False, True),               # all U
    ([1, -1], False, False),               # matching pennies: bilinear, convex-concave
    ([0, 0, 1], False, False),
])
def test_curvature_classification_on_hand_games(a, nonconcave, nonconvex):
    game = LinearAnonymousGame(a, [1] * len(a))
    curv = minmax_curvature(game)
    assert curv.non_concave_in_max is nonconcave and curv.non_convex_in_min is nonconvex
    assert curv.nonconvex_nonconcave is (nonconcave and nonconvex)


@pytest.mark.parametrize("seed", range(5))
def test_block_eigenvalues_match_the_closed_form(seed):
    game = LinearAnonymousGame.random(9, seed, "degenerate")
    curv = minmax_curvature(game)
    for block, eig in ((curv.max_players, curv.max_eigenvalues), (curv.min_players, curv.min_eigenvalues)):
        k = len(block)
        expected = sorted([-1.0] * (k - 1) + [k - 1.0]) if k else []
        assert np.allclose(eig, expected)


def test_hessian_is_the_second_derivative_along_random_directions():
    """Phi(p + t d) - 2 Phi(p) + Phi(p - t d) = t^2 d^T H d for a quadratic (exact in Fractions)."""
    rng = np.random.default_rng(0)
    game = LinearAnonymousGame.random(6, 1, "random")
    players, hess = potential_hessian(game)
    base = [Fraction(1, 2)] * game.n
    for _ in range(5):
        d = [Fraction(0)] * game.n
        for i in players:
            d[i] = Fraction(int(rng.integers(-3, 4)), 12)
        plus = [x + y for x, y in zip(base, d)]
        minus = [x - y for x, y in zip(base, d)]
        second = game.potential(plus) - 2 * game.potential(base) + game.potential(minus)
        quad = sum(d[i] * hess[r][s] * d[j] for r, i in enumerate(players) for s, j in enumerate(players))
        assert second == quad


def test_refuses_non_games():
    with pytest.raises(TypeError, match="game"):
        minmax_curvature([1, -1])
