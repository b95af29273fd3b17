"""Closed-form memory crystallisation and the closed-form classifier on the memory bank.

A *crystal* of one class in one domain is ``2r`` points in embedding space chosen so that their
equally weighted mean and covariance match the class's (pseudo-label weighted) mean ``mu`` and the
top-``r`` part of its covariance ``Sigma``. The memory-oriented distribution-matching objective is
(inferred; the paper's exact objective is not public)

.. math::
    L(M) = \\lVert \\mu(M) - \\mu \\rVert_2^2 + \\lVert \\Sigma(M) - \\Sigma \\rVert_F^2,
    \\qquad M = \\{c \\pm v_j\\}_{j=1}^{r},

over *symmetric* crystals (``r`` antipodal pairs around a centre ``c``). For such a set
``mu(M) = c`` and ``Sigma(M) = (1/r) sum_j v_j v_j^T`` (weights ``1/2r``, population covariance),
a PSD matrix of rank <= r. By Eckart-Young the minimum over rank-r PSD matrices of
``||S - Sigma||_F`` is reached at the truncated eigendecomposition ``Sigma_r = sum_{j<=r} lambda_j
u_j u_j^T``, so the closed-form minimiser is

.. math::
    c = \\mu, \\qquad v_j = \\sqrt{r \\lambda_j}\\, u_j, \\qquad L^\\star = \\sum_{j>r} \\lambda_j^2 ,

i.e. "sigma points". Dropping the ``h - r`` weakest directions is the removal of redundant domain
information. The tests compare this against a direct numerical minimisation of ``L``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from neurips26.constraints import Int, Optional, Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorOf

from ._validate import NonEmpty

__all__ = ["crystal_objective", "crystallize", "ridge_fit", "ridge_predict", "weighted_moments"]


@validate(z=NonEmpty(TensorOf("N H")), weights=Optional(TensorOf("N")))
def weighted_moments(z: Tensor, weights: Tensor | None = None) -> tuple[Tensor, Tensor, float]:
    """Weighted mean ``[h]``, population covariance ``[h, h]`` and total weight of points ``z`` ``[n, h]``.

    .. math:: \\mu = \\frac{\\sum_i w_i z_i}{\\sum_i w_i},\\quad
              \\Sigma = \\frac{\\sum_i w_i (z_i-\\mu)(z_i-\\mu)^T}{\\sum_i w_i}
    """
    w = torch.ones(z.shape[0], dtype=z.dtype, device=z.device) if weights is None else weights.to(z.dtype)
    mass = float(w.sum())
    if bool((w < 0).any()) or mass <= 0.0:  # data content: the moments need a positive total weight
        raise ValueError(f"weights: must be non-negative with a positive sum (moments undefined), got sum {mass}")
    mu = (w[:, None] * z).sum(0) / mass
    centred = z - mu
    cov = (centred * w[:, None]).T @ centred / mass
    return mu, cov, mass


@validate(mean=TensorOf("H", dtype="float"), cov=TensorOf("H H", dtype="float"), rank=Int(low=1))
def crystallize(mean: Tensor, cov: Tensor, rank: int) -> Tensor:
    """The closed-form crystal: ``2 * rank`` points ``[2r, h]`` (``c + v_1..v_r``, then ``c - v_1..v_r``).

    Their equally weighted mean is ``mean`` and their population covariance is the best rank-``rank``
    approximation of ``cov`` (eigenvalues below 0 from round-off are clamped to 0).
    """
    check_arguments("crystallize", {"rank": Int(1, mean.shape[0])}, {"rank": rank})  # at most h directions
    # Sigma = U diag(lambda) U^T, eigh returns ascending eigenvalues; keep the r largest.
    evals, evecs = torch.linalg.eigh(0.5 * (cov + cov.T))
    lam = evals[-rank:].flip(0).clamp_min(0.0)           # [r]
    u = evecs[:, -rank:].flip(1)                          # [h, r]
    # v_j = sqrt(r * lambda_j) u_j   ->   (1/r) sum_j v_j v_j^T = sum_j lambda_j u_j u_j^T
    v = (u * torch.sqrt(rank * lam)[None, :]).T           # [r, h]
    return torch.cat([mean[None, :] + v, mean[None, :] - v], dim=0)


@validate(points=NonEmpty(TensorOf("K H", dtype="float")), mean=TensorOf("H", dtype="float"),
          cov=TensorOf("H H", dtype="float"))
def crystal_objective(points: Tensor, mean: Tensor, cov: Tensor) -> Tensor:
    """``L(M) = ||mu(M) - mean||^2 + ||Sigma(M) - cov||_F^2`` for points ``[k, h]`` with weights ``1/k``."""
    mu_m = points.mean(0)
    centred = points - mu_m
    cov_m = centred.T @ centred / points.shape[0]
    return ((mu_m - mean) ** 2).sum() + ((cov_m - cov) ** 2).sum()


@validate(ridge=Real(0.0, None, "neither"), z=NonEmpty(TensorOf("N H", dtype="float")),
          targets=TensorOf("N C", dtype="float"), weights=Optional(TensorOf("N")))
def ridge_fit(z: Tensor, targets: Tensor, ridge: float, weights: Tensor | None = None,
              eps: float = 1e-6) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Weighted ridge regression with an unpenalised intercept on standardised features.

    .. math::
        \\hat z = (z - m) / s, \\qquad
        W = (\\tfrac1n \\hat Z^T D \\hat Z + \\lambda I)^{-1} \\tfrac1n \\hat Z^T D (Y - \\bar y),
        \\qquad b = \\bar y

    where ``m``, ``s`` are the weighted feature mean and standard deviation, ``D = diag(w)`` with
    weights normalised to sum to the number of points ``n``, and ``y_bar`` the weighted target mean.
    The penalty is per point (mean squared error + ``lambda ||W||^2``), so ``lambda`` does not need
    rescaling as the memory bank grows.
    Returns ``(W [h, C], b [C], m [h], s [h])``; predict with :func:`ridge_predict`.
    """
    n = z.shape[0]
    if weights is not None and (bool((weights < 0).any()) or float(weights.sum()) <= 0):
        raise ValueError("weights: expected finite non-negative weights with a positive sum")
    w = torch.ones(n, dtype=z.dtype, device=z.device) if weights is None else weights.to(z.dtype)
    w = w * (n / w.sum())
    m = (w[:, None] * z).sum(0) / n
    s = torch.sqrt((w[:, None] * (z - m) ** 2).sum(0) / n + eps)
    zh = (z - m) / s
    y_bar = (w[:, None] * targets).sum(0) / n
    gram = zh.T @ (w[:, None] * zh) / n + ridge * torch.eye(z.shape[1], dtype=z.dtype, device=z.device)
    coef = torch.linalg.solve(gram, zh.T @ (w[:, None] * (targets - y_bar)) / n)
    return coef, y_bar, m, s


def ridge_predict(z: Tensor, params: tuple[Tensor, Tensor, Tensor, Tensor]) -> Tensor:
    """Scores ``[n, C]`` of the ridge classifier from :func:`ridge_fit`."""
    if not isinstance(params, tuple | list) or len(params) != 4 or not all(isinstance(p, Tensor) for p in params):
        raise ValueError(f"params: expected the 4 tensors (W, b, m, s) of ridge_fit, got {type(params).__name__}")
    coef, bias, m, s = params
    check_arguments("ridge_predict", {"W": TensorOf("H C", finite=False), "z": TensorOf("N H", dtype="float")},
                    {"W": coef, "z": z})
    return ((z - m) / s) @ coef + bias
