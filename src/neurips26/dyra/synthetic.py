r"""The spec's smoke layer: a weight with a decaying spectrum and inputs from clusters.

$W = U\,\mathrm{diag}(\sigma)\,V^\top$ with $\sigma_i = i^{-\alpha}$ (a low-rank head plus a decaying tail).
Each of C clusters draws its tokens as $x = D_c\,g$, $g \sim \mathcal N(0, I_d)$, with its own random
d-dimensional subspace $D_c$ (n×d, orthonormal columns) plus isotropic noise of scale ε. The residual output
of one cluster then has rank ≈ d, but a batch mixing all clusters has rank ≈ C·d: low-rank per group
(``group="sample"`` with one cluster per sample), not globally.
"""

from __future__ import annotations

import torch
from torch import nn

from ..constraints import Real, validate
from ._checks import FLOAT_DTYPE, NONNEG_INT, POS_INT


@validate(n=POS_INT, m=POS_INT, clusters=POS_INT, dim=POS_INT, tokens=POS_INT, alpha=Real(), noise=Real(low=0.0),
          seed=NONNEG_INT, dtype=FLOAT_DTYPE)
def clustered_layer(n: int = 128, m: int = 128, *, clusters: int = 4, dim: int = 8, tokens: int = 64,
                    alpha: float = 1.0, noise: float = 0.02, seed: int = 0,
                    dtype: torch.dtype = torch.float64) -> tuple[nn.Linear, torch.Tensor, torch.Tensor]:
    """``(layer, calib (clusters, tokens, n), test (clusters, tokens, n))``; calibration and test draw
    fresh tokens from the same clusters (sample c = cluster c)."""
    if dim > n:
        raise ValueError(f"dim must be <= n = {n} (each cluster spans a dim-dimensional subspace), got {dim}")
    g = torch.Generator().manual_seed(seed)
    U = torch.linalg.qr(torch.randn(m, m, generator=g, dtype=torch.float64)).Q
    V = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64)).Q
    r = min(m, n)
    sigma = torch.arange(1, r + 1, dtype=torch.float64) ** (-alpha)
    W = (U[:, :r] * sigma) @ V[:, :r].T
    lin = nn.Linear(n, m, bias=False, dtype=dtype)
    with torch.no_grad():
        lin.weight.copy_(W.to(dtype))
    bases = [torch.linalg.qr(torch.randn(n, dim, generator=g, dtype=torch.float64)).Q for _ in range(clusters)]

    def draw() -> torch.Tensor:
        xs = [torch.randn(tokens, dim, generator=g, dtype=torch.float64) @ D.T
              + noise * torch.randn(tokens, n, generator=g, dtype=torch.float64) for D in bases]
        return torch.stack(xs).to(dtype)

    return lin, draw(), draw()
