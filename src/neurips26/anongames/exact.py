"""Exact numbers, profiles and payoff tables: the low-level pieces :mod:`.game` and :mod:`.verify` share.

Numbers are converted by :func:`as_fraction`: ints, Fractions, ``numbers.Rational``, ``Decimal`` and strings
like ``"3/7"`` or ``"0.1"`` exactly; Python/numpy floats according to ``floats=``: ``"exact"`` (default: the
binary value exactly, so ``0.1`` becomes ``3602879701896397/36028797018963968``), ``"decimal"`` (the shortest
decimal that round-trips, ``0.1 -> 1/10``) or ``"refuse"`` (TypeError). NaN/inf are always refused.

The declarations shared by the package's entry points live here too: :data:`FLOATS` (the float policy),
:data:`NUMBERS` / :data:`ROWS` (the shared ``SequenceOf``: anything iterable but a string, bytes or a dict).
Everything is re-exported
from where it was public before (:mod:`.game`, :mod:`.verify`).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

from neurips26.constraints import Choice, SequenceOf, check_arguments, validate

__all__ = ["FLOATS", "MAX_DECIMAL_EXPONENT", "NUMBERS", "ONE", "ROWS", "ZERO", "FloatPolicy", "as_fraction",
           "as_profile", "as_tables", "check_lengths", "check_probabilities", "fraction_list", "to_fraction"]

FloatPolicy = Literal["exact", "decimal", "refuse"]
#: Largest decimal exponent accepted in a Decimal or a string ("1e999999999" would build a billion-digit
#: integer and hang); far beyond any payoff, and beyond what a float can hold.
MAX_DECIMAL_EXPONENT = 400
_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)")
_FLOAT_POLICIES = ("exact", "decimal", "refuse")

ZERO = Fraction(0)
ONE = Fraction(1)


# ------------------------------------------------------------------------------------------ declarations
#: how floats are converted (see the module docstring)
FLOATS = Choice(*_FLOAT_POLICIES)
#: a sequence of numbers (each converted by :func:`as_fraction`, which names the bad item)
NUMBERS = SequenceOf("numbers")
#: a payoff table: a sequence of rows
ROWS = SequenceOf("rows")


# ------------------------------------------------------------------------------------------ numbers
def to_fraction(x: Any, name: str = "value", floats: FloatPolicy = "exact") -> Fraction:
    """:func:`as_fraction` with ``floats`` already checked (the per-item conversion of sequences and files)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real | Decimal | str):
        got = f"the bool {x!r}" if isinstance(x, bool) else type(x).__name__
        raise TypeError(f"{name}: expected an int, Fraction, float, Decimal or str, got {got}")
    if isinstance(x, Fraction):
        return x
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    if isinstance(x, numbers.Rational):
        return Fraction(int(x.numerator), int(x.denominator))
    if isinstance(x, Decimal | numbers.Real):  # a Decimal, a Python or numpy float
        shown = x if isinstance(x, Decimal) else float(x)
        if not (x.is_finite() if isinstance(x, Decimal) else math.isfinite(shown)):
            raise ValueError(f"{name}: expected a finite number, got {shown!r}")
    if isinstance(x, Decimal):
        if abs(x.adjusted()) > MAX_DECIMAL_EXPONENT:
            raise ValueError(f"{name}: exponent {x.adjusted()} is out of range (|exponent| <= "
                             f"{MAX_DECIMAL_EXPONENT}), got {x!r}")
        return Fraction(x)
    if isinstance(x, numbers.Real):  # Python float, numpy floating
        value = float(x)
        if floats == "refuse":
            raise TypeError(f"{name}: floats are refused in exact mode (floats='refuse'), got {value!r}; "
                            "pass an int, a Fraction or a string like '3/7'")
        return Fraction(value) if floats == "exact" else Fraction(repr(value))
    exponent = _EXPONENT.search(x)  # a str
    if exponent and (len(exponent.group(1).lstrip("+-")) > 6 or abs(int(exponent.group(1))) > MAX_DECIMAL_EXPONENT):
        raise ValueError(f"{name}: exponent out of range (|exponent| <= {MAX_DECIMAL_EXPONENT}), got {x[:40]!r}")
    try:
        return Fraction(x.strip())
    except (ValueError, ZeroDivisionError) as err:
        raise ValueError(f"{name}: expected a rational like '3/7' or '0.25', got {x!r}") from err


