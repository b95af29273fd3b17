"""The truncated composite (pseudo-)likelihood: sufficient statistics, loss, gradient and solvers.

Key identity (direct algebra): for a block ``B`` of coordinates and a sample ``x ∈ S`` let the feasible
completions be ``C_B(x) = {c ∈ {0,1}^B : (c, x_{-B}) ∈ S}``. Conditional on ``x_{-B}``,

    P(x_B = c | x_{-B}) = exp⟨z_B, c⟩ / Σ_{c' ∈ C_B(x)} exp⟨z_B, c'⟩,      c ∈ C_B(x),

which involves neither ``μ_z(S)`` nor any sampling from the model. The estimator (inferred from the
abstract: "gradient descent, no sampling at arbitrary parameters") minimises

    ℓ̂(z) = -(1/m) Σ_t Σ_{B ∈ 𝔅} [ ⟨z_B, x^t_B⟩ - log Σ_{c ∈ C_B(x^t)} exp⟨z_B, c⟩ ],

a sum of log-sum-exps of linear functions, hence convex. Blocks with ``|C_B(x)| = 1`` contribute 0.

A sample enters the loss of block ``B`` only through the pair (pattern ``P = C_B(x)`` as a bit mask over
the ``2^|B|`` assignments, observed assignment ``o = x_B``), so one pass over the data reduces it to
``counts[b, P, o]``; every loss and gradient evaluation after that costs ``O(|𝔅| · 4^|B|)``, not ``O(m)``.

* ``r = 1``: 𝔅 = singletons; ``ℓ̂ = Σ_i [N_i log(1 + e^{z_i}) - K_i z_i] / m`` with ``N_i`` the samples
  whose flip ``x^{⊕i}`` is in S and ``K_i`` those of them with ``x_i = 1``: logistic regression per coordinate.
* ``r = 2``: 𝔅 = pairs (cyclic ``(i, i+1 mod n)`` or all); needed when S has minimum distance 2 (parity).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit

from ..constraints import ArrayLike, Instance, Int, check_arguments, validate
from .oracles import ORACLE, _block_completions, _flip_feasible, _observed_code, query

__all__ = ["BlockStats", "Identifiability", "composite_stats", "composite_loss", "composite_grad", "make_blocks",
           "identifiability", "projected_gd", "lbfgs_box", "check_samples", "PAIRS_ALL_MAX_N"]

PAIRS_ALL_MAX_N = 64
_CHUNK_CELLS = 1 << 22  # rows per chunk · n, bounds the memory of flipped copies


#: samples [m, n] (finite; the 0/1 values and membership in S are checked by :func:`check_samples`)
SAMPLES = ArrayLike("M N")


def check_samples(X: Any, oracle: Any, name: str = "X", where: str = "") -> np.ndarray:
    """``X`` as ``int8 [m, n]``: 2-D, values exactly 0/1, every row in S (else ValueError saying how many)."""
    check_arguments(where, {name: SAMPLES}, {name: X})
    arr = np.asarray(X)
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array [m, n] of 0/1 samples, got shape {arr.shape}")
    if not np.all((arr == 0) | (arr == 1)):
        bad = arr[(arr != 0) & (arr != 1)]
        raise ValueError(f"{name} must hold only 0 and 1 ({{0,1}} encoding), got values such as "
                         f"{np.unique(bad)[:5].tolist()}")
    out = arr.astype(np.int8)
    n_or = getattr(oracle, "n", None)
    if n_or is not None and n_or != out.shape[1]:
        raise ValueError(f"{name} has {out.shape[1]} columns but the oracle {oracle!r} is defined on n = {n_or}")
    inside = np.concatenate([query(oracle, out[s: s + _chunk(out.shape[1])])
                             for s in range(0, out.shape[0], _chunk(out.shape[1]))])
    if not inside.all():
        raise ValueError(f"{int((~inside).sum())} of {out.shape[0]} rows of {name} are outside S (the oracle "
                         f"{oracle!r} rejects them); samples of a truncated law lie in S")
    return out


def _chunk(n: int) -> int:
    return max(1, _CHUNK_CELLS // max(n, 1))


@validate(n=Int(low=1), block_order=Int(low=1, high=2))
def make_blocks(n: int, block_order: int, pairs: Any = "cyclic") -> np.ndarray:
    """The blocks 𝔅 as ``int [B, r]``: singletons, cyclic pairs ``(i, i+1 mod n)``, all pairs, or given pairs."""
    if block_order == 1:
        return np.arange(n)[:, None]
    if n < 2:
        raise ValueError(f"block_order=2 needs n >= 2 coordinates, got n = {n}")
    if isinstance(pairs, str):
        if pairs == "cyclic":
            i = np.arange(n)
            blocks = np.stack([i, (i + 1) % n], axis=1)
            return blocks[:1] if n == 2 else blocks
        if pairs == "all":
            if n > PAIRS_ALL_MAX_N:
                raise ValueError(f'pairs="all" is for n <= {PAIRS_ALL_MAX_N}, got n = {n}; use "cyclic" or '
                                 "an explicit [B, 2] array of pairs")
            return np.array(list(itertools.combinations(range(n), 2)), dtype=np.int64)
        raise ValueError(f'pairs must be "cyclic", "all" or an int array [B, 2], got {pairs!r}')
    check_arguments("make_blocks", {"pairs": ArrayLike("B 2", dtype="integer")}, {"pairs": pairs})
    arr = np.asarray(pairs)
    if arr.shape[0] == 0 or arr.min() < 0 or arr.max() >= n or np.any(arr[:, 0] == arr[:, 1]):
        raise ValueError(f"pairs must hold two distinct indices in [0, {n}), got {arr[:5].tolist()} ...")
    return arr.astype(np.int64)


def _bits(r: int) -> np.ndarray:
    """``float [2^r, r]``: assignment ``c`` -> its bits, most significant first (matches ``_observed_code``)."""
    return np.array([[(c >> (r - 1 - k)) & 1 for k in range(r)] for c in range(2 ** r)], dtype=np.float64)


def _informative_patterns(r: int) -> np.ndarray:
    """Pattern masks over the ``2^r`` assignments with at least two feasible completions."""
    return np.array([p for p in range(2 ** (2 ** r)) if bin(p).count("1") >= 2], dtype=np.int64)


@dataclass
class BlockStats:
    """The data reduced to what the loss needs.

    ``counts [B, 2^(2^r), 2^r]``: samples with completion pattern ``P`` and observed assignment ``o`` per
    block; ``n_block [B]``: informative samples per block (``|C_B| ≥ 2``); ``n_informative [n]``: samples
    informative for at least one block containing ``i``; ``codes`` ``uint8 [m, B]`` (``P · 2^r + o`` per
    sample, kept for the sandwich variance when small enough, else ``None``).
    """

    blocks: np.ndarray
    counts: np.ndarray
    m: int
    n: int
    n_block: np.ndarray
    n_informative: np.ndarray
    n_oracle_calls: int
    codes: np.ndarray | None = field(default=None, repr=False)

    @property
    def r(self) -> int:
        return self.blocks.shape[1]


@validate(oracle=ORACLE, blocks=ArrayLike("B R", dtype="integer"), keep_codes_max=Int(low=0))
def composite_stats(X: np.ndarray, oracle: Any, blocks: np.ndarray, *, keep_codes_max: int = 1 << 24) -> BlockStats:
    """One pass over ``X [m, n]`` (0/1 rows in S): counts of (pattern, observed) per block.

    ``blocks`` is ``int [B, r]`` with ``r ∈ {1, 2}`` (see :func:`make_blocks`). Every input is checked
    first; the estimator calls the unchecked :func:`_composite_stats` on what it has already checked.
    """
    Xb = check_samples(X, oracle, where="composite_stats")
    arr = np.asarray(blocks)
    if arr.shape[0] == 0 or arr.shape[1] not in (1, 2):
        raise ValueError(f"blocks must be a non-empty int array [B, r] with r in {{1, 2}}, got {arr.dtype} {arr.shape}")
    if arr.min() < 0 or arr.max() >= Xb.shape[1] or (arr.shape[1] == 2 and np.any(arr[:, 0] == arr[:, 1])):
        raise ValueError(f"blocks must hold distinct coordinate indices in [0, {Xb.shape[1]}) per block, got "
                         f"{arr[:5].tolist()} ...")
    return _composite_stats(Xb, oracle, arr.astype(np.int64), keep_codes_max=int(keep_codes_max))


def _composite_stats(X: np.ndarray, oracle: Any, blocks: np.ndarray, *, keep_codes_max: int = 1 << 24) -> BlockStats:
    """:func:`composite_stats` on checked input (``X`` int8 0/1 rows in S, valid ``blocks``).

    Oracle queries: ``(2^r - 1)`` per sample and block (``m·n`` for singletons, ``3·m·B`` for pairs), counted
    as logical membership questions whatever fast path the oracle has.
    """
    m, n = X.shape
    r = blocks.shape[1]
    n_b = blocks.shape[0]
    counts = np.zeros((n_b, 2 ** (2 ** r), 2 ** r), dtype=np.float64)
    informative = np.zeros(n, dtype=np.int64)
    keep = m * n_b <= keep_codes_max
    codes = np.zeros((m, n_b), dtype=np.uint8) if keep else None
    step = _chunk(n * (1 if r == 1 else 4))
    for s in range(0, m, step):
        Xc = X[s: s + step]
        mc = Xc.shape[0]
        if r == 1:
            _singleton_counts(Xc, oracle, counts, informative, None if codes is None else codes[s: s + mc])
            continue
        inf_any = np.zeros((mc, n), dtype=bool)
        for b, blk in enumerate(blocks):
            C = _block_completions(oracle, Xc, blk)  # [mc, 4]
            pattern = (C.astype(np.int64) << np.arange(C.shape[1])).sum(axis=1)
            obs = _observed_code(Xc, blk)
            code = pattern * C.shape[1] + obs
            counts[b] += np.bincount(code, minlength=counts.shape[1] * counts.shape[2]).reshape(counts.shape[1:])
            if codes is not None:
                codes[s: s + mc, b] = code
            inf_b = C.sum(axis=1) >= 2
            inf_any[:, blk] |= inf_b[:, None]
        informative += inf_any.sum(axis=0)
    n_block = counts[:, _informative_patterns(r)].sum(axis=(1, 2)).astype(np.int64)
    calls = m * n_b * (2 ** r - 1)
    return BlockStats(blocks, counts, m, n, n_block, informative, calls, codes)


def _singleton_counts(Xc: np.ndarray, oracle: Any, counts: np.ndarray, informative: np.ndarray,
                      codes: np.ndarray | None) -> None:
    """r = 1: ``F[t, i] = 1[x_t^{⊕i} ∈ S]``; ``N_i = Σ_t F``, ``K_i = Σ_t F x_ti`` (patterns 0b01, 0b10, 0b11)."""
    fast = getattr(oracle, "flip_feasible_all", None)
    if fast is not None:
        F = np.asarray(fast(Xc), dtype=bool)
    else:
        F = np.stack([_flip_feasible(oracle, Xc, i) for i in range(Xc.shape[1])], axis=1)
    x1 = Xc.astype(bool)
    # pattern bit c set iff x_i = c is feasible: the observed value always, the other one iff F
    counts[:, 3, 1] += (F & x1).sum(axis=0)
    counts[:, 3, 0] += (F & ~x1).sum(axis=0)
    counts[:, 2, 1] += (~F & x1).sum(axis=0)
    counts[:, 1, 0] += (~F & ~x1).sum(axis=0)
    informative += F.sum(axis=0)
    if codes is not None:
        pattern = np.where(F, 3, np.where(x1, 2, 1))
        codes[:] = pattern * 2 + x1


def _energies(z: np.ndarray, stats: BlockStats) -> np.ndarray:
    """``e[b, c] = ⟨z_B, c⟩`` for every block and assignment: ``[B, 2^r]``."""
    return z[stats.blocks] @ _bits(stats.r).T


def _pattern_softmax(e: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the informative patterns ``P``: masks ``[nP, 2^r]``, ``log Z_P = logsumexp_{c∈P} e_c`` ``[B, nP]``
    and the conditional law ``w[b, P, c] = e^{e_c - log Z_P} 1[c ∈ P]`` ``[B, nP, 2^r]``."""
    pats = _informative_patterns(r)
    mask = ((pats[:, None] >> np.arange(2 ** r)) & 1).astype(bool)  # [nP, 2^r]
    ee = np.where(mask[None], e[:, None, :], -np.inf)  # [B, nP, 2^r]
    top = ee.max(axis=2, keepdims=True)
    w = np.exp(ee - top)
    zsum = w.sum(axis=2, keepdims=True)
    logZ = (np.log(zsum) + top)[..., 0]
    return pats, logZ, w / zsum


