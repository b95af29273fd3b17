"""Working-set block coordinate descent for group ℓ_{p,1}-regularised least squares and logistic regression.

Problem (``n`` samples, ``d`` features, partition ``G`` of ``[d]``):

    P_G(w, b) = F(Xw + b) + λ Σ_{g∈G} ω_g ‖w_g‖_p,     p ∈ (1, ∞],  q = p/(p-1) (dual exponent)

with ``F(z) = ‖y - z‖²/(2n)`` (``loss="squared"``) or ``F(z) = (1/n) Σ_i log(1 + e^{z_i}) - y_i z_i`` with
``y ∈ {0, 1}`` (``loss="logistic"``); the intercept ``b`` is unpenalised. Default weights
``ω_g = |g|^{1/q}`` (√|g| for p = 2, |g| for p = ∞).

Dual certificate. With ``ρ = -n ∇F(z)`` (the residual ``y - z`` for squared loss, ``y - σ(z)`` for logistic),
the dual point is ``u = c ρ / n`` with ``c = min(1, λ / max_g ‖X_gᵀ ρ‖_q / (n ω_g))``, which is feasible
(``‖X_gᵀ u‖_q <= λ ω_g`` for every group; ``Σ u_i = 0`` because ``b`` is optimal). Then

    squared:  D(u) = uᵀy - n ‖u‖² / 2
    logistic: D(u) = -(1/n) Σ_i [π_i log π_i + (1-π_i) log(1-π_i)],  π = y - n u ∈ [0, 1]

and ``gap = P - D >= P - P*``: ``gap <= tol · P(0)`` certifies the solution. All methods (cold, warm,
groupshift) use this same certificate and the same stopping rule.

Solver: the working set ``W`` (groups) always contains the support; on ``W`` we run cyclic proximal BCD

    w_g <- prox_{(λ ω_g / L_g) ‖·‖_p}(w_g - ∇_g F / L_g),   L_g = κ ‖X_g‖_2² / n,  κ = 1 (squared), 1/4 (logistic)

and every ``gap_freq`` epochs the gap of the problem restricted to ``W``; when it is below the inner tolerance
one full pass ``Xᵀρ`` (``n·d`` flops) computes the global gap, and inactive groups that violate dual
feasibility (``‖X_gᵀρ‖_q / (n ω_g) > λ``) join ``W`` (at most doubling it). Work is counted in flops:
``n`` per column per gradient and per residual update, ``n·d`` per full pass, ``n|g|² + |g|³`` per block
Lipschitz constant (computed lazily, only for groups that enter ``W``, cached across refits).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, xlogy

from ..constraints import AnyOf, ArrayLike, Bool, Choice, Instance, Int, Optional, Real, check_arguments, validate
from .partition import GroupPartition

LOSSES = ("squared", "logistic")

# the declared argument constraints shared by the package's entry points (neurips26.constraints)
P_EXP = AnyOf(Real(low=1.0, closed="neither", allow_inf=True), Choice("inf", "infinity", "Inf", "Infinity", "INF"))
ALPHA = Real(low=0.0, closed="neither")  # alpha = 0 is unregularised: the group duality gap is undefined
TOL = Real(low=0.0, closed="neither")
COUNT = Int(low=1)
LOSS = Choice(*LOSSES)
CACHE = Optional(Instance(dict, "dict"))
XY = {"X": ArrayLike("N D"), "y": ArrayLike("N")}


# ---------------------------------------------------------------------------------------------------
# norms and proximal operators
# ---------------------------------------------------------------------------------------------------
def as_p(p: Any) -> float:
    """``p`` (declared :data:`P_EXP`: a number in ``(1, ∞]`` or ``"inf"``) as a float."""
    return math.inf if isinstance(p, str) else float(p)


def validate_p(p: Any) -> float:
    """``p`` as a float in ``(1, ∞]`` (p = 1 is the plain lasso, p < 1 is non-convex); accepts ``np.inf``,
    ``float('inf')`` or ``"inf"``."""
    check_arguments("groupshift", {"p": P_EXP}, {"p": p})
    return as_p(p)


def dual_exponent(p: float) -> float:
    """``q = p/(p-1)``, with ``q = 1`` for ``p = ∞``."""
    return 1.0 if math.isinf(p) else p / (p - 1.0)


def norm_p(v: np.ndarray, p: float) -> float:
    """``‖v‖_p`` of a 1-D vector."""
    if v.size == 0:
        return 0.0
    if p == 2.0:
        return float(math.sqrt(float(v @ v)))
    if math.isinf(p):
        return float(np.max(np.abs(v)))
    if p == 1.0:
        return float(np.sum(np.abs(v)))
    return float(np.sum(np.abs(v) ** p) ** (1.0 / p))


@validate(v=ArrayLike("D"), labels=ArrayLike("D", dtype="integer"), n_groups=COUNT,
          p=AnyOf(Real(low=1.0, allow_inf=True), Choice("inf", "infinity", "Inf", "Infinity", "INF")))
def group_norms(v: Any, labels: Any, n_groups: int, p: float) -> np.ndarray:
    """``[‖v_g‖_p for g]`` for all groups at once, ``v`` of shape ``[d]``, ``labels`` the group of each feature
    (ints in ``[0, n_groups)``), ``p`` in ``[1, ∞]``. Checks its input, then calls the kernel the solvers use."""
    v = np.asarray(v, dtype=float)
    n_groups = int(n_groups)
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() >= n_groups):
        raise ValueError(f"labels must lie in [0, n_groups={n_groups}), got range [{labels.min()}, {labels.max()}]")
    return _group_norms(v, labels.astype(np.int64), n_groups, as_p(p))


def _group_norms(v: np.ndarray, labels: np.ndarray, n_groups: int, p: float) -> np.ndarray:
    """``[‖v_g‖_p for g]`` for all groups at once, ``v`` of shape ``[d]``, ``labels`` the group of each feature."""
    a = np.abs(v)
    if math.isinf(p):
        out = np.zeros(n_groups)
        np.maximum.at(out, labels, a)
        return out
    if p == 1.0:
        return np.bincount(labels, weights=a, minlength=n_groups)
    if p == 2.0:
        return np.sqrt(np.bincount(labels, weights=a * a, minlength=n_groups))
    return np.bincount(labels, weights=a ** p, minlength=n_groups) ** (1.0 / p)


def _project_l1_ball(v: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection onto ``{x : ‖x‖_1 <= radius}`` (sort-based, Duchi et al. 2008)."""
    a = np.abs(v)
    if a.sum() <= radius:
        return v.copy()
    u = np.sort(a)[::-1]
    css = np.cumsum(u) - radius
    ks = np.arange(1, u.size + 1)
    # rho = last k with u_k > (Σ_{j<=k} u_j - r)/k; k = 0 always qualifies in exact arithmetic (u_0 - (u_0 - r) = r
    # > 0), but for r far below u_0's resolution the rounded test can fail everywhere (IndexError before)
    hits = np.nonzero(u - css / ks > 0)[0]
    rho = int(hits[-1]) if hits.size else 0
    theta = css[rho] / (rho + 1.0)
    return np.sign(v) * np.maximum(a - theta, 0.0)


