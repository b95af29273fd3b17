"""Batched membership oracles for the truncation set ``S ⊆ {0,1}^n``.

An oracle is any callable ``S(X) -> bool[m]`` on a ``[m, n]`` array of 0/1 rows. The estimator asks it
about *modified* samples only: ``x^{⊕i}`` (coordinate ``i`` flipped) for block order 1, and the four
completions of a pair ``(i, j)`` for block order 2. The structured oracles below answer those questions
from one linear statistic per row, ``s(x) = Σ_j a_j x_j``, so that a flip costs ``O(1)`` per row instead
of a fresh ``O(n)`` call:

* :class:`WeightBand` ``S_k = {x : |x| ≤ k}`` (``a = 1``, accept ``s ≤ k``);
* :class:`Parity` ``{x : |x| even}`` (or odd; accept ``s mod 2``);
* :class:`IntHalfspace` ``{x : a·x ≤ b}`` with integer ``a`` (accept ``s ≤ b``);
* :class:`SubcubeUnion` a union of subcubes (patterns over ``{0, 1, *}``), answered row by row;
* :class:`CallableOracle` wraps any user function and checks its answers.

The three linear-statistic oracles also describe themselves as a finite automaton over the coordinates
(:meth:`_LinearStatOracle.automaton`), which is what the exact samplers in :mod:`.samplers` run their
dynamic programme on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import constraints
from ..constraints import ArrayLike, Bool, Int, Optional, check_arguments, validate

__all__ = [
    "MembershipOracle",
    "WeightBand",
    "Parity",
    "IntHalfspace",
    "SubcubeUnion",
    "CallableOracle",
    "query",
    "flip_feasible",
    "block_completions",
]


@runtime_checkable
class MembershipOracle(Protocol):
    """``S(X)``: ``X [m, n]`` in ``{0,1}`` -> ``bool [m]``, ``True`` where the row lies in ``S``.

    Optional fast path: ``flip_feasible(X, i) -> bool [m]``, whether ``x^{⊕i} ∈ S`` for each row.
    """

    def __call__(self, X: np.ndarray) -> np.ndarray: ...


#: the declared constraints shared by the truncbool modules
ORACLE = constraints.Callable()
ROWS = ArrayLike("M N", finite=False)  # 0/1 rows [m, n]; the values are checked by _check_rows (NaN included)


def _as_answer(ans: Any, m: int, who: str) -> np.ndarray:
    """Check an oracle's answer: ``bool [m]`` (or integers in {0, 1}); anything else is an error."""
    name = f"the answer of the oracle {who} for {m} rows"
    check_arguments("", {name: ArrayLike(f"{m}", finite=False)}, {name: ans})
    arr = np.asarray(ans)
    if arr.dtype == np.bool_:
        return arr
    if np.issubdtype(arr.dtype, np.integer) and np.all((arr == 0) | (arr == 1)):
        return arr.astype(bool)
    raise ValueError(f"the oracle {who} must return booleans (or 0/1 integers), got dtype {arr.dtype} "
                     f"with values {np.unique(arr)[:5].tolist()}")


def _check_rows(X: Any, name: str = "X", where: str = "") -> np.ndarray:
    """``X`` as an integer/bool array ``[m, n]`` holding only 0 and 1 (NaN, other values, strings refused)."""
    check_arguments(where, {name: ROWS}, {name: X})
    arr = np.asarray(X)
    if not np.all((arr == 0) | (arr == 1)):
        bad = arr[~((arr == 0) | (arr == 1))]
        raise ValueError(f"{name} must hold only 0 and 1 (NaN refused), got values such as "
                         f"{np.unique(bad)[:5].tolist()}")
    return arr


def query(oracle: Callable[[np.ndarray], Any], X: np.ndarray) -> np.ndarray:
    """``oracle(X)`` with its answer validated: ``bool [m]``. ``X`` is ``int8 [m, n]`` in {0, 1}."""
    if X.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    return _as_answer(oracle(X), X.shape[0], repr(oracle))

@validate(oracle=ORACLE, X=ROWS, i=Int(low=0))
def flip_feasible(oracle: Callable[[np.ndarray], Any], X: np.ndarray, i: int) -> np.ndarray:
    """Whether ``x^{⊕i} ∈ S`` for every row of ``X [m, n]``: ``bool [m]``.

    Uses ``oracle.flip_feasible`` when the oracle has it, else one batched call on the flipped copy.
    """
    arr = _check_rows(X, where="flip_feasible")
    if i >= arr.shape[1]:
        raise ValueError(f"i must be a coordinate index in [0, {arr.shape[1]}), got {i!r}")
    return _flip_feasible(oracle, arr.astype(np.int8), int(i))