def _check_z_stats(z: Any, stats: Any, where: str) -> np.ndarray:
    """``z`` as ``float64 [n]`` for the ``n`` of ``stats`` (finite), after checking ``stats``."""
    check_arguments(where, {"stats": Instance(BlockStats, "BlockStats (from composite_stats)")}, {"stats": stats})
    check_arguments(where, {"z": ArrayLike(f"{stats.n}")}, {"z": z})
    return np.asarray(z, dtype=np.float64)


def composite_loss(z: np.ndarray, stats: BlockStats) -> float:
    """``ℓ̂(z)`` (nats per sample) from the counts: ``Σ_{b,P,o} counts[b,P,o] (log Z_{b,P} - e_{b,o}) / m``."""
    return _loss(_check_z_stats(z, stats, "composite_loss"), stats)


def composite_grad(z: np.ndarray, stats: BlockStats) -> np.ndarray:
    """``∇ℓ̂(z) [n]`` (see :func:`_grad`), after checking ``z`` and ``stats``."""
    return _grad(_check_z_stats(z, stats, "composite_grad"), stats)


def _loss(z: np.ndarray, stats: BlockStats) -> float:
    """:func:`composite_loss` without the checks (the solvers' inner loop)."""
    e = _energies(z, stats)
    pats, logZ, _ = _pattern_softmax(e, stats.r)
    cnt = stats.counts[:, pats]  # [B, nP, 2^r]
    return float(((logZ[..., None] - e[:, None, :]) * cnt).sum() / stats.m)