def _project_lq_ball_impl(v: np.ndarray, q: float, radius: float) -> np.ndarray:
    """Euclidean projection onto ``{x : ‖x‖_q <= radius}`` for ``1 < q < ∞`` (general p; slow, exact).

    KKT: ``x_i = sign(v_i) a_i`` with ``a_i + μ q a_i^{q-1} = |v_i|`` and ``Σ a_i^q = radius^q``; the inner
    equation is solved by bracketed Newton, the outer one for ``μ`` by Brent's method.
    """
    # Scale-equivariance Π_r(v) = s Π_{r/s}(v/s), s = max|v|: keeps b^q and r^q representable. (Unscaled, a
    # radius whose r^q underflows to 0 made the bracket search below loop forever.)
    s = float(np.max(np.abs(v)))
    if s == 0.0:
        return v.copy()
    b = np.abs(v) / s
    radius = radius / s
    norm_b = float(np.sum(b ** q)) ** (1.0 / q)  # in [1, n^{1/q}]: no overflow (radius ** q could overflow)
    if norm_b <= radius:
        return v.copy()
    if radius < 1e-17:
        # the ball is below the resolution of v (r < eps · max|v|): any point of norm r along v is within 2r of the
        # projection, so x = v - Π(v) is exact to float precision
        return np.sign(v) * (s * radius) * b / norm_b

    def solve_a(mu: float) -> np.ndarray:
        if mu <= 0:  # a = b exactly (the bracket update below would halve an exact root)
            return b.copy()
        lo, hi = np.zeros_like(b), b.copy()
        x = b.copy()
        for _ in range(200):
            f = x + mu * q * x ** (q - 1) - b
            lo = np.where(f < 0, x, lo)
            hi = np.where(f >= 0, x, hi)
            fp = 1.0 + mu * q * (q - 1) * np.where(x > 0, x, 1.0) ** (q - 2)
            nxt = x - f / fp
            bad = ~((nxt > lo) & (nxt < hi))
            nxt = np.where(bad, 0.5 * (lo + hi), nxt)
            if np.all(np.abs(nxt - x) <= 1e-15 * np.abs(nxt) + 1e-300):  # relative: tiny a_i converge too
                x = nxt
                break
            x = nxt
        return x

    def excess(mu: float) -> float:
        return float(np.sum(solve_a(mu) ** q) - radius ** q)

    hi = 1.0
    for _ in range(600):  # 4^600 > 1e300: a bound, never an endless loop
        if excess(hi) <= 0:
            break
        hi *= 4.0
    else:  # pragma: no cover - the scaled problem always brackets well before
        raise RuntimeError(f"_project_lq_ball: no bracket for mu (q={q}, radius={radius * s})")
    mu = brentq(excess, 0.0, hi, xtol=1e-15, rtol=1e-14, maxiter=200)
    return np.sign(v) * s * solve_a(mu)



