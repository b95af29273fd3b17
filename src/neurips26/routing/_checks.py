"""Input checks shared by the routing modules (internal): integers, numbers, policy inputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .._checks import is_trusted, trusted  # noqa: F401  (re-exported for the package)


def check_int(name: str, value: Any, low: int) -> int:
    """An int (numpy integers too, bools refused) ``>= low``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_number(name: str, value: Any, *, positive: bool = False, nonneg: bool = False) -> float:
    """A finite real number (``> 0`` / ``>= 0`` when asked)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (positive and v <= 0) or (nonneg and v < 0):
        need = " > 0" if positive else " >= 0" if nonneg else ""
        raise ValueError(f"{name} must be a finite number{need}, got {value!r}")
    return v


def check_coords(X: Any, name: str = "X") -> torch.Tensor:
    """A policy's coordinates: a finite floating tensor ``[B, n, 2]``."""
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor [B, n, 2], got {type(X).__name__}")
    if not X.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating tensor, got dtype {X.dtype}")
    if X.dim() != 3 or X.shape[-1] != 2:
        raise ValueError(f"{name} must have shape [B, n, 2], got {tuple(X.shape)}")
    if not torch.isfinite(X).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return X


def check_step(emb: Any, first: Any, last: Any, remaining: Any, d: int) -> None:
    """``emb [B, n, d]`` finite; ``first``/``last`` int ``[B]`` and ``remaining`` int ``[B, m]`` in ``[0, n)``.

    The value checks share one device-to-host transfer (one sync per call on a GPU)."""
    if not isinstance(emb, torch.Tensor) or not emb.dtype.is_floating_point or emb.dim() != 3 or emb.shape[-1] != d:
        raise ValueError(f"emb must be a floating tensor [B, n, {d}] (from encode), got "
                         f"{tuple(emb.shape) if isinstance(emb, torch.Tensor) else type(emb).__name__}")
    B, n, _ = emb.shape
    named = (("first", first, (B,)), ("last", last, (B,)), ("remaining", remaining, None))
    for name, t, shape in named:
        if not isinstance(t, torch.Tensor) or t.dtype.is_floating_point or t.dtype == torch.bool or t.is_complex():
            raise TypeError(f"{name} must be an integer tensor of node indices, got "
                            f"{t.dtype if isinstance(t, torch.Tensor) else type(t).__name__}")
        if shape is None and (t.dim() != 2 or t.shape[0] != B or t.shape[1] < 1):
            raise ValueError(f"remaining must have shape [{B}, m >= 1], got {tuple(t.shape)}")
        if shape is not None and tuple(t.shape) != shape:
            raise ValueError(f"{name} must have shape [{B}], got {tuple(t.shape)}")
    if B == 0:
        return
    stats = torch.stack([torch.isfinite(emb).all().to(torch.int64)]
                        + [f(t).to(torch.int64).to(emb.device) for _, t, _ in named for f in (torch.min, torch.max)])
    ok, *bounds = stats.tolist()
    if not ok:
        raise ValueError("emb must be finite (found NaN or inf)")
    for (name, _, _), lo, hi in zip(named, bounds[0::2], bounds[1::2]):
        if lo < 0 or hi >= n:
            raise ValueError(f"{name} must hold node indices in [0, {n - 1}], got values in [{lo}, {hi}]")