def _grad(z: np.ndarray, stats: BlockStats) -> np.ndarray:
    """``∇ℓ̂(z) [n]``: per block ``Σ_P n_{bP} E_P[c] - Σ_o n_{bo} o`` (expected minus observed), scattered."""
    e = _energies(z, stats)
    pats, _, w = _pattern_softmax(e, stats.r)
    cnt = stats.counts[:, pats]  # [B, nP, 2^r]
    # ∂ℓ̂/∂e[b, c] = Σ_P (Σ_o counts[b,P,o]) w[b,P,c] - Σ_P counts[b,P,c]
    d_e = (cnt.sum(axis=2, keepdims=True) * w - cnt).sum(axis=1)  # [B, 2^r]
    g_blk = d_e @ _bits(stats.r)  # [B, r]
    grad = np.zeros(stats.n)
    np.add.at(grad, stats.blocks, g_blk)
    return grad / stats.m


def lipschitz_bound(stats: BlockStats) -> float:
    """``L̂ = max_i Σ_{B∋i} |B| N_B / (4m)`` (Gershgorin: every entry of a block's covariance is ≤ 1/4)."""
    per = np.zeros(stats.n)
    np.add.at(per, stats.blocks, (stats.r * stats.n_block / 4.0)[:, None] * np.ones((1, stats.r)))
    return float(per.max() / stats.m)


