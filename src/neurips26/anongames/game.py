"""Two-action linear anonymous games with exact rational payoffs.

Player ``i`` of ``n`` chooses action 0 or 1; ``m`` is the number of *other* players choosing 1.
Only the gain of playing 1 over 0 matters for equilibria:

    D_i(m) = u_i(1, m) - u_i(0, m) = a_i * m + b_i                      (gain, payoff units)

A mixed profile is ``p`` in [0, 1]^n (``p_i = Pr[i plays 1]``), ``S = sum_j p_j``. Because ``D_i`` is
affine, its expectation needs only the first moment of ``M_{-i}``:

    g_i(p) = E[D_i(M_{-i})] = a_i * (S - p_i) + b_i
    regret_i(p) = max(g_i, 0) * (1 - p_i) + max(-g_i, 0) * p_i          (>= 0; NE <=> all zero)

Everything is kept in :class:`fractions.Fraction`; numbers are converted by :func:`as_fraction` (see
:mod:`.exact`, where the conversion rules, profiles and payoff tables live; re-exported here).
"""

from __future__ import annotations

import functools
import math
import random as _random
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from neurips26.constraints import Choice, Instance, Int, validate

from .exact import (
    FLOATS,
    MAX_DECIMAL_EXPONENT,
    NUMBERS,
    ONE,
    ZERO,
    FloatPolicy,
    as_fraction,
    as_profile,
    as_tables,
    check_lengths,
    fraction_list,
)

__all__ = ["GAME", "GAME_KINDS", "MAX_DECIMAL_EXPONENT", "ONE", "ZERO", "FloatPolicy", "LinearAnonymousGame",
           "as_fraction", "as_profile", "check_size"]

GAME_KINDS = ("random", "hard", "ties", "degenerate", "complements", "substitutes")


def check_size(where: str, n: int, high: int, why: str, bound: str = "") -> None:
    """``n <= high`` players for a method exponential in ``n`` (``why``: what grows; ``bound``: how ``high`` is
    named, e.g. ``"max_players="``); ``ValueError`` otherwise."""
    if n > high:
        raise ValueError(f"{where}: {why}; expected n <= {bound}{high}, got n={n}")


