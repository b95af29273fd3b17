r"""The Decoupled Method as a ``torch.optim`` optimizer for two ``nn.Module`` players.

A two-player game min over θ_X, max over θ_Y of f(θ_X, θ_Y), where each player is a module (a generator and a
critic, a classifier and an adversarial reweighting, a policy and a value function) and ``closure()`` computes
the scalar f from the current parameters of both:

    opt = DecoupledPlayer(x_net.parameters(), y_net.parameters(), eta_x=0.1, eta_y=0.1, L_xx=10, L_yy=10)
    for _ in range(steps):
        info = opt.step(lambda: f(x_net, y_net))   # one iteration = 2 rounds; info["calls"], info["rounds"]

Each :meth:`DecoupledPlayer.step` is one iteration of :func:`~neurips26.saddle.decoupled.decoupled_method`
(same arithmetic, same :class:`~neurips26.saddle.counter.CostCounter`): both players solve their local prox
problems by AGD (player X: ∇_X f at fixed θ_Y^k, player Y: ∇_Y f at fixed θ_X^k), exchange half-iterates, apply
the Tseng correction and exchange again. A partial-gradient call writes the two flat vectors into the
parameters, runs ``closure()`` and differentiates with respect to one player's parameters only.

The steps are the param groups' ``lr`` (group 0: player X, η_x; group 1: player Y, η_y), so LR schedulers
apply; ``L`` and ``mu`` of each group are the local smoothness and strong-convexity (``mu = 0``: merely convex)
that the inner AGD needs. Constants not given are *estimated* at the first step from the closure at the current
point (:func:`estimate_constants`: the extreme eigenvalues of the Hessian blocks ∇²_xx f, ∇²_yy f and the largest
singular value of ∇²_xy f, by autograd Hessian–vector products; exact for quadratic games, a local estimate for
anything else). For nonconvex players these are assumptions, as for any prox method.

Stochastic oracles: a closure that samples a minibatch gives noisy partial gradients, and a stopping test on one
noisy gradient means nothing; ``inner_steps=K`` runs exactly K inner AGD steps per prox instead of the HPE test.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from neurips26.constraints import Callable as IsCallable
from neurips26.constraints import Int, Optional, Tensor, check_arguments, validate

from .counter import NONNEG, ROUNDOFF, STEP, CostCounter, check_step
from .decoupled import INNER_RULE, decoupled_iteration, default_steps, inner_sigma

__all__ = ["DecoupledPlayer", "estimate_constants"]

PARAM = Tensor(dtype="float", finite=False)  # a player's parameter: any floating tensor


class _ModuleGame:
    """The game seen through flat parameter vectors: ``grad_x(x, y)`` = ∂f/∂θ_X at (x, y), ``grad_y`` = ∂f/∂θ_Y."""

    def __init__(self, x_params: list[torch.Tensor], y_params: list[torch.Tensor],
                 closure: Callable[[], torch.Tensor]) -> None:
        self.x_params, self.y_params, self.closure = x_params, y_params, closure

    def _grad(self, x: torch.Tensor, y: torch.Tensor, wrt: list[torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            vector_to_parameters(x, self.x_params)
            vector_to_parameters(y, self.y_params)
        with torch.enable_grad():
            loss = _scalar_loss(self.closure())
            grads = torch.autograd.grad(loss.reshape(()), wrt, allow_unused=True)
        return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(wrt, grads)])

    def grad_x(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self._grad(x, y, self.x_params)

    def grad_y(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self._grad(x, y, self.y_params)


def _scalar_loss(loss: Any, at: str = "") -> torch.Tensor:
    """The closure's value, checked to be a finite scalar tensor (a non-finite one is a FloatingPointError)."""
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise ValueError(f"closure must return a scalar tensor f(x, y), got {type(loss).__name__} "
                         f"of shape {tuple(getattr(loss, 'shape', ()))}")
    if not torch.isfinite(loss):
        raise FloatingPointError(f"closure returned a non-finite value {float(loss.detach())}{at}")
    return loss


def _flat(grads: Any, params: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(params, grads)])


