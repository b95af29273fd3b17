"""Input checks shared by the snndelay modules (internal): every message names the argument."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._checks import check_bool, is_trusted, trusted  # noqa: F401  (re-exported for the package)


def check_int(name: str, value: Any, low: int) -> int:
    """An int (numpy integers too, bools refused) ``>= low``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def check_number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 open_low: bool = False) -> float:
    """A finite real number in ``[low, high]`` (``(low, high]`` with ``open_low``)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating) \
            or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    v = float(value)
    if (low is not None and (v < low or (open_low and v == low))) or (high is not None and v > high):
        lo = "" if low is None else f"{'>' if open_low else '>='} {low}"
        hi = "" if high is None else f"<= {high}"
        raise ValueError(f"{name} must be {' and '.join(s for s in (lo, hi) if s)}, got {value!r}")
    return v


def check_module(value: Any, name: str = "model") -> nn.Module:
    if not isinstance(value, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")
    return value


def check_sequence3(name: str, x: Any, width: int | None = None, *, last: str = "F") -> Tensor:
    """A finite floating tensor ``[B, T, width]`` (``last`` names the last axis in messages)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor [B, T, {last}], got {type(x).__name__}")
    if x.dim() != 3 or (width is not None and x.shape[-1] != width):
        want = last if width is None else str(width)
        raise ValueError(f"{name} must have shape [B, T, {want}], got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return x


def int_list(name: str, values: Any) -> list[int]:
    """A sequence (or 1-d tensor / array) of integral numbers as ints; 1.5 or "a" are refused, not truncated."""
    if isinstance(values, Tensor | np.ndarray):
        values = values.tolist()
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    out = []
    for v in values:
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer | float | np.floating) \
                or not float(v).is_integer():
            raise ValueError(f"{name} must hold integers, got {v!r}")
        out.append(int(v))
    return out