def _flip_feasible(oracle: Callable[[np.ndarray], Any], X: np.ndarray, i: int) -> np.ndarray:
    """:func:`flip_feasible` on already checked ``X`` (``int8`` 0/1) and ``i``."""
    fast = getattr(oracle, "flip_feasible", None)
    if fast is not None:
        return _as_answer(fast(X, i), X.shape[0], f"{oracle!r}.flip_feasible")
    Y = X.copy()
    Y[:, i] ^= 1
    return query(oracle, Y)

@validate(oracle=ORACLE, X=ROWS, block=ArrayLike("K", dtype="integer"))
def block_completions(oracle: Callable[[np.ndarray], Any], X: np.ndarray, block: Sequence[int]) -> np.ndarray:
    """Feasible completions ``C_B(x) = {c ∈ {0,1}^B : (c, x_{-B}) ∈ S}`` of every row: ``bool [m, 2^|B|]``.

    Column ``c`` encodes the assignment with bit ``k`` (most significant first) for ``block[k]``; the
    observed assignment of a row of ``S`` is always feasible. Costs ``2^|B| - 1`` membership queries per
    row (the observed one is known); structured oracles answer from their statistic.
    """
    arr = _check_rows(X, where="block_completions")
    idx = np.asarray(block)
    if idx.size == 0 or idx.min() < 0 or idx.max() >= arr.shape[1] or np.unique(idx).size != idx.size or idx.size > 8:
        raise ValueError(f"block must hold at most 8 distinct indices in [0, {arr.shape[1]}), got {idx.tolist()}")
    return _block_completions(oracle, arr.astype(np.int8), [int(j) for j in idx])


def _block_completions(oracle: Callable[[np.ndarray], Any], X: np.ndarray, block: Sequence[int]) -> np.ndarray:
    """:func:`block_completions` on already checked ``X`` (``int8`` 0/1) and ``block``."""
    fast = getattr(oracle, "block_completions", None)
    if fast is not None:
        out = fast(X, block)
        name = f"the answer of {oracle!r}.block_completions"
        check_arguments("", {name: ArrayLike(f"{X.shape[0]} {2 ** len(block)}", dtype="bool")}, {name: out})
        return np.asarray(out)
    b = len(block)
    out = np.zeros((X.shape[0], 2 ** b), dtype=bool)
    observed = _observed_code(X, block)
    cols = list(block)
    for c in range(2 ** b):
        bits = np.array([(c >> (b - 1 - k)) & 1 for k in range(b)], dtype=np.int8)
        todo = observed != c
        if not todo.any():
            continue
        Y = X[todo].copy()
        Y[:, cols] = bits
        out[todo, c] = query(oracle, Y)
    out[np.arange(X.shape[0]), observed] = True
    return out


def _observed_code(X: np.ndarray, block: Sequence[int]) -> np.ndarray:
    """The index of each row's own assignment on ``block`` (bit ``k`` = ``x_{block[k]}``, MSB first)."""
    code = np.zeros(X.shape[0], dtype=np.int64)
    for j in block:
        code = 2 * code + X[:, j]
    return code


class _Automaton:
    """A deterministic automaton over coordinates: state ``q_0``, then ``q_{i+1} = step(i, x_i)[q_i]``.

    ``S = {x : accept[q_n]}``. ``step(i, bit)`` returns an ``int [n_states]`` transition table. The
    exact sampler's dynamic programme runs over ``n × n_states`` cells.
    """

    def __init__(self, n_states: int, start: int, accept: np.ndarray, step: Callable[[int, int], np.ndarray]):
        self.n_states, self.start, self.accept, self.step = n_states, start, accept, step


