"""Input validation shared by the dyra modules (internal): the argument constraints the modules declare
(:mod:`neurips26.constraints`), and the checks a constraint cannot express (non-finite layer weights, 0/1 mask
values, a Gram matrix's symmetry and diagonal)."""

from __future__ import annotations

import torch
from torch import nn

from ..constraints import Choice, Instance, Int, Real, Tensor, check_arguments

#: declared constraints used by several modules
POS_INT = Int(low=1)
NONNEG_INT = Int(low=0)
FRACTION = Real(low=0.0, high=1.0, closed="neither")
MODULE = Instance(nn.Module, "torch.nn.Module")
LINEAR = Instance(nn.Linear, "torch.nn.Linear")
FLOAT_DTYPE = Choice(torch.float16, torch.bfloat16, torch.float32, torch.float64)


def features(n: int, finite: bool = True) -> Tensor:
    """The constraint of a layer input: a floating tensor of shape (..., n) (finite unless ``finite=False``)."""
    return Tensor(f"... {n}", dtype="float", finite=finite)


def check_linear(lin: object, name: str = "lin", where: str = "") -> nn.Linear:
    """An ``nn.Linear`` with finite weights (the weights are data, not an argument constraint)."""
    check_arguments(where, {name: LINEAR}, {name: lin})
    if not torch.isfinite(lin.weight).all() or (lin.bias is not None and not torch.isfinite(lin.bias).all()):
        raise ValueError(f"{name} has non-finite weights")
    return lin


def check_mask(mask: object, shape: tuple, name: str = "mask", where: str = "") -> torch.Tensor:
    """A bool (or 0/1 integer) tensor of ``shape`` (x's leading shape); True / 1 = real token."""
    spec = " ".join(str(s) for s in shape)
    check_arguments(where, {name: Tensor(spec, finite=False)}, {name: mask})
    if mask.dtype != torch.bool:
        if mask.dtype.is_floating_point or mask.dtype.is_complex or not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError(f"{name} must be bool or 0/1 integers (True = real token), got dtype {mask.dtype}")
    return mask


def check_gram(gram: object, n: int, name: str = "calib_gram", where: str = "") -> torch.Tensor:
    """A finite symmetric (n, n) matrix (positive semi-definiteness is handled by damping), as float64."""
    check_arguments(where, {name: Tensor(f"{n} {n}")}, {name: gram})
    g = gram.detach().to(torch.float64)
    scale = g.abs().max().clamp(min=1e-300)
    if (g - g.T).abs().max() > 1e-6 * scale:
        raise ValueError(f"{name} must be symmetric (X^T X of calibration inputs)")
    if torch.diagonal(g).min() < -1e-9 * scale or float(torch.diagonal(g).sum()) <= 0:
        raise ValueError(f"{name} must be a Gram matrix X^T X (non-negative diagonal, positive trace)")
    return g
