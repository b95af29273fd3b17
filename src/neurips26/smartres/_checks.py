"""smartres' own argument constraints: what a :mod:`neurips26.constraints` declaration cannot say by itself.

Each is a :class:`~neurips26.constraints.Constraint` (usable in ``@validate`` and ``check_arguments``) that adds a
check of the *content* to a shared one: boxes with ``x2 >= x1``, 0/1 masks, id tensors in a range (and distinct),
lists whose items each meet a constraint. Messages keep the shared form ``"<func>: <arg> must be ..., got ..."``;
the content checks are value checks, skipped inside :func:`neurips26.constraints.trusted` as the shared ones are.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch
from torch import Tensor

from neurips26.constraints import ArgumentTypeError, Constraint, Int, Optional, check_arguments, is_trusted
from neurips26.constraints import Tensor as TensorC

__all__ = ["GRID", "Boxes", "IdTensor", "ListOf", "Mask", "as_bool", "check_k_range", "tensor"]


@lru_cache(maxsize=256)
def tensor(spec: str, dtype: str | None = "float", finite: bool = True) -> TensorC:
    """A cached :class:`~neurips26.constraints.Tensor` constraint, for specs built from a model's sizes at call
    time (``tensor(f"B 3 {s} {s}")``) without parsing the spec on every call."""
    return TensorC(spec, dtype=dtype, finite=finite)


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""


class Boxes(TensorC):
    """A finite float tensor of boxes ``[..., 4]`` (x1, y1, x2, y2) with ``x2 >= x1`` and ``y2 >= y1``."""

    def __init__(self, spec: str = "N 4") -> None:
        super().__init__(spec, dtype="float")

    def check(self, value: Any, name: str, where: str = "", dims: dict | None = None) -> None:
        super().check(value, name, where, dims)
        if is_trusted() or value.numel() == 0:
            return
        flat = value.reshape(-1, 4)
        bad = (flat[:, 2] < flat[:, 0]) | (flat[:, 3] < flat[:, 1])
        if bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            raise ValueError(f"{_prefix(where)}{name} must hold boxes with x2 >= x1 and y2 >= y1, box {i} is "
                             f"{flat[i].tolist()}")


class Mask(TensorC):
    """A bool tensor, or one holding only 0/1 (read as bool with :func:`as_bool`)."""

    def __init__(self, spec: str) -> None:
        super().__init__(spec)
        self.expected = self.expected.replace("tensor", "bool or 0/1 tensor", 1)

    def check(self, value: Any, name: str, where: str = "", dims: dict | None = None) -> None:
        super().check(value, name, where, dims)
        if value.dtype != torch.bool and not is_trusted() and not bool(((value == 0) | (value == 1)).all()):
            raise ValueError(f"{_prefix(where)}{name} must hold only 0/1 (or bool) entries")


def as_bool(mask: Tensor) -> Tensor:
    """A :class:`Mask` as a bool tensor (itself if it already is one)."""
    return mask if mask.dtype == torch.bool else mask != 0


class IdTensor(TensorC):
    """An integer tensor of ids in ``[0, high)``: ``high`` an int, a tuple (one bound per column of the last
    dimension, named by ``labels``) or ``None`` (``>= 0`` only); ``distinct``: no id twice."""

    def __init__(self, spec: str, high: int | tuple[int, ...] | None = None, *, labels: tuple[str, ...] = (),
                 distinct: bool = False) -> None:
        super().__init__(spec, dtype="integer")
        self.high, self.labels, self.distinct = high, labels, distinct

    def check(self, value: Any, name: str, where: str = "", dims: dict | None = None) -> None:
        super().check(value, name, where, dims)
        if is_trusted() or value.numel() == 0:
            return
        columns = [(value, self.high, "")] if not isinstance(self.high, tuple) else \
            [(value[..., j], top, f" ({self.labels[j]})" if self.labels else f" (column {j})")
             for j, top in enumerate(self.high)]
        for v, top, what in columns:
            if int(v.min()) < 0 or (top is not None and int(v.max()) >= top):
                span = f"in [0, {top})" if top is not None else ">= 0"
                raise ValueError(f"{_prefix(where)}{name} must hold ids{what} {span}, got "
                                 f"{v.tolist() if v.numel() <= 16 else f'values in [{int(v.min())}, {int(v.max())}]'}")
        if self.distinct and value.unique().numel() != value.numel():
            raise ValueError(f"{_prefix(where)}{name} must hold distinct ids, got {value.tolist()}")


class ListOf(Constraint):
    """A list or tuple whose items each meet ``inner`` (item ``i`` named ``name[i]``); ``length``: an int, a
    dimension name bound across the call's arguments (``"B"``), or ``None``. Items do not bind dimensions for each
    other (each is checked with its own copy of the names bound so far)."""

    def __init__(self, inner: Constraint, length: int | str | None = None) -> None:
        self.inner, self.length = inner, length
        size = "" if length is None else f" of length {length}"
        self.expected = f"a list or tuple{size} whose items are each {inner.expected}"

    def check(self, value: Any, name: str, where: str = "", dims: dict | None = None) -> None:
        want = self.length
        if isinstance(want, str):
            seen = (dims or {}).get(want)
            want = None if seen is None else seen[0]
        if not isinstance(value, list | tuple) or (want is not None and len(value) != want):
            kind = ArgumentTypeError if not isinstance(value, list | tuple) else ValueError
            shown = f"{type(value).__name__} of length {len(value)}" if isinstance(value, list | tuple) else \
                (repr(value) if len(repr(value)) <= 120 else repr(value)[:117] + "...")
            expected = self.expected if want is None or want == self.length else \
                self.expected.replace(f"length {self.length}", f"length {self.length} = {want}", 1)
            raise kind(f"{_prefix(where)}{name} must be {expected}, got {shown}")
        if isinstance(self.length, str) and dims is not None:
            dims.setdefault(self.length, (len(value), name))
        for i, item in enumerate(value):
            self.inner.check(item, f"{name}[{i}]", where, None if dims is None else dict(dims))


#: a ``(rows, cols)`` grid: a pair of positive ints
GRID = ListOf(Int(low=1), length=2)


def check_k_range(where: str, k_min: Any, k_max: Any, n: int) -> None:
    """``0 <= k_min <= n`` and ``k_max`` ``None`` or in ``[max(1, k_min), n]`` (regions per image)."""
    check_arguments(where, {"k_min": Int(low=0, high=n), "k_max": Optional(Int(low=1, high=n))},
                    {"k_min": k_min, "k_max": k_max})
    if k_max is not None and k_max < k_min:
        raise ValueError(f"{_prefix(where)}k_max must be >= k_min={k_min}, got {k_max!r}")
