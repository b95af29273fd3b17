"""What ``solve_exact`` is compared with.

- :func:`naive_scan_point` / ``solve_exact(method="scan")``: the same path, but every candidate point
  (piece ends and all C breakpoints) evaluated from scratch in O(n) with Fractions: O(n^3) worst case.
  No prefix sums, no bisection. It checks the sweep's *bookkeeping*, not the characterization: it is the
  same path algorithm, so it is not an independent method (support enumeration and Gambit are).
- :func:`brute_force_pure`: all 2^n pure profiles checked on the payoff tables (tiny n).
- :func:`complements_pure`, :func:`substitutes_pure`: the sorting algorithms of the special cases
  (all a > 0: maximise the potential over "the m smallest thresholds"; all a < 0: greedy on sorted
  thresholds).
- :func:`gambit_solve`: a Gambit solver on the expanded normal form (``n * 2^n`` payoffs) in a
  subprocess with a hard timeout (optional dependency ``pygambit``; Gambit solvers can hang).
- :func:`gambit_max_regret`: Gambit's own exact ``max_regret()`` of a rational profile on the expanded
  normal form (an implementation independent of ours; in-process, no solver runs).
- :func:`gambit_pure_count`: Gambit's ``enumpure_solve`` count of pure equilibria (in-process, small n).
- :func:`nashpy_equilibria`: support enumeration of nashpy for ``n = 2`` (optional dependency).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from fractions import Fraction
from itertools import product
from typing import Any

from neurips26.constraints import Choice, validate

from .game import GAME, ONE, ZERO, LinearAnonymousGame, check_size
from .solve import naive_scan_point

__all__ = ["GAMBIT_SOLVERS", "brute_force_pure", "complements_pure", "gambit_available", "gambit_max_regret",
           "gambit_pure_count", "gambit_solve", "nashpy_equilibria", "naive_scan_point", "substitutes_pure"]

GAMBIT_SOLVERS = ("enumpure", "enumpoly", "gnm", "ipa", "simpdiv", "logit", "liap", "lcp", "enummixed")


@validate(game=GAME)
def brute_force_pure(game: LinearAnonymousGame, *, max_players: int = 16) -> list[list[int]]:
    """All pure Nash equilibria, checking each of the 2^n profiles on the payoff tables."""
    check_size("brute_force_pure", game.n, max_players, "2^n profiles")
    u1, u0 = game.payoff_tables()
    out = []
    for prof in product((0, 1), repeat=game.n):
        total = sum(prof)
        ok = True
        for i, x in enumerate(prof):
            m = total - x
            mine, other = (u1[i][m], u0[i][m]) if x == 1 else (u0[i][m], u1[i][m])
            if other > mine:
                ok = False
                break
        if ok:
            out.append(list(prof))
    return out


@validate(game=GAME)
def complements_pure(game: LinearAnonymousGame) -> list[Fraction]:
    """All-complements games (every ``a_i > 0``): a pure NE maximising the potential.

    Over pure profiles with ``m`` players at 1, ``Phi = m(m-1)/2 - sum of their thresholds`` is largest
    for the ``m`` smallest thresholds; the best ``m`` gives a pure NE (a potential game: no unilateral
    deviation can raise Phi).
    """
    if any(ai <= 0 for ai in game.a):
        raise ValueError("complements_pure: expected every a_i > 0 (all complements)")
    taus = game.thresholds
    order = sorted(range(game.n), key=lambda i: (taus[i], i))
    best_m, best_phi, acc = 0, ZERO, ZERO
    for m in range(1, game.n + 1):
        acc += taus[order[m - 1]]
        phi = Fraction(m * (m - 1), 2) - acc
        if phi > best_phi:
            best_m, best_phi = m, phi
    prof = [ZERO] * game.n
    for i in order[:best_m]:
        prof[i] = ONE
    return prof


@validate(game=GAME)
def substitutes_pure(game: LinearAnonymousGame) -> list[Fraction]:
    """All-substitutes games (every ``a_i < 0``): the top ``k*`` thresholds play 1,
    ``k* = max{k : tau_(k) >= k - 1}`` with thresholds sorted descending (a pure NE always exists)."""
    if any(ai >= 0 for ai in game.a):
        raise ValueError("substitutes_pure: expected every a_i < 0 (all substitutes)")
    taus = game.thresholds
    order = sorted(range(game.n), key=lambda i: (-taus[i], i))
    k = 0
    while k < game.n and taus[order[k]] >= k:  # tau_(k+1) >= (k+1) - 1
        k += 1
    prof = [ZERO] * game.n
    for i in order[:k]:
        prof[i] = ONE
    return prof


def gambit_available() -> bool:
    try:
        import pygambit  # noqa: F401
    except ImportError:
        return False
    return True


@validate(game=GAME)
def gambit_max_regret(game: LinearAnonymousGame, profile: list[Fraction]) -> Fraction:
    """Gambit's exact maximum regret of ``profile`` (``Pr[play 1]`` per player) on ``game.to_gambit()``.

    The profile is set as a rational ``MixedStrategyProfile``; the payoffs are scaled per player by
    :meth:`~LinearAnonymousGame.to_gambit` (a positive scaling: zero regret stays zero).
    """
    import pygambit

    g = game.to_gambit()
    prof = g.mixed_strategy_profile(rational=True)
    for player, p in zip(list(g.players), profile):
        q = Fraction(p)
        prof[player] = [pygambit.Rational(1 - q), pygambit.Rational(q)]
    return Fraction(str(prof.max_regret()))


@validate(game=GAME)
def gambit_pure_count(game: LinearAnonymousGame) -> int:
    """The number of pure Nash equilibria that Gambit's ``enumpure_solve`` finds (in-process; small n)."""
    import pygambit

    return len(pygambit.nash.enumpure_solve(game.to_gambit()).equilibria)


