"""Argument checks shared by emc's public entry points: one wording, ``"<name>: expected ..., got ..."``."""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
from torch import Tensor


def check_int(name: str, value: Any, low: int | None = None) -> int:
    """An int (never a bool, never a float), ``>= low`` when given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}: expected an integer{'' if low is None else f' >= {low}'}, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
    return int(value)


def check_number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False) -> float:
    """A finite real number (never a bool) in the interval ``low .. high`` (open ends as flagged)."""
    lo = "-inf" if low is None else f"{'(' if low_open else '['}{low}"
    hi = "inf" if high is None else f"{high}{')' if high_open else ']'}"
    where = f"a finite number in {lo if low is not None else '(-inf'}, {hi if high is not None else 'inf)'}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name}: expected {where}, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name}: expected {where}, got {value!r}")
    if high is not None and (value >= high if high_open else value > high):
        raise ValueError(f"{name}: expected {where}, got {value!r}")
    return float(value)


def check_float_tensor(name: str, t: Any, dims: int, *, like: str = "") -> Tensor:
    """A finite floating tensor with ``dims`` dimensions."""
    if not isinstance(t, Tensor) or t.dim() != dims or not t.is_floating_point():
        raise ValueError(f"{name}: expected a {dims}-D float tensor{like}, got "
                         f"{getattr(t, 'shape', type(t).__name__)} {getattr(t, 'dtype', '')}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}: contains NaN or inf")
    return t
