r"""DyRA: a per-input low-rank estimate of the residual output, added to a structured fast path.

Tokens are rows: $X \in \mathbb{R}^{N\times n}$, $Y = X W^\top$, $W_s \approx W$ structured, $E = W - W_s$ (m×n).
The residual output is $R = X E^\top \in \mathbb{R}^{N\times m}$. DyRA returns

$$\hat Y = W_s(X) + R\,Q Q^\top = W_s(X) + \big(X (E^\top Q)\big) Q^\top,$$

with $Q \in \mathbb{R}^{m\times k}$ orthonormal spanning (approximately) the top-k column space of $R^\top$, found by a
randomized range finder (Halko, Martinsson, Tropp 2011) on this very input — so the correction adapts to X:

1. sketch $S = X^\top \Omega$, $\Omega \in \mathbb{R}^{N\times \ell}$ Gaussian, $\ell = k + p$ (or ``sketch="tokens"``:
   $S$ = ℓ randomly chosen token rows of X, no FLOPs);
2. $Z = E S = R^\top \Omega$ (m×ℓ); with ``power_iters=q`` repeat q times $Z \leftarrow R^\top R\,Z$ after
   re-orthonormalising Z (power iterations on $R^\top R$, i.e. $E X^\top X E^\top$; inferred: the spec's
   $E(E^\top Z)$ would ignore X);
3. $Z = Q_Z T$ (thin QR in ≥ fp32), $T = U_T \Sigma_T V_T^\top$; $Q = Q_Z U_T[:, :k]$ = the top-k left singular
   vectors of Z;
4. $G = E^\top Q$ (n×k), $B = X G$ (N×k), correction $B Q^\top$.

Since $RQQ^\top$ is the orthogonal projection of R's rows onto span Q, the correction never makes the error
worse than none, has rank ≤ k, and by Eckart–Young is never better than the best rank-k output $[R]_k$; it is
exact when rank R ≤ k (almost surely). Static correction (:class:`StaticResidualCorrection`) uses one Q
from calibration data instead.

Groups: ``group="batch"`` uses all tokens of a call as one X (outputs depend on the batch's composition: a
serving/determinism hazard); ``group="sample"`` treats each leading index of ``x (B, T, n)`` as its own X, and
its output depends neither on the rest of the batch nor on earlier calls. Ω rows are drawn per token *rank*
among the real (unmasked) tokens, in chunks seeded from ``seed``, so masked pads change nothing. Groups with
fewer than $\ell$ real tokens fall back to the static correction (when given) or to none.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..constraints import Bool, Callable, Choice, Instance, Optional, Tensor, check_arguments, validate
from ._checks import FLOAT_DTYPE, NONNEG_INT, POS_INT, check_gram, check_linear, check_mask, features
from .structured import StructuredLinear

GROUPS = ("batch", "sample")
SKETCHES = ("gaussian", "tokens")
_CHUNK = 256  # Ω rows are drawn 256 at a time; chunk c comes from a generator seeded (seed, c)


# ---------------------------------------------------------------------------------- FLOP formulas
@validate(m=POS_INT, l=POS_INT)
def qr_flops(m: int, l: int) -> float:
    r"""Householder thin QR of an m×ℓ matrix: $2m\ell^2 - \tfrac23\ell^3$ (Golub–Van Loan), $\ell \le m$."""
    l = min(l, m)
    return 2.0 * m * l * l - 2.0 * l ** 3 / 3.0


@validate(l=POS_INT)
def small_svd_flops(l: int) -> float:
    r"""SVD of the ℓ×ℓ triangular factor with its left vectors: $22\ell^3$ (Golub–Van Loan's R-SVD count)."""
    return 22.0 * l ** 3


@validate(m=POS_INT, n=POS_INT, rank=POS_INT, oversample=NONNEG_INT, power_iters=NONNEG_INT, n_tokens=POS_INT,
          sketch=Choice(*SKETCHES))
def dyra_extra_flops(m: int, n: int, rank: int, oversample: int, power_iters: int, n_tokens: int,
                     sketch: str = "gaussian") -> float:
    r"""FLOPs per token that DyRA adds to the structured path, for a group of N = ``n_tokens`` tokens.

    Per group (ℓ = k + p, ℓ' = min(ℓ, m)): sketch $2nN\ell$ (Gaussian; 0 for token sampling), $Z = ES$:
    $2mn\ell$; each power iteration: a QR plus $4mn\ell + 4Nn\ell$; final QR $2m\ell'^2 - \frac23\ell'^3$; small
    SVD $22\ell'^3$; $Q = Q_Z U_k$: $2m\ell' k$; $G = E^\top Q$: $2mnk$. Per token: $B = XG$: $2nk$,
    $BQ^\top$: $2km$, the add: $m$. Returns (group terms)/N + per-token terms.
    """
    k, l, N = rank, rank + oversample, n_tokens
    lq = min(l, m)
    group = 2.0 * n * N * l if sketch == "gaussian" else 0.0
    group += 2.0 * m * n * l
    group += power_iters * (qr_flops(m, l) + 4.0 * m * n * l + 4.0 * N * n * l)
    group += qr_flops(m, l) + small_svd_flops(lq) + 2.0 * m * lq * k + 2.0 * m * n * k
    return group / N + 2.0 * n * k + 2.0 * k * m + m


@validate(m=POS_INT, n=POS_INT, rank=POS_INT)
def static_extra_flops(m: int, n: int, rank: int) -> float:
    """FLOPs per token of a static rank-k correction: $2nk + 2km + m$."""
    return 2.0 * n * rank + 2.0 * rank * m + m


@validate(m=POS_INT, n=POS_INT, bias=Bool())
def dense_flops(m: int, n: int, bias: bool = True) -> float:
    """FLOPs per token of ``nn.Linear``: $2mn$ (+ m for the bias)."""
    return 2.0 * m * n + (m if bias else 0)


# ---------------------------------------------------------------------------------- reference
def _check_rank(name: str, k: int, m: int, n: int) -> int:
    """The upper bound of a correction rank (its type and k >= 1 are declared): k < min(m, n)."""
    if k >= min(m, n):
        raise ValueError(f"{name} must be in [1, min(m, n) = {min(m, n)}), got {k}")
    return k


def _qr_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


@validate(X=Tensor("N D", dtype="float"), Ws_apply=Callable(), E=Tensor("M D"), k=POS_INT, p=NONNEG_INT,
          q=NONNEG_INT, generator=Optional(Instance(torch.Generator, "torch.Generator")),
          omega=Optional(Tensor("N L", dtype="float")))
def dyra_matmul(X: torch.Tensor, Ws_apply, E: torch.Tensor, k: int, p: int = 8, q: int = 0,
                generator: torch.Generator | None = None, omega: torch.Tensor | None = None) -> torch.Tensor:
    r"""Reference DyRA product for one group: $W_s(X) + R Q Q^\top$, $R = X E^\top$.

    Args:
        X: tokens as rows, (N, n).
        Ws_apply: callable (N, n) -> (N, m), the structured product $X W_s^\top$ (+ bias).
        E: the residual weight $W - W_s$, (m, n).
        k: correction rank, 1 ≤ k < min(m, n).  p: oversampling ≥ 0.  q: power iterations ≥ 0.
        generator: for the Gaussian Ω (N, k + p); ignored when ``omega`` is given.
        omega: an explicit sketch matrix (N, k + p).
    Returns:
        (N, m) in X's dtype; the QR/SVD of the m×(k+p) sketch runs in ≥ fp32.
    """
    m, n = E.shape
    k = _check_rank("k", k, m, n)
    N, l = X.shape[0], k + p
    if omega is None:
        omega = torch.randn(N, l, generator=generator, dtype=X.dtype, device=X.device)
    elif omega.shape[1] != l:
        raise ValueError(f"omega must have shape ({N}, {l}), got {tuple(omega.shape)}")
    wdt = _qr_dtype(X.dtype)
    Xw, Ew = X.to(wdt), E.to(wdt)
    R = Xw @ Ew.T                                   # (N, m) residual output
    Z = R.T @ omega.to(wdt)                         # (m, l) = E Xᵀ Ω
    for _ in range(q):
        Z = torch.linalg.qr(Z).Q
        Z = R.T @ (R @ Z)                           # Z ← Rᵀ R Z
    U = torch.linalg.svd(Z, full_matrices=False).U  # top-k left singular vectors of Z
    Q = U[:, :k]
    out = Ws_apply(X)
    return (out.to(wdt) + (R @ Q) @ Q.T).to(X.dtype)


# ---------------------------------------------------------------------------------- static
_STRUCTURED = Instance(StructuredLinear, "StructuredLinear")


class StaticResidualCorrection(nn.Module):
    r"""Structured path + a fixed rank-k correction: $\hat Y = W_s(X) + X (E^\top Q) Q^\top$.

    $Q$ = top-k left singular vectors of $E X_{cal}^\top$, i.e. the top-k eigenvectors of
    $E\,G\,E^\top$ with $G = X_{cal}^\top X_{cal}$ (LQER/EoRA-style; inferred as the paper's static counterpart).
    Costs $2nk + 2km + m$ FLOPs per token more than the structured path; not adaptive.
    """

    @validate(structured=_STRUCTURED, rank=POS_INT)
    def __init__(self, dense: nn.Linear, structured: StructuredLinear, rank: int, calib_gram: torch.Tensor) -> None:
        super().__init__()
        check_linear(dense, "dense", "StaticResidualCorrection")
        _check_pair(dense, structured)
        m, n = dense.out_features, dense.in_features
        self.rank = _check_rank("rank", rank, m, n)
        G = check_gram(calib_gram, n, where="StaticResidualCorrection")
        E = dense.weight.detach().to(torch.float64) - structured.weight().to(torch.float64)
        if m <= n:                                              # eigh of the m×m E G Eᵀ (ascending)
            Q = torch.linalg.eigh(E @ G @ E.T).eigenvectors[:, -rank:].flip(1)   # (m, k), top-k
        else:                                                   # m > n: SVD of the m×n E G^{1/2} is cheaper
            lam, V = torch.linalg.eigh(G)                       # G = V Λ Vᵀ, E G Eᵀ = (E V Λ^½)(E V Λ^½)ᵀ
            Q = torch.linalg.svd(E @ (V * lam.clamp(min=0).sqrt()), full_matrices=False).U[:, :rank]
        self.structured = structured
        self.in_features, self.out_features = n, m
        dt = dense.weight.dtype
        self.register_buffer("Q", Q.to(dt))
        self.register_buffer("G", (E.T @ Q).to(dt))             # (n, k) = Eᵀ Q

    @classmethod
    @validate(structured=_STRUCTURED, Q=Tensor("M K", dtype="float"), G=Tensor("N K", dtype="float"))
    def from_factors(cls, structured: StructuredLinear, Q: torch.Tensor, G: torch.Tensor) -> StaticResidualCorrection:
        r"""Rebuild from saved factors: Q (m, k) and $G = E^\top Q$ (n, k) (see :func:`~.adapters.load_dyra`)."""
        m, n = structured.out_features, structured.in_features
        if Q.shape[0] != m or G.shape[0] != n:
            raise ValueError(f"Q must be ({m}, k) and G ({n}, k), got {tuple(Q.shape)} and {tuple(G.shape)}")
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.rank, self.structured = int(Q.shape[1]), structured
        self.in_features, self.out_features = n, m
        self.register_buffer("Q", Q.detach().clone())
        self.register_buffer("G", G.detach().clone())
        return self

    def correction(self, x: torch.Tensor) -> torch.Tensor:
        """(..., n) -> (..., m): $(x G) Q^\\top$."""
        check_arguments("StaticResidualCorrection.correction", {"x": features(self.in_features)}, {"x": x})
        return self._correction(x)

    def _correction(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`correction` on checked x."""
        return (x @ self.G.to(x.dtype)) @ self.Q.to(x.dtype).T

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_arguments("StaticResidualCorrection.forward", {"x": features(self.in_features)}, {"x": x})
        return self.structured._fast_apply(x) + self._correction(x)

    def flops_per_token(self, n_tokens: int | None = None) -> float:
        return self.structured.flops_per_token() + static_extra_flops(self.out_features, self.in_features, self.rank)


def _check_pair(dense: nn.Linear, structured: StructuredLinear) -> None:
    if (structured.out_features, structured.in_features) != (dense.out_features, dense.in_features):
        raise ValueError(f"structured and dense must have the same shape (out x in): structured is "
                         f"{structured.out_features}x{structured.in_features}, dense is "
                         f"{dense.out_features}x{dense.in_features}")


# ---------------------------------------------------------------------------------- DyRA module
class DyRALinear(nn.Module):
    r"""``nn.Linear`` replacement: structured product + DyRA correction of its residual output.

    Args:
        dense: the original layer (its weight gives $E = W - W_s$; E is kept dense: no memory saving).
        structured: the fast path $W_s$ (a :class:`StructuredLinear`; it carries the bias).
        rank: correction rank k, 1 ≤ k < min(m, n).
        oversample: p ≥ 0, the sketch has ℓ = k + p columns.
        power_iters: q ≥ 0 power iterations on $R^\top R$.
        group: ``"batch"`` (all tokens of a call) or ``"sample"`` (each leading index of x).
        sketch: ``"gaussian"`` (Ω Gaussian) or ``"tokens"`` (ℓ random real tokens).
        seed: seeds Ω (the same Ω rows for every call).
        residual_dtype: dtype of E and of the sketch/correction matmuls (QR/SVD in ≥ fp32).
        fallback: a :class:`StaticResidualCorrection` used for groups with fewer than ℓ real tokens
            (``None``: no correction there).
    Attributes: ``token_mask`` — a bool tensor of x's leading shape set by :func:`apply_dyra`'s hook
    (True = real token), used when ``forward`` gets no ``mask``.
    """

    @validate(structured=_STRUCTURED, rank=POS_INT, oversample=NONNEG_INT, power_iters=NONNEG_INT,
              group=Choice(*GROUPS), sketch=Choice(*SKETCHES), seed=NONNEG_INT, residual_dtype=FLOAT_DTYPE,
              fallback=Optional(Instance(StaticResidualCorrection, "StaticResidualCorrection")))
    def __init__(self, dense: nn.Linear, structured: StructuredLinear, rank: int = 32, oversample: int = 8,
                 power_iters: int = 0, group: str = "batch", sketch: str = "gaussian", seed: int = 0,
                 residual_dtype: torch.dtype = torch.bfloat16,
                 fallback: StaticResidualCorrection | None = None) -> None:
        super().__init__()
        check_linear(dense, "dense", "DyRALinear")
        _check_pair(dense, structured)
        m, n = dense.out_features, dense.in_features
        self.rank = _check_rank("rank", rank, m, n)
        self.oversample, self.power_iters, self.group, self.sketch = oversample, power_iters, group, sketch
        self.seed = seed
        self.in_features, self.out_features = n, m
        self.structured, self.fallback = structured, fallback
        E = dense.weight.detach().to(torch.float64) - structured.weight().to(torch.float64)
        self.register_buffer("E", E.to(residual_dtype))
        self.token_mask: torch.Tensor | None = None
        self._omega_cache: dict[tuple, torch.Tensor] = {}

    @classmethod
    def from_linear(cls, lin: nn.Linear, structure: str = "svd", rank_ratio: float = 0.25, correction_rank: int = 32,
                    calib_gram: torch.Tensor | None = None, *, blocks: int = 4, structured_rank: int | None = None,
                    **kw) -> DyRALinear:
        """Project ``lin`` onto ``structure`` (see :meth:`StructuredLinear.from_linear`) and wrap it;
        ``kw`` go to the constructor (``oversample``, ``group``, ...)."""
        s = StructuredLinear.from_linear(lin, structure, rank_ratio, blocks, calib_gram, rank=structured_rank)
        return cls(lin, s, rank=correction_rank, **kw)

    # ------------------------------------------------------------------------------ sketch matrices
    def _omega_table(self, rows: int, l: int, device: torch.device, dtype: torch.dtype) -> tuple[tuple, torch.Tensor]:
        """Ω rows 0..rows-1 (≥ rows, whole chunks): row t depends only on (seed, t, ℓ). Returns (key, table);
        the caller stores it with :meth:`_remember_omega` once its call succeeded (a failed call changes nothing)."""
        chunks = max(1, math.ceil(rows / _CHUNK))
        key = (l, chunks, str(device), dtype, self.sketch)
        if key in self._omega_cache:
            return key, self._omega_cache[key]
        parts = []
        for c in range(chunks):
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + c)
            parts.append(torch.randn(_CHUNK, l, generator=g, dtype=torch.float64) if self.sketch == "gaussian"
                         else torch.rand(_CHUNK, generator=g, dtype=torch.float64))
        return key, torch.cat(parts).to(device=device, dtype=dtype)

    def _remember_omega(self, key: tuple, table: torch.Tensor) -> None:
        if key not in self._omega_cache:
            self._omega_cache = {key: table}

    # ------------------------------------------------------------------------------ forward
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        r"""``x (..., n) -> (..., m)``; ``mask`` (x.shape[:-1], bool, True = real token) keeps pads out of the
        sketch (default: ``self.token_mask`` when its shape fits, else every token is real).

        The correction is fused into the structured output: per group $Y_s \mathrel{+}= B Q^\top$ by one
        ``baddbmm_`` into the fresh result of the structured path (no separate (N, m) correction tensor and add).
        Finiteness is decided once, on $B = X(E^\top Q)$ (N×k, every token enters it; a NaN/inf anywhere in x
        reaches B), instead of a scan of x (N×n) per call; x itself is scanned only to word the error.
        When :meth:`merge` was called, the exact dense product $x (W_s + E)^\top + b$ instead."""
        mask = self._checked(x, mask, finite=False)
        if self.merged:
            check_arguments("DyRALinear.forward", {"x": features(self.in_features)}, {"x": x})
            return torch.nn.functional.linear(x, self._merged_weight.to(x.dtype), self.structured.bias.to(x.dtype)
                                              if self.structured.bias is not None else None)
        y = self.structured._fast_apply(x)
        parts = self._correction_parts(x, mask)
        B, Q, small, xg, key, table = parts
        G, T = xg.shape[:2]
        if bool(small.any()) or not y.is_contiguous():
            y = y + self._finish(parts).view(y.shape)               # rare path: fallback groups
        else:
            yg = y.view(G, T, self.out_features)
            yg.baddbmm_(B.to(y.dtype), Q.to(y.dtype).transpose(1, 2))   # Y_s += B Qᵀ, in place
        self._remember_omega(key, table)
        return y

    @property
    def merged(self) -> bool:
        """True after :meth:`merge` (the layer then applies the dense $W_s + E$)."""
        return getattr(self, "_merged_weight", None) is not None

    def merge(self) -> DyRALinear:
        r"""Fold the residual back: apply $W = W_s + E$ exactly (the original layer, up to E's dtype), as a PEFT
        adapter is merged into its base. A merged DyRA is the dense layer (no speed-up, no sketch); use it to
        export or to compare. :meth:`unmerge` restores the dynamic correction. Returns self."""
        if not self.merged:
            W = self.structured.weight().to(torch.float64) + self.E.to(torch.float64)
            self.register_buffer("_merged_weight", W.to(self.structured._dtype()), persistent=False)
        return self

    def unmerge(self) -> DyRALinear:
        """Undo :meth:`merge`: structured path + dynamic correction again (bit-identical to before). Returns self."""
        if self.merged:
            del self._merged_weight
        return self

    def to_linear(self) -> nn.Linear:
        r"""A plain ``nn.Linear`` holding $W_s + E$ and the bias (``merge_and_unload``)."""
        W = self.structured.weight().to(torch.float64) + self.E.to(torch.float64)
        dt, dev = self.structured._dtype(), self.structured._device()
        lin = nn.Linear(self.in_features, self.out_features, bias=self.structured.bias is not None,
                        device=dev, dtype=dt)
        with torch.no_grad():
            lin.weight.copy_(W.to(dt))
            if self.structured.bias is not None:
                lin.bias.copy_(self.structured.bias)
        return lin

    def _checked(self, x: torch.Tensor, mask: torch.Tensor | None, finite: bool = True) -> torch.Tensor | None:
        """Check x (finiteness too unless ``finite=False``: :meth:`forward` decides it on B) and mask (default:
        ``self.token_mask`` when its shape fits); the mask as bool."""
        check_arguments("DyRALinear", {"x": features(self.in_features, finite)}, {"x": x})
        if mask is None and self.token_mask is not None and tuple(self.token_mask.shape) == tuple(x.shape[:-1]):
            mask = self.token_mask
        if mask is None:
            return None
        return check_mask(mask, tuple(x.shape[:-1]), where="DyRALinear").to(device=x.device).bool()

    def _grouped(self, x: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        n = self.in_features
        if self.group == "batch" or x.dim() <= 2:
            shape = (1, -1)
        else:
            shape = (-1, x.shape[-2])
        xg = x.reshape(*shape, n)
        mg = (torch.ones(xg.shape[:2], dtype=torch.bool, device=x.device) if mask is None
              else mask.reshape(xg.shape[:2]))
        return xg, mg

    def correction(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        r"""The DyRA term $R Q Q^\top$ (..., m) for x (..., n), per group (``mask`` as in :meth:`forward`);
        unfused: ``forward(x) == structured(x) + correction(x)`` (tested)."""
        parts = self._correction_parts(x, self._checked(x, mask, finite=False))
        out = self._finish(parts)
        self._remember_omega(parts[4], parts[5])
        return out.reshape(*x.shape[:-1], self.out_features)

    def _correction(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """:meth:`correction` on checked x and a bool mask (or None), unfused."""
        parts = self._correction_parts(x, mask)
        self._remember_omega(parts[4], parts[5])
        return self._finish(parts).reshape(*x.shape[:-1], self.out_features)

    def _finish(self, parts: tuple) -> torch.Tensor:
        """The correction (G, T, m) from :meth:`_correction_parts`, fallback groups replaced."""
        B, Q, small, xg = parts[:4]
        corr = B.to(xg.dtype) @ Q.to(xg.dtype).transpose(1, 2)     # [G, T, m]
        if bool(small.any()):
            fb = (self.fallback._correction(xg) if self.fallback is not None else torch.zeros_like(corr))
            corr = torch.where(small[:, None, None], fb.to(corr.dtype), corr)
        return corr.reshape(-1, self.out_features)

    def _correction_parts(self, x: torch.Tensor, mask: torch.Tensor | None) -> tuple:
        """Range finder per group on shape-checked x: returns (B [G,T,k], Q [G,m,k], small [G], xg [G,T,n],
        Ω key, Ω table). Raises ValueError when x holds NaN/inf (decided on B; nothing is stored before)."""
        xg, mg = self._grouped(x, mask)                             # [G, T, n], [G, T]
        G, T, _ = xg.shape
        k, l = self.rank, self.rank + self.oversample
        cdt, qdt = self.E.dtype, _qr_dtype(self.E.dtype)
        E = self.E
        xc = xg.to(cdt)
        xm = xc * mg[..., None].to(cdt) if mask is not None or self.power_iters or self.sketch != "gaussian" \
            else xc                                                 # pads zeroed
        n_real = mg.sum(1)                                          # [G]
        rank_in_group = (mg.cumsum(1) - 1).clamp(min=0)             # real token's index among real tokens
        key, table = self._omega_table(int(n_real.max()) if T else 1, l, x.device, cdt)
        # The products are formed transposed (Sᵀ = Ωᵀ X, Zᵀ = Sᵀ Eᵀ, Gᵀ = Qᵀ E): the same sums, but the skinny
        # ℓ- and k-column GEMMs run about 20 % faster on CPU BLAS in this orientation (benchmarks/dyra_bench.py).
        if self.sketch == "gaussian":
            omega = table[rank_in_group]
            if mask is not None:
                omega = omega * mg[..., None].to(cdt)               # pads get a zero row of Ω
            St = omega.transpose(1, 2) @ xc                         # [G, l, n] = (Xᵀ Ω)ᵀ
        else:
            score = table[rank_in_group].to(torch.float64).masked_fill(~mg, math.inf)  # [G, T]
            take = min(l, T)
            idx = score.topk(take, dim=1, largest=False).indices    # ℓ real tokens (by seeded score)
            St = torch.gather(xm, 1, idx[..., None].expand(G, take, xm.shape[-1]))  # [G, ℓ, n]
        Z = (St @ E.T).transpose(1, 2)                              # [G, m, l] = Rᵀ Ω = E S
        for _ in range(self.power_iters):
            Z = torch.linalg.qr(Z.to(qdt)).Q.to(cdt)
            Z = E @ (xm.transpose(1, 2) @ (xm @ (E.T @ Z)))         # Z ← E Xᵀ X Eᵀ Z
        Zq = Z.to(qdt)
        if not bool(torch.isfinite(Zq).all()):                      # NaN would reach LAPACK: refuse first
            self._refuse_non_finite(x)
        Qz, Tz = torch.linalg.qr(Zq)                                # ≥ fp32
        Ut = torch.linalg.svd(Tz).U                                 # [G, l', l']
        Q = (Qz @ Ut[..., :k]).to(cdt)                              # [G, m, k]
        B = xc @ (Q.transpose(1, 2) @ E).transpose(1, 2)            # [G, T, k] = X (Eᵀ Q): every token enters
        if not bool(torch.isfinite(B).all()):
            self._refuse_non_finite(x)
        small = n_real < l
        return B, Q, small, xg, key, table

    def _refuse_non_finite(self, x: torch.Tensor) -> None:
        check_arguments("DyRALinear.forward", {"x": features(self.in_features)}, {"x": x})  # names the NaN/inf
        raise ValueError(f"x is finite but DyRA's sketch overflowed in {self.E.dtype} (|x| too large for "
                         f"residual_dtype); use residual_dtype=torch.float32")

    def flops_per_token(self, n_tokens: int) -> float:
        """FLOPs per token for groups of ``n_tokens`` tokens, every FLOP counted (sketch, both E products, QR,
        small SVD, the correction and the structured path)."""
        return self.structured.flops_per_token() + dyra_extra_flops(
            self.out_features, self.in_features, self.rank, self.oversample, self.power_iters, n_tokens, self.sketch)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank}, "
                f"oversample={self.oversample}, power_iters={self.power_iters}, group={self.group!r}, "
                f"sketch={self.sketch!r}, residual_dtype={self.E.dtype}")