def projected_gd(stats: BlockStats, width: float, tol: float, max_iter: int) -> tuple[np.ndarray, int, bool]:
    """Projected GD on ``K = [-W, W]^n`` from 0: ``z ← Π_K(z - ∇ℓ̂(z)/L̂)``; stop when ``‖(z_k - z_{k+1}) L̂‖_∞ ≤ tol``.

    Returns ``(z, iterations, converged)``.
    """
    L = lipschitz_bound(stats)
    z = np.zeros(stats.n)
    if L == 0.0:
        return z, 0, True
    eta = 1.0 / L
    for k in range(1, max_iter + 1):
        z_next = np.clip(z - eta * _grad(z, stats), -width, width)
        # gradient mapping G = (z_k - z_{k+1}) / η
        done = np.max(np.abs(z - z_next)) / eta <= tol
        z = z_next
        if done:
            return z, k, True
    return z, max_iter, False


def lbfgs_box(stats: BlockStats, width: float, tol: float, max_iter: int) -> tuple[np.ndarray, int, bool]:
    """SciPy L-BFGS-B on the same loss and box, from 0."""
    from scipy.optimize import minimize

    res = minimize(lambda v: _loss(v, stats), np.zeros(stats.n), jac=lambda v: _grad(v, stats),
                   method="L-BFGS-B", bounds=[(-width, width)] * stats.n,
                   options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15})
    return res.x, int(res.nit), bool(res.success)