def _project_lq_ball(v: np.ndarray, q: float, radius: float) -> np.ndarray:
    """:func:`_project_lq_ball_impl` without numpy's overflow warnings: a very large ``mu`` overflows the Newton
    step to inf/NaN, the bracket then bisects, so the warnings are noise."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _project_lq_ball_impl(v, q, radius)


@validate(v=ArrayLike("D"), t=Real(low=0.0), p=P_EXP)
def prox_group_norm(v: np.ndarray, t: float, p: float) -> np.ndarray:
    """``prox_{t‖·‖_p}(v) = argmin_x ½‖x - v‖² + t‖x‖_p`` (Moreau: ``v - Π_{‖·‖_q <= t}(v)``).

    Args:
        v: a 1-D array of finite numbers (one group's coefficients).
        t: the threshold, a finite number >= 0.
        p: in ``(1, ∞]`` (see :data:`P_EXP`).
    """
    return _prox_group_norm(np.asarray(v, dtype=float), float(t), as_p(p))


def _prox_group_norm(v: np.ndarray, t: float, p: float) -> np.ndarray:
    """:func:`prox_group_norm` without validation, for the solver's inner loop (inputs already checked)."""
    if t <= 0:
        return v.copy()
    if p == 2.0:
        # group soft-thresholding: (1 - t/‖v‖)_+ v
        nv = math.sqrt(float(v @ v))
        return np.zeros_like(v) if nv <= t else (1.0 - t / nv) * v
    if math.isinf(p):
        # q = 1: v minus its projection onto the ℓ1 ball of radius t
        return v - _project_l1_ball(v, t)
    return v - _project_lq_ball(v, dual_exponent(p), t)


# ---------------------------------------------------------------------------------------------------
# weights, data-fit, certificates
# ---------------------------------------------------------------------------------------------------
def weights_constraint(partition: GroupPartition) -> AnyOf:
    """``"auto"`` or one finite weight per group of ``partition`` (the sign is checked by the caller)."""
    return AnyOf(Choice("auto"), ArrayLike(str(partition.n_groups)))


def resolve_weights(weights: Any, partition: GroupPartition, p: float, name: str = "weights") -> np.ndarray:
    """Group weights ``ω [n_groups]``: ``"auto"`` = ``|g|^{1/q}``, else a positive array in group order."""
    check_arguments("groupshift", {name: weights_constraint(partition)}, {name: weights})
    if isinstance(weights, str):
        return partition.sizes.astype(float) ** (1.0 / dual_exponent(p))
    arr = np.asarray(weights, dtype=float)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0 (unpenalised groups are not supported), got "
                         f"min {arr.min()}")
    return arr


def weights_for_groups(keys: Sequence[tuple[int, ...]], known: dict[tuple[int, ...], float], p: float) -> np.ndarray:
    """Weights of the groups ``keys``: from ``known`` where given, else ``|g|^{1/q}``."""
    inv_q = 1.0 / dual_exponent(p)
    return np.array([known.get(k, float(len(k)) ** inv_q) for k in keys])