@validate(floats=FLOATS)
def as_fraction(x: Any, *, name: str = "value", floats: FloatPolicy = "exact") -> Fraction:
    """Convert one number to an exact :class:`Fraction` (see the module docstring for the rules).

    Raises:
        TypeError: bools, non-numbers, or floats when ``floats="refuse"``.
        ValueError: NaN/inf, unparsable strings, unknown ``floats`` policy.
    """
    return to_fraction(x, name, floats)


def fraction_list(values: Any, *, name: str, floats: FloatPolicy) -> list[Fraction]:
    """The items of ``values`` (declared :data:`NUMBERS` by the caller, ``floats`` declared too) as Fractions,
    item ``i`` named ``name[i]``."""
    return [to_fraction(v, f"{name}[{i}]", floats) for i, v in enumerate(list(values))]


def check_lengths(columns: Sequence[tuple[str, Sequence[Any]]], what: str = "entries") -> int:
    """``n``, the length of the first of the named ``columns``, if ``n >= 1`` and every other has length ``n``;
    else ``ValueError`` naming the column (the lengths one call's arguments must share)."""
    (first, head), *rest = columns
    n = len(head)
    if n < 1:
        raise ValueError(f"{first}: expected n >= 1 {what} (one per player), got {n}")
    for name, column in rest:
        if len(column) != n:
            raise ValueError(f"{name}: expected {n} {what} (as many as {first}), got {len(column)}")
    return n


def check_probabilities(values: Sequence[Fraction], name: str) -> list[Fraction]:
    """``values`` (Fractions) unchanged if each lies in [0, 1]; else ``ValueError`` naming ``name[i]``."""
    for i, v in enumerate(values):
        if v < 0 or v > 1:
            raise ValueError(f"{name}[{i}]: expected a probability in [0, 1], got {v}")
    return list(values)


def as_profile(p: Any, n: int, *, name: str = "p", floats: FloatPolicy = "exact") -> list[Fraction]:
    """Validate a mixed profile: ``n`` probabilities of playing 1, each in [0, 1], as Fractions."""
    check_arguments("as_profile", {name: NUMBERS, "floats": FLOATS}, {name: p, "floats": floats})
    values = fraction_list(p, name=name, floats=floats)
    if len(values) != n:
        raise ValueError(f"{name}: expected {n} probabilities (one per player), got {len(values)}")
    return check_probabilities(values, name)


@validate(U1=ROWS, U0=ROWS, floats=FLOATS)
def as_tables(U1: Sequence[Sequence[Any]], U0: Sequence[Sequence[Any]], *,
              floats: FloatPolicy = "exact") -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """Validate payoff tables: ``n >= 1`` rows each of length ``n``; entries converted exactly."""
    out = [list(U1), list(U0)]
    n = check_lengths([("U1", out[0]), ("U0", out[1])], "rows")
    tables = []
    row_spec = SequenceOf(f"{n} payoffs")
    for name, rows in zip(("U1", "U0"), out):
        conv = []
        for i, row in enumerate(rows):
            row_spec.check(row, f"{name}[{i}]", "as_tables")
            row = list(row)
            if len(row) != n:
                raise ValueError(f"{name}[{i}]: ragged table, expected {n} entries (m = 0..{n - 1}), "
                                 f"got {len(row)}")
            conv.append(fraction_list(row, name=f"{name}[{i}]", floats=floats))
        tables.append(conv)
    return tables[0], tables[1]
