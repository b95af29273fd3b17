"""One exact Nash equilibrium in O(n log n): a sweep along the staircase path of the characterization.

Our derivation (the paper's proof is not public; see README). Write ``tau_i = -b_i / a_i``.

Per-player feasibility given the total ``S = sum_j p_j`` (``g_i = a_i (S - p_i - tau_i)``):
  C (a_i > 0): ``p_i = clip(S - tau_i, 0, 1)`` (unique);
  U (a_i < 0): 1 if ``S <= tau_i + 1``, 0 if ``S >= tau_i``, ``S - tau_i`` if in between;
  D (a_i = 0): 1 if ``b_i > 0``, else 0 (indifferent players, ``b_i = 0``, are fixed at 0).

Sort U thresholds descending, ``tau_(1) >= ... >= tau_(r)``. The profiles where the first ``k`` U players
play 1, at most the ``(k+1)``-th mixes and the rest play 0 form, in the ``(S, sigma)`` plane
(``sigma`` = U-sum), a connected path Gamma traversed as ``H_r, D_r, H_{r-1}, ..., D_1, H_0``:

    H_k = {sigma = k,                    S in [tau_(k+1), tau_(k) + 1]}      (S increasing)
    D_k = {sigma = k - 1 + S - tau_(k),  S from tau_(k) + 1 down to tau_(k)} (the k-th U player mixes)

With ``c1`` = D players at 1 and ``Cpos(S) = sum_{i in C} clip(S - tau_i, 0, 1)``, the excess

    F = S - c1 - sigma - Cpos(S)        (H_k: S - c1 - k - Cpos(S);  D_k: tau_(k) - (k-1) - c1 - Cpos(S))

is continuous along Gamma, < 0 for S < 0 and > 0 for S > n, and any zero of F is a Nash equilibrium
(the total is consistent and every player is feasible). The sweep evaluates F at the piece endpoints
in path order (``Cpos`` in O(log n) by bisection and prefix sums), stops at the first endpoint with
``F >= 0``, bisects over the C breakpoints ``{tau_i, tau_i + 1}`` inside that piece to a linear
stretch, and solves the linear equation exactly. The result is always verified exactly.

Fast path: when the lcm ``L`` of the threshold denominators is small, all of this runs on integers
(``S`` scaled by ``L``); otherwise on Fractions. Both give the same point (tests compare them).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from heapq import merge
from itertools import product
from typing import Any, Literal, NoReturn

from neurips26.constraints import Choice, Int, Optional, validate

from .game import GAME, ONE, ZERO, LinearAnonymousGame, check_size

Backend = Literal["auto", "int", "fraction"]
BACKENDS = ("auto", "int", "fraction")
_INT_BITS = 256  # use the integer path while the common denominator L has at most this many bits


def _broken(what: str) -> NoReturn:
    """An invariant of the path argument failed (it cannot on any game; a bug if it ever does)."""
    raise RuntimeError(f"internal error: {what}")


@dataclass
class _Path:
    """The staircase path Gamma in a chosen number representation (``one`` = the unit of S)."""

    n: int
    one: Any                      # int L (scaled) or 1 (Fractions)
    c_tau: list[Any]              # C thresholds, ascending (scaled)
    c_prefix: list[Any]           # prefix sums of c_tau, length |C| + 1
    bps: list[Any]                # C breakpoints {tau, tau + one}, ascending
    u_tau: list[Any]              # U thresholds, descending (scaled); u_tau[k-1] = tau_(k)
    u_idx: list[int]              # player index of each entry of u_tau
    c1: int                       # D players fixed at 1
    integer: bool = False         # True: S is scaled by ``one`` = L and everything is an int

    @classmethod
    def build(cls, game: LinearAnonymousGame, backend: Backend = "auto") -> _Path:
        """The path of ``game`` (``backend``: one of :data:`BACKENDS`, declared by the public callers)."""
        taus = game._taus
        classes = game._classes
        dens = [t.denominator for t in taus if t is not None]
        lcm = math.lcm(*dens) if dens else 1
        use_int = backend == "int" or (backend == "auto" and lcm.bit_length() <= _INT_BITS)
        if use_int:
            one: Any = lcm
            scaled = [None if t is None else t.numerator * (lcm // t.denominator) for t in taus]
        else:
            one = 1
            scaled = list(taus)
        c_tau = sorted(scaled[i] for i in range(game.n) if classes[i] == "C")
        prefix = [0]
        for t in c_tau:
            prefix.append(prefix[-1] + t)
        bps = list(merge(c_tau, [t + one for t in c_tau]))
        u_idx = sorted((i for i in range(game.n) if classes[i] == "U"), key=lambda i: (-scaled[i], i))
        c1 = sum(1 for i in range(game.n) if classes[i] == "D" and game.b[i].numerator > 0)
        return cls(game.n, one, c_tau, prefix, bps, [scaled[i] for i in u_idx], u_idx, c1, use_int)

    # Cpos(S) = one * #(tau <= S - one) + sum_{tau in (S - one, S)} (S - tau)       [scaled units]
    def cpos(self, s: Any) -> Any:
        lo = bisect_right(self.c_tau, s - self.one)
        hi = bisect_left(self.c_tau, s)
        return self.one * lo + (hi - lo) * s - (self.c_prefix[hi] - self.c_prefix[lo])

    def excess(self, kind: str, k: int, s: Any) -> Any:
        """F at the point of piece ``(kind, k)`` with aggregate ``s`` (scaled)."""
        if kind == "H":
            return s - self.one * (self.c1 + k) - self.cpos(s)
        return self.u_tau[k - 1] - self.one * (k - 1 + self.c1) - self.cpos(s)

    def pieces(self) -> Iterator[tuple[str, int, Any, Any]]:
        """``(kind, k, S_start, S_end)`` in path order, the infinite ends cut at ``-1`` and ``n + 1``."""
        one, tau, r = self.one, self.u_tau, len(self.u_tau)
        low, high = -one, one * (self.n + 1)
        if r == 0:
            yield ("H", 0, low, high)
            return
        yield ("H", r, min(low, tau[r - 1] + one), tau[r - 1] + one)
        for k in range(r, 0, -1):
            yield ("D", k, tau[k - 1] + one, tau[k - 1])
            if k > 1:
                yield ("H", k - 1, tau[k - 1], tau[k - 2] + one)
        yield ("H", 0, tau[0], max(high, tau[0]))


@dataclass(frozen=True)
class NashResult:
    """An exact Nash equilibrium with its certificate.

    Attributes:
        profile: ``n`` Fractions, ``profile[i] = Pr[player i plays 1]``.
        total: ``S = sum(profile)`` (expected number of players at 1).
        max_regret: exact maximum regret (payoff units); 0 for a verified equilibrium.
        piece: the piece of the path holding the equilibrium (``"H_k"`` or ``"D_k"``).
        certificate: how it was verified and what was checked (JSON-ready strings/numbers).
    """

    profile: list[Fraction]
    total: Fraction
    max_regret: Fraction
    piece: str
    certificate: dict[str, Any] = field(default_factory=dict)

    @property
    def mixers(self) -> list[int]:
        return [i for i, v in enumerate(self.profile) if 0 < v < 1]

    @property
    def is_pure(self) -> bool:
        return not self.mixers

    @property
    def verified(self) -> bool:
        return self.max_regret == 0


def _sweep(path: _Path) -> tuple[str, int, Fraction]:
    """The first zero of F along Gamma: returns ``(kind, k, S)`` with ``S`` unscaled."""
    pieces = path.pieces()
    first = next(pieces)
    f_start = path.excess(first[0], first[1], first[2])
    if f_start >= 0:  # pragma: no cover - impossible: S < 0 there
        _broken("F >= 0 at the start of the path")
    found = None
    for piece in _chain(first, pieces):
        kind, k, s0, s1 = piece
        f_end = path.excess(kind, k, s1)
        if f_end >= 0:
            found = piece
            break
    if found is None:  # pragma: no cover - impossible: F > 0 at the end of the path
        _broken("F < 0 at the end of the path")
    kind, k, s0, s1 = found
    # Breakpoints strictly inside the piece, in traversal order (S increases on H, decreases on D).
    lo_s, hi_s = (s0, s1) if s0 <= s1 else (s1, s0)
    i0, i1 = bisect_right(path.bps, lo_s), bisect_left(path.bps, hi_s)
    inner = i1 - i0
    increasing = s0 <= s1

    def point(j: int) -> Any:  # j = 0: s0, j = inner + 1: s1, else the j-th inner breakpoint
        if j == 0:
            return s0
        if j == inner + 1:
            return s1
        return path.bps[i0 + j - 1] if increasing else path.bps[i1 - j]

    lo, hi = 0, inner + 1
    f_lo = path.excess(kind, k, point(lo))
    f_hi = path.excess(kind, k, point(hi))
    if f_lo >= 0:  # the previous piece ended with F < 0 at this very point
        _broken("F >= 0 at the start of the crossing piece")  # pragma: no cover
    while hi - lo > 1:
        mid = (lo + hi) // 2
        f_mid = path.excess(kind, k, point(mid))
        if f_mid < 0:
            lo, f_lo = mid, f_mid
        else:
            hi, f_hi = mid, f_mid
    x0, x1 = point(lo), point(hi)
    # F is linear on [x0, x1]: F(x) = f_lo + (f_hi - f_lo) (x - x0) / (x1 - x0) = 0
    s_star = x0 + Fraction(-f_lo) * (x1 - x0) / (f_hi - f_lo) if f_hi != 0 else Fraction(x1)
    return kind, k, Fraction(s_star) / path.one


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def profile_on_path(game: LinearAnonymousGame, path: _Path, kind: str, k: int, total: Fraction) -> list[Fraction]:
    """The profile of the path point ``(kind, k)`` at aggregate ``total`` (unscaled Fraction)."""
    n = game.n
    prof: list[Fraction] = [ZERO] * n
    taus = game._taus
    classes = game._classes
    sn, sd = total.numerator, total.denominator
    for i in range(n):
        cls = classes[i]
        if cls == "D":
            prof[i] = ONE if game.b[i].numerator > 0 else ZERO
        elif cls == "C":
            t = taus[i]
            # clip(S - tau, 0, 1) by integer cross-multiplication (fast for n = 1e5)
            tn, td = t.numerator, t.denominator
            if sn * td >= (tn + td) * sd:
                prof[i] = ONE
            elif sn * td <= tn * sd:
                prof[i] = ZERO
            else:
                prof[i] = total - t
    ones = k if kind == "H" else k - 1
    for pos, i in enumerate(path.u_idx):
        if pos < ones:
            prof[i] = ONE
        elif kind == "D" and pos == k - 1:
            prof[i] = total - taus[i]
    return prof


def profile_total(prof: list[Fraction]) -> Fraction:
    """``sum(prof)`` exactly, adding the pure entries as integers (fast when few players mix)."""
    ones = 0
    mixed = ZERO
    for v in prof:
        if v.denominator == 1:
            ones += v.numerator
        else:
            mixed += v
    return mixed + ones


def linear_max_regret(game: LinearAnonymousGame, prof: list[Fraction]) -> Fraction:
    """Exact ``max_i regret_i`` via the first moment, on integers where possible (O(n)).

    With ``A_i = G a_i``, ``B_i = G b_i`` integers, ``S = sn/sd`` and ``p_i = pn/pd``:
    ``G sd pd g_i = A_i (sn pd - pn sd) + B_i sd pd`` is an integer ``z`` with the sign of ``g_i``; the regret
    ``max(g,0)(1-p) + max(-g,0)p`` is zero iff ``z <= 0`` when ``p = 0``, ``z >= 0`` when ``p = 1``, and
    ``z = 0`` when ``0 < p < 1``. Only nonzero regrets are formed as Fractions.
    """
    total = profile_total(prof)
    ints = game._int_gains
    if ints is None:
        return max(game.regrets(prof))
    scale, big_a, big_b = ints
    sn, sd = total.numerator, total.denominator
    best = ZERO
    for ai, bi, pi in zip(big_a, big_b, prof):
        pn, pd = pi.numerator, pi.denominator
        z = ai * (sn * pd - pn * sd) + bi * sd * pd
        if z == 0 or (z < 0 and pn == 0) or (z > 0 and pn == pd):
            continue
        g = Fraction(z, scale * sd * pd)
        r = max(g, ZERO) * (1 - pi) + max(-g, ZERO) * pi
        if r > best:
            best = r
    return best


# ---------------------------------------------------------------------- the naive scan (a reference)
def _naive_profile(game: LinearAnonymousGame, u_order: list[int], kind: str, k: int, s: Fraction) -> list[Fraction]:
    """The path profile at aggregate ``s`` on piece ``(kind, k)``, computed player by player."""
    prof = []
    taus = game.thresholds
    rank = {i: pos for pos, i in enumerate(u_order)}
    for i in range(game.n):
        if game.a[i] == 0:
            prof.append(ONE if game.b[i] > 0 else ZERO)
        elif game.a[i] > 0:
            prof.append(min(max(s - taus[i], ZERO), ONE))
        else:
            pos = rank[i] + 1  # 1-based position in the descending order
            ones = k if kind == "H" else k - 1
            if pos <= ones:
                prof.append(ONE)
            elif kind == "D" and pos == k:
                prof.append(s - taus[i])
            else:
                prof.append(ZERO)
    return prof


@validate(game=GAME)
def naive_scan_point(game: LinearAnonymousGame) -> tuple[str, int, Fraction]:
    """The first zero of ``F = S - sum(profile)`` along the path, by a plain scan (Fractions).

    Returns ``(kind, k, S)``; the same point as the sweep (both return the first zero along the path).
    """
    n = game.n
    taus = game.thresholds
    u_order = sorted((i for i in range(n) if game.a[i] < 0), key=lambda i: (-taus[i], i))
    u_tau = [taus[i] for i in u_order]
    c_bps = sorted({t for i, t in enumerate(taus) if game.a[i] > 0} |
                   {t + 1 for i, t in enumerate(taus) if game.a[i] > 0})
    r = len(u_order)
    low, high = Fraction(-1), Fraction(n + 1)
    if r == 0:
        pieces = [("H", 0, low, high)]
    else:
        pieces = [("H", r, min(low, u_tau[-1] + 1), u_tau[-1] + 1)]
        for k in range(r, 0, -1):
            pieces.append(("D", k, u_tau[k - 1] + 1, u_tau[k - 1]))
            if k > 1:
                pieces.append(("H", k - 1, u_tau[k - 1], u_tau[k - 2] + 1))
        pieces.append(("H", 0, u_tau[0], max(high, u_tau[0])))

    def excess(kind: str, k: int, s: Fraction) -> Fraction:
        return s - sum(_naive_profile(game, u_order, kind, k, s), ZERO)

    prev = None
    for kind, k, s0, s1 in pieces:
        lo, hi = min(s0, s1), max(s0, s1)
        inner = [x for x in c_bps if lo < x < hi]
        pts = [s0] + (inner if s0 <= s1 else inner[::-1]) + [s1]
        values = [excess(kind, k, x) for x in pts]
        if prev is None and values[0] >= 0:  # pragma: no cover - F < 0 at S = -1
            _broken("F >= 0 at the start of the path")
        for j in range(len(pts) - 1):
            f0, f1 = values[j], values[j + 1]
            if f0 < 0 <= f1:
                x0, x1 = pts[j], pts[j + 1]
                s = x1 if f1 == 0 else x0 - f0 * (x1 - x0) / (f1 - f0)
                return kind, k, Fraction(s)
        prev = values[-1]
    _broken("no zero of F along the path")  # pragma: no cover


@validate(game=GAME, method=Choice("sweep", "scan"), backend=Choice(*BACKENDS))
def solve_exact(game: LinearAnonymousGame, *, method: Literal["sweep", "scan"] = "sweep",
                backend: Backend = "auto", model_free: bool = False) -> NashResult:
    """One exact Nash equilibrium of a linear anonymous game, verified exactly.

    Args:
        game: the game.
        method: ``"sweep"`` (O(n log n), ours) or ``"scan"`` (the naive O(n^3) per-piece scan of
            :func:`naive_scan_point`, a reference; also listed in :mod:`.baselines`).
        backend: ``"int"`` (S scaled by the lcm of threshold denominators), ``"fraction"`` or ``"auto"``.
        model_free: also verify with :func:`verify_anonymous` on the payoff tables (O(n^3)).

    Returns:
        :class:`NashResult`; raises RuntimeError if verification ever failed (it should not).
    """
    path = _Path.build(game, "fraction" if method == "scan" else backend)
    if method == "sweep":
        kind, k, total = _sweep(path)
    else:
        kind, k, total = naive_scan_point(game)
    prof = profile_on_path(game, path, kind, k, total)
    regret = linear_max_regret(game, prof)
    cert: dict[str, Any] = {
        "verified_by": "first-moment formula g_i = a_i (S - p_i) + b_i, exact integers/Fractions",
        "S": str(total), "max_regret": str(regret), "n": game.n,
        "backend": "int" if path.integer else "fraction",
        "method": method,
    }
    if model_free:
        from .verify import verify_anonymous

        u1, u0 = game.payoff_tables()
        mf = max(verify_anonymous(u1, u0, prof))
        cert["model_free_max_regret"] = str(mf)
        regret = max(regret, mf)
    if regret != 0:
        raise RuntimeError(f"solve_exact: verification failed (max regret {regret}); please report this game: "
                           f"{game.to_dict()}")
    if profile_total(prof) != total:
        _broken("solve_exact: the profile total differs from S")
    return NashResult(prof, total, regret, f"{kind}_{k}", cert)


# ---------------------------------------------------------------------- enumeration (exponential)
@validate(game=GAME, limit=Optional(Int(low=0)), max_players=Int(low=1))
def enumerate_equilibria(game: LinearAnonymousGame, limit: int | None = None, *,
                         max_players: int = 14) -> Iterator[list[Fraction]]:
    """All Nash equilibria by support pattern (3^n patterns; for small ``n``), exact.

    Each player is labelled 0, 1 or mixing. Mixers ``M`` satisfy ``p_i = S - tau_i``, so
    ``S = #ones + sum_M (S - tau_i)``, i.e. ``(1 - |M|) S = #ones - sum_M tau_i``:
    a unique ``S`` when ``|M| != 1``; when ``|M| = 1`` the equation reads ``#ones = tau_j`` and, if it
    holds, ``S`` ranges over an interval (a continuum of equilibria) and we yield its midpoint.
    Players with ``a_i = b_i = 0`` are indifferent to everything; they are enumerated only at 0 and 1
    (mixing them gives further continua, not listed). Yields one profile per feasible pattern, in a
    fixed order, at most ``limit`` of them.

    The arguments are checked when this is called (not at the first ``next``).
    """
    check_size("enumerate_equilibria", game.n, max_players, "3^n patterns", "max_players=")
    return _enumerate(game, limit)


def _enumerate(game: LinearAnonymousGame, limit: int | None) -> Iterator[list[Fraction]]:
    n, a, b = game.n, game.a, game.b
    taus = game.thresholds
    options = []
    for i in range(n):
        if a[i] != 0:
            options.append((0, 1, 2))  # 2 = mixing
        elif b[i] > 0:
            options.append((1,))
        elif b[i] < 0:
            options.append((0,))
        else:
            options.append((0, 1))
    found = 0
    for labels in product(*options):
        if limit is not None and found >= limit:
            return
        mixers = [i for i in range(n) if labels[i] == 2]
        ones = sum(1 for x in labels if x == 1)
        # bounds on S: [lo, hi] with open/closed flags, from each player's condition
        lo, lo_open, hi, hi_open = None, False, None, False

        def tighten_lo(v: Fraction, is_open: bool) -> None:
            nonlocal lo, lo_open
            if lo is None or v > lo or (v == lo and is_open):
                lo, lo_open = v, is_open

        def tighten_hi(v: Fraction, is_open: bool) -> None:
            nonlocal hi, hi_open
            if hi is None or v < hi or (v == hi and is_open):
                hi, hi_open = v, is_open

        for i in range(n):
            if a[i] == 0:
                continue
            t, lab, comp = taus[i], labels[i], a[i] > 0
            if lab == 2:
                tighten_lo(t, True)
                tighten_hi(t + 1, True)
            elif lab == 1:  # g >= 0 at S_{-i} = S - 1: C needs S - 1 >= tau, U needs S - 1 <= tau
                (tighten_lo if comp else tighten_hi)(t + 1, False)
            else:           # g <= 0 at S_{-i} = S: C needs S <= tau, U needs S >= tau
                (tighten_hi if comp else tighten_lo)(t, False)
        if len(mixers) == 1:
            if taus[mixers[0]] != ones:
                continue
            if lo is None or hi is None:  # pragma: no cover - a mixer always bounds both sides
                continue
            if lo < hi:
                s = (lo + hi) / 2
            elif lo == hi and not lo_open and not hi_open:
                s = lo
            else:
                continue
        else:
            s = Fraction(ones - sum((taus[i] for i in mixers), ZERO), 1 - len(mixers))
            if lo is not None and (s < lo or (s == lo and lo_open)):
                continue
            if hi is not None and (s > hi or (s == hi and hi_open)):
                continue
        prof = [Fraction(1) if x == 1 else ZERO for x in labels]
        for i in mixers:
            prof[i] = s - taus[i]
        found += 1
        yield prof
