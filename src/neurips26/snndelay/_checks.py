"""What snndelay checks beyond the shared declarations of :mod:`neurips26.constraints` (internal).

Argument constraints (types, ranges, choices, shapes, dtypes, finiteness) are declared beside each public
signature with ``@validate``; this module keeps the constraints several modules share and the one check a
declaration cannot express: label lists that accept integral floats (``2.0``) but refuse ``1.5``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
from torch import Tensor, nn

from ..constraints import (  # noqa: F401  (re-exported for the package)
    AnyOf,
    ArrayLike,
    Bool,
    Callable,
    Choice,
    Instance,
    Int,
    Optional,
    Real,
    check_arguments,
    is_trusted,
    trusted,
    validate,
)
from ..constraints import Tensor as TensorC  # noqa: F401

MODULE = Instance(nn.Module, "torch.nn.Module")
POSITIVE = Real(low=0.0, closed="neither")  # a finite number > 0
NONNEGATIVE = Real(low=0.0)  # a finite number >= 0
BETA = Real(low=0.0, high=1.0, closed="right")  # the LIF decay, in (0, 1]
SEQUENCE3 = TensorC("B T N", dtype="float")  # a finite float tensor [B, T, N]


@cache
def features(n: int, spec: str = "B T") -> TensorC:
    """A finite float tensor ``[*spec, n]`` (the width fixed by a layer's ``n_in``), cached per width."""
    return TensorC(f"{spec} {n}", dtype="float")


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
