"""Per-primitive homotopy: the learning dynamics of one split or merge (p = 2, squared loss).

One primitive replaces its *sources* by its *targets* (a split ``s -> {a, b}`` or a merge ``{a, b} -> s``).
Its two *pieces* ``a`` and ``b`` are the atoms that both sides share. The primitive is followed along

    P_t(w) = (1/2n)‖y - Xw‖² + λ [ Σ_rest ω_g‖w_g‖ + (1-t) Σ_sources ω‖w_·‖ + t Σ_targets ω‖w_·‖ ],  t ∈ [0, 1],

which is convex for every ``t``; ``t = 0`` is the old partition, ``t = 1`` the new one. Every computation
here is in Gram space on a working set ``W`` of columns (the support plus the primitive's columns):
``G = X_WᵀX_W/n``, ``c = X_Wᵀy/n``, ``∇_W F = G w_W - c``.

On a piece of the path where the set ``A`` of nonzero blocks (pieces and rest groups) is fixed, the KKT map

    Φ(w_A, t) = G_AA w_A - c_A + λ Σ_τ c_τ(t) ω_τ u_τ = 0,      u_τ = w_τ/‖w_τ‖,  c_τ ∈ {1, 1-t, t}

is smooth, and its implicit derivative is the closed-form learning dynamics of the primitive

    J dw_A/dt = -λ Σ_τ c'_τ ω_τ u_τ,      J = G_AA + λ Σ_τ c_τ ω_τ (I - u_τu_τᵀ)/‖w_τ‖.

Predictor: an Euler step along ``dw/dt``; corrector: Newton on ``Φ(·, t + Δt) = 0``. Events:

* deactivation: a block's Newton solution reverses (``⟨w_b(t+Δt), w_b(t)⟩ <= 0``) or shrinks below
  ``1e-12 ‖w‖``; the block is set to zero at the located event;
* activation: a zero piece violates its feasibility. With ``c_1`` the coefficient of the single-piece terms
  (``t`` for a split's targets, ``1-t`` for a merge's sources) and ``c_u`` the one of the two-piece term:
  the excess of piece ``p`` is ``ρ_p = (‖∇_p F‖ - λ c_1 ω_p)_+``; if the two-piece term is zero too, the
  exact test over the two balls is ``‖(ρ_a, ρ_b)‖ <= λ c_u ω_u`` (the single-piece subgradients take what
  they can, the shared term the rest), otherwise every ``ρ_p`` must vanish. The worst piece re-enters,
  seeded along ``-∇_p F``.

Step control (spec): start with ``Δt = 1``; halve when Newton fails; an event seen in a step is located by
a secant on the step's linear interpolation (deactivation: where ``⟨w_b(s), w_b(t)⟩`` crosses 0; activation:
where the excess crosses 0) and applied just past it; double after 3 clean steps; fall back (return
``None``) below ``Δt = 1e-6`` or after ``4 (#blocks + 1)`` events. Rest groups are not tested for
activation along the path (that would need a full pass per step): the caller's global certificate catches
them. Inferred: the paper's dynamics were not found;
this follows the spec's reconstruction (and Li & Gu's ODE path following for the group lasso).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DT_EVENT = 1e-3  # an event is located once the step that contains it is this short
DT_MIN = 1e-6  # below this step the path is abandoned (the caller falls back to BCD)
NEWTON_ITERS = 8
HYSTERESIS = 1e-10


class Gram:
    """``G = X_WᵀX_W/n`` and ``c = X_Wᵀy/n`` on a growing set of columns ``W`` (flops counted).

    Args:
        X: ``[n, d]`` (centred for a fitted intercept); y: ``[n]``.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray):
        self.X, self.y = X, y
        self.n, self.d = X.shape
        self.pos = np.full(self.d, -1, dtype=np.int64)
        self.XW = np.zeros((self.n, 0))
        self.G = np.zeros((0, 0))
        self.c = np.zeros(0)
        self.flops = 0.0

    def add(self, features: np.ndarray) -> None:
        """Add the columns ``features`` not in ``W`` yet (``n·m_new·(m + m_new)`` flops)."""
        new = np.unique(features[self.pos[features] < 0])
        if new.size == 0:
            return
        m = self.XW.shape[1]
        Xn = self.X[:, new]
        cross = self.XW.T @ Xn / self.n
        G = np.empty((m + new.size, m + new.size))
        G[:m, :m] = self.G
        G[:m, m:] = cross
        G[m:, :m] = cross.T
        G[m:, m:] = Xn.T @ Xn / self.n
        self.G = G
        self.c = np.concatenate([self.c, Xn.T @ self.y / self.n])
        self.XW = np.hstack([self.XW, Xn])
        self.pos[new] = np.arange(m, m + new.size)
        self.flops += self.n * new.size * (m + new.size + 1)


@dataclass
class _Term:
    blocks: tuple[int, ...]  # indices into the block list
    weight: float
    kind: str  # "rest" (c = 1), "old" (c = 1 - t), "new" (c = t)

    def coef(self, t: float) -> float:
        return 1.0 if self.kind == "rest" else (1.0 - t if self.kind == "old" else t)

    def dcoef(self) -> float:
        return 0.0 if self.kind == "rest" else (-1.0 if self.kind == "old" else 1.0)


