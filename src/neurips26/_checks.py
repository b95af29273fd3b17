"""Validation pieces shared by every paper's public entry points (the error contract of the README).

``trusted()``: a public entry point that has already validated its tensors runs its inner modules inside
``with trusted():``, and those modules then skip their *value* checks (``isfinite``, label ranges: a host sync
each on a GPU) while still checking shapes; module hooks see every call. One context variable serves all
papers: it only ever says "these inputs were checked by the caller".
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

_TRUSTED: contextvars.ContextVar[bool] = contextvars.ContextVar("neurips26_trusted_inputs", default=False)


@contextmanager
def trusted() -> Iterator[None]:
    """Run inner modules on inputs the caller has already validated (see the module docstring)."""
    token = _TRUSTED.set(True)
    try:
        yield
    finally:
        _TRUSTED.reset(token)


def is_trusted() -> bool:
    """Whether the current call runs inside :func:`trusted`."""
    return _TRUSTED.get()


def check_bool(name: str, value: Any) -> bool:
    """A Python or numpy bool (not 0/1, not a string), returned as ``bool``."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def check_int(name: str, value: Any, minimum: int = 1) -> int:
    """A Python int (not a bool) ``>= minimum``; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value
