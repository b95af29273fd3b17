r"""Structured approximations $W_s \approx W$ of a linear layer, each with a fast apply.

A linear layer computes $Y = X W^\top + b$ for tokens as rows, $X \in \mathbb{R}^{N\times n}$,
$W \in \mathbb{R}^{m\times n}$ (out × in, as ``torch.nn.Linear``). Four structures:

* ``"svd"``: truncated SVD $W_s = U_r \Sigma_r V_r^\top$, stored as $A = U_r\Sigma_r$ (m×r), $B = V_r^\top$ (r×n);
  the best rank-r *weight* (Eckart–Young on $\lVert W - W_s\rVert_F$).
* ``"whitened_svd"``: SVD-LLM-style activation-aware SVD. With the calibration Gram
  $G = X_{cal}^\top X_{cal}$ damped to $G + \lambda\,\overline{\mathrm{diag}\,G}\,I$ and $G = L L^\top$ (Cholesky),
  take the SVD $W L = U\Sigma V^\top$ and $W_s = U_r\Sigma_r V_r^\top L^{-1}$, which minimises the calibration
  *output* error $\lVert (W - W_s) X_{cal}^\top\rVert_F$ over rank-r matrices (exactly when $\lambda = 0$).
* ``"blockdiag"``: the b diagonal blocks of W (b blocks of (m/b)×(n/b)); the cost is 1/b of dense.
* ``"monarch"``: a Monarch matrix $W_s = L\,P\,R$ (block-diagonal · permutation · block-diagonal, b blocks
  each). Written blockwise, block $(i, j)$ of $W_s$ (rows of output block i, columns of input block j) equals
  $L_{ij} R_{ji}$ with $L_{ij}$ (m/b × s), $R_{ji}$ (s × n/b): Monarch rank s per block (s = 1 is Dao et al.'s
  original). The projection from W is the truncated SVD of every block (optimal for this class).

FLOPs are counted as 2 per multiply–add plus m per token for the bias; ``rank_ratio`` is the target
fraction of the dense FLOPs $2mn$ spent by the factors (SVD: $r = \lfloor \rho\, mn/(m+n)\rfloor$;
Monarch: $s = \lfloor \rho\, mn/(b(m+n))\rfloor$); block-diagonal costs $1/b$ whatever ``rank_ratio`` is.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..constraints import Choice, Optional, Real, Tensor, check_arguments, validate
from ._checks import FRACTION, LINEAR, NONNEG_INT, POS_INT, check_gram, check_linear, features

STRUCTURES = ("svd", "whitened_svd", "blockdiag", "monarch")
#: Gram damping λ: $G + \lambda\cdot\mathrm{mean}(\mathrm{diag}\,G)\,I$ before Cholesky (spec: λ ≈ 1e-2).
DAMPING = 1e-2


@validate(m=POS_INT, n=POS_INT, rank_ratio=FRACTION)
def svd_rank(m: int, n: int, rank_ratio: float) -> int:
    r"""Rank whose factors cost ``rank_ratio`` of dense: $r = \max(1, \lfloor \rho\,mn/(m+n)\rfloor)$."""
    return max(1, math.floor(float(rank_ratio) * m * n / (m + n)))


@validate(gram=Tensor("N N"), damping=Real(low=0.0, closed="neither"))
def damped_cholesky(gram: torch.Tensor, damping: float = DAMPING) -> torch.Tensor:
    r"""Lower-triangular L with $L L^\top = G + \lambda\,\mathrm{mean}(\mathrm{diag}\,G)\,I$, float64.

    If the damped Gram is still not positive definite (SVD-LLM v2's failure case), the damping is
    multiplied by 10 until Cholesky succeeds (at most 6 times), then an eigendecomposition with the
    eigenvalues floored at the damping is used: $L = V \max(\Lambda, \epsilon)^{1/2}$ (not triangular, but
    $L L^\top$ is the floored Gram, which is all the whitening needs).
    """
    g = check_gram(gram, gram.shape[0], "gram", "damped_cholesky")
    eye = torch.eye(g.shape[0], dtype=g.dtype)
    base = float(torch.diagonal(g).mean())
    lam = damping
    for _ in range(7):
        chol, info = torch.linalg.cholesky_ex(g + lam * base * eye)
        if int(info) == 0:
            return chol
        lam *= 10
    evals, evecs = torch.linalg.eigh(g)
    return evecs * evals.clamp(min=lam * base).sqrt()


class StructuredLinear(nn.Module):
    """A structured stand-in for an ``nn.Linear``: ``forward(x (..., n)) -> (..., m)``.

    Build it with :meth:`from_linear` (or :meth:`low_rank` / :meth:`zeros` from given factors).
    Attributes: ``structure``, ``in_features`` n, ``out_features`` m, ``rank`` (r for SVD kinds, s per
    block for Monarch, ``None`` for block-diagonal), ``blocks`` b.
    """

    @validate(structure=Choice(*STRUCTURES, "zero"), in_features=POS_INT, out_features=POS_INT,
              rank=Optional(NONNEG_INT), blocks=POS_INT)
    def __init__(self, structure: str, in_features: int, out_features: int, factors: dict[str, torch.Tensor],
                 bias: torch.Tensor | None, *, rank: int | None = None, blocks: int = 1) -> None:
        if not isinstance(factors, dict) or not all(isinstance(k, str) and isinstance(t, torch.Tensor)
                                                    for k, t in factors.items()):
            raise TypeError(f"factors must be a dict name -> tensor, got {type(factors).__name__}")
        check_arguments("StructuredLinear", {f"factors[{name!r}]": Tensor(dtype="float") for name in factors}
                        | {"bias": Optional(Tensor(f"{out_features}", dtype="float"))},
                        {f"factors[{name!r}]": t for name, t in factors.items()} | {"bias": bias})
        super().__init__()
        self.structure, self.in_features, self.out_features = structure, in_features, out_features
        self.rank, self.blocks = rank, blocks
        for name, t in factors.items():
            self.register_buffer(name, t.detach().clone())
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    # ------------------------------------------------------------------------------ constructors
    @classmethod
    @validate(A=Tensor("M R", dtype="float"), B=Tensor("R N", dtype="float"),
              bias=Optional(Tensor("M", dtype="float")), structure=Choice("svd", "whitened_svd"))
    def low_rank(cls, A: torch.Tensor, B: torch.Tensor, bias: torch.Tensor | None = None,
                 structure: str = "svd") -> StructuredLinear:
        r"""$W_s = A B$ from factors A (m×r), B (r×n)."""
        return cls(structure, B.shape[1], A.shape[0], {"A": A, "B": B}, bias, rank=A.shape[1])

    @classmethod
    def zeros(cls, lin: nn.Linear) -> StructuredLinear:
        """$W_s = 0$ (keeps the bias): the base of the pure output-low-rank ablation."""
        check_linear(lin, where="StructuredLinear.zeros")
        return cls("zero", lin.in_features, lin.out_features, {}, lin.bias, rank=0)

    @classmethod
    @validate(lin=LINEAR, structure=Choice(*STRUCTURES), rank_ratio=FRACTION, blocks=POS_INT,
              calib_gram=Optional(Tensor("N N")), rank=Optional(POS_INT), svd_method=Choice("linalg", "lowrank"))
    def from_linear(cls, lin: nn.Linear, structure: str = "svd", rank_ratio: float = 0.25, blocks: int = 4,
                    calib_gram: torch.Tensor | None = None, *, rank: int | None = None,
                    svd_method: str = "linalg") -> StructuredLinear:
        """Project ``lin.weight`` onto ``structure``.

        Args:
            lin: the dense layer (weights are copied; ``lin`` is not modified).
            structure: ``"svd"``, ``"whitened_svd"``, ``"blockdiag"`` or ``"monarch"``.
            rank_ratio: fraction of dense FLOPs for the factors, in (0, 1) (not used by ``"blockdiag"``).
            blocks: b, must divide both dimensions (``"blockdiag"``, ``"monarch"``).
            calib_gram: $X_{cal}^\\top X_{cal}$ (n×n), required by ``"whitened_svd"``.
            rank: an explicit rank (SVD kinds) or per-block rank (Monarch) instead of ``rank_ratio``.
            svd_method: ``"linalg"`` (``torch.linalg.svd``) or ``"lowrank"`` (``torch.svd_lowrank``,
                randomized, 4 power iterations), for ``"svd"``.
        """
        check_linear(lin, where="StructuredLinear.from_linear")
        m, n = lin.out_features, lin.in_features
        W = lin.weight.detach().to(torch.float64)
        if structure in ("blockdiag", "monarch") and (m % blocks or n % blocks):
            raise ValueError(f"blocks must divide both dimensions ({m}, {n}), got {blocks}")
        if structure == "whitened_svd" and calib_gram is None:
            raise ValueError("structure='whitened_svd' needs calib_gram (X_cal^T X_cal, shape (n, n))")
        if calib_gram is not None:
            check_gram(calib_gram, n, where="StructuredLinear.from_linear")
        dtype, bias = lin.weight.dtype, lin.bias
        if structure == "blockdiag":
            m1, n1 = m // blocks, n // blocks
            D = torch.stack([W[i * m1:(i + 1) * m1, i * n1:(i + 1) * n1] for i in range(blocks)])
            return cls("blockdiag", n, m, {"D": D.to(dtype)}, bias, rank=None, blocks=blocks)
        if structure == "monarch":
            return cls._monarch(W, blocks, rank_ratio, rank, dtype, bias)
        r = svd_rank(m, n, rank_ratio) if rank is None else rank
        if r >= min(m, n):
            raise ValueError(f"rank_ratio {rank_ratio} gives rank {r} >= min(m, n) = {min(m, n)}: no saving")
        if structure == "svd":
            if svd_method == "lowrank":
                gen_state = torch.random.get_rng_state()
                torch.manual_seed(0)  # torch.svd_lowrank draws from the global RNG: seed it, then restore
                U, S, V = torch.svd_lowrank(W, q=min(r + 10, min(m, n)), niter=4)
                torch.random.set_rng_state(gen_state)
                A, B = U[:, :r] * S[:r], V[:, :r].T
            else:
                U, S, Vh = torch.linalg.svd(W, full_matrices=False)
                A, B = U[:, :r] * S[:r], Vh[:r]
        else:
            # SVD-LLM: W L = U Σ Vᵀ with L Lᵀ = damped Gram; W_s = U_r Σ_r (V_rᵀ L⁻¹)
            L = damped_cholesky(calib_gram)
            U, S, Vh = torch.linalg.svd(W @ L, full_matrices=False)
            A = U[:, :r] * S[:r]
            # B = V_rᵀ L⁻¹, i.e. solve Bᵀ from Lᵀ Bᵀ = V_r (triangular when L is Cholesky)
            B = torch.linalg.solve(L.T, Vh[:r].T).T
        return cls(structure, n, m, {"A": A.to(dtype), "B": B.to(dtype)}, bias, rank=r)

    @classmethod
    def _monarch(cls, W: torch.Tensor, b: int, rank_ratio: float, rank: int | None, dtype: torch.dtype,
                 bias: torch.Tensor | None) -> StructuredLinear:
        m, n = W.shape
        m1, n1 = m // b, n // b
        if rank is None:
            s = max(1, math.floor(float(rank_ratio) * m * n / (b * (m + n))))
        else:
            s = rank
        if s > min(m1, n1) or 2 * b * s * (m + n) >= 2 * m * n:
            raise ValueError(f"monarch per-block rank {s} with {b} blocks gives no saving for ({m}, {n})")
        # block (i, j) = W[i·m1:(i+1)·m1, j·n1:(j+1)·n1] ≈ L_ij R_ji (rank s, truncated SVD per block)
        blocks = W.reshape(b, m1, b, n1).permute(0, 2, 1, 3)  # [i, j, m1, n1]
        U, S, Vh = torch.linalg.svd(blocks, full_matrices=False)
        L = U[..., :s] * S[..., None, :s]                     # [i, j, m1, s]
        R = Vh[..., :s, :].transpose(0, 1).contiguous()        # [j, i, s, n1]
        return cls("monarch", n, m, {"L": L.to(dtype), "R": R.to(dtype)}, bias, rank=s, blocks=b)

    # ------------------------------------------------------------------------------ apply
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x (..., n) -> (..., m)``."""
        check_arguments("StructuredLinear.forward", {"x": features(self.in_features)}, {"x": x})
        return self._fast_apply(x)

    def _fast_apply(self, x: torch.Tensor) -> torch.Tensor:
        """Unvalidated fast path (used by DyRALinear after its own validation)."""
        lead = x.shape[:-1]
        if self.structure == "zero":
            y = x.new_zeros(*lead, self.out_features)
        elif self.structure in ("svd", "whitened_svd"):
            # y = (x Bᵀ) Aᵀ + b : 2rn + 2rm (+ m) FLOPs per token; the bias is fused into the second product
            # (addmm: one pass over the (N, m) output instead of a product and a separate add)
            z = x.reshape(-1, self.in_features) @ self.B.to(x.dtype).T
            A = self.A.to(x.dtype).T
            if self.bias is not None:
                return torch.addmm(self.bias.to(x.dtype), z, A).reshape(*lead, self.out_features)
            y = (z @ A).reshape(*lead, self.out_features)
        elif self.structure == "blockdiag":
            b = self.blocks
            xb = x.reshape(-1, b, self.in_features // b).transpose(0, 1)   # [b, N, n1]
            y = torch.bmm(xb, self.D.to(x.dtype).transpose(1, 2))           # [b, N, m1]
            y = y.transpose(0, 1).reshape(*lead, self.out_features)
        else:  # monarch: y_i = Σ_j L_ij (R_ji x_j)
            b, s = self.blocks, self.rank
            xb = x.reshape(-1, b, self.in_features // b).transpose(0, 1)    # [j, N, n1]
            R = self.R.to(x.dtype).reshape(b, b * s, -1)                    # [j, (i, s), n1]
            z = torch.bmm(xb, R.transpose(1, 2))                            # [j, N, (i, s)]
            z = z.reshape(b, -1, b, s).permute(2, 1, 0, 3).reshape(b, -1, b * s)  # [i, N, (j, s)]
            L = self.L.to(x.dtype).permute(0, 2, 1, 3).reshape(b, -1, b * s)  # [i, m1, (j, s)]
            y = torch.bmm(z, L.transpose(1, 2))                             # [i, N, m1]
            y = y.transpose(0, 1).reshape(*lead, self.out_features)
        if self.bias is not None:
            y = y + self.bias.to(y.dtype)
        return y

    def weight(self) -> torch.Tensor:
        """The dense matrix $W_s$ (m×n) this module applies (for residuals and tests)."""
        eye = torch.eye(self.in_features, dtype=self._dtype(), device=self._device())
        bias, self.bias = self.bias, None
        try:
            return self._fast_apply(eye).T.contiguous()
        finally:
            self.bias = bias

    def _dtype(self) -> torch.dtype:
        bufs = [b for b in self.buffers() if b is not None]
        return bufs[0].dtype if bufs else torch.float32

    def _device(self) -> torch.device:
        bufs = [b for b in self.buffers() if b is not None]
        return bufs[0].device if bufs else torch.device("cpu")

    def flops_per_token(self) -> float:
        """FLOPs per token: 2 per multiply–add, plus m for the bias (when there is one)."""
        m, n = self.out_features, self.in_features
        bias = m if self.bias is not None else 0
        if self.structure == "zero":
            return float(bias)
        if self.structure in ("svd", "whitened_svd"):
            return float(2 * self.rank * (m + n) + bias)
        if self.structure == "blockdiag":
            return float(2 * m * n / self.blocks + bias)
        return float(2 * self.blocks * self.rank * (m + n) + bias)

    def extra_repr(self) -> str:
        return (f"structure={self.structure!r}, in_features={self.in_features}, out_features={self.out_features}, "
                f"rank={self.rank}, blocks={self.blocks}")