def _hessian_blocks(closure: Callable[[], torch.Tensor], xs: list[torch.Tensor],
                    ys: list[torch.Tensor]) -> tuple[Callable, ...]:
    """Hessian–vector products of f at the current parameters, as numpy float64 matvecs:
    v ↦ ∇²_xx f v, v ↦ ∇²_yy f v, v ↦ ∇²_xy f v (v ∈ R^{d_y}) and u ↦ ∇²_yx f u (u ∈ R^{d_x})."""
    with torch.enable_grad():
        loss = closure()
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not torch.isfinite(loss):
            raise ValueError("closure must return a finite scalar tensor to estimate the constants")
        gx = _flat(torch.autograd.grad(loss.reshape(()), xs, create_graph=True, allow_unused=True), xs)
        gy = _flat(torch.autograd.grad(loss.reshape(()), ys, create_graph=True, allow_unused=True), ys)
    like = gx

    def hvp(g: torch.Tensor, wrt: list[torch.Tensor]) -> Callable[[np.ndarray], np.ndarray]:
        def mv(v: np.ndarray) -> np.ndarray:
            vt = torch.as_tensor(np.asarray(v, dtype=np.float64).reshape(-1), dtype=like.dtype, device=like.device)
            with torch.enable_grad():
                if not g.requires_grad:  # f is linear in this block: the product is 0
                    return np.zeros(sum(p.numel() for p in wrt))
                out = torch.autograd.grad(g, wrt, grad_outputs=vt, retain_graph=True, allow_unused=True)
            return _flat(out, wrt).detach().double().cpu().numpy()
        return mv

    # ∇²_xx f v = ∂/∂x ⟨∇_x f, v⟩,  ∇²_yy f v = ∂/∂y ⟨∇_y f, v⟩,  ∇²_xy f v = ∂/∂x ⟨∇_y f, v⟩
    return hvp(gx, xs), hvp(gy, ys), hvp(gy, xs), hvp(gx, ys)


def _extreme_eigs(mv: Callable[[np.ndarray], np.ndarray], n: int, dense_max: int) -> tuple[float, float]:
    """(λ_min, λ_max) of a symmetric operator given by its matvec: dense (n matvecs) for n ≤ dense_max, else
    ARPACK's Lanczos (scipy.sparse.linalg.eigsh)."""
    if n <= dense_max:
        H = np.stack([mv(e) for e in np.eye(n)], axis=1)
        w = np.linalg.eigvalsh((H + H.T) / 2)
        return float(w[0]), float(w[-1])
    from scipy.sparse.linalg import LinearOperator, eigsh

    op = LinearOperator((n, n), matvec=mv, dtype=np.float64)
    hi = float(eigsh(op, k=1, which="LA", return_eigenvectors=False, tol=1e-6)[0])
    lo = float(eigsh(op, k=1, which="SA", return_eigenvectors=False, tol=1e-6)[0])
    return lo, hi


def _top_singular(mv: Callable, rmv: Callable, m: int, n: int, dense_max: int) -> float:
    """σ_max of an [m, n] operator given by matvec (R^n → R^m) and rmatvec."""
    if max(m, n) <= dense_max:
        J = np.stack([mv(e) for e in np.eye(n)], axis=1)
        return float(np.linalg.norm(J, 2)) if J.size else 0.0
    from scipy.sparse.linalg import LinearOperator, svds

    op = LinearOperator((m, n), matvec=mv, rmatvec=rmv, dtype=np.float64)
    return float(svds(op, k=1, return_singular_vectors=False, tol=1e-6)[0])


