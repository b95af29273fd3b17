"""Exact Nash equilibria of two-action linear anonymous games in O(n log n) (P09, NeurIPS 2026).

What: n players choose 0 or 1; player i's gain from playing 1 is ``a_i * m + b_i`` with ``m`` the number
of *other* players at 1. The paper (abstract only; no code or arXiv found) claims the first exact-NE
algorithm polynomial in n, via a combinatorial characterization, a min-max view, and an O(1/eps)
best-response dynamic.
Why: general anonymous games are PPAD-hard; Gambit-style solvers work on the n*2^n normal form and stall
by n ~ 12. With linear utilities the expected gain needs only ``S = sum_j p_j``.
How (our derivation, checked computationally): every player is feasible for a given ``S``; sweeping a
staircase path of (S, U-sum) points finds a zero of the excess ``F = S - sum(p)``, which is an exact NE
(:func:`solve_exact`, Fractions, always verified). :func:`verify_anonymous` checks any two-action
anonymous game from its payoff tables without using linearity. :func:`sequential_best_response` is a
real best-response dynamic (players revise one at a time); :func:`path_dynamics` is a coordinator that walks
the path in eps steps (O(1/eps) by construction). :func:`minmax_curvature` computes the Hessian of the
min-max function on each team. :mod:`.nfg` reads and writes Gambit's ``.nfg`` strategic form.
"""

from .dynamics import RULES, DynamicsResult, path_dynamics, sequential_best_response
from .game import GAME_KINDS, LinearAnonymousGame, as_fraction, as_profile
from .jsonio import GameFileError, dumps_game, load_game, loads_game
from .minmax import MinMaxCurvature, minmax_curvature, potential_hessian
from .nfg import dumps_nfg, format_gambit_profile, load_nfg, loads_nfg, loads_nfg_tables, parse_gambit_profile
from .solve import NashResult, enumerate_equilibria, solve_exact
from .verify import expected_payoffs, poisson_binomial, verify_anonymous

__all__ = [
    "GAME_KINDS",
    "RULES",
    "DynamicsResult",
    "GameFileError",
    "LinearAnonymousGame",
    "MinMaxCurvature",
    "NashResult",
    "as_fraction",
    "as_profile",
    "dumps_game",
    "dumps_nfg",
    "enumerate_equilibria",
    "expected_payoffs",
    "format_gambit_profile",
    "load_game",
    "load_nfg",
    "loads_game",
    "loads_nfg",
    "loads_nfg_tables",
    "minmax_curvature",
    "parse_gambit_profile",
    "path_dynamics",
    "poisson_binomial",
    "potential_hessian",
    "sequential_best_response",
    "solve_exact",
    "verify_anonymous",
]