class _Datafit:
    """``F(z)`` with ``z = Xw + b`` and ``ρ = -n ∇F(z)``; ``kappa`` scales the block Lipschitz constants."""

    kappa = 1.0

    def value(self, z: np.ndarray, y: np.ndarray) -> float: ...
    def rho(self, z: np.ndarray, y: np.ndarray) -> np.ndarray: ...
    def dual(self, u: np.ndarray, y: np.ndarray) -> float: ...


class _Squared(_Datafit):
    kappa = 1.0

    def value(self, z, y):
        r = y - z
        return float(r @ r) / (2 * y.size)

    def rho(self, z, y):
        return y - z

    def dual(self, u, y):
        # D(u) = uᵀy - n‖u‖²/2
        return float(u @ y) - y.size * float(u @ u) / 2


class _Logistic(_Datafit):
    kappa = 0.25

    def value(self, z, y):
        return float(np.mean(np.logaddexp(0.0, z) - y * z))

    def rho(self, z, y):
        return y - expit(z)

    def dual(self, u, y):
        # D(u) = -(1/n) Σ π log π + (1-π) log(1-π),  π = y - n u ∈ [0, 1]
        pi = np.clip(y - y.size * u, 0.0, 1.0)
        return float(-np.mean(xlogy(pi, pi) + xlogy(1 - pi, 1 - pi)))


DATAFITS: dict[str, _Datafit] = {"squared": _Squared(), "logistic": _Logistic()}


def _datafit(loss: str) -> _Datafit:
    if loss not in DATAFITS:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return DATAFITS[loss]


def _optimal_intercept(z0: np.ndarray, y: np.ndarray, loss: str, b: float = 0.0) -> float:
    """argmin_b F(z0 + b): mean residual (squared) or 1-D Newton (logistic)."""
    if loss == "squared":
        return float(np.mean(y - z0))
    for _ in range(100):
        s = expit(z0 + b)
        g = float(np.mean(s - y))
        h = float(np.mean(s * (1 - s)))
        if h <= 0:
            break
        step = g / h
        b -= step
        if abs(step) <= 1e-13 * (1 + abs(b)):
            break
    return b


def certificate(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float, partition: GroupPartition,
                weights: np.ndarray, alpha: float, p: float, loss: str) -> dict[str, float]:
    """Primal, dual and gap at ``(w, b)`` (``b`` must be optimal for ``w`` when an intercept is fitted)."""
    fit = _datafit(loss)
    n = y.size
    z = X @ w + b
    rho = fit.rho(z, y)
    q = dual_exponent(p)
    grad_norms = _group_norms(X.T @ rho, partition.labels_, partition.n_groups, q) / n
    scale = float(np.max(grad_norms / weights)) if grad_norms.size else 0.0
    c = 1.0 if scale <= alpha else alpha / scale
    pen = alpha * float(weights @ _group_norms(w, partition.labels_, partition.n_groups, p))
    primal = fit.value(z, y) + pen
    dual = fit.dual(c * rho / n, y)
    return {"primal": primal, "dual": dual, "gap": primal - dual, "dual_scale": scale / alpha if alpha > 0
            else math.inf}


# ---------------------------------------------------------------------------------------------------
# the working-set BCD solver
# ---------------------------------------------------------------------------------------------------
@dataclass
class SolveResult:
    """Solution and certificate of one solve (arrays: ``coef [d]``)."""

    coef: np.ndarray
    intercept: float
    dual_gap: float
    primal: float
    dual: float
    tol_abs: float
    n_epochs: int
    n_flops: float
    n_full_passes: int
    n_outer: int
    working_set_size: int
    converged: bool
    dual_scale: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)