class _LinearStatOracle:
    """Membership through one integer statistic ``s(x) = Σ_j a_j x_j`` and a predicate ``ok(s)``."""

    a: np.ndarray  # int64 [n]

    def _weights(self, X: np.ndarray) -> np.ndarray:
        """``a [n]`` for this ``X``, after checking that ``X`` is ``[m, n]``."""
        check_arguments(repr(self), {"X": ArrayLike(f"_ {self.a.size}", finite=False)}, {"X": X})
        return self.a

    def _ok(self, s: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = _check_rows(X)
        a = self._weights(X)
        return self._ok(X.astype(np.int64) @ a)

    def flip_feasible(self, X: np.ndarray, i: int) -> np.ndarray:
        """``x^{⊕i} ∈ S``: ``s(x^{⊕i}) = s(x) + a_i (1 - 2 x_i)``, one statistic per row."""
        X = np.asarray(X)
        a = self._weights(X)
        s = X.astype(np.int64) @ a
        return self._ok(s + a[i] * (1 - 2 * X[:, i].astype(np.int64)))

    def flip_feasible_all(self, X: np.ndarray) -> np.ndarray:
        """All single flips at once: ``bool [m, n]``, entry ``(t, i)`` is ``x_t^{⊕i} ∈ S``."""
        X = np.asarray(X)
        a = self._weights(X)
        s = X.astype(np.int64) @ a
        return self._ok(s[:, None] + a[None, :] * (1 - 2 * X.astype(np.int64)))

    def block_completions(self, X: np.ndarray, block: Sequence[int]) -> np.ndarray:
        """``C_B(x)`` from ``s(c, x_{-B}) = s(x) - a_B·x_B + a_B·c``: ``bool [m, 2^|B|]``."""
        X = np.asarray(X)
        a = self._weights(X)
        cols = list(block)
        s_rest = X.astype(np.int64) @ a - X[:, cols].astype(np.int64) @ a[cols]
        b = len(cols)
        out = np.empty((X.shape[0], 2 ** b), dtype=bool)
        for c in range(2 ** b):
            bits = np.array([(c >> (b - 1 - k)) & 1 for k in range(b)], dtype=np.int64)
            out[:, c] = self._ok(s_rest + int(bits @ a[cols]))
        return out


class WeightBand(_LinearStatOracle):
    """``S_k = {x ∈ {0,1}^n : |x| ≤ k}`` (Hamming weight at most ``k``).

    Args:
        k: the weight bound, an int ``>= 0``.
        n: the dimension; optional (the oracle then adapts to ``X``'s width, but the exact sampler needs it
            and takes it from ``z``).
    """

    @validate(k=Int(low=0), n=Optional(Int(low=1)))
    def __init__(self, k: int, n: int | None = None):
        self.k = int(k)
        self.n = None if n is None else int(n)

    def __repr__(self) -> str:
        return f"WeightBand(k={self.k}" + ("" if self.n is None else f", n={self.n}") + ")"

    def _weights(self, X: np.ndarray) -> np.ndarray:
        """``a = 1 [n]``; ``n`` is ``X``'s width unless the oracle was given one."""
        check_arguments(repr(self), {"X": ArrayLike("_ _" if self.n is None else f"_ {self.n}", finite=False)},
                        {"X": X})
        return np.ones(X.shape[1], dtype=np.int64)

    def _ok(self, s: np.ndarray) -> np.ndarray:
        return s <= self.k

    def automaton(self, n: int) -> _Automaton:
        """States ``0..k+1``: the running weight, with ``k+1`` absorbing ("already too heavy")."""
        top = self.k + 1
        nxt = np.minimum(np.arange(top + 1) + 1, top)
        same = np.arange(top + 1)
        accept = np.arange(top + 1) <= self.k
        return _Automaton(top + 1, 0, accept, lambda i, bit: nxt if bit else same)


class Parity(_LinearStatOracle):
    """``{x : |x| even}`` (``even=True``) or ``{x : |x| odd}``. Minimum distance 2: no single flip stays in S.

    Args:
        even: which parity class is ``S``.
        n: the dimension (optional, as for :class:`WeightBand`).
    """

    @validate(even=Bool(), n=Optional(Int(low=1)))
    def __init__(self, even: bool = True, n: int | None = None):
        self.even = bool(even)
        self.n = None if n is None else int(n)

    def __repr__(self) -> str:
        return f"Parity(even={self.even}" + ("" if self.n is None else f", n={self.n}") + ")"

    _weights = WeightBand._weights

    def _ok(self, s: np.ndarray) -> np.ndarray:
        return (s % 2) == (0 if self.even else 1)

    def automaton(self, n: int) -> _Automaton:
        """Two states: the running parity."""
        flip, same = np.array([1, 0]), np.array([0, 1])
        accept = np.array([self.even, not self.even])
        return _Automaton(2, 0, accept, lambda i, bit: flip if bit else same)


class IntHalfspace(_LinearStatOracle):
    """``{x : Σ_i a_i x_i ≤ b}`` with integer weights ``a`` (any sign) and integer ``b``.

    The exact sampler is pseudo-polynomial: its automaton has ``b + Σ_{a_i<0} |a_i| + 2`` states.

    Args:
        a: integer weights ``[n]``.
        b: the integer threshold.
    """

    @validate(a=ArrayLike("N"), b=Int())
    def __init__(self, a: Any, b: int):
        arr = np.asarray(a)
        if arr.size == 0:
            raise ValueError(f"a must be a non-empty 1-D array of integers, got shape {arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            whole = np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))
            if not whole:
                raise ValueError(f"a must hold integers, got dtype {arr.dtype}: {arr[:5].tolist()}")
        self.a = arr.astype(np.int64)
        self.b = int(b)
        self.n = self.a.size

    def __repr__(self) -> str:
        return f"IntHalfspace(a={self.a.tolist()}, b={self.b})"

    def _ok(self, s: np.ndarray) -> np.ndarray:
        return s <= self.b

    def automaton(self, n: int) -> _Automaton:
        """Shifted statistic ``u = Σ_{a_i≥0} a_i x_i + Σ_{a_i<0} |a_i|(1 - x_i) ≥ 0``, accept ``u ≤ b'``.

        ``Σ a_i x_i ≤ b  ⟺  u ≤ b' = b + Σ_{a_i<0} |a_i|``; states ``0..b'+1`` with ``b'+1`` absorbing.
        """
        if n != self.n:
            raise ValueError(f"{self!r} has n = {self.n}, got z of length {n}")
        bprime = self.b + int(-self.a[self.a < 0].sum())
        if bprime < 0:
            return _Automaton(1, 0, np.array([False]), lambda i, bit: np.array([0]))
        top = bprime + 1
        states = np.arange(top + 1)

        def step(i: int, bit: int) -> np.ndarray:
            ai = int(self.a[i])
            inc = ai * bit if ai >= 0 else -ai * (1 - bit)
            return np.minimum(states + inc, top)

        return _Automaton(top + 1, 0, states <= bprime, step)


class SubcubeUnion:
    """A union of subcubes, each a pattern over ``{0, 1, *}`` (``*``: free coordinate).

    Args:
        cubes: strings such as ``"01**"`` or an int array ``[c, n]`` with ``-1`` for a free coordinate.
    """

    def __init__(self, cubes: Any):
        if isinstance(cubes, str):
            raise TypeError("cubes must be a sequence of patterns (e.g. ['01**', '1***']), not one string")
        if not hasattr(cubes, "__iter__"):
            raise TypeError(f"cubes must be a sequence of patterns (e.g. ['01**', '1***']), got {type(cubes).__name__}")
        rows = []
        for c in cubes:
            if isinstance(c, str):
                if not c or set(c) - set("01*"):
                    raise ValueError(f"a cube pattern uses only '0', '1', '*', got {c!r}")
                rows.append([-1 if ch == "*" else int(ch) for ch in c])
            else:
                r = np.asarray(c)
                if r.ndim != 1 or not np.all(np.isin(r, (-1, 0, 1))):
                    raise ValueError(f"a cube array holds -1 (free), 0 or 1, got {r.tolist()}")
                rows.append(r.astype(int).tolist())
        if not rows or len({len(r) for r in rows}) != 1:
            raise ValueError(f"cubes must be a non-empty list of patterns of equal length, got {len(rows)} patterns "
                             f"of lengths {sorted({len(r) for r in rows})}")
        self.patterns = np.array(rows, dtype=np.int8)  # [c, n]
        self.n = self.patterns.shape[1]

    def __repr__(self) -> str:
        pats = ["".join("*" if v < 0 else str(v) for v in row) for row in self.patterns]
        return f"SubcubeUnion({pats})"

    def __call__(self, X: np.ndarray) -> np.ndarray:
        check_arguments(repr(self), {"X": ArrayLike(f"_ {self.n}", finite=False)}, {"X": X})
        X = _check_rows(X)
        fixed = self.patterns >= 0  # [c, n]
        # x ∈ cube  ⟺  x_j = p_j on every fixed coordinate j
        hit = ((X[:, None, :] == self.patterns[None]) | ~fixed[None]).all(axis=2)  # [m, c]
        return hit.any(axis=1)


class CallableOracle:
    """Wrap a user function ``fn(X [m, n]) -> bool [m]``; its answers are checked on every call.

    Args:
        fn: the membership function (batched).
        name: shown in error messages.
    """

    @validate(fn=constraints.Callable())
    def __init__(self, fn: Callable[[np.ndarray], Any], name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "fn")

    def __repr__(self) -> str:
        return f"CallableOracle({self.name})"

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return _as_answer(self.fn(X), np.asarray(X).shape[0], repr(self))