@validate(closure=IsCallable(), dense_max=Int(low=1))
def estimate_constants(closure: Callable[[], torch.Tensor], x_params: Iterable[torch.Tensor],
                       y_params: Iterable[torch.Tensor], *, dense_max: int = 100) -> dict[str, float]:
    """Local constants of f(θ_X, θ_Y) at the current parameters, from autograd Hessian–vector products:

        L_xx = λ_max(∇²_xx f),  μ_x = max(λ_min(∇²_xx f), 0),
        L_yy = −λ_min(∇²_yy f), μ_y = max(−λ_max(∇²_yy f), 0),  L_xy = σ_max(∇²_xy f),

    dense (one product per coordinate) for blocks of at most ``dense_max`` parameters, else Lanczos (ARPACK).
    Exact (to round-off) for quadratic games; moduli at round-off level are reported as 0. ``closure`` must be
    twice differentiable. Returns ``{"L_xx", "mu_x", "L_yy", "mu_y", "L_xy"}`` as floats.
    """
    xs, ys = list(x_params), list(y_params)
    hxx, hyy, hxy, hyx = _hessian_blocks(closure, xs, ys)
    dx, dy = sum(p.numel() for p in xs), sum(p.numel() for p in ys)
    lo_x, hi_x = _extreme_eigs(hxx, dx, dense_max)
    lo_y, hi_y = _extreme_eigs(hyy, dy, dense_max)
    L_xy = _top_singular(hxy, hyx, dx, dy, dense_max)
    L_xx, L_yy = max(hi_x, 0.0), max(-lo_y, 0.0)
    scale = max(L_xx, L_yy, L_xy)
    mu_x = lo_x if lo_x > ROUNDOFF * scale else 0.0
    mu_y = -hi_y if -hi_y > ROUNDOFF * scale else 0.0
    out = {"L_xx": L_xx, "mu_x": mu_x, "L_yy": L_yy, "mu_y": mu_y, "L_xy": L_xy}
    if not all(math.isfinite(v) for v in out.values()):
        raise FloatingPointError(f"estimated constants are not finite: {out}")
    return out


