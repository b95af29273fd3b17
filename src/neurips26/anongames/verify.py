"""Model-free exact verification for any two-action anonymous game given as payoff tables.

A two-action anonymous game is fully described by ``U1[i][m]`` and ``U0[i][m]``: player ``i``'s payoff
for playing 1 / 0 when ``m`` (= 0..n-1) *other* players play 1. Under a mixed profile ``p`` the count
``M_{-i} = sum_{j != i} Bernoulli(p_j)`` is Poisson-binomial; its law is built by the exact DP

    dist_0 = [1],   dist_{j+1}[m] = dist_j[m] * (1 - p_j) + dist_j[m-1] * p_j     (j != i)

in Fractions. Then ``E1_i = sum_m dist[m] U1[i][m]``, ``E0_i`` likewise, and

    regret_i = max(E1_i, E0_i) - (p_i E1_i + (1 - p_i) E0_i)

This does *not* use linearity (it never forms ``S``), so it checks the first-moment shortcut of the
solver independently. Cost: O(n^2) per player, O(n^3) in all (fine to n ~ 100).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from neurips26.constraints import validate

from .exact import FLOATS, NUMBERS, ROWS, ZERO, FloatPolicy, as_profile, as_tables, check_probabilities, fraction_list

__all__ = ["as_tables", "expected_payoffs", "poisson_binomial", "verify_anonymous"]


@validate(probs=NUMBERS)
def poisson_binomial(probs: Sequence[Fraction]) -> list[Fraction]:
    """Exact law of the number of successes of independent Bernoulli(``probs[j]``): length ``len+1``."""
    probs = check_probabilities(fraction_list(probs, name="probs", floats="exact"), "probs")
    dist = [Fraction(1)]
    for q in probs:
        if q == 0:
            dist = dist + [ZERO]
            continue
        if q == 1:
            dist = [ZERO] + dist
            continue
        stay = 1 - q
        new = [dist[0] * stay]
        for m in range(1, len(dist)):
            new.append(dist[m] * stay + dist[m - 1] * q)
        new.append(dist[-1] * q)
        dist = new
    return dist


@validate(U1=ROWS, U0=ROWS, p=NUMBERS, floats=FLOATS)
def expected_payoffs(U1: Sequence[Sequence[Any]], U0: Sequence[Sequence[Any]], p: Sequence[Any], *,
                     floats: FloatPolicy = "exact") -> tuple[list[Fraction], list[Fraction]]:
    """``(E1, E0)``: each player's exact expected payoff of playing 1 and 0 against ``p_{-i}``."""
    t1, t0 = as_tables(U1, U0, floats=floats)
    n = len(t1)
    prof = as_profile(p, n, floats=floats)
    e1, e0 = [], []
    for i in range(n):
        dist = poisson_binomial(prof[:i] + prof[i + 1:])
        e1.append(sum((w * u for w, u in zip(dist, t1[i]) if w), ZERO))
        e0.append(sum((w * u for w, u in zip(dist, t0[i]) if w), ZERO))
    return e1, e0


@validate(U1=ROWS, U0=ROWS, p=NUMBERS, floats=FLOATS)
def verify_anonymous(U1: Sequence[Sequence[Any]], U0: Sequence[Sequence[Any]], p: Sequence[Any], *,
                     floats: FloatPolicy = "exact") -> list[Fraction]:
    """Exact regret of each player under ``p`` for the anonymous game ``(U1, U0)`` (payoff units).

    Args:
        U1, U0: ``n x n`` tables, ``U_a[i][m]`` = payoff of ``i`` playing ``a`` with ``m`` others at 1.
        p: ``n`` probabilities of playing 1, in [0, 1].

    Returns:
        ``n`` Fractions ``>= 0``; ``p`` is a Nash equilibrium iff all are 0.
    """
    e1, e0 = expected_payoffs(U1, U0, p, floats=floats)
    prof = as_profile(p, len(e1), floats=floats)
    return [max(x1, x0) - (pi * x1 + (1 - pi) * x0) for x1, x0, pi in zip(e1, e0, prof)]
