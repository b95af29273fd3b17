"""The Decoupled Method (our reconstruction): forward–backward–forward splitting with local AGD prox solves.

Each player treats its own block implicitly (a local proximal problem it solves alone, without communication)
and only the coupling explicitly (a Tseng correction after one exchange). Iteration k, 2 rounds:

1. in parallel, without communication (inexactly, by Nesterov AGD on the residual norm):
       x_{k+½} ≈ argmin_x f(x, y_k) + ‖x − x_k‖²/(2η_x)
       y_{k+½} ≈ argmax_y f(x_k, y) − ‖y − y_k‖²/(2η_y)
2. exchange x_{k+½}, y_{k+½}                                                     (round 1)
3. correction, with the *same* y_k / x_k as the prox step:
       x_{k+1} = x_{k+½} − η_x [∇_x f(x_{k+½}, y_{k+½}) − ∇_x f(x_{k+½}, y_k)]
       y_{k+1} = y_{k+½} + η_y [∇_y f(x_{k+½}, y_{k+½}) − ∇_y f(x_k, y_{k+½})]
4. exchange x_{k+1}, y_{k+1}                                                       (round 2)

Steps (θ < 1): SCSC η_x = (θ/L_xy)√(μ_y/μ_x), η_y = (θ/L_xy)√(μ_x/μ_y); convex–concave η_x = η_y = θ/L_xy.
They do not depend on L_xx or L_yy: rounds scale like L_xy/√(μ_xμ_y)·log(1/ε), the (inferred) lower bound, and
each prox costs O(√κ_local·log(1/σ)) calls with κ_local = (L_xx + 1/η_x)/(μ_x + 1/η_x).

Calls: the inner AGD tests its stopping rule on the gradient it has just computed at the extrapolated point and
returns that point, so ∇_x f(x_{k+½}, y_k) is already known and the correction costs one new call per agent.
The spec counts two; ours reuses one (every call made is still counted).

Inner stopping rule (default ``"hpe"``, σ = 0.5). The hybrid proximal extragradient condition of Solodov and
Svaiter accepts x½ once the prox residual is small *relative to the step it takes*:

    ‖∇φ_k(x½)‖ ≤ σ‖x½ − x_k‖/η_x,   σ < 1.

Its error is measured in the units of the outer step, so the outer Tseng contraction (and hence the number of
rounds) does not depend on how hard the local problem is. The alternative ``"relative"`` rule
‖∇φ_k(x½)‖ ≤ σ‖∇φ_k(x_k)‖ (σ = 0.05) is relative to ‖∇_x f(x_k, y_k) ‖ ≈ L_xx‖x_k − x*‖ instead, so the prox error
per outer step grows like σ·η_x·L_xx and, measured (issue 43), rounds grow with L_xx (176 → 3 570 for
L_xx = 1 → 1e4) while HPE's stay flat (706, 780, 792 at 1e2, 1e3, 1e4). It is kept as an option.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from neurips26.constraints import ArgumentTypeError, Choice, Int, Optional, validate
from neurips26.constraints import Callable as IsCallable

from .counter import (
    NONNEG,
    ROUNDOFF,
    STEP,
    TOL,
    UNIT,
    CostCounter,
    SaddleResult,
    StopRule,
    as_vector,
    check_step,
    copy,
    need_constant,
    norm,
    problem_dims,
)

INNER = ("agd", "exact")
INNER_RULES = ("hpe", "relative")
DEFAULT_SIGMA = {"hpe": 0.5, "relative": 0.05}  # the inner accuracy each rule is used with


# what the Decoupled Method's entry points declare (also DecoupledPlayer and run_two_process)
INNER_RULE = {"theta": UNIT, "sigma": Optional(UNIT), "inner_rule": Choice(*INNER_RULES)}


def inner_sigma(rule: str, sigma: float | None) -> float:
    """σ for the inner rule: the given one as a float or the rule's default (HPE 0.5, relative 0.05); the
    callers declare ``sigma`` in (0, 1) and ``inner_rule`` in ``INNER_RULES``."""
    return DEFAULT_SIGMA[rule] if sigma is None else float(sigma)


@validate(eta=STEP, L=NONNEG, mu=NONNEG, sigma=UNIT, rule=Choice(*INNER_RULES, "fixed"), max_steps=Optional(Int(low=0)))
def agd_prox(grad_h: Callable[[Any], Any], center: Any, eta: float, L: float, mu: float, *, sigma: float = 0.5,
             rule: str = "hpe", g0: Any = None, project: Callable[[Any], Any] | None = None,
             max_steps: int | None = None) -> tuple[Any, Any, int]:
    """Inexact prox by Nesterov's AGD (constant momentum): minimise φ(v) = h(v) + ‖v − c‖²/(2η).

    ``grad_h(v)`` = ∇h(v) (one oracle call each), h L-smooth and μ-strongly convex (μ ≥ 0), so φ is
    L_φ = L + 1/η smooth and μ_φ = μ + 1/η strongly convex; κ = L_φ/μ_φ and

        x_{t+1} = v_t − ∇φ(v_t)/L_φ,    v_{t+1} = x_{t+1} + β (x_{t+1} − x_t),    β = (√κ − 1)/(√κ + 1).

    Stops at the first v_t with ‖∇φ(v_t)‖ ≤ σ‖v_t − c‖/η (``rule="hpe"``) or ‖∇φ(v_t)‖ ≤ σ‖∇φ(c)‖
    (``rule="relative"``), or after ⌈20·√κ·ln(1/σ)⌉ steps; ``rule="fixed"`` runs exactly ``max_steps`` steps with
    no test (for stochastic gradients, where a test on one noisy gradient means nothing).
    ``g0`` = ∇h(c) if the caller already holds it (no call).
    With ``project`` (a convex set), steps are projected and the test uses the gradient mapping
    L_φ(v − P(v − ∇φ(v)/L_φ)); the returned point is then the projected one and its ∇h is unknown (None).

    Returns ``(v, ∇h(v) or None, calls_made)``.
    """
    eta, sigma = float(eta), float(sigma)
    if rule == "fixed" and max_steps is None:
        raise ValueError("rule='fixed' needs max_steps (the number of inner steps)")
    L_phi, mu_phi = L + 1.0 / eta, mu + 1.0 / eta
    kappa = L_phi / mu_phi
    beta = (math.sqrt(kappa) - 1) / (math.sqrt(kappa) + 1)
    cap = max_steps if max_steps is not None else math.ceil(20 * math.sqrt(kappa) * math.log(1 / sigma))
    x_prev, v = copy(center), copy(center)
    r0 = None
    calls = 0
    for t in range(cap + 1):
        if t == 0 and g0 is not None:
            gh = g0
        else:
            gh = grad_h(v)
            calls += 1
        # ∇φ(v) = ∇h(v) + (v − c)/η
        gphi = gh + (v - center) / eta
        if project is None:
            step = v - gphi / L_phi
            r = norm(gphi)
        else:
            step = project(v - gphi / L_phi)
            r = L_phi * norm(v - step)  # gradient mapping
        if not math.isfinite(r):
            # wrong constants (μ or L) make the momentum blow up: hand the non-finite point back at once, the
            # outer stopping rule reports the divergence
            return (v, gh, calls) if project is None else (step, None, calls)
        if r0 is None:
            r0 = r
            if r0 == 0.0:
                return (v, gh, calls) if project is None else (step, None, calls)
        elif rule == "fixed":
            pass
        elif (r <= sigma * r0) if rule == "relative" else (r <= sigma * norm(v - center) / eta):
            return (v, gh, calls) if project is None else (step, None, calls)
        if t == cap:
            return (v, gh, calls) if project is None else (step, None, calls)
        # x_{t+1}, v_{t+1}
        x_new = step
        v = x_new + beta * (x_new - x_prev)
        x_prev = x_new
    raise AssertionError("unreachable")  # pragma: no cover


def default_steps(problem: Any, theta: float) -> tuple[float, float, bool]:
    """(η_x, η_y, averaging) from ``problem.constants``; see the module docstring."""
    L_xy = need_constant(problem, "L_xy", why="the default step θ/L_xy")
    mu_x = need_constant(problem, "mu_x", why="the default step", positive=False)
    mu_y = need_constant(problem, "mu_y", why="the default step", positive=False)
    # a modulus at eigenvalue round-off (e.g. 5.9e-17 for a singular A) would give η_x ≈ √(μ_y/μ_x)/L_xy ≈ 1e8
    # and an inner AGD with κ ≈ 1e16: it is a zero modulus, and the SCSC step then needs both moduli
    scale = max([L_xy] + [float(v) for k, v in (getattr(problem, "constants", None) or {}).items()
                          if k in ("L_xx", "L_yy") and math.isfinite(float(v))])
    tiny = {k: v for k, v in (("mu_x", mu_x), ("mu_y", mu_y)) if 0 < v <= ROUNDOFF * scale}
    mu_x, mu_y = (0.0 if "mu_x" in tiny else mu_x), (0.0 if "mu_y" in tiny else mu_y)
    if mu_x > 0 and mu_y > 0:
        # SCSC: η_x = (θ/L_xy)·√(μ_y/μ_x),  η_y = (θ/L_xy)·√(μ_x/μ_y)
        return theta / L_xy * math.sqrt(mu_y / mu_x), theta / L_xy * math.sqrt(mu_x / mu_y), False
    if mu_x == 0 and mu_y == 0:
        # convex–concave: η = θ/L_xy with the ergodic average of the half-iterates
        return theta / L_xy, theta / L_xy, True
    zero = "mu_x" if mu_x == 0 else "mu_y"
    given = f" = {tiny[zero]:.3g}, below round-off ({ROUNDOFF:g} × {scale:.3g}), is treated as 0" if zero in tiny \
        else " = 0"
    raise ValueError(f"problem.constants[{zero!r}]{given} while the other modulus is > 0: the SCSC step "
                     "√(μ_y/μ_x) needs both; pass eta_x and eta_y explicitly")


def _projector(problem: Any, name: str) -> Callable[[Any], Any] | None:
    p = getattr(problem, name, None)
    return p if callable(p) else None


@validate(eta_x=Optional(STEP), eta_y=Optional(STEP), inner=Choice(*INNER), **INNER_RULE, **TOL,
          callback=Optional(IsCallable()))
def decoupled_method(problem: Any, x0: Any, y0: Any, *, eta_x: float | None = None, eta_y: float | None = None,
                     theta: float = 0.5, sigma: float | None = None, inner: str = "agd", inner_rule: str = "hpe",
                     tol: float = 1e-6, max_rounds: int = 10**6, callback: Callable | None = None,
                     counter: CostCounter | None = None) -> SaddleResult:
    """Solve min_x max_y f(x, y) with the Decoupled Method (2 rounds per iteration).

    ``problem``: a :class:`~neurips26.saddle.problems.SaddleProblem`; x0 [d_x], y0 [d_y] start vectors.
    ``eta_x``/``eta_y``: prox steps (default from ``problem.constants``); ``theta`` ∈ (0, 1) scales the defaults;
    ``inner_rule`` ``"hpe"`` (default) or ``"relative"`` and ``sigma`` ∈ (0, 1) its accuracy (default: 0.5 for HPE,
    0.05 for relative; see the module docstring); ``inner="exact"`` uses ``problem.local_prox_x/_y`` (a labelled
    ablation: each exact solve is charged as one call).
    Stops on ‖z − z*‖ ≤ tol·‖z0 − z*‖ when ``problem.solution()`` exists, else on ‖F(z)‖ ≤ tol·‖F(z0)‖, or at
    ``max_rounds``. ``callback(iteration, (x, y), relative_error)`` after each iteration. ``info`` holds the
    steps, the inner AGD calls and, for convex–concave problems, the ergodic averages ``x_avg``, ``y_avg``.
    """
    theta, sigma, tol, max_rounds = float(theta), inner_sigma(inner_rule, sigma), float(tol), int(max_rounds)
    d_x, d_y = problem_dims(problem, x0, y0)
    x = as_vector(x0, d_x, "x0", like=getattr(problem, "A", None))
    y = as_vector(y0, d_y, "y0", like=getattr(problem, "A", None))
    averaging = False
    if eta_x is None or eta_y is None:
        dx_, dy_, averaging = default_steps(problem, theta)
        eta_x = dx_ if eta_x is None else eta_x
        eta_y = dy_ if eta_y is None else eta_y
    eta_x, eta_y = check_step("eta_x", eta_x), check_step("eta_y", eta_y)
    local = None  # (L_xx, μ_x, L_yy, μ_y) of the inner AGD; the exact solves need none
    if inner == "agd":
        L_xx = need_constant(problem, "L_xx", why="the inner AGD step", positive=False)
        L_yy = need_constant(problem, "L_yy", why="the inner AGD step", positive=False)
        mu_x = need_constant(problem, "mu_x", why="the inner AGD momentum", positive=False)
        mu_y = need_constant(problem, "mu_y", why="the inner AGD momentum", positive=False)
        local = (L_xx, mu_x, L_yy, mu_y)
    elif not (callable(getattr(problem, "local_prox_x", None)) and callable(getattr(problem, "local_prox_y", None))):
        raise ValueError("inner='exact' needs problem.local_prox_x and problem.local_prox_y (quadratic games)")
    proj_x, proj_y = _projector(problem, "project_x"), _projector(problem, "project_y")
    c = counter if counter is not None else CostCounter(problem)
    stop = StopRule(c, (x, y), tol, max_rounds, callback)
    gx = gy = None  # ∇_x f(x_k, y_k), ∇_y f(x_k, y_k) when already computed
    if stop.uses_residual:
        gx, gy = c.grad_x(x, y), c.grad_y(x, y)
        done = stop.start(_residual(x, y, gx, gy, proj_x, proj_y))
    else:
        done = stop.start()
    sum_x, sum_y, n_avg = 0 * x, 0 * y, 0
    inner_calls = 0
    while not done:
        x, y, xh, yh, k_inner = decoupled_iteration(
            c, x, y, eta_x, eta_y, gx=gx, gy=gy, sigma=sigma, inner=inner, inner_rule=inner_rule,
            local=local, problem=problem, proj_x=proj_x, proj_y=proj_y)
        inner_calls += k_inner
        if averaging:
            sum_x, sum_y, n_avg = sum_x + xh, sum_y + yh, n_avg + 1
        if stop.uses_residual:
            gx, gy = c.grad_x(x, y), c.grad_y(x, y)  # reused by the next prox as its first gradient
            done = stop.done((x, y), _residual(x, y, gx, gy, proj_x, proj_y))
        else:
            done = stop.done((x, y))
    info: dict[str, Any] = {"eta_x": eta_x, "eta_y": eta_y, "theta": theta, "sigma": sigma, "inner": inner,
                            "inner_rule": inner_rule, "inner_calls_max_agent": inner_calls}
    if averaging and n_avg:
        info["x_avg"], info["y_avg"] = sum_x / n_avg, sum_y / n_avg
    return stop.result((x, y), info)


def decoupled_iteration(c: CostCounter, x_k: Any, y_k: Any, eta_x: float, eta_y: float, *, gx: Any = None,
                        gy: Any = None, sigma: float = 0.5, inner: str = "agd", inner_rule: str = "hpe",
                        local: tuple[float, float, float, float] | None = None, problem: Any = None,
                        proj_x: Callable | None = None, proj_y: Callable | None = None,
                        inner_steps: int | None = None) -> tuple[Any, ...]:
    """One iteration (2 rounds) of the Decoupled Method through the counter ``c``.

    ``gx``/``gy``: ∇_x f(x_k, y_k), ∇_y f(x_k, y_k) if already known (no call), else None; ``local``:
    (L_xx, μ_x, L_yy, μ_y) for the inner AGD (``inner="agd"``); ``problem`` supplies ``local_prox_x/_y`` for
    ``inner="exact"``; ``inner_steps``: a fixed number of inner AGD steps instead of the stopping rule (the
    stochastic-oracle mode of :class:`~neurips26.saddle.players.DecoupledPlayer`).
    Returns ``(x_{k+1}, y_{k+1}, x_{k+½}, y_{k+½}, inner AGD calls of the busier agent)``.
    """
    # 1. local prox problems, in parallel and without communication
    if inner == "agd":
        L_xx, mu_x, L_yy, mu_y = local
        rule = inner_rule if inner_steps is None else "fixed"
        xh, gx_old, kx = agd_prox(lambda v: c.grad_x(v, y_k), x_k, eta_x, L_xx, mu_x, sigma=sigma,
                                  rule=rule, g0=gx, project=proj_x, max_steps=inner_steps)
        # player Y minimises −f(x_k, ·) + ‖· − y_k‖²/(2η_y): its ∇h is −∇_y f
        yh, gy_neg, ky = agd_prox(lambda v: -c.grad_y(x_k, v), y_k, eta_y, L_yy, mu_y, sigma=sigma,
                                  rule=rule, g0=None if gy is None else -gy, project=proj_y, max_steps=inner_steps)
        gy_old = None if gy_neg is None else -gy_neg
        inner_calls = max(kx, ky)
    else:
        # exact local solves (ablation; each charged as one call). Optimality gives
        # ∇_x f(x½, y_k) = −(x½ − x_k)/η_x and ∇_y f(x_k, y½) = (y½ − y_k)/η_y: no further call.
        c.calls["x"] += 1
        c.calls["y"] += 1
        xh = problem.local_prox_x(y_k, x_k, eta_x)
        yh = problem.local_prox_y(x_k, y_k, eta_y)
        gx_old, gy_old = (x_k - xh) / eta_x, (yh - y_k) / eta_y
        inner_calls = 0
    # 2. exchange the half-iterates
    c.exchange()
    # 3. Tseng correction with the same y_k (resp. x_k) as the prox step
    if gx_old is None:
        gx_old = c.grad_x(xh, y_k)
    if gy_old is None:
        gy_old = c.grad_y(x_k, yh)
    # x_{k+1} = x½ − η_x [∇_x f(x½, y½) − ∇_x f(x½, y_k)]
    x = xh - eta_x * (c.grad_x(xh, yh) - gx_old)
    # y_{k+1} = y½ + η_y [∇_y f(x½, y½) − ∇_y f(x_k, y½)]
    y = yh + eta_y * (c.grad_y(xh, yh) - gy_old)
    if proj_x is not None:
        x = proj_x(x)
    if proj_y is not None:
        y = proj_y(y)
    # 4. exchange the new iterates
    c.exchange()
    return x, y, xh, yh, inner_calls


def _residual(x: Any, y: Any, gx: Any, gy: Any, proj_x: Any, proj_y: Any) -> float:
    """‖F(z)‖ with F = (∇_x f, −∇_y f); for constrained players the natural residual ‖z − P(z − F(z))‖."""
    rx = gx if proj_x is None else x - proj_x(x - gx)
    ry = gy if proj_y is None else proj_y(y + gy) - y
    return math.sqrt(norm(rx) ** 2 + norm(ry) ** 2)


@validate(eta=Optional(STEP), **INNER_RULE, **TOL, callback=Optional(IsCallable()))
def decoupled_method_vi(game: Any, x0s: Any, *, eta: float | None = None, theta: float = 0.5,
                        sigma: float | None = None, inner_rule: str = "hpe", tol: float = 1e-6,
                        max_rounds: int = 10**6, callback: Callable | None = None) -> SaddleResult:
    """Decoupled Method for an N-player monotone game (``game.grad(i, xs)``, ``game.constants`` with
    ``L_local``, ``mu_local``, ``L_cross``; e.g. :class:`~neurips26.saddle.problems.MultiPlayerQuadraticGame`).

    Player i: local prox on f_i(·, x_{−i}^k) by AGD, exchange, correction
    x_i^{k+1} = x_i^{½} − η [F_i(x_i^{½}, x_{−i}^{½}) − F_i(x_i^{½}, x_{−i}^k)], exchange; η = θ/L_cross.
    ``x0s``: one start vector per player. Returns a :class:`SaddleResult` with ``x`` the tuple of vectors,
    ``y=None`` and ``calls`` keyed ``"0"``, ``"1"``, ...
    """
    theta, sigma, tol, max_rounds = float(theta), inner_sigma(inner_rule, sigma), float(tol), int(max_rounds)
    xs = _players(game, x0s)
    if eta is None:
        eta = theta / need_constant(game, "L_cross", why="the default step θ/L_cross")
    eta = check_step("eta", eta)
    L_loc = need_constant(game, "L_local", why="the inner AGD step", positive=False)
    mu_loc = need_constant(game, "mu_local", why="the inner AGD momentum", positive=False)
    n = len(xs)
    c = CostCounter(game, agents=tuple(str(i) for i in range(n)))
    stop = StopRule(c, tuple(xs), tol, max_rounds, callback)
    g: list[Any] = [None] * n
    if stop.uses_residual:
        g = [c.grad(i, xs) for i in range(n)]
        done = stop.start(math.sqrt(sum(norm(v) ** 2 for v in g)))
    else:
        done = stop.start()
    while not done:
        old = list(xs)
        half, g_old = [], []
        for i in range(n):

            def grad_i(v, i=i, old=old):
                # ∇h_i(v) = F_i(v, x_{−i}^k)
                return c.grad(i, old[:i] + [v] + old[i + 1:])

            v, gv, _ = agd_prox(grad_i, old[i], eta, L_loc, mu_loc, sigma=sigma, rule=inner_rule, g0=g[i])
            half.append(v)
            g_old.append(gv)
        c.exchange()
        xs = [half[i] - eta * (c.grad(i, half) - g_old[i]) for i in range(n)]
        c.exchange()
        if stop.uses_residual:
            g = [c.grad(i, xs) for i in range(n)]
            done = stop.done(tuple(xs), math.sqrt(sum(norm(v) ** 2 for v in g)))
        else:
            g = [None] * n
            done = stop.done(tuple(xs))
    return stop.result(tuple(xs), {"eta": eta, "theta": theta, "sigma": sigma, "inner_rule": inner_rule})


def _players(game: Any, x0s: Any) -> list[Any]:
    dims = getattr(game, "dims", None)
    if not isinstance(x0s, list | tuple):
        raise ArgumentTypeError(f"x0s must be a list or tuple of player vectors, got {type(x0s).__name__}")
    if dims is not None and len(x0s) != len(dims):
        raise ValueError(f"x0s must hold {len(dims)} player vectors, got {len(x0s)}")
    return [as_vector(v, int(dims[i]) if dims is not None else len(v), f"x0s[{i}]") for i, v in enumerate(x0s)]


@validate(L_xy=STEP, mu_x=STEP, mu_y=STEP, eps=UNIT, c=STEP)
def communication_lower_bound(L_xy: float, mu_x: float, mu_y: float, eps: float, c: float = 1.0) -> float:
    """Inferred SCSC lower bound on rounds for gradient-span algorithms: c·(L_xy/√(μ_x μ_y))·ln(1/ε)."""
    return float(c) * float(L_xy) / math.sqrt(float(mu_x) * float(mu_y)) * math.log(1.0 / float(eps))


def fit_lower_bound_constant(instance: Any, eps_grid: Any = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)) -> float:
    """Least-squares c (through the origin) with r_lb(ε) ≈ c·(L_xy/μ)·ln(1/ε) on a
    :class:`~neurips26.saddle.problems.ChainHardInstance`, r_lb from its exact span bound."""
    k = instance.constants["L_xy"] / math.sqrt(instance.constants["mu_x"] * instance.constants["mu_y"])
    xs = [k * math.log(1 / e) for e in eps_grid]
    rs = [instance.span_lower_bound_rounds(e) for e in eps_grid]
    return sum(a * b for a, b in zip(xs, rs)) / sum(a * a for a in xs)
