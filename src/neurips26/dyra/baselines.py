r"""What DyRA is compared against, each as a drop-in for an ``nn.Linear``.

* dense: the ``nn.Linear`` itself;
* weight-only truncated SVD with ``torch.linalg.svd`` or the randomized ``torch.svd_lowrank``;
* SVD-LLM-style whitened SVD (damped Cholesky of the calibration Gram), our re-implementation of the peer;
* block-diagonal and Monarch projections;
* static residual correction (one Q from calibration data);
* the pure output-low-rank ablation: DyRA with $W_s = 0$, i.e. $\hat Y = [XW^\top]$ projected on a per-input
  rank-k subspace;
* the Eckart–Young oracle $[Y]_k$ (best rank-k output; needs Y, so it is a bound, not a method).
"""

from __future__ import annotations

import torch
from torch import nn

from ..constraints import Tensor, check_arguments, validate
from ._checks import POS_INT, check_linear, features
from .correction import DyRALinear, StaticResidualCorrection
from .structured import StructuredLinear

__all__ = ["best_rank_k", "blockdiag_linear", "monarch_linear", "output_low_rank", "relative_output_error",
           "static_corrected", "weight_svd", "whitened_svd"]


def weight_svd(lin: nn.Linear, rank: int, method: str = "linalg") -> StructuredLinear:
    """Truncated SVD of the weight at ``rank``; ``method="linalg"`` (exact) or ``"lowrank"`` (``torch.svd_lowrank``)."""
    return StructuredLinear.from_linear(lin, "svd", rank=rank, svd_method=method)


def whitened_svd(lin: nn.Linear, rank: int, calib_gram: torch.Tensor) -> StructuredLinear:
    """SVD-LLM-style activation-aware SVD at ``rank`` (damped Cholesky of ``calib_gram`` = X_calᵀX_cal)."""
    return StructuredLinear.from_linear(lin, "whitened_svd", rank=rank, calib_gram=calib_gram)


def blockdiag_linear(lin: nn.Linear, blocks: int) -> StructuredLinear:
    """The ``blocks`` diagonal blocks of the weight (1/blocks of dense FLOPs)."""
    return StructuredLinear.from_linear(lin, "blockdiag", blocks=blocks)


def monarch_linear(lin: nn.Linear, blocks: int, rank: int) -> StructuredLinear:
    """Monarch projection with ``blocks`` blocks and per-block rank ``rank``."""
    return StructuredLinear.from_linear(lin, "monarch", blocks=blocks, rank=rank)


def static_corrected(lin: nn.Linear, structured: StructuredLinear, rank: int,
                     calib_gram: torch.Tensor) -> StaticResidualCorrection:
    """Structured path + static rank-``rank`` correction from the calibration Gram."""
    return StaticResidualCorrection(lin, structured, rank, calib_gram)


def output_low_rank(lin: nn.Linear, rank: int, **kw) -> DyRALinear:
    """The pure output-low-rank ablation: DyRA on $W_s = 0$ (so $E = W$); ``kw`` as :class:`DyRALinear`."""
    return DyRALinear(lin, StructuredLinear.zeros(lin), rank=rank, **kw)


@validate(Y=Tensor("N M", finite=False), k=POS_INT)
def best_rank_k(Y: torch.Tensor, k: int) -> torch.Tensor:
    """Eckart–Young: the best rank-k approximation of Y (N, m) in Frobenius norm (float64 SVD)."""
    U, S, Vh = torch.linalg.svd(Y.to(torch.float64), full_matrices=False)
    return ((U[:, :k] * S[:k]) @ Vh[:k]).to(Y.dtype)


def relative_output_error(y_hat: torch.Tensor, y: torch.Tensor) -> float:
    r"""$\lVert \hat Y - Y\rVert_F / \lVert Y\rVert_F$ (float64)."""
    if y_hat.shape != y.shape:
        raise ValueError(f"shapes differ: {tuple(y_hat.shape)} vs {tuple(y.shape)}")
    y_hat, y = y_hat.detach().to(torch.float64), y.detach().to(torch.float64)
    return float((y_hat - y).norm() / y.norm().clamp(min=1e-300))


def layer_outputs(lin: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """Dense outputs (validated), for error measurements."""
    check_linear(lin, where="layer_outputs")
    check_arguments("layer_outputs", {"x": features(lin.in_features)}, {"x": x})
    with torch.no_grad():
        return lin(x)