class LinearAnonymousGame:
    """An ``n``-player two-action anonymous game whose gain is affine in the count of others.

    Args:
        a: slopes, length ``n`` (payoff units per other player choosing 1).
        b: intercepts, length ``n`` (payoff units). ``D_i(m) = a[i] * m + b[i]``.
        floats: how floats are converted (``"exact"``, ``"decimal"``, ``"refuse"``).

    Attributes:
        n: number of players (>= 1).
        a, b: tuples of Fractions.
        classes: per player ``'C'`` (a > 0, complements), ``'U'`` (a < 0, substitutes), ``'D'`` (a = 0).
        thresholds: ``tau_i = -b_i / a_i`` for C/U players, ``None`` for D players.
    """

    @validate(a=NUMBERS, b=NUMBERS, floats=FLOATS)
    def __init__(self, a: Sequence[Any], b: Sequence[Any], *, floats: FloatPolicy = "exact") -> None:
        a_f = fraction_list(a, name="a", floats=floats)
        b_f = fraction_list(b, name="b", floats=floats)
        check_lengths([("a", a_f), ("b", b_f)])
        self.a: tuple[Fraction, ...] = tuple(a_f)
        self.b: tuple[Fraction, ...] = tuple(b_f)
        self._affine: tuple[tuple[Fraction, ...], ...] | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    @validate(alpha1=NUMBERS, beta1=NUMBERS, alpha0=NUMBERS, beta0=NUMBERS, floats=FLOATS)
    def from_affine(cls, alpha1: Sequence[Any], beta1: Sequence[Any], alpha0: Sequence[Any],
                    beta0: Sequence[Any], *, fraction_form: bool = False,
                    floats: FloatPolicy = "exact") -> LinearAnonymousGame:
        """From full utilities ``u_i(a, m) = alpha_a[i] + beta_a[i] * x``.

        ``x = m`` (count of others playing 1) or, with ``fraction_form=True``, ``x = m / (n - 1)``
        (fraction of others; ``x = 0`` when ``n = 1``). The full tables are kept for
        :meth:`payoff_tables` and :meth:`expected_utility`.
        """
        cols = [fraction_list(v, name=nm, floats=floats)
                for v, nm in ((alpha1, "alpha1"), (beta1, "beta1"), (alpha0, "alpha0"), (beta0, "beta0"))]
        n = check_lengths(list(zip(("alpha1", "beta1", "alpha0", "beta0"), cols)))
        al1, be1, al0, be0 = cols
        if fraction_form:
            scale = Fraction(1, n - 1) if n > 1 else ZERO
            be1 = [v * scale for v in be1]
            be0 = [v * scale for v in be0]
        game = cls([x - y for x, y in zip(be1, be0)], [x - y for x, y in zip(al1, al0)])
        game._affine = (tuple(al1), tuple(be1), tuple(al0), tuple(be0))
        return game

    @classmethod
    def from_tables(cls, U1: Sequence[Sequence[Any]], U0: Sequence[Sequence[Any]], *,
                    floats: FloatPolicy = "exact") -> LinearAnonymousGame:
        """From payoff tables ``U1[i][m]``, ``U0[i][m]`` (``m = 0..n-1``) that are affine in ``m``.

        Raises ValueError (naming the player and entry) when a table is ragged or not affine.
        """
        t1, t0 = as_tables(U1, U0, floats=floats)
        n = len(t1)
        al1, be1, al0, be0 = [], [], [], []
        for i in range(n):
            for table, al, be, nm in ((t1[i], al1, be1, "U1"), (t0[i], al0, be0, "U0")):
                slope = table[1] - table[0] if n > 1 else ZERO
                for m in range(n):
                    if table[m] != table[0] + slope * m:
                        raise ValueError(f"{nm}[{i}] is not affine in m: entry {m} is {table[m]}, "
                                         f"expected {table[0] + slope * m}; solve_exact needs linear games, "
                                         "use verify_anonymous for general anonymous games")
                al.append(table[0])
                be.append(slope)
        return cls.from_affine(al1, be1, al0, be0)

    @classmethod
    @validate(n=Int(low=1), seed=Int(), kind=Choice(*GAME_KINDS))
    def random(cls, n: int, seed: int = 0, kind: str = "random") -> LinearAnonymousGame:
        """A seeded synthetic game with integer or half-integer data.

        Kinds: ``random`` (a in -5..5, b integer spanning the range where thresholds matter),
        ``hard`` (alternating signs, thresholds on half-integers near n/2, no pure NE: forces mixing),
        ``ties`` (few distinct integer thresholds, shared by many players), ``degenerate`` (ties plus
        players with a = 0 and b in {-1, 0, 1}), ``complements`` (all a > 0), ``substitutes`` (all a < 0).
        """
        n, seed = int(n), int(seed)
        rng = _random.Random(f"anongames:{kind}:{n}:{seed}")
        span = max(n - 1, 1)
        if kind == "random":
            a = [rng.randint(-5, 5) for _ in range(n)]
            b = [rng.randint(-5 * span, 5 * span) for _ in range(n)]
            return cls(a, b)
        if kind in ("complements", "substitutes"):
            sign = 1 if kind == "complements" else -1
            a = [sign * rng.randint(1, 5) for _ in range(n)]
            taus = [Fraction(rng.randint(-2, 2 * n + 2), 2) for _ in range(n)]
            return cls(a, [-ai * t for ai, t in zip(a, taus)])
        if kind in ("ties", "degenerate"):
            levels = [Fraction(rng.randint(-1, n)) for _ in range(max(1, min(3, n)))]
            a, b = [], []
            for _ in range(n):
                if kind == "degenerate" and rng.random() < 0.25:
                    a.append(Fraction(0))
                    b.append(Fraction(rng.choice((-1, 0, 0, 1))))
                    continue
                ai = rng.choice((-3, -2, -1, 1, 2, 3))
                a.append(Fraction(ai))
                b.append(-ai * rng.choice(levels))
            return cls(a, b)
        # hard: alternating signs, thresholds on half-integers near the middle, rejected if a pure NE exists.
        for _ in range(1000):
            a = [(1 if i % 2 == 0 else -1) * rng.randint(1, 5) for i in range(n)]
            middle = Fraction(2 * ((n - 1) // 2) + 1, 2)  # the half-integer at or just above (n-1)/2
            taus = [middle + rng.randint(-2, 2) for _ in range(n)]
            game = cls(a, [-ai * t for ai, t in zip(a, taus)])
            if n == 1 or not game.has_pure_nash():
                return game
        return game  # pragma: no cover - every tried size finds one quickly

    # ------------------------------------------------------------------ structure
    @property
    def n(self) -> int:
        return len(self.a)

    @property
    def classes(self) -> list[str]:
        return list(self._classes)

    @property
    def thresholds(self) -> list[Fraction | None]:
        return list(self._taus)

    @functools.cached_property
    def _classes(self) -> tuple[str, ...]:
        return tuple("C" if ai.numerator > 0 else "U" if ai.numerator < 0 else "D" for ai in self.a)

    @functools.cached_property
    def _int_gains(self) -> tuple[int, list[int], list[int]] | None:
        """``(G, A, B)`` with ``A_i = G a_i``, ``B_i = G b_i`` integers (G = lcm of denominators), or None
        when G is huge (then the Fraction path is used). Scaling all gains by G > 0 keeps every sign."""
        big = math.lcm(*[v.denominator for v in self.a + self.b])
        if big.bit_length() > 256:
            return None
        return (big, [v.numerator * (big // v.denominator) for v in self.a],
                [v.numerator * (big // v.denominator) for v in self.b])

    @functools.cached_property
    def _taus(self) -> tuple[Fraction | None, ...]:
        # tau_i = -b_i / a_i, built from numerators/denominators directly (fast for n = 1e5)
        return tuple(Fraction(-bi.numerator * ai.denominator, bi.denominator * ai.numerator)
                     if ai.numerator else None for ai, bi in zip(self.a, self.b))

    def __repr__(self) -> str:
        counts = {c: self.classes.count(c) for c in "CUD"}
        return f"LinearAnonymousGame(n={self.n}, C={counts['C']}, U={counts['U']}, D={counts['D']})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LinearAnonymousGame) and (self.a, self.b) == (other.a, other.b)

    def __hash__(self) -> int:
        return hash((self.a, self.b))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``{"format": "anongames/v1", "kind": "linear", "a": [...], "b": [...]}`` (strings)."""
        return {"format": "anongames/v1", "kind": "linear",
                "a": [str(v) for v in self.a], "b": [str(v) for v in self.b]}

    # ------------------------------------------------------------------ payoffs of a profile
    def expected_gain(self, p: Sequence[Any]) -> list[Fraction]:
        """``g_i(p) = a_i (S - p_i) + b_i``, exact, one per player (payoff units)."""
        prof = as_profile(p, self.n)
        total = sum(prof, ZERO)
        return [ai * (total - pi) + bi for ai, bi, pi in zip(self.a, self.b, prof)]

    def regrets(self, p: Sequence[Any]) -> list[Fraction]:
        """Exact regret of each player (payoff units): best pure deviation minus current payoff."""
        prof = as_profile(p, self.n)
        gains = self.expected_gain(prof)
        return [max(g, ZERO) * (1 - pi) + max(-g, ZERO) * pi for g, pi in zip(gains, prof)]

    def max_regret(self, p: Sequence[Any]) -> Fraction:
        return max(self.regrets(p))

    def normalizers(self) -> list[Fraction]:
        """``N_i = max_{m in [0, n-1]} |D_i(m)|``; dividing gains by ``N_i`` puts them in [-1, 1]."""
        return [max(abs(bi), abs(ai * (self.n - 1) + bi)) for ai, bi in zip(self.a, self.b)]

    def normalized_regrets(self, p: Sequence[Any]) -> list[Fraction]:
        """Regrets divided by :meth:`normalizers` (0 for players whose gain is identically 0)."""
        return [r / nrm if nrm else ZERO for r, nrm in zip(self.regrets(p), self.normalizers())]

    def is_nash(self, p: Sequence[Any], tol: Any = 0) -> bool:
        """True when every exact regret is ``<= tol`` (``tol=0``: an exact Nash equilibrium)."""
        tol_f = as_fraction(tol, name="tol")
        if tol_f < 0:
            raise ValueError(f"tol: expected >= 0, got {tol_f}")
        return self.max_regret(p) <= tol_f

    def expected_utility(self, p: Sequence[Any]) -> list[Fraction]:
        """``E[u_i(p)]`` with the affine utilities (gains-only games use ``u_i(0, m) = 0``)."""
        prof = as_profile(p, self.n)
        total = sum(prof, ZERO)
        al1, be1, al0, be0 = self._affine_columns()
        out = []
        for i, pi in enumerate(prof):
            others = total - pi
            out.append(pi * (al1[i] + be1[i] * others) + (1 - pi) * (al0[i] + be0[i] * others))
        return out

    def potential(self, p: Sequence[Any]) -> Fraction:
        """The min-max function ``Phi(p) = sum_{i<j} p_i p_j - sum_{i in C u U} tau_i p_i``.

        ``dPhi/dp_i = S - p_i - tau_i``, so ``E[u_i](p) = a_i * Phi(p) + h_i(p_{-i})`` for every C/U
        player: C players maximise Phi, U players minimise it (a two-team zero-sum game on an
        indefinite quadratic). D players enter only through their fixed ``p_i``.
        """
        prof = as_profile(p, self.n)
        total = sum(prof, ZERO)
        pairs = (total * total - sum((x * x for x in prof), ZERO)) / 2
        linear = sum((t * x for t, x in zip(self.thresholds, prof) if t is not None), ZERO)
        return pairs - linear

    def payoff_tables(self) -> tuple[list[list[Fraction]], list[list[Fraction]]]:
        """``(U1, U0)`` with ``U_a[i][m] = u_i(a, m)`` for ``m = 0..n-1`` (lists of Fractions)."""
        al1, be1, al0, be0 = self._affine_columns()
        rng = range(self.n)
        u1 = [[al1[i] + be1[i] * m for m in rng] for i in rng]
        u0 = [[al0[i] + be0[i] * m for m in rng] for i in rng]
        return u1, u0

    def _affine_columns(self) -> tuple[tuple[Fraction, ...], ...]:
        if self._affine is not None:
            return self._affine
        zeros = tuple(ZERO for _ in range(self.n))
        return (self.b, self.a, zeros, zeros)

    # ------------------------------------------------------------------ pure equilibria
    def pure_nash_counts(self) -> list[int]:
        """The numbers ``K`` of players at 1 for which a pure NE with ``K`` ones exists (exact, O(n)).

        Player ``i`` may play 1 in a profile with ``K`` ones iff ``D_i(K-1) >= 0`` (``K >= 1``) and may play
        0 iff ``D_i(K) <= 0`` (``K <= n-1``); each is an interval of ``K``. A pure NE with ``K`` ones exists
        iff nobody can do neither and ``#must-1 <= K <= #must-1 + #either``. Interval counts per ``K``
        are accumulated with difference arrays.
        """
        n = self.n
        in1 = [0] * (n + 2)
        in0 = [0] * (n + 2)
        both = [0] * (n + 2)

        def add(diff: list[int], lo: int, hi: int) -> None:
            lo, hi = max(lo, 0), min(hi, n)
            if lo <= hi:
                diff[lo] += 1
                diff[hi + 1] -= 1

        for ai, bi, t in zip(self.a, self.b, self._taus):
            if t is None:
                r1 = (1, n) if bi >= 0 else (1, 0)
                r0 = (0, n - 1) if bi <= 0 else (1, 0)
            elif ai > 0:   # 1: K - 1 >= tau; 0: K <= tau
                r1 = (max(1, math.ceil(t + 1)), n)
                r0 = (0, min(n - 1, math.floor(t)))
            else:          # 1: K - 1 <= tau; 0: K >= tau
                r1 = (1, min(n, math.floor(t + 1)))
                r0 = (max(0, math.ceil(t)), n - 1)
            add(in1, *r1)
            add(in0, *r0)
            add(both, max(r1[0], r0[0]), min(r1[1], r0[1]))
        out = []
        c1 = c0 = cb = 0
        for k in range(n + 1):
            c1, c0, cb = c1 + in1[k], c0 + in0[k], cb + both[k]
            neither = n - c1 - c0 + cb
            must1 = c1 - cb
            if neither == 0 and must1 <= k <= must1 + cb:
                out.append(k)
        return out

    def has_pure_nash(self) -> bool:
        return bool(self.pure_nash_counts())

    # ------------------------------------------------------------------ Gambit
    def to_gambit(self, *, title: str = "linear anonymous game"):
        """The expanded normal form as a ``pygambit.Game`` (optional dependency; ``n <= 16``).

        Payoffs are scaled per player by the lcm of their denominators to integers (a positive
        per-player scaling leaves the equilibria unchanged) so Gambit stays exact.
        """
        try:
            import numpy as np
            import pygambit
        except ImportError as err:
            raise ImportError("to_gambit needs pygambit (pip install pygambit); it is optional") from err
        check_size("to_gambit", self.n, 16, "the normal form has n*2^n payoffs")
        u1, u0 = self.payoff_tables()
        arrays = []
        shape = (2,) * self.n
        for i in range(self.n):
            scale = math.lcm(*[v.denominator for v in u1[i] + u0[i]])
            arr = np.zeros(shape, dtype=object)
            for idx in np.ndindex(*shape):
                m = sum(idx) - idx[i]
                val = (u1[i][m] if idx[i] == 1 else u0[i][m]) * scale
                arr[idx] = int(val)
            arrays.append(arr)
        # strategy 0 of every player is action 0, strategy 1 is action 1 (array index order)
        return pygambit.Game.from_arrays(*arrays, title=title)


#: the declared game argument of the solvers, dynamics, baselines and writers
GAME = Instance(LinearAnonymousGame)
