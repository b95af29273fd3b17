"""What emc needs beyond :mod:`neurips26.constraints`: a tensor that must have at least one row."""

from __future__ import annotations

import re
from typing import Any

from neurips26.constraints import Constraint, Tensor


class NonEmpty(Constraint):
    """``inner`` (a :class:`~neurips26.constraints.Tensor`) with at least one row (moments, ridge fits and crystal
    objectives are undefined on zero points)."""

    def __init__(self, inner: Tensor) -> None:
        self.inner = inner
        self.expected = re.sub(r"^an? ", "a non-empty ", inner.expected)

    def check(self, value: Any, name: str, where: str = "", dims: dict | None = None) -> None:
        self.inner.check(value, name, where, dims)
        if value.shape[0] == 0:
            prefix = f"{where}: " if where else ""
            raise ValueError(f"{prefix}{name} must be {self.expected}, got a tensor of shape {list(value.shape)}")