def block_hessian(z: np.ndarray, stats: BlockStats) -> np.ndarray:
    """``∇²ℓ̂(z) · m`` ``[n, n]``: ``Σ_b Σ_P n_{bP} Cov_P(c)`` scattered onto the block's coordinates."""
    e = _energies(z, stats)
    pats, _, w = _pattern_softmax(e, stats.r)
    nP = stats.counts[:, pats].sum(axis=2)  # [B, nP]
    bits = _bits(stats.r)
    mean = w @ bits  # [B, nP, r]
    second = np.einsum("bpc,ck,cl->bpkl", w, bits, bits)
    cov = second - mean[..., :, None] * mean[..., None, :]
    Hb = np.einsum("bp,bpkl->bkl", nP, cov)
    H = np.zeros((stats.n, stats.n))
    for k in range(stats.r):
        for l_ in range(stats.r):
            np.add.at(H, (stats.blocks[:, k], stats.blocks[:, l_]), Hb[:, k, l_])
    return H


def per_sample_scores(z: np.ndarray, stats: BlockStats) -> np.ndarray | None:
    """Score of each sample's composite log-likelihood, ``[m, n]`` (``None`` if codes were not kept)."""
    if stats.codes is None:
        return None
    q = 2 ** stats.r
    e = _energies(z, stats)
    full_pats = np.arange(2 ** q)
    mask = ((full_pats[:, None] >> np.arange(q)) & 1).astype(bool)
    ee = np.where(mask[None], e[:, None, :], -np.inf)
    with np.errstate(invalid="ignore"):
        w = np.exp(ee - ee.max(axis=2, keepdims=True))
        w = np.nan_to_num(w / w.sum(axis=2, keepdims=True))  # pattern 0 never occurs
    bits = _bits(stats.r)
    expected = w @ bits  # [B, 2^q, r]
    pat, obs = stats.codes // q, stats.codes % q  # [m, B]
    b_idx = np.arange(stats.blocks.shape[0])[None, :]
    s_blk = bits[obs] - expected[b_idx, pat]  # [m, B, r]: observed minus conditional mean
    S = np.zeros((stats.m, stats.n))
    for k in range(stats.r):
        for b in range(stats.blocks.shape[0]):
            S[:, stats.blocks[b, k]] += s_blk[:, b, k]
    return S