class Problem:
    """One group-ℓ_{p,1} problem on fixed data: ``X [n, d]`` (float64), ``y [n]``, partition, weights, λ, p.

    ``X`` and ``y`` are used as given (callers centre them for a squared loss with intercept);
    ``fit_intercept`` is only honoured for the logistic loss here.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, partition: GroupPartition, weights: np.ndarray,
                 alpha: float, p: float, loss: str, *, fit_intercept: bool = False,
                 lipschitz_cache: dict | None = None):
        self.X, self.y = X, y
        self.n, self.d = X.shape
        self.part = partition
        self.weights = np.asarray(weights, dtype=float)
        self.alpha, self.p, self.q = float(alpha), float(p), dual_exponent(p)
        self.loss, self.fit = loss, _datafit(loss)
        self.fit_b = bool(fit_intercept) and loss == "logistic"
        self.lip = {} if lipschitz_cache is None else lipschitz_cache
        self.flops = 0.0
        self.blocks: dict[int, np.ndarray] = {}
        self.step: dict[int, float] = {}

    # -- helpers ---------------------------------------------------------------------------------------
    def block(self, k: int) -> np.ndarray:
        """``X_g`` for group ``k`` (cached copy, ``[n, |g|]``)."""
        blk = self.blocks.get(k)
        if blk is None:
            blk = np.ascontiguousarray(self.X[:, self.part.groups[k]])
            self.blocks[k] = blk
        return blk

    def lipschitz(self, k: int) -> float:
        key = self.part.keys()[k]
        L = self.lip.get(key)
        if L is None:
            blk = self.block(k)
            s = np.linalg.norm(blk, 2) if blk.shape[1] > 1 else np.linalg.norm(blk)
            L = float(s) ** 2 / self.n
            self.flops += self.n * blk.shape[1] ** 2 + blk.shape[1] ** 3
            self.lip[key] = L
        return L * self.fit.kappa

    def p_zero(self) -> float:
        """``P(0)`` (with the optimal intercept when fitted): the scale of the stopping rule."""
        b0 = _optimal_intercept(np.zeros(self.n), self.y, self.loss) if self.fit_b else 0.0
        return self.fit.value(np.full(self.n, b0), self.y)

    def penalty(self, w: np.ndarray) -> float:
        return self.alpha * float(self.weights @ _group_norms(w, self.part.labels_, self.part.n_groups, self.p))

    def full_pass(self, w: np.ndarray, z: np.ndarray) -> tuple[float, float, float, np.ndarray]:
        """Global certificate (one ``Xᵀρ``): gap, primal, dual, and ``score_g = ‖X_gᵀρ‖_q/(nλω_g)``."""
        rho = self.fit.rho(z, self.y)
        self.flops += self.n * self.d
        dn = _group_norms(self.X.T @ rho, self.part.labels_, self.part.n_groups, self.q) / self.n
        score = dn / (self.alpha * self.weights)
        c = 1.0 / max(1.0, float(score.max()))
        primal = self.fit.value(z, self.y) + self.penalty(w)
        dual = self.fit.dual(c * rho / self.n, self.y)
        return primal - dual, primal, dual, score

    def restricted_gap(self, w: np.ndarray, z: np.ndarray, ws: list[int]) -> float:
        """Gap of the problem restricted to the groups ``ws`` (zero outside; ``w`` is zero there)."""
        rho = self.fit.rho(z, self.y)
        cols = 0
        scale = 0.0
        for k in ws:
            blk = self.block(k)
            cols += blk.shape[1]
            scale = max(scale, norm_p(blk.T @ rho, self.q) / (self.n * self.alpha * self.weights[k]))
        self.flops += self.n * cols
        c = 1.0 / max(1.0, scale)
        primal = self.fit.value(z, self.y) + self.penalty(w)
        return primal - self.fit.dual(c * rho / self.n, self.y)

    def update_intercept(self, z: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        if not self.fit_b:
            return z, b
        b_new = _optimal_intercept(z - b, self.y, self.loss, b)
        self.flops += 4 * self.n
        return z + (b_new - b), b_new

    def epoch(self, w: np.ndarray, z: np.ndarray, ws: list[int]) -> np.ndarray:
        """One cyclic pass of proximal block updates over ``ws``; updates ``w`` in place, returns ``z``."""
        n, alpha, p = self.n, self.alpha, self.p
        rho = self.fit.rho(z, self.y)
        logistic = self.loss == "logistic"
        for k in ws:
            L_glob = self.lipschitz(k)
            if L_glob <= 0.0:  # constant-zero columns: w_g stays 0
                continue
            g = self.part.groups[k]
            blk = self.block(k)
            m = blk.shape[1]
            # ∇_g F = -X_gᵀ ρ / n ;   v = w_g - ∇_g F / L_g
            grad = -(blk.T @ rho) / n
            self.flops += n * m
            wg = w[g]
            if not logistic:
                new = _prox_group_norm(wg - grad / L_glob, alpha * self.weights[k] / L_glob, p)
                delta = new - wg
                if np.any(delta != 0.0):
                    w[g] = new
                    z = z + blk @ delta
                    self.flops += n * m
                    rho = self.fit.rho(z, self.y)
                continue
            # Logistic: the global bound L_g = ‖X_g‖²/(4n) is loose where σ(1-σ) is small, so the step is
            # backtracked: start from half the last accepted local constant, double until the exact curvature
            # bound along the step, Q = (1/n) Σ_i d_i² max_{s∈[0,1]} σ'(z_i + s d_i) with d = X_gΔ, satisfies
            # Q <= L‖Δ‖²; then F(z + d) <= F(z) + ∇_gᵀΔ + (L/2)‖Δ‖² (a majorisation, no cancellation-prone
            # difference of losses), so every accepted step decreases the objective.
            L = max(0.5 * self.step.get(k, L_glob), 1e-8 * L_glob)
            while True:
                if L >= L_glob:
                    L = L_glob
                new = _prox_group_norm(wg - grad / L, alpha * self.weights[k] / L, p)
                delta = new - wg
                if not np.any(delta != 0.0):
                    break
                dz = blk @ delta
                z_new = z + dz
                near = np.minimum(np.abs(z), np.abs(z_new))
                s_near = expit(near)
                curv = np.where(z * z_new < 0, 0.25, s_near * (1 - s_near))
                self.flops += n * m + 4 * n
                if L == L_glob or float((dz * dz) @ curv) / n <= L * float(delta @ delta):
                    w[g] = new
                    z = z_new
                    rho = self.fit.rho(z, self.y)
                    break
                L *= 2.0
            self.step[k] = L
        return z

    # -- the solver ------------------------------------------------------------------------------------
    def solve(self, w0: np.ndarray | None = None, b0: float = 0.0, *, tol: float = 1e-8,
              max_epochs: int = 50_000, p0: int = 10, gap_freq: int = 5, ws_init: Sequence[int] | None = None,
              max_outer: int = 200, z0: np.ndarray | None = None) -> SolveResult:
        """Minimise from ``(w0, b0)``; with ``ws_init`` the first inner solve runs on those groups (plus the
        support) before any full pass (local work first); otherwise it starts with a full pass.
        ``z0 = X w0 + b0`` may be passed when the caller already has it."""
        w = np.zeros(self.d) if w0 is None else np.array(w0, dtype=float, copy=True)
        if z0 is not None:
            z = np.array(z0, dtype=float, copy=True)
        else:
            nz = np.flatnonzero(w)
            z = self.X[:, nz] @ w[nz] + float(b0)
            self.flops += self.n * nz.size
        b = float(b0)
        z, b = self.update_intercept(z, b)
        tol_abs = tol * self.p_zero()
        active = set(np.unique(self.part.labels_[np.flatnonzero(w)]).tolist())
        n_epochs = n_outer = n_full = 0
        converged = False
        gap = primal = dual = math.inf
        score = None
        if ws_init is not None:
            ws = sorted(active | {int(k) for k in ws_init})
            inner_tol = 0.1 * tol_abs
        else:
            gap, primal, dual, score = self.full_pass(w, z)
            n_full += 1
            ws = sorted(active)
            if gap <= tol_abs:
                converged = True
            else:
                ws = self._grow(ws, score, p0)
                inner_tol = max(0.1 * tol_abs, 0.3 * gap)
        while not converged and n_outer < max_outer and n_epochs < max_epochs:
            n_outer += 1
            # inner: BCD on the working set until its restricted gap is below inner_tol (a caller-provided
            # working set is first checked as is: the start may already be optimal on it)
            if ws_init is not None and n_outer == 1 and self.restricted_gap(w, z, ws) <= inner_tol:
                pass
            else:
                self._inner(w, z, b, ws, inner_tol, max_epochs, gap_freq, n_epochs)
                w, z, b, n_epochs = self._inner_state
            gap, primal, dual, score = self.full_pass(w, z)
            n_full += 1
            if gap <= tol_abs:
                converged = True
                break
            ws = self._grow(ws, score, p0)
            inner_tol = max(0.1 * tol_abs, 0.3 * gap)
        if not converged:
            warnings.warn(f"group-l_p,1 solver did not reach gap <= {tol_abs:.3g} (gap {gap:.3g}) in "
                          f"{n_epochs} epochs; increase max_epochs", _convergence_warning(), stacklevel=3)
        dual_scale = float(score.max()) if score is not None else math.nan
        return SolveResult(coef=w, intercept=b, dual_gap=float(gap), primal=float(primal), dual=float(dual),
                           tol_abs=float(tol_abs), n_epochs=n_epochs, n_flops=float(self.flops),
                           n_full_passes=n_full, n_outer=n_outer, working_set_size=len(ws),
                           converged=converged, dual_scale=dual_scale,
                           extra={"scores": score if converged else None})

    def _inner(self, w, z, b, ws, inner_tol, max_epochs, gap_freq, n_epochs) -> None:
        """BCD epochs on ``ws`` until the restricted gap <= ``inner_tol``; result in ``self._inner_state``."""
        while n_epochs < max_epochs:
            z = self.epoch(w, z, ws)
            z, b = self.update_intercept(z, b)
            n_epochs += 1
            if n_epochs % gap_freq == 0 or len(ws) == 0:
                if self.restricted_gap(w, z, ws) <= inner_tol:
                    break
        self._inner_state = (w, z, b, n_epochs)

    def _grow(self, ws: list[int], score: np.ndarray, p0: int) -> list[int]:
        """Add the most violating inactive groups (score > 1 + 1e-9), at most ``max(p0, |W|)`` of them."""
        in_ws = np.zeros(self.part.n_groups, dtype=bool)
        in_ws[ws] = True
        cand = np.flatnonzero(~in_ws & (score > 1.0 + 1e-9))
        if cand.size == 0:
            return ws
        k = max(p0, len(ws))
        top = cand[np.argsort(-score[cand], kind="stable")[:k]]
        return sorted(set(ws) | set(top.tolist()))


def _convergence_warning():
    from sklearn.exceptions import ConvergenceWarning

    return ConvergenceWarning


# ---------------------------------------------------------------------------------------------------
# functional API
# ---------------------------------------------------------------------------------------------------
def _validate_Xy(X: Any, y: Any, loss: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.utils import check_array, check_consistent_length

    X = check_array(X, dtype=np.float64, ensure_all_finite=True, input_name="X")
    y = check_array(y, dtype=np.float64, ensure_2d=False, ensure_all_finite=True, input_name="y")
    check_consistent_length(X, y)  # y is 1-D: every caller declares it ArrayLike("N") (solver.XY)
    if loss == "logistic" and not np.all((y == 0) | (y == 1)):
        raise ValueError("y must hold 0/1 labels for loss='logistic' (use GroupL1Classifier for other labels)")
    return X, y


def prepare(X: Any, y: Any, loss: str, fit_intercept: bool):
    """Validated float64 data; with an intercept, ``X`` is centred (and ``y`` too for the squared loss).

    Centring only re-parametrises the unpenalised intercept (``Xw + b = (X - x̄)w + (b + x̄ᵀw)``), so the
    optimum ``w`` and the gap are unchanged, while BCD no longer fights the intercept/feature coupling.
    Returns ``(Xc, yc, x_mean | None, y_mean | None)``.
    """
    X, y = _validate_Xy(X, y, loss)
    if not fit_intercept:
        return X, y, None, None
    x_mean = X.mean(axis=0)
    if loss == "squared":
        y_mean = float(y.mean())
        return X - x_mean, y - y_mean, x_mean, y_mean
    return X - x_mean, y, x_mean, None


def to_centred_intercept(b: float, w: np.ndarray, x_mean: np.ndarray | None, loss: str) -> float:
    """Intercept in the centred parametrisation used by the solver (0 for centred least squares)."""
    if x_mean is None or loss == "squared":
        return 0.0 if x_mean is not None else float(b)
    return float(b) + float(x_mean @ w)


def from_centred_intercept(b: float, w: np.ndarray, x_mean: np.ndarray | None, y_mean: float | None,
                           loss: str) -> float:
    """Intercept of the original data from the solver's centred one."""
    if x_mean is None:
        return float(b)
    if loss == "squared":
        return float(y_mean) - float(x_mean @ w)
    return float(b) - float(x_mean @ w)


