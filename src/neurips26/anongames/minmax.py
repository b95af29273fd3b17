"""The min-max view, computed: the curvature of Phi on each team's block (our derivation).

With ``tau_i = -b_i / a_i``, the function

    Phi(p) = sum_{i<j} p_i p_j - sum_{i in C u U} tau_i p_i

satisfies ``E[u_i](p) = a_i Phi(p) + h_i(p_{-i})`` (see :meth:`LinearAnonymousGame.potential`): the
complements C (``a_i > 0``) maximise Phi and the substitutes U (``a_i < 0``) minimise it, a two-team
zero-sum game. Whether that min-max problem is convex-concave is a question about the Hessian of Phi on
each block: the max problem is concave iff ``H_CC`` is negative semidefinite, the min problem convex iff
``H_UU`` is positive semidefinite.

:func:`potential_hessian` does not assume the closed form ``H = J - I``: it reads every entry off Phi by
exact second differences (Phi is quadratic, so these are exact, not approximations)

    H_ij = Phi(e_i + e_j) - Phi(e_i) - Phi(e_j) + Phi(0)          (i != j)
    H_ii = 4 (Phi(e_i) - 2 Phi(e_i / 2) + Phi(0))

evaluated with the constant players (``a_i = 0``) at their fixed action, and :func:`minmax_curvature`
takes the eigenvalues of each block (``numpy.linalg.eigvalsh``; the entries are small integers).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from neurips26.constraints import validate

from .game import GAME, ONE, ZERO, LinearAnonymousGame

#: eigenvalues within this of 0 count as 0 (the Hessian has integer entries; its eigenvalues are far from it)
EIG_TOL = 1e-9


@validate(game=GAME)
def potential_hessian(game: LinearAnonymousGame) -> tuple[list[int], list[list[Fraction]]]:
    """``(players, H)``: the strategic players (C and U, by index) and the exact Hessian of Phi over them.

    Returns:
        players: indices of the players with ``a_i != 0``, ascending (length ``k``).
        H: ``k x k`` nested list of Fractions, ``H[r][s] = d^2 Phi / dp_{players[r]} dp_{players[s]}``.
    """
    base = [(ONE if b > 0 else ZERO) if a == 0 else ZERO for a, b in zip(game.a, game.b)]
    players = [i for i in range(game.n) if game.a[i] != 0]

    def phi(changes: dict[int, Fraction]) -> Fraction:
        prof = list(base)
        for i, v in changes.items():
            prof[i] = v
        return game.potential(prof)

    phi0 = phi({})
    single = {i: phi({i: ONE}) for i in players}
    half = {i: phi({i: Fraction(1, 2)}) for i in players}
    hess = []
    for i in players:
        row = []
        for j in players:
            if i == j:
                row.append(4 * (single[i] - 2 * half[i] + phi0))
            else:
                row.append(phi({i: ONE, j: ONE}) - single[i] - single[j] + phi0)
        hess.append(row)
    return players, hess


@dataclass(frozen=True)
class MinMaxCurvature:
    """The curvature of Phi on each team's block.

    Attributes:
        max_players, min_players: indices of the complements (maximisers) and substitutes (minimisers).
        max_eigenvalues, min_eigenvalues: eigenvalues of ``H_CC`` and ``H_UU``, ascending (empty for an
            empty block).
        non_concave_in_max: ``H_CC`` has an eigenvalue > 0 (the max problem is not concave).
        non_convex_in_min: ``H_UU`` has an eigenvalue < 0 (the min problem is not convex).
    """

    max_players: list[int]
    min_players: list[int]
    max_eigenvalues: list[float]
    min_eigenvalues: list[float]
    non_concave_in_max: bool
    non_convex_in_min: bool

    @property
    def nonconvex_nonconcave(self) -> bool:
        """Both at once: the min-max problem is non-convex in the min block and non-concave in the max block."""
        return self.non_concave_in_max and self.non_convex_in_min


def _eigenvalues(hess: list[list[Fraction]], rows: list[int]) -> list[float]:
    if not rows:
        return []
    block = np.array([[float(hess[r][s]) for s in rows] for r in rows])
    return [float(x) for x in np.linalg.eigvalsh(block)]


@validate(game=GAME)
def minmax_curvature(game: LinearAnonymousGame) -> MinMaxCurvature:
    """Eigenvalues of the Hessian of Phi on the complements' and on the substitutes' block."""
    players, hess = potential_hessian(game)
    c_rows = [r for r, i in enumerate(players) if game.a[i] > 0]
    u_rows = [r for r, i in enumerate(players) if game.a[i] < 0]
    max_eig = _eigenvalues(hess, c_rows)
    min_eig = _eigenvalues(hess, u_rows)
    return MinMaxCurvature(
        max_players=[players[r] for r in c_rows], min_players=[players[r] for r in u_rows],
        max_eigenvalues=max_eig, min_eigenvalues=min_eig,
        non_concave_in_max=bool(max_eig) and max_eig[-1] > EIG_TOL,
        non_convex_in_min=bool(min_eig) and min_eig[0] < -EIG_TOL)