@dataclass
class PathInfo:
    """What one primitive's path did (one entry of the transition log)."""

    steps: int = 0
    newton_iterations: int = 0
    deactivations: int = 0
    activations: int = 0
    halvings: int = 0
    flops: float = 0.0
    converged: bool = False
    reason: str = ""
    events_t: list[float] = field(default_factory=list)


def follow_primitive(gram: Gram, w: np.ndarray, kind: str, pieces: list[np.ndarray], piece_weights: list[float],
                     union_weight: float, rest: list[tuple[np.ndarray, float]], alpha: float
                     ) -> tuple[np.ndarray | None, PathInfo]:
    """Follow ``P_t`` from ``t = 0`` (old groups) to ``t = 1`` (new groups) for one primitive.

    Args:
        gram: the Gram state; every column of ``pieces`` and ``rest`` must already be in it.
        w: ``[d]`` the current solution (optimal at ``t = 0``); not modified.
        kind: ``"split"`` (sources: the union ``a ∪ b``; targets ``a``, ``b``) or ``"merge"`` (the reverse).
        pieces: the two pieces ``a``, ``b`` (feature index arrays); piece_weights: their single-term weights.
        union_weight: the weight of the two-piece term ``a ∪ b``.
        rest: the other nonzero groups (features, weight): terms with ``c = 1``.
        alpha: λ.
    Returns:
        ``(w_new [d], info)``; ``w_new`` is None when the path was abandoned (step or event cap).
    """
    info = PathInfo()
    single_kind, union_kind = ("new", "old") if kind == "split" else ("old", "new")
    blocks = [gram.pos[p] for p in pieces] + [gram.pos[g] for g, _ in rest]
    n_pieces = len(pieces)
    terms = [_Term((i,), piece_weights[i], single_kind) for i in range(n_pieces)]
    terms.append(_Term(tuple(range(n_pieces)), union_weight, union_kind))
    terms += [_Term((n_pieces + j,), wt, "rest") for j, (_, wt) in enumerate(rest)]
    G, c = gram.G, gram.c
    # the values of every block in W-coordinates
    vals = [w[p].astype(float) for p in pieces] + [w[g].astype(float) for g, _ in rest]
    active = [i for i, v in enumerate(vals) if np.any(v != 0.0)]
    scale = 1.0 + float(np.linalg.norm(c))
    max_events = 4 * (len(blocks) + 1)

    def layout(act: list[int]) -> dict:
        """Index arrays of the active coordinates, their Gram sub-matrix and each term's coordinates."""
        idx = np.concatenate([blocks[i] for i in act]) if act else np.zeros(0, dtype=np.int64)
        off, sl = 0, {}
        for i in act:
            sl[i] = slice(off, off + blocks[i].size)
            off += blocks[i].size
        term_coords = []
        for term in terms:
            parts = [sl[i] for i in term.blocks if i in sl]
            if parts:
                term_coords.append((term, np.concatenate([np.arange(q.start, q.stop) for q in parts])))
        info.flops += idx.size ** 2
        return {"idx": idx, "sl": sl, "act": act, "sub": G[np.ix_(idx, idx)], "c": c[idx], "terms": term_coords}

    def system(v: np.ndarray, t: float, lay: dict):
        """Φ(v, t), J(v, t) and ∂Φ/∂t on the active coordinates."""
        phi = lay["sub"] @ v - lay["c"]
        J = lay["sub"].copy()
        dphi = np.zeros_like(v)
        for term, coords in lay["terms"]:
            vt = v[coords]
            nrm = float(np.linalg.norm(vt))
            if nrm == 0.0:
                continue
            u = vt / nrm
            ct = term.coef(t)
            # ∂(c ω ‖w_τ‖)/∂w = c ω u ;  Hessian c ω (I - u uᵀ)/‖w_τ‖ ;  ∂Φ/∂t = c' ω u
            phi[coords] += alpha * ct * term.weight * u
            J[np.ix_(coords, coords)] += alpha * ct * term.weight * (np.eye(coords.size) - np.outer(u, u)) / nrm
            dphi[coords] += alpha * term.dcoef() * term.weight * u
        info.flops += 2 * v.size ** 2
        return phi, J, dphi

    def newton(v: np.ndarray, t: float, lay: dict) -> tuple[np.ndarray, bool]:
        for _ in range(NEWTON_ITERS):
            phi, J, _ = system(v, t, lay)
            info.newton_iterations += 1
            if float(np.linalg.norm(phi)) <= 1e-11 * scale:
                return v, True
            try:
                step = np.linalg.solve(J, -phi)
            except np.linalg.LinAlgError:
                return v, False
            info.flops += v.size ** 3 / 3
            if not np.all(np.isfinite(step)):
                return v, False
            v = v + step
        phi, _, _ = system(v, t, lay)
        return v, bool(np.linalg.norm(phi) <= 1e-11 * scale)

    def excess(v: np.ndarray, t: float, lay: dict) -> tuple[float, int]:
        """Activation excess over the zero pieces at ``t`` (> 0: violated) and the worst piece (-1: none)."""
        zero = [i for i in range(n_pieces) if i not in lay["sl"]]
        if not zero:
            return -np.inf, -1
        c1 = t if single_kind == "new" else 1.0 - t
        cu = 1.0 - t if union_kind == "old" else t
        idx = lay["idx"]
        rho, raw = {}, {}
        for i in zero:
            grad = G[np.ix_(blocks[i], idx)] @ v - c[blocks[i]] if idx.size else -c[blocks[i]]
            info.flops += blocks[i].size * (idx.size + 1)
            raw[i] = float(np.linalg.norm(grad)) - alpha * c1 * piece_weights[i]
            rho[i] = max(0.0, raw[i])
        worst = max(raw, key=raw.get)
        if len(zero) == n_pieces:  # the two-piece term is zero too: the joint two-ball test
            viol = float(np.linalg.norm(list(rho.values()))) - alpha * cu * union_weight
        else:
            viol = raw[worst]
        return viol, worst

    def seed(i: int, v: np.ndarray, lay: dict) -> np.ndarray:
        idx = lay["idx"]
        grad = G[np.ix_(blocks[i], idx)] @ v - c[blocks[i]] if idx.size else -c[blocks[i]]
        nrm = max(float(np.linalg.norm(grad)), 1e-300)
        return -1e-6 * grad / nrm

    # corrector at t = 0 (w is optimal only up to the solver's tolerance)
    lay = layout(active)
    v = np.concatenate([vals[i] for i in active]) if active else np.zeros(0)
    if active:
        v, ok = newton(v, 0.0, lay)
        if not ok:
            info.reason = "newton failed at t=0"
            return None, info
    tol_act = HYSTERESIS * alpha * max(piece_weights + [union_weight])
    e_now, _ = excess(v, 0.0, lay)
    t, dt, clean, events, located = 0.0, 1.0, 0, 0, False
    while t < 1.0:
        if events > max_events:
            info.reason = f"more than {max_events} events"
            return None, info
        if dt < DT_MIN:
            info.reason = f"step below {DT_MIN:g}"
            return None, info
        t1 = min(1.0, t + dt)
        h = t1 - t
        if active:
            _, J, dphi = system(v, t, lay)
            try:
                tangent = np.linalg.solve(J, -dphi)  # J dw/dt = -∂Φ/∂t  (the learning dynamics)
            except np.linalg.LinAlgError:
                tangent = np.zeros_like(v)
            info.flops += v.size ** 3 / 3
            v1, ok = newton(v + h * tangent, t1, lay)
        else:
            v1, ok = v, True
        info.steps += 1
        if not ok:
            dt, clean, located = h / 2, 0, False
            info.halvings += 1
            continue
        sl = lay["sl"]
        # deactivation: a block whose solution reversed or vanished
        wnorm = float(np.linalg.norm(v1)) if v1.size else 0.0
        dropped = [i for i in active if float(v1[sl[i]] @ v[sl[i]]) <= 0.0
                   or float(np.linalg.norm(v1[sl[i]])) <= 1e-12 * max(wnorm, 1e-300)]
        e1, worst = (-np.inf, -1) if dropped else excess(v1, t1, lay)
        if not dropped and e1 <= tol_act:
            t, v, e_now = t1, v1, e1
            clean += 1
            if clean >= 3:
                dt, clean = 2 * dt, 0
            else:
                dt = max(dt, h)
            located = False
            continue
        if h > DT_EVENT and not located:
            # locate the event by a secant on the linear interpolation between t and t1
            if dropped:
                frac = min(float(v[sl[i]] @ v[sl[i]]) / max(float(v[sl[i]] @ v[sl[i]] - v1[sl[i]] @ v[sl[i]]),
                                                              1e-300) for i in dropped)
            else:
                frac = (e_now - tol_act) / (e_now - e1) if np.isfinite(e_now) and e_now < e1 else 0.5
            dt = min(h, max(frac * h + 0.5 * DT_EVENT, DT_EVENT))
            located, clean = True, 0
            info.halvings += 1
            continue
        events += 1
        info.events_t.append(t1)
        t, located = t1, False
        if dropped:
            info.deactivations += len(dropped)
            keep = [i for i in active if i not in dropped]
            v = np.concatenate([v1[sl[i]] for i in keep]) if keep else np.zeros(0)
            active = keep
        else:
            info.activations += 1
            vals_now = {i: v1[sl[i]] for i in active}
            vals_now[worst] = seed(worst, v1, lay)
            active = sorted(active + [worst])
            v = np.concatenate([vals_now[i] for i in active])
        lay = layout(active)
        if active:
            v, ok = newton(v, t, lay)
            if not ok:
                info.reason = f"newton failed after the event at t={t:.4g}"
                return None, info
        e_now, _ = excess(v, t, lay)
        dt = max(DT_EVENT, 0.25 * (1.0 - t))
    out = w.copy()
    sl = lay["sl"]
    for i, feats in enumerate([*pieces, *(g for g, _ in rest)]):
        out[feats] = v[sl[i]] if i in sl else 0.0
    info.converged = True
    return out, info