@validate(**XY, alpha=ALPHA, p=P_EXP, loss=LOSS, fit_intercept=Bool(), w0=Optional(ArrayLike("D")), tol=TOL,
          max_epochs=COUNT, p0=COUNT, lipschitz_cache=CACHE)
def solve_group_l1(X: Any, y: Any, groups: Any, alpha: float, p: float = 2.0, *, weights: Any = "auto",
                   loss: str = "squared", fit_intercept: bool = False, w0: np.ndarray | None = None,
                   tol: float = 1e-8, max_epochs: int = 50_000, p0: int = 10,
                   lipschitz_cache: dict | None = None) -> SolveResult:
    """Solve ``min_w F(Xw + b) + alpha Σ_g ω_g ‖w_g‖_p`` (working-set BCD, stops at gap <= tol·P(0)).

    Args:
        X: ``[n, d]`` features; y: ``[n]`` targets (0/1 for logistic).
        groups: a :class:`GroupPartition`, an int block size, a list of index lists, or labels ``[d]``.
        alpha: λ >= 0; p: in (1, ∞]; weights: ``"auto"`` (``|g|^{1/q}``) or ``[n_groups]`` positive.
        w0: optional start ``[d]`` (warm start).
    Returns:
        :class:`SolveResult` with ``coef [d]``, ``intercept``, ``dual_gap`` and work counters.
    """
    from .partition import as_partition

    p, alpha, tol, max_epochs, p0, fit_intercept = as_p(p), float(alpha), float(tol), int(max_epochs), int(p0), \
        bool(fit_intercept)
    Xc, yc, x_mean, y_mean = prepare(X, y, loss, fit_intercept)
    part = as_partition(groups, Xc.shape[1])
    wts = resolve_weights(weights, part, p)
    if w0 is not None:
        w0 = np.asarray(w0, dtype=float)
    prob = Problem(Xc, yc, part, wts, alpha, p, loss, fit_intercept=fit_intercept, lipschitz_cache=lipschitz_cache)
    res = prob.solve(w0, tol=tol, max_epochs=max_epochs, p0=p0)
    res.intercept = from_centred_intercept(res.intercept, res.coef, x_mean, y_mean, loss)
    return res