def singleton_closed_form(stats: BlockStats, width: float) -> np.ndarray:
    """r = 1 exact minimiser over the box: ``ẑ_i = clip(logit(K_i / N_i), -W, W)`` (NaN where ``N_i = 0``)."""
    K = stats.counts[:, 3, 1]
    N = K + stats.counts[:, 3, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log(K) - np.log(N - K)
    z = np.clip(z, -width, width)
    z[N == 0] = np.nan
    return z


def logistic_variance(z: np.ndarray) -> np.ndarray:
    """``σ(z)(1 - σ(z))``, the Bernoulli variance / logistic curvature."""
    p = expit(z)
    return p * (1 - p)


# ------------------------------------------------------------------------------------ identifiability
@dataclass
class Identifiability:
    """Which linear combinations of ``z`` the data determine.

    ``null_space [k, n]``: orthonormal rows spanning the directions along which the loss is flat (the
    Hessian's null space at any finite ``z``); ``identified [n]``: coordinate ``i`` is determined on its own
    (``e_i ⟂`` the null space); ``components``: for each null direction, its coordinates and signs.
    A combination ``⟨c, z⟩`` is identified iff ``c`` is orthogonal to every row of ``null_space``.
    """

    null_space: np.ndarray
    identified: np.ndarray
    components: list = field(default_factory=list)

    def describe(self, components: list | None = None, limit: int = 3) -> str:
        """One clause per null direction (``components``, default all; at most ``limit``), for warnings."""
        components = self.components if components is None else components
        out = []
        for coords, signs in components[:limit]:
            head = coords[:8].tolist()
            more = " ..." if coords.size > 8 else ""
            if coords.size == 1:
                out.append(f"coordinate {head[0]} (no informative sample)")
            elif np.all(signs == signs[0]):
                out.append(f"the all-ones direction on coordinates {head}{more} (only differences z_i - z_j "
                           "are identified there)")
            else:
                plus = coords[signs > 0][:6].tolist()
                out.append(f"the direction +1 on {plus} ..., -1 on the rest of {head}{more} (only the signed "
                           "combinations orthogonal to it are identified)")
        if len(components) > limit:
            out.append(f"and {len(components) - limit} more")
        return "; ".join(out)


def identifiability(stats: BlockStats) -> Identifiability:
    """The null space of the composite loss from the observed completion patterns (exact, ``O(B + n)``).

    A sample with pattern ``P = C_B(x)`` contributes ``Cov_{c ∼ P}(c)`` to the Hessian (for finite ``z``),
    whose range is the span of the differences ``c - c'`` (``c, c' ∈ P``) embedded at the block's
    coordinates. For ``r ≤ 2`` each block's span is one of: ``e_i`` (an anchor: ``z_i`` identified),
    ``e_i + e_j`` (the sum), ``e_i - e_j`` (the difference) or the whole plane (both anchored). A null vector
    ``v`` then satisfies ``v_i = 0`` at anchors, ``v_i = v_j`` across a difference and ``v_i = -v_j`` across a
    sum: a signed graph. Each connected component without an anchor and without an odd cycle (an odd
    number of sum edges around a cycle pins ``2 z_i``) carries exactly one null direction, ``±1`` on it.
    """
    n, r = stats.n, stats.r
    bits = _bits(r)
    parent = np.arange(n)
    parity = np.zeros(n, dtype=np.int64)     # sign of v_i relative to its root: v_i = (-1)^parity · v_root
    pinned = np.zeros(n, dtype=bool)         # indexed by root: the component is identified

    def find(i: int) -> tuple[int, int]:
        p = 0
        while parent[i] != i:
            p ^= parity[i]
            i = parent[i]
        return i, p

    def union(i: int, j: int, sign: int) -> None:  # v_i = (-1)^sign v_j
        (ri, pi), (rj, pj) = find(i), find(j)
        if ri == rj:
            if (pi ^ pj) != sign:
                pinned[ri] = True               # odd cycle: the component is pinned
            return
        parent[ri], parity[ri] = rj, pi ^ pj ^ sign
        pinned[rj] |= pinned[ri]

    for b, blk in enumerate(stats.blocks):
        seen = np.flatnonzero(stats.counts[b].sum(axis=1) > 0)      # observed patterns of this block
        diffs = []
        for pat in seen:
            members = np.flatnonzero((pat >> np.arange(2 ** r)) & 1)
            diffs.extend(bits[c] - bits[members[0]] for c in members[1:])
        if not diffs:
            continue
        D = np.array(diffs)
        rank = np.linalg.matrix_rank(D)
        if rank == r:                            # every coordinate of the block is anchored
            for i in blk:
                pinned[find(int(i))[0]] = True
            continue
        d = D[np.argmax(np.abs(D).sum(axis=1))]  # rank 1 (r = 2): one direction
        if d[0] == 0 or d[1] == 0:
            pinned[find(int(blk[0] if d[0] != 0 else blk[1]))[0]] = True
        else:
            union(int(blk[0]), int(blk[1]), int(d[0] * d[1] > 0))    # sum edge: sign 1; difference: 0
    roots = np.array([find(i)[0] for i in range(n)])
    signs = np.array([1 - 2 * find(i)[1] for i in range(n)])
    comps, rows = [], []
    for root in np.unique(roots):
        if pinned[root]:
            continue
        coords = np.flatnonzero(roots == root)
        v = np.zeros(n)
        v[coords] = signs[coords] / np.sqrt(coords.size)
        rows.append(v)
        comps.append((coords, signs[coords]))
    null = np.array(rows) if rows else np.zeros((0, n))
    return Identifiability(null, pinned[roots], comps)
