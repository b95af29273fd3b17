"""Input validation shared by the smartres modules (errors name the argument, the expectation, the value)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def check_tensor(name: str, x: Any, ndim: int | None = None, floating: bool = True) -> Tensor:
    """``x`` as a tensor of ``ndim`` dimensions with finite entries (float unless ``floating=False``)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if ndim is not None and x.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}")
    if floating:
        if not x.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} must be finite, got non-finite entries")
    return x


def check_boxes(name: str, boxes: Any) -> Tensor:
    """``[N, 4]`` finite boxes with ``x2 >= x1`` and ``y2 >= y1``."""
    boxes = check_tensor(name, boxes, ndim=2)
    if boxes.shape[1] != 4:
        raise ValueError(f"{name} must have shape [N, 4], got {tuple(boxes.shape)}")
    bad = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
    if bool(bad.any()):
        i = int(bad.nonzero()[0, 0])
        raise ValueError(f"{name}: boxes need x2 >= x1 and y2 >= y1, box {i} is {boxes[i].tolist()}")
    return boxes


def check_mask_like(logits: Any, fg_mask: Any) -> tuple[Tensor, Tensor]:
    """``logits [B, R]`` finite floats and a 0/1 or bool ``fg_mask`` of the same shape (returned as bool)."""
    logits = check_tensor("logits", logits, ndim=2)
    if not isinstance(fg_mask, Tensor):
        raise TypeError(f"fg_mask must be a torch.Tensor, got {type(fg_mask).__name__}")
    if fg_mask.shape != logits.shape:
        raise ValueError(f"fg_mask must have the shape of logits {tuple(logits.shape)}, got {tuple(fg_mask.shape)}")
    if fg_mask.dtype != torch.bool:
        if not bool(((fg_mask == 0) | (fg_mask == 1)).all()):
            raise ValueError("fg_mask must hold only 0/1 (or bool) entries")
        fg_mask = fg_mask != 0
    return logits, fg_mask


def check_int(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
            maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name} must be an int >= {minimum}{upper}, got {value!r}")
    return value


def check_float(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                open_low: bool = False, open_high: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value in (
            float("inf"), float("-inf")):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    v = float(value)
    if low is not None and (v < low or (open_low and v == low)):
        raise ValueError(f"{name} must be {'>' if open_low else '>='} {low}, got {value!r}")
    if high is not None and (v > high or (open_high and v == high)):
        raise ValueError(f"{name} must be {'<' if open_high else '<='} {high}, got {value!r}")
    return v


def check_grid(name: str, grid: Any) -> tuple[int, int]:
    """A ``(rows, cols)`` pair of positive ints."""
    if not isinstance(grid, tuple | list) or len(grid) != 2 or any(
            isinstance(g, bool) or not isinstance(g, int) or g < 1 for g in grid):
        raise ValueError(f"{name} must be a pair (rows, cols) of positive ints, got {grid!r}")
    return int(grid[0]), int(grid[1])


def check_index_tensor(name: str, x: Any, shape: tuple, low: int, high: int) -> Tensor:
    """An integer tensor of ``shape`` with entries in ``[low, high)``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of integers, got {type(x).__name__}")
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers, got dtype {x.dtype}")
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {list(shape)}, got {tuple(x.shape)}")
    if x.numel() and (int(x.min()) < low or int(x.max()) >= high):
        raise ValueError(f"{name} must hold values in [{low}, {high}), got values in [{int(x.min())}, {int(x.max())}]")
    return x
