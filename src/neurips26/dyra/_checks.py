"""Input validation shared by the dyra modules (internal)."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .._checks import check_bool  # noqa: F401  (re-exported for the package)


def check_linear(lin: object, name: str = "lin") -> nn.Linear:
    if not isinstance(lin, nn.Linear):
        raise TypeError(f"{name} must be a torch.nn.Linear, got {type(lin).__name__}")
    if not torch.isfinite(lin.weight).all() or (lin.bias is not None and not torch.isfinite(lin.bias).all()):
        raise ValueError(f"{name} has non-finite weights")
    return lin


def check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    """An int (or numpy integer) in [low, high) (high exclusive when given), returned as an int."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value >= high):
        rng = f">= {low}" if high is None else f"in [{low}, {high})"
        raise ValueError(f"{name} must be {rng}, got {value}")
    return int(value)


def check_number(name: str, value: object, low: float | None = None, *, strict: bool = False) -> float:
    """A finite real number, ``>= low`` (``> low`` when ``strict``) when ``low`` is given."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a finite number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (low is not None and (v <= low if strict else v < low)):
        bound = "" if low is None else f" {'>' if strict else '>='} {low}"
        raise ValueError(f"{name} must be a finite number{bound}, got {value!r}")
    return v


def check_callable(name: str, value: object) -> None:
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__} {value!r}")


def check_module(value: object, name: str = "model") -> nn.Module:
    if not isinstance(value, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")
    return value


def check_tensor(name: str, t: object, dim: int | None = None) -> torch.Tensor:
    """A finite floating tensor (of ``dim`` dimensions when given)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating tensor, got dtype {t.dtype}")
    if dim is not None and t.dim() != dim:
        raise ValueError(f"{name} must be a {dim}-D tensor, got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return t


def check_mask(mask: object, shape: tuple, name: str = "mask") -> torch.Tensor:
    """A bool (or 0/1 integer) tensor of ``shape``; True / 1 = real token."""
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != tuple(shape):
        raise ValueError(f"{name} must be a tensor of shape {tuple(shape)}, got "
                         f"{tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__}")
    if mask.dtype != torch.bool:
        if mask.dtype.is_floating_point or mask.dtype.is_complex or not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError(f"{name} must be bool or 0/1 integers (True = real token), got dtype {mask.dtype}")
    return mask


def check_fraction(name: str, value: object) -> float:
    """A float in (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value  # type: ignore[return-value]


def check_input(x: object, n: int, name: str = "x") -> torch.Tensor:
    """A finite floating tensor of shape (..., n)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating tensor, got dtype {x.dtype}")
    if x.dim() < 1 or x.shape[-1] != n:
        raise ValueError(f"{name} must have shape (..., {n}), got {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return x


def check_gram(gram: object, n: int, name: str = "calib_gram") -> torch.Tensor:
    """A finite symmetric (n, n) matrix (positive semi-definiteness is handled by damping)."""
    if not isinstance(gram, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape ({n}, {n}), got {type(gram).__name__}")
    if gram.shape != (n, n):
        raise ValueError(f"{name} must have shape ({n}, {n}), got {tuple(gram.shape)}")
    g = gram.detach().to(torch.float64)
    if not torch.isfinite(g).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    scale = g.abs().max().clamp(min=1e-300)
    if (g - g.T).abs().max() > 1e-6 * scale:
        raise ValueError(f"{name} must be symmetric (X^T X of calibration inputs)")
    if torch.diagonal(g).min() < -1e-9 * scale or float(torch.diagonal(g).sum()) <= 0:
        raise ValueError(f"{name} must be a Gram matrix X^T X (non-negative diagonal, positive trace)")
    return g


def check_input_shape(x: object, n: int, name: str = "x") -> torch.Tensor:
    """:func:`check_input` without the finiteness scan (the caller decides finiteness on a smaller product)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating tensor, got dtype {x.dtype}")
    if x.dim() < 1 or x.shape[-1] != n:
        raise ValueError(f"{name} must have shape (..., {n}), got {tuple(x.shape)}")
    return x
