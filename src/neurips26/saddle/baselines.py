"""Baselines on the same counters as the Decoupled Method.

With F(z) = (∇_x f(x, y), −∇_y f(x, y)) and L ≥ ‖∇F‖ (default L = max(L_xx, L_yy) + L_xy, an upper bound on
the Jacobian's norm from the block constants):

* :func:`extragradient` (Korpelevich): z½ = z − ηF(z), z⁺ = z − ηF(z½); 2 rounds, 2 calls per agent per
  iteration; η = 1/(2L).
* :func:`optimistic_gda` (Popov, extrapolation from the past): z½_k = z_k − ηF(z½_{k−1}), z_{k+1} = z_k − ηF(z½_k);
  1 round, 1 call per agent per iteration; η = 1/(4L).
* :func:`gda` (simultaneous): z⁺ = z − ηF(z); 1 round, 1 call; η = μ/L² (μ = min(μ_x, μ_y)); diverges on
  pure bilinear games, as expected.
* :func:`decoupled_sgda` (Zindari et al., deterministic): K local gradient steps against the stale opponent, then one
  exchange; γ = 1/(2·max(L_xx, L_yy)). Works for weakly coupled games only.
* :func:`accelerated_primal_dual` (APD; our reconstruction of the accelerated primal–dual gradient method of
  Kovalev, Gasnikov, Richtárik 2022 for *bilinearly coupled* SCSC games, in its strongly-convex form): Nesterov
  coupling on each player's local part, the coupling extrapolated; 2 rounds (X then Y), 1 call per agent per
  iteration; its calls grow like √(L_xx/μ_x) + L_xy/√(μ_xμ_y), the known optimum for bilinear coupling.
* :func:`extragradient_vi`: EG for N-player games.

Every solver reuses F(z_k) when it already holds it; residual stopping charges one scalar exchange per test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from neurips26.constraints import Callable as IsCallable
from neurips26.constraints import Optional, validate

from .counter import (
    ROUNDS,
    STEP,
    TOL,
    CostCounter,
    SaddleResult,
    StopRule,
    as_vector,
    check_step,
    need_constant,
    norm,
    problem_dims,
)
from .decoupled import _players, _projector, _residual


def jacobian_bound(problem: Any) -> float:
    """L = max(L_xx, L_yy) + L_xy ≥ ‖∇F‖ (triangle inequality on the block diagonal and off-diagonal parts)."""
    L = max(need_constant(problem, "L_xx", why="the default step 1/L", positive=False),
            need_constant(problem, "L_yy", why="the default step 1/L", positive=False)) \
        + need_constant(problem, "L_xy", why="the default step 1/L", positive=False)
    if L == 0:
        raise ValueError("problem.constants give L = max(L_xx, L_yy) + L_xy = 0; pass lr explicitly")
    return L


def _setup(problem: Any, x0: Any, y0: Any, tol: Any, max_rounds: Any, callback: Any,
           counter: CostCounter | None = None):
    tol, max_rounds = float(tol), int(max_rounds)  # declared by every solver (TOL)
    d_x, d_y = problem_dims(problem, x0, y0)
    like = getattr(problem, "A", None)
    x, y = as_vector(x0, d_x, "x0", like=like), as_vector(y0, d_y, "y0", like=like)
    c = counter if counter is not None else CostCounter(problem)
    return x, y, c, StopRule(c, (x, y), tol, max_rounds, callback)


def _first(c: CostCounter, stop: StopRule, x: Any, y: Any, px: Any, py: Any):
    """Start the stopping rule; F(z0) is computed now only when the residual test needs it."""
    if stop.uses_residual:
        gx, gy = c.grad_x(x, y), c.grad_y(x, y)
        return gx, gy, stop.start(_residual(x, y, gx, gy, px, py))
    return None, None, stop.start()


def _next(c: CostCounter, stop: StopRule, x: Any, y: Any, px: Any, py: Any):
    """End of an iteration: test; in residual mode F(z_{k+1}) is computed for the test and reused next."""
    if stop.uses_residual:
        gx, gy = c.grad_x(x, y), c.grad_y(x, y)
        return gx, gy, stop.done((x, y), _residual(x, y, gx, gy, px, py))
    return None, None, stop.done((x, y))


def _px(p: Callable | None, v: Any) -> Any:
    return v if p is None else p(v)


SOLVER = {"lr": Optional(STEP), **TOL, "callback": Optional(IsCallable())}


@validate(**SOLVER)
def extragradient(problem: Any, x0: Any, y0: Any, *, lr: float | None = None, tol: float = 1e-6,
                  max_rounds: int = 10**6, callback: Callable | None = None,
                  counter: CostCounter | None = None) -> SaddleResult:
    """Extragradient; 2 rounds and 2 calls per agent per iteration (see the module docstring)."""
    x, y, c, stop = _setup(problem, x0, y0, tol, max_rounds, callback, counter)
    eta = check_step("lr", 1.0 / (2 * jacobian_bound(problem)) if lr is None else lr)
    px, py = _projector(problem, "project_x"), _projector(problem, "project_y")
    gx, gy, done = _first(c, stop, x, y, px, py)
    while not done:
        if gx is None:
            gx, gy = c.grad_x(x, y), c.grad_y(x, y)
        # z½ = P(z − ηF(z))
        xh, yh = _px(px, x - eta * gx), _px(py, y + eta * gy)
        c.exchange()
        # z⁺ = P(z − ηF(z½))
        x, y = _px(px, x - eta * c.grad_x(xh, yh)), _px(py, y + eta * c.grad_y(xh, yh))
        c.exchange()
        gx, gy, done = _next(c, stop, x, y, px, py)
    return stop.result((x, y), {"lr": eta})


@validate(**SOLVER)
def optimistic_gda(problem: Any, x0: Any, y0: Any, *, lr: float | None = None, tol: float = 1e-6,
                   max_rounds: int = 10**6, callback: Callable | None = None,
                  counter: CostCounter | None = None) -> SaddleResult:
    """Optimistic GDA / extrapolation from the past; 1 round and 1 call per agent per iteration.

    The stopping test is evaluated on z_k (distance) or on F(z½_k) (residual, the gradient each agent holds).
    """
    x, y, c, stop = _setup(problem, x0, y0, tol, max_rounds, callback, counter)
    eta = check_step("lr", 1.0 / (4 * jacobian_bound(problem)) if lr is None else lr)
    px, py = _projector(problem, "project_x"), _projector(problem, "project_y")
    gx, gy = c.grad_x(x, y), c.grad_y(x, y)  # F(z½_{−1}) := F(z_0)
    done = stop.start(_residual(x, y, gx, gy, px, py) if stop.uses_residual else None)
    while not done:
        # z½_k = z_k − ηF(z½_{k−1})
        xh, yh = _px(px, x - eta * gx), _px(py, y + eta * gy)
        c.exchange()
        gx, gy = c.grad_x(xh, yh), c.grad_y(xh, yh)
        # z_{k+1} = z_k − ηF(z½_k)
        x, y = _px(px, x - eta * gx), _px(py, y + eta * gy)
        done = stop.done((x, y), _residual(xh, yh, gx, gy, px, py) if stop.uses_residual else None)
    return stop.result((x, y), {"lr": eta})


@validate(**SOLVER)
def gda(problem: Any, x0: Any, y0: Any, *, lr: float | None = None, tol: float = 1e-6, max_rounds: int = 10**6,
        callback: Callable | None = None, counter: CostCounter | None = None) -> SaddleResult:
    """Simultaneous gradient descent–ascent; 1 round and 1 call per agent per iteration; η = μ/L²."""
    x, y, c, stop = _setup(problem, x0, y0, tol, max_rounds, callback, counter)
    if lr is None:
        mu = min(need_constant(problem, "mu_x", why="the GDA step μ/L²", positive=False),
                 need_constant(problem, "mu_y", why="the GDA step μ/L²", positive=False))
        if mu == 0:
            raise ValueError("GDA's default step μ/L² needs mu_x, mu_y > 0 (it diverges on bilinear games); "
                             "pass lr explicitly")
        lr = mu / jacobian_bound(problem) ** 2
    eta = check_step("lr", lr)
    px, py = _projector(problem, "project_x"), _projector(problem, "project_y")
    gx, gy, done = _first(c, stop, x, y, px, py)
    while not done:
        if gx is None:
            gx, gy = c.grad_x(x, y), c.grad_y(x, y)
        x, y = _px(px, x - eta * gx), _px(py, y + eta * gy)
        c.exchange()
        gx, gy, done = _next(c, stop, x, y, px, py)
    return stop.result((x, y), {"lr": eta})


@validate(local_steps=ROUNDS, **SOLVER)
def decoupled_sgda(problem: Any, x0: Any, y0: Any, *, local_steps: int = 20, lr: float | None = None,
                   tol: float = 1e-6, max_rounds: int = 10**6, callback: Callable | None = None,
                  counter: CostCounter | None = None) -> SaddleResult:
    """Decoupled SGDA (deterministic gradients): per round, each player takes K = ``local_steps`` steps

        x ← x − γ ∇_x f(x, ŷ),   y ← y + γ ∇_y f(x̂, y)

    against the opponent's last received vector, then the players exchange (1 round, K calls per agent).
    γ = 1/(2·max(L_xx, L_yy)). Divergence ends the run with ``diverged=True``.
    """
    x, y, c, stop = _setup(problem, x0, y0, tol, max_rounds, callback, counter)
    if lr is None:
        L = max(need_constant(problem, "L_xx", why="the step 1/(2 max(L_xx, L_yy))", positive=False),
                need_constant(problem, "L_yy", why="the step 1/(2 max(L_xx, L_yy))", positive=False))
        if L == 0:
            raise ValueError("decoupled_sgda's default step needs max(L_xx, L_yy) > 0; pass lr explicitly")
        lr = 1.0 / (2 * L)
    gamma = check_step("lr", lr)
    px, py = _projector(problem, "project_x"), _projector(problem, "project_y")
    gx, gy, done = _first(c, stop, x, y, px, py)
    while not done:
        x_hat, y_hat = x, y
        for t in range(local_steps):
            if t > 0 or gx is None:
                gx, gy = c.grad_x(x, y_hat), c.grad_y(x_hat, y)
            x, y = _px(px, x - gamma * gx), _px(py, y + gamma * gy)
        c.exchange()
        gx, gy, done = _next(c, stop, x, y, px, py)
    return stop.result((x, y), {"lr": gamma, "local_steps": local_steps})


@validate(**SOLVER)
def extragradient_vi(game: Any, x0s: Any, *, lr: float | None = None, tol: float = 1e-6, max_rounds: int = 10**6,
                     callback: Callable | None = None) -> SaddleResult:
    """Extragradient for an N-player game: η = 1/(2L), L = L_local + L_cross ≥ ‖∇F‖."""
    tol, max_rounds = float(tol), int(max_rounds)
    xs = _players(game, x0s)
    if lr is None:
        lr = 1.0 / (2 * (need_constant(game, "L_local", why="the default step", positive=False)
                         + need_constant(game, "L_cross", why="the default step", positive=False)))
    eta = check_step("lr", lr)
    n = len(xs)
    c = CostCounter(game, agents=tuple(str(i) for i in range(n)))
    stop = StopRule(c, tuple(xs), tol, max_rounds, callback)
    g: list[Any] | None = None
    if stop.uses_residual:
        g = [c.grad(i, xs) for i in range(n)]
        done = stop.start(math.sqrt(sum(norm(v) ** 2 for v in g)))
    else:
        done = stop.start()
    while not done:
        if g is None:
            g = [c.grad(i, xs) for i in range(n)]
        half = [xs[i] - eta * g[i] for i in range(n)]
        c.exchange()
        xs = [xs[i] - eta * c.grad(i, half) for i in range(n)]
        c.exchange()
        if stop.uses_residual:
            g = [c.grad(i, xs) for i in range(n)]
            done = stop.done(tuple(xs), math.sqrt(sum(norm(v) ** 2 for v in g)))
        else:
            g = None
            done = stop.done(tuple(xs))
    return stop.result(tuple(xs), {"lr": eta})


@validate(step_scale=STEP, **TOL, callback=Optional(IsCallable()))
def accelerated_primal_dual(problem: Any, x0: Any, y0: Any, *, step_scale: float = 1.0, tol: float = 1e-6,
                            max_rounds: int = 10**6, callback: Callable | None = None,
                            counter: CostCounter | None = None) -> SaddleResult:
    """Accelerated primal–dual gradient method (APD) for f(x, y) = p(x) + xᵀBy − q(y) with p μ_x-strongly convex
    and L_xx-smooth, q μ_y-strongly convex and L_yy-smooth (inferred from memory of Kovalev et al. 2022, Algorithm 1
    with β = 0; the parameters below are our reading, checked by the tests, not taken from their text).

    With δ = √(μ_y/μ_x), σ_x = √(μ_x/(2L_xx)), τ_x = (1/σ_x + ½)⁻¹, η_x = s·min{1/(4(μ_x + L_xx σ_x)), δ/(4L_xy)}
    (Y: the mirror, with 1/δ) and θ = 1 − min{μ_xη_x, μ_yη_y, σ_x/2, σ_y/2}, iteration k:

        y_m = y_k + θ(y_k − y_{k−1})                       (X extrapolates Y's last two vectors)
        x_g = τ_x x_k + (1 − τ_x) x_f,   y_g = τ_y y_k + (1 − τ_y) y_f
        x_{k+1} = x_k + η_xμ_x(x_g − x_k) − η_x ∇_x f(x_g, y_m)             → send x_{k+1}   (round 1)
        y_{k+1} = y_k + η_yμ_y(y_g − y_k) + η_y ∇_y f(x_{k+1}, y_g)           → send y_{k+1}   (round 2)
        x_f ← x_g + σ_x(x_{k+1} − x_k),  y_f ← y_g + σ_y(y_{k+1} − y_k)

    (∇_x f(x_g, y_m) = ∇p(x_g) + B y_m and −∇_y f(x_{k+1}, y_g) = ∇q(y_g) − Bᵀx_{k+1}: one call each.)
    ``step_scale`` = s scales both steps (the tuning knob). Needs μ_x, μ_y > 0; on non-bilinear coupling it runs,
    without its guarantee. Projections are not supported.
    """
    x, y, c, stop = _setup(problem, x0, y0, tol, max_rounds, callback, counter)
    s = check_step("step_scale", step_scale)
    if _projector(problem, "project_x") is not None or _projector(problem, "project_y") is not None:
        raise ValueError("accelerated_primal_dual supports unconstrained problems only (no project_x / project_y)")
    k = {name: need_constant(problem, name, why="the APD parameters") for name in ("L_xx", "L_yy", "L_xy")}
    for name in ("mu_x", "mu_y"):
        k[name] = need_constant(problem, name, why="the APD parameters (strongly convex–concave form)")
    delta = math.sqrt(k["mu_y"] / k["mu_x"])
    sx, sy = math.sqrt(k["mu_x"] / (2 * k["L_xx"])), math.sqrt(k["mu_y"] / (2 * k["L_yy"]))
    tx, ty = 1 / (1 / sx + 0.5), 1 / (1 / sy + 0.5)
    ex = s * min(1 / (4 * (k["mu_x"] + k["L_xx"] * sx)), delta / (4 * k["L_xy"]))
    ey = s * min(1 / (4 * (k["mu_y"] + k["L_yy"] * sy)), 1 / (4 * k["L_xy"] * delta))
    theta = 1 - min(k["mu_x"] * ex, k["mu_y"] * ey, sx / 2, sy / 2)
    _, _, done = _first(c, stop, x, y, None, None)
    xf, yf, y_prev = x, y, y
    while not done:
        # player X: extrapolated opponent, Nesterov coupling of its own sequences, one call
        ym = y + theta * (y - y_prev)
        xg = tx * x + (1 - tx) * xf
        x_new = x + ex * k["mu_x"] * (xg - x) - ex * c.grad_x(xg, ym)
        c.exchange()  # x_{k+1} to Y
        # player Y, with the fresh x_{k+1}
        yg = ty * y + (1 - ty) * yf
        y_new = y + ey * k["mu_y"] * (yg - y) + ey * c.grad_y(x_new, yg)
        c.exchange()  # y_{k+1} to X
        xf, yf = xg + sx * (x_new - x), yg + sy * (y_new - y)
        y_prev, x, y = y, x_new, y_new
        _, _, done = _next(c, stop, x, y, None, None)
    return stop.result((x, y), {"eta_x": ex, "eta_y": ey, "theta": theta, "tau": (tx, ty), "sigma": (sx, sy)})