class DecoupledPlayer(torch.optim.Optimizer):
    """Decoupled Method for two ``nn.Module`` players (see the module docstring).

    Args:
        x_params, y_params: the minimising and the maximising player's parameters (disjoint).
        eta_x, eta_y: prox steps (the groups' ``lr``); ``None``: the method's default θ/L_xy (scaled by √(μ_y/μ_x),
            √(μ_x/μ_y) when both are strongly convex), see :func:`~neurips26.saddle.default_steps`.
        theta: ∈ (0, 1), scales the default steps.
        L_xx, L_yy: smoothness of f in each player's own parameters (the inner AGD's step 1/(L + 1/η));
            ``None``: estimated at the first step (:func:`estimate_constants`).
        mu_x, mu_y: strong convexity (X) / concavity (Y) moduli, ≥ 0 (the inner AGD's momentum); ``None``: estimated.
        L_xy: coupling constant, needed only for default steps; ``None``: estimated when needed.
        inner_rule: ``"hpe"`` (default) or ``"relative"``; sigma: its accuracy ∈ (0, 1) (default 0.5 / 0.05).
        inner_steps: stochastic-oracle mode: exactly this many inner AGD steps per prox, no stopping test.

    ``step(closure)`` returns f at the point where the step started (as ``torch.optim`` optimizers return the
    closure's loss); ``last_info`` holds that step's rounds, calls and inner calls, ``rounds`` and ``calls``
    (``{"x": …, "y": …}``) accumulate over steps, ``constants`` holds the constants in use once known.
    """

    @validate(eta_x=Optional(STEP), eta_y=Optional(STEP), **INNER_RULE, L_xx=Optional(NONNEG),
              L_yy=Optional(NONNEG), mu_x=Optional(NONNEG), mu_y=Optional(NONNEG), L_xy=Optional(NONNEG),
              inner_steps=Optional(Int(low=1)))
    def __init__(self, x_params: Iterable[torch.Tensor], y_params: Iterable[torch.Tensor], *,
                 eta_x: float | None = None, eta_y: float | None = None, theta: float = 0.5,
                 L_xx: float | None = None, L_yy: float | None = None, mu_x: float | None = None,
                 mu_y: float | None = None, L_xy: float | None = None, sigma: float | None = None,
                 inner_rule: str = "hpe", inner_steps: int | None = None) -> None:
        xs, ys = list(x_params), list(y_params)
        for name, ps in (("x_params", xs), ("y_params", ys)):
            if not ps:
                raise ValueError(f"{name} is empty: each player needs at least one parameter")
            check_arguments("DecoupledPlayer", {f"{name}[{i}]": PARAM for i in range(len(ps))},
                            {f"{name}[{i}]": p for i, p in enumerate(ps)})
        if {id(p) for p in xs} & {id(p) for p in ys}:
            raise ValueError("x_params and y_params share a tensor: each parameter belongs to one player")
        if len({(p.dtype, p.device) for p in xs + ys}) != 1:
            raise ValueError("x_params and y_params must share one dtype and device, got "
                             f"{sorted({(str(p.dtype), str(p.device)) for p in xs + ys})}")
        eta_x = None if eta_x is None else float(eta_x)
        eta_y = None if eta_y is None else float(eta_y)
        self.theta = float(theta)
        given = {k: float(v) for k, v in
                 (("L_xx", L_xx), ("L_yy", L_yy), ("mu_x", mu_x), ("mu_y", mu_y), ("L_xy", L_xy)) if v is not None}
        for mu, L in (("mu_x", "L_xx"), ("mu_y", "L_yy")):
            if mu in given and L in given and given[mu] > given[L]:
                raise ValueError(f"{mu}={given[mu]} exceeds its smoothness constant {L}={given[L]}: need {mu} <= {L}")
        self.inner_rule = inner_rule
        self.sigma = inner_sigma(inner_rule, sigma)
        self.inner_steps = inner_steps
        self._given = given
        self.constants: dict[str, float] | None = None
        super().__init__([{"params": xs, "lr": eta_x, "player": "x"},
                          {"params": ys, "lr": eta_y, "player": "y"}], defaults={})
        self.rounds, self.calls = 0, {"x": 0, "y": 0}
        self.last_info: dict[str, Any] = {}

    def _needed(self) -> tuple[str, ...]:
        need = ("L_xx", "L_yy", "mu_x", "mu_y")
        if any(g["lr"] is None for g in self.param_groups):
            need += ("L_xy",)
        return need

    def _resolve_constants(self, closure: Callable[[], torch.Tensor]) -> None:
        """Fill the constants not given by estimating them once at the current point; then the default steps."""
        missing = [k for k in self._needed() if k not in self._given]
        consts = dict(self._given)
        if missing:
            est = estimate_constants(closure, self.param_groups[0]["params"], self.param_groups[1]["params"])
            consts.update({k: est[k] for k in missing})
        self.constants = consts
        gx_, gy_ = self.param_groups
        if gx_["lr"] is None or gy_["lr"] is None:

            class _C:  # default_steps reads problem.constants
                constants = consts

            ex, ey, _ = default_steps(_C, self.theta)
            gx_["lr"] = ex if gx_["lr"] is None else gx_["lr"]
            gy_["lr"] = ey if gy_["lr"] is None else gy_["lr"]

    @validate(closure=IsCallable())
    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor]) -> torch.Tensor:  # type: ignore[override]
        """One iteration (2 rounds). ``closure()`` returns f(θ_X, θ_Y) as a scalar tensor; it is called once per
        partial gradient (it must not call ``backward`` itself). Returns f at the starting point (one extra
        evaluation, not counted as a call); ``last_info`` = ``{"rounds": 2, "calls": {"x", "y"}, "inner_calls"}``.
        A step that fails (non-finite closure or iterate) raises and leaves both players unchanged."""
        gx_, gy_ = self.param_groups
        xs, ys = gx_["params"], gy_["params"]
        x0, y0 = parameters_to_vector(xs).detach().clone(), parameters_to_vector(ys).detach().clone()
        saved = (self.constants, gx_["lr"], gy_["lr"])
        try:
            loss = _scalar_loss(closure(), " at the start point")
            if self.constants is None:
                self._resolve_constants(closure)
            eta_x, eta_y = check_step("lr of player x", gx_["lr"]), check_step("lr of player y", gy_["lr"])
            k = self.constants
            counter = CostCounter(_ModuleGame(xs, ys, closure))
            x, y, _, _, inner = decoupled_iteration(
                counter, x0, y0, eta_x, eta_y, sigma=self.sigma, inner_rule=self.inner_rule,
                local=(k["L_xx"], k["mu_x"], k["L_yy"], k["mu_y"]), inner_steps=self.inner_steps)
            if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
                raise FloatingPointError("the iteration produced non-finite parameters (steps too large?)")
        except BaseException:
            vector_to_parameters(x0, xs)  # a failed step leaves the players (and the optimizer) where they were
            vector_to_parameters(y0, ys)
            self.constants, gx_["lr"], gy_["lr"] = saved
            raise
        vector_to_parameters(x, xs)
        vector_to_parameters(y, ys)
        self.rounds += counter.rounds
        for key in self.calls:
            self.calls[key] += counter.calls[key]
        self.last_info = {"rounds": counter.rounds, "calls": dict(counter.calls), "inner_calls": inner}
        return loss.detach()