@validate(**XY, p=P_EXP, loss=LOSS, fit_intercept=Bool())
def group_lambda_max(X: Any, y: Any, groups: Any, p: float = 2.0, weights: Any = "auto", *,
                     loss: str = "squared", fit_intercept: bool = False) -> float:
    """Smallest λ for which ``w = 0`` is optimal: ``max_g ‖X_gᵀ ρ(0)‖_q / (n ω_g)``.

    ``ρ(0) = y`` (squared; centred when ``fit_intercept``), ``y - σ(b*)`` (logistic, ``b* = 0`` without
    intercept, ``logit(mean y)`` with). Returns a float in the units of ``alpha``.
    """
    from .partition import as_partition

    p, fit_intercept = as_p(p), bool(fit_intercept)
    X, y = _validate_Xy(X, y, loss)
    part = as_partition(groups, X.shape[1])
    wts = resolve_weights(weights, part, p)
    n = y.size
    if loss == "squared":
        rho = y - y.mean() if fit_intercept else y
        Xc = X - X.mean(axis=0) if fit_intercept else X
    else:
        b = _optimal_intercept(np.zeros(n), y, loss) if fit_intercept else 0.0
        rho = y - expit(b)
        Xc = X
    dn = _group_norms(Xc.T @ rho, part.labels_, part.n_groups, dual_exponent(p)) / n
    return float(np.max(dn / wts))


@validate(**XY, w=ArrayLike("D"), alpha=ALPHA, p=P_EXP, loss=LOSS, fit_intercept=Bool())
def duality_gap(X: Any, y: Any, w: Any, groups: Any, alpha: float, p: float = 2.0, weights: Any = "auto", *,
                loss: str = "squared", fit_intercept: bool = False) -> float:
    """Duality gap ``P(w, b*(w)) - D(u(w)) >= P(w) - P*`` (an upper bound on suboptimality, units of P).

    With ``fit_intercept`` the intercept is profiled out (set to its optimum for ``w``).
    """
    from .partition import as_partition

    p, alpha, fit_intercept = as_p(p), float(alpha), bool(fit_intercept)
    X, y = _validate_Xy(X, y, loss)
    part = as_partition(groups, X.shape[1])
    wts = resolve_weights(weights, part, p)
    w = np.asarray(w, dtype=float)
    b = _optimal_intercept(X @ w, y, loss) if fit_intercept else 0.0
    return certificate(X, y, w, b, part, wts, alpha, p, loss)["gap"]
