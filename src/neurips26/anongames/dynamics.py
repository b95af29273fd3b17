"""Sequential best-response dynamics that look for an eps-Nash equilibrium, and our path walk.

The paper's own dynamic is not recoverable from its abstract; everything here is ours (inferred) and is
measured by the claim check.

Regrets are *normalised*: player ``i``'s gains are divided by ``N_i = max_{m in [0, n-1]} |a_i m + b_i|``
so that every gain lies in [-1, 1]; an eps-NE has every normalised regret ``<= eps``.

**Sequential best response** (:func:`sequential_best_response`, the dynamic C3 is decided on). Players
revise *one at a time*; the reviser looks at the current profile of the others, ``S_{-i} = S - p_i``, and
moves its probability one grid unit ``1/K`` (``K = ceil(1/step)``, default ``step = eps/2``) toward its
best response (up when ``g_i = a_i (S_{-i} - tau_i) > 0``, down when ``g_i < 0``). Nobody sees an announced
aggregate and nobody moves for another player. Who revises is the *rule*:

* ``"substitutes_first"`` (our default, inferred): a substitute (``a_i < 0``) whose regret exceeds eps
  revises first (largest regret); only when every substitute is content does a complement (``a_i > 0``,
  largest regret) revise. Why this order: a mixing substitute absorbs a change of ``S`` (it lowers its own
  ``p`` as ``S_{-i}`` rises), which holds ``S`` nearly fixed while complements revise; a complement facing a
  fixed ``S`` converges to ``p_i = S - tau_i``, whereas complements alone amplify each other (their mixed
  equilibria are unstable).
* ``"max_regret"``: the player with the largest regret (the plain baseline).
* ``"round_robin"``: players in index order, skipping the content ones.

The state is a vector of integers (grid units), every rule is deterministic, so a run either reaches an
eps-NE or revisits a state: cycles are detected exactly (Brent's algorithm) and reported as
``cycle_length``. A fixed point of every rule is a profile where no player's regret exceeds eps, i.e. an
eps-NE; the final verdict is exact (Fractions on the returned grid profile).

**Path walk** (:func:`path_dynamics`, a labelled variant, not a best-response dynamic). A coordinator
announces an aggregate ``S`` and walks it along the staircase path Gamma of :mod:`.solve` in steps of length
``h`` (in units of S); at each point every player answers the announced ``S`` (C players
``clip(S - tau_i, 0, 1)``; along a diagonal piece exactly one U player moves). It stops at the first point
where the excess ``F = S - sum(p) >= 0``. Since ``regret_i <= |a_i| |F|`` and ``|a_i| / N_i <= 2 / (n - 1)``,
the normalised regret there is at most ``2 |F| / (n - 1)``; one step changes ``F`` by at most
``h * max(1, |C|)``, so the default

    h = eps * (n - 1) / (2 * max(1, |C|))

makes the stopping point an eps-NE after at most ``(length of Gamma within [0, n]) / h`` steps. Its
O(1/eps) step count therefore holds *by construction* (a fixed path walked in steps proportional to eps).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from neurips26.constraints import AnyOf, ArgumentTypeError, Bool, Choice, Int, Optional, Real, validate

from .exact import NUMBERS
from .game import GAME, LinearAnonymousGame, as_fraction, as_profile
from .solve import _Path


@dataclass(frozen=True)
class DynamicsResult:
    """Outcome of a dynamic.

    Attributes:
        profile: final mixed profile (floats; exact binary values of the walk's state).
        steps: number of moves made.
        converged: True when the final profile is an eps-NE (checked exactly on ``profile``).
        max_regret: the final maximum (normalised, if ``normalize``) regret, exact value as float.
        cycle_length: for best response, the period of a detected cycle (then ``converged`` is False).
        eps: the target.
        exact_profile: for best response, the grid state ``q_i / K`` as Fractions (``converged`` and
            ``max_regret`` are computed on it); ``None`` for the path walk.
    """

    profile: list[float]
    steps: int
    converged: bool
    max_regret: float
    eps: float
    cycle_length: int | None = None
    exact_profile: list[Fraction] | None = None


#: the target regret: an int, float or Fraction in (0, 1]
EPS = Real(low=0, high=1, closed="right", rational=True)
#: the walk step of :func:`path_dynamics` (``None``: the default), a number > 0
STEP = Optional(Real(low=0, closed="neither", rational=True))
#: the grid unit of :func:`sequential_best_response` (``None``: ``eps / 2``), in (0, 1]
UNIT = Optional(Real(low=0, high=1, closed="right", rational=True))
STARTS = ("zeros", "ones", "half")


class _Named(Choice):
    """One of the given names; a value that is not a string is a wrong type (``ArgumentTypeError``)."""

    def check(self, value: Any, name: str, where: str = "", dims: dict | None = None) -> None:
        if not isinstance(value, str):
            raise ArgumentTypeError(f"{where}: {name} must be {self.expected}, got {value!r}")
        super().check(value, name, where, dims)


#: where best response starts: a named profile or ``n`` probabilities (checked by :func:`as_profile`)
START = AnyOf(_Named(*STARTS), NUMBERS)


def _max_regret_exact(game: LinearAnonymousGame, profile: list[Any], normalize: bool) -> Fraction:
    prof = [Fraction(x) for x in profile]
    regrets = game.normalized_regrets(prof) if normalize else game.regrets(prof)
    return max(regrets)


@validate(game=GAME, eps=EPS, step=STEP, normalize=Bool(), max_steps=Int(low=0))
def path_dynamics(game: LinearAnonymousGame, eps: float, *, step: float | None = None, normalize: bool = True,
                  max_steps: int = 10**8) -> DynamicsResult:
    """Walk the announced aggregate along Gamma until the excess changes sign (ours, O(1/eps)).

    Args:
        game: the game.
        eps: target normalised (or raw, ``normalize=False``) regret, in (0, 1].
        step: walk step ``h`` in units of S; default chosen so the stopping point is an eps-NE.
        normalize: measure regret in normalised units (gains divided by ``N_i``).
        max_steps: safety cap (the walk always terminates well before on valid input).
    """
    eps_f = float(eps)
    step_f = None if step is None else float(step)
    n = game.n
    path = _Path.build(game, "fraction")
    n_c = len(path.c_tau)
    if step is None:
        if normalize:
            h = eps_f * max(n - 1, 1) / (2 * max(1, n_c))
        else:
            amax = max((abs(float(a)) for a in game.a), default=0.0) or 1.0
            h = eps_f / (amax * max(1, n_c))
    else:
        h = step_f
    # float copy of the path (the walk is a numerical process; the final check is exact)
    c_tau = [float(t) for t in path.c_tau]
    prefix = [0.0]
    for t in c_tau:
        prefix.append(prefix[-1] + t)
    u_tau = [float(t) for t in path.u_tau]
    c1 = path.c1

    def cpos(s: float) -> float:  # sum_C clip(s - tau, 0, 1)
        lo = bisect_right(c_tau, s - 1.0)
        hi = bisect_left(c_tau, s)
        return lo + (hi - lo) * s - (prefix[hi] - prefix[lo])

    def excess(kind: str, k: int, s: float) -> float:
        if kind == "H":
            return s - c1 - k - cpos(s)
        return u_tau[k - 1] - (k - 1) - c1 - cpos(s)

    pieces = [(kind, k, float(s0), float(s1)) for kind, k, s0, s1 in path.pieces()]
    # start at the first point of Gamma with S = 0 (F < 0 before it): on the first H piece reaching 0
    j = next(idx for idx, pc in enumerate(pieces) if pc[0] == "H" and pc[3] >= 0)
    s = max(0.0, pieces[j][2])
    steps = 0
    f = excess(pieces[j][0], pieces[j][1], s)
    while f < 0 and steps < max_steps:
        remaining = h
        while remaining > 0:
            kind, k, s0, s1 = pieces[j]
            dist = abs(s1 - s)
            if dist >= remaining or j == len(pieces) - 1:
                s += remaining if s1 >= s0 else -remaining
                remaining = 0.0
            else:
                remaining -= dist
                j += 1
                s = pieces[j][2]
        steps += 1
        f = excess(pieces[j][0], pieces[j][1], s)
    kind, k = pieces[j][0], pieces[j][1]
    profile = _float_profile_on_path(game, path, kind, k, s)
    regret = _max_regret_exact(game, profile, normalize)
    return DynamicsResult(profile, steps, regret <= as_fraction(eps_f), float(regret), eps_f)


def _float_profile_on_path(game: LinearAnonymousGame, path: _Path, kind: str, k: int, s: float) -> list[float]:
    taus = game._taus
    prof = []
    for i in range(game.n):
        cls = game._classes[i]
        if cls == "D":
            prof.append(1.0 if game.b[i] > 0 else 0.0)
        elif cls == "C":
            prof.append(min(max(s - float(taus[i]), 0.0), 1.0))
        else:
            prof.append(0.0)
    ones = k if kind == "H" else k - 1
    for pos, i in enumerate(path.u_idx):
        if pos < ones:
            prof[i] = 1.0
        elif kind == "D" and pos == k - 1:
            prof[i] = min(max(s - float(taus[i]), 0.0), 1.0)
    return prof


RULES = ("max_regret", "round_robin", "substitutes_first")


@validate(game=GAME, eps=EPS, step=UNIT, rule=Choice(*RULES), max_steps=Int(low=0), start=START,
          normalize=Bool(), detect_cycles=Bool())
def sequential_best_response(game: LinearAnonymousGame, eps: float, *, step: float | None = None,
                             rule: Literal["max_regret", "round_robin", "substitutes_first"] = "max_regret",
                             max_steps: int = 10**6, start: str | Sequence[Any] = "zeros",
                             normalize: bool = True, detect_cycles: bool = True) -> DynamicsResult:
    """Players revise one at a time, each one grid unit toward its best response (see the module docstring).

    Args:
        game: the game.
        eps: target normalised (or raw, ``normalize=False``) regret in (0, 1]; a player revises only while
            its regret exceeds eps, so every stopping point is an eps-NE.
        step: grid unit (default ``eps / 2``); probabilities are multiples of ``1 / ceil(1 / step)``.
        rule: who revises: ``"max_regret"`` (largest regret; lowest index on ties), ``"round_robin"``
            (index order, skipping content players) or ``"substitutes_first"`` (a discontent substitute
            before any complement, largest regret within the group).
        max_steps: cap on the number of revisions; ``converged=False`` when reached.
        start: initial profile: ``"zeros"``, ``"ones"``, ``"half"`` (the grid point at or below 1/2), or
            ``n`` probabilities, each rounded to the nearest grid point (ties down).
        normalize: regrets in normalised units.
        detect_cycles: stop as soon as a state repeats (Brent's algorithm on the integer state, which for
            ``round_robin`` includes whose turn it is), reporting ``cycle_length``.

    Returns:
        :class:`DynamicsResult`; ``steps`` counts single-player revisions.
    """
    eps_f = float(eps)
    start_profile = None if isinstance(start, str) else as_profile(start, game.n, name="start")
    unit = eps_f / 2 if step is None else float(step)
    grid = math.ceil(1 / unit - 1e-12)
    n = game.n
    a = np.array([float(x) for x in game.a])
    b = np.array([float(x) for x in game.b])
    if normalize:
        norms = np.array([float(x) for x in game.normalizers()])
        scale = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    else:
        scale = np.ones(n)
    substitutes = np.array([c == "U" for c in game.classes])
    if start_profile is None:
        q = np.full(n, {"zeros": 0, "ones": grid, "half": grid // 2}[start], dtype=np.int64)
    else:  # nearest grid point, ties down: ceil(p K - 1/2)
        q = np.array([math.ceil(p * grid - Fraction(1, 2)) for p in start_profile], dtype=np.int64)
    tol = eps_f + 1e-9  # float screen; the final verdict is exact

    def regrets(qv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # g_i = a_i (S - p_i) + b_i (normalised);  regret_i = max(g,0)(1-p_i) + max(-g,0) p_i
        p = qv / grid
        g = (a * (p.sum() - p) + b) * scale
        return np.maximum(g, 0) * (1 - p) + np.maximum(-g, 0) * p, g

    def reviser(r: np.ndarray, turn: int) -> int:
        discontent = r > eps_f
        if rule == "max_regret":
            return int(np.argmax(r))
        if rule == "substitutes_first":
            group = discontent & substitutes if (discontent & substitutes).any() else discontent
            return int(np.argmax(np.where(group, r, -1.0)))
        cand = np.nonzero(discontent)[0]
        if cand.size == 0:
            return int(np.argmax(r))
        later = cand[cand >= turn]
        return int(later[0] if later.size else cand[0])

    steps, cycle, turn = 0, None, 0
    # Brent: `tortoise` is the state at the last power of two; a repeat within `power` steps is a cycle
    tortoise, power, lam = q.tobytes() + turn.to_bytes(4, "little"), 1, 0
    while True:
        r, g = regrets(q)
        if r.max() <= tol and _max_regret_exact(game, _grid_profile(q, grid), normalize) <= as_fraction(eps_f):
            break
        if steps >= max_steps:
            break
        i = reviser(r, turn)
        if rule == "round_robin":
            turn = (i + 1) % n
        q[i] = min(max(q[i] + (1 if g[i] > 0 else -1), 0), grid)
        steps += 1
        if detect_cycles:
            state = q.tobytes() + turn.to_bytes(4, "little")
            lam += 1
            if state == tortoise:
                cycle = lam
                break
            if lam == power:
                tortoise, power, lam = state, power * 2, 0
    exact_prof = _grid_profile(q, grid)
    exact = _max_regret_exact(game, exact_prof, normalize)
    return DynamicsResult([float(x) for x in exact_prof], steps, exact <= as_fraction(eps_f), float(exact), eps_f,
                          cycle, exact_prof)


def _grid_profile(q: np.ndarray, grid: int) -> list[Fraction]:
    return [Fraction(int(x), grid) for x in q]