_GAMBIT_SCRIPT = r"""
import json, sys, time
from fractions import Fraction
from neurips26.anongames.game import LinearAnonymousGame
import pygambit
spec = json.loads(sys.stdin.read())
game = LinearAnonymousGame(spec["a"], spec["b"])
t0 = time.perf_counter()
g = game.to_gambit()
t1 = time.perf_counter()
solve = getattr(pygambit.nash, spec["solver"] + "_solve")
if spec["solver"] == "simpdiv":      # starts from a rational profile (the centroid)
    res = solve(g.mixed_strategy_profile(rational=True))
elif spec["solver"] == "liap":       # starts from a float profile (the centroid)
    res = solve(g.mixed_strategy_profile())
else:
    res = solve(g)
t2 = time.perf_counter()
eqs = []
for eq in res.equilibria:
    probs = []
    for player in list(g.players):
        strat = list(player.strategies)[1]  # action 1
        probs.append(str(eq[strat]))
    try:
        mr = str(eq.max_regret())
    except Exception:
        mr = None
    eqs.append({"profile": probs, "gambit_max_regret": mr})
print(json.dumps({"build_s": t1 - t0, "solve_s": t2 - t1, "equilibria": eqs}))
"""


@validate(game=GAME, solver=Choice(*GAMBIT_SOLVERS))
def gambit_solve(game: LinearAnonymousGame, solver: str = "enumpure", *, timeout_s: float = 60.0) -> dict[str, Any]:
    """Run a Gambit solver on the expanded normal form in a subprocess with a hard timeout.

    Returns ``{"status": "ok"|"timeout"|"error"|"unavailable", "seconds": wall time, "equilibria":
    [{"profile": [str Fractions or floats], "gambit_max_regret": str}], "max_regret_exact": ...}`` where
    ``max_regret_exact`` is our exact regret of the first equilibrium (Gambit's floats converted exactly).
    """
    if not gambit_available():
        return {"status": "unavailable", "seconds": None, "equilibria": []}
    if game.n > 16:
        return {"status": "error", "seconds": None, "equilibria": [], "error": "n > 16 (n*2^n payoffs)"}
    spec = json.dumps({"a": [str(v) for v in game.a], "b": [str(v) for v in game.b], "solver": solver})
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", _GAMBIT_SCRIPT], input=spec, capture_output=True,
                              text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": time.perf_counter() - t0, "equilibria": []}
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"status": "error", "seconds": seconds, "equilibria": [], "error": last}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out.update(status="ok", seconds=seconds)
    if out["equilibria"]:
        prof = [Fraction(x) for x in out["equilibria"][0]["profile"]]
        prof = [min(max(v, ZERO), ONE) for v in prof]
        out["max_regret_exact"] = str(game.max_regret(prof))
    return out


@validate(game=GAME)
def nashpy_equilibria(game: LinearAnonymousGame) -> list[list[float]]:
    """nashpy's support enumeration for a 2-player game: ``[[Pr(p0 plays 1), Pr(p1 plays 1)], ...]``."""
    if game.n != 2:
        raise ValueError(f"nashpy_equilibria: nashpy handles 2 players only, got n={game.n}")
    import warnings

    import nashpy
    import numpy as np

    u1, u0 = game.payoff_tables()
    # rows: player 0's action (0, 1); columns: player 1's action (0, 1); m = the other's action
    A = np.array([[float(u0[0][0]), float(u0[0][1])], [float(u1[0][0]), float(u1[0][1])]])
    B = np.array([[float(u0[1][0]), float(u1[1][0])], [float(u0[1][1]), float(u1[1][1])]])
    with warnings.catch_warnings():  # nashpy warns on degenerate games (an even number of equilibria)
        warnings.simplefilter("ignore", RuntimeWarning)
        return [[float(x[1]), float(y[1])] for x, y in nashpy.Game(A, B).support_enumeration()]
