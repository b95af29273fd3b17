"""Cost accounting shared by every solver: rounds, partial-gradient calls, and the stopping rule.

Conventions (the spec's, made exact):

* both players start knowing (x0, y0): no round is charged for it;
* a **round** is one simultaneous exchange of vectors between the players (``CostCounter.exchange()``);
* a **call** is one partial-gradient evaluation, counted per agent (``calls["x"]``, ``calls["y"]``), whatever it is
  used for (inner prox steps, corrections, residual tests); a solver may reuse a gradient it already holds;
* rounds spent only on the stopping test (one scalar exchange when z* is unknown) are ``stop_rounds``, apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neurips26.constraints import ArgumentTypeError, Int, Real, check_arguments, validate

# a strong-convexity modulus below ROUNDOFF × (the problem's largest constant) is eigenvalue round-off: zero
ROUNDOFF = 1e-10


def is_torch(v: Any) -> bool:
    return type(v).__module__.startswith("torch")


def norm(v: Any) -> float:
    """Euclidean norm of a numpy array or torch tensor, as a Python float."""
    return math.sqrt(float((v * v).sum()))


def copy(v: Any) -> Any:
    return v.clone() if is_torch(v) else v.copy()


def as_vector(v: Any, n: int, name: str, *, like: Any = None) -> Any:
    """Validate a start vector: 1-d, length ``n``, finite. Numpy input becomes float64; torch stays torch."""
    if not is_torch(v) and like is not None and is_torch(like):
        import torch

        return as_vector(torch.as_tensor(np.asarray(v, dtype=np.float64), device=like.device), n, name)
    if is_torch(v):
        import torch

        arr, finite = v, lambda a: bool(torch.isfinite(a).all())
    else:
        try:
            arr = np.array(v, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ArgumentTypeError(f"{name} must be a real vector, got {type(v).__name__}") from exc
        finite = lambda a: bool(np.isfinite(a).all())  # noqa: E731
    if arr.ndim != 1 or arr.shape[0] != n:  # n comes from the problem: not a declarable constraint
        raise ValueError(f"{name} must be a vector of length {n}, got shape {tuple(arr.shape)}")
    if not finite(arr):
        raise ValueError(f"{name} must be finite, got non-finite entries")
    return v.clone() if is_torch(v) else arr


def problem_dims(problem: Any, x0: Any, y0: Any) -> tuple[int, int]:
    """(d_x, d_y): from the problem's ``d_x``/``d_y`` when it has them, else from the start vectors."""
    dx = getattr(problem, "d_x", None)
    dy = getattr(problem, "d_y", None)
    if dx is None:
        dx = int(np.shape(x0)[0]) if np.ndim(x0) == 1 else -1
    if dy is None:
        dy = int(np.shape(y0)[0]) if np.ndim(y0) == 1 else -1
    if dx < 1 or dy < 1:
        raise ValueError(f"x0 and y0 must be non-empty vectors, got shapes {np.shape(x0)} and {np.shape(y0)}")
    return int(dx), int(dy)


# the declared constraints the solvers share (neurips26.constraints; messages "<func>: <arg> must be ...")
STEP = Real(low=0.0, closed="neither")              # a step, a tolerance: finite and > 0
NONNEG = Real(low=0.0)                              # a constant: finite and >= 0
UNIT = Real(low=0.0, high=1.0, closed="neither")    # theta, sigma: in (0, 1)
ROUNDS = Int(low=1)                                 # max_rounds, local_steps, ...
TOL = {"tol": STEP, "max_rounds": ROUNDS}


def check_step(name: str, value: Any) -> float:
    """A step (given, or derived from the constants) as a float, checked finite and > 0."""
    check_arguments("", {name: STEP}, {name: value})
    return float(value)


def need_constant(problem: Any, key: str, *, why: str, positive: bool = True) -> float:
    """``problem.constants[key]`` or a ValueError saying which step needs it and how to avoid it."""
    consts = getattr(problem, "constants", None) or {}
    if key not in consts:
        raise ValueError(f"problem.constants has no {key!r}, needed for {why}; pass the step explicitly")
    check_arguments("", {f"problem.constants[{key!r}]": NONNEG}, {f"problem.constants[{key!r}]": consts[key]})
    v = float(consts[key])
    if positive and v == 0:
        raise ValueError(f"problem.constants[{key!r}] = 0, but {why} divides by it; pass the step explicitly")
    return v


class CostCounter:
    """Wraps a problem; the solvers' only path to it. Counts calls per agent and rounds.

    ``record_support=True`` logs, for every call, ``(rounds_so_far, agent, last_nonzero_x, last_nonzero_y)``
    (−1 for an all-zero vector): used to check the span property on the chain instance.
    ``agents``: the keys of ``calls`` (``("0", "1", ...)`` for N-player games).
    """

    def __init__(self, problem: Any, *, record_support: bool = False, agents: tuple[str, ...] = ("x", "y")):
        self.problem = problem
        self.rounds = 0
        self.stop_rounds = 0
        self.calls: dict[str, int] = {a: 0 for a in agents}
        self.record_support = bool(record_support)
        self.support_log: list[tuple[int, str, int, int]] = []
        self._dims: tuple[int, int] | None = None

    @staticmethod
    def _last_nonzero(v: Any) -> int:
        nz = np.flatnonzero(np.asarray(v.detach().cpu() if is_torch(v) else v))
        return int(nz[-1]) if nz.size else -1

    def _checked(self, g: Any, n: int, what: str) -> Any:
        shape = tuple(g.shape) if hasattr(g, "shape") else None
        if shape != (n,):
            raise ValueError(f"problem.{what} returned shape {shape}, expected ({n},)")
        return g

    def grad_x(self, x: Any, y: Any) -> Any:
        """∇_x f(x, y), one call charged to agent X."""
        self.calls["x"] += 1
        if self.record_support:
            self.support_log.append((self.rounds, "x", self._last_nonzero(x), self._last_nonzero(y)))
        return self._checked(self.problem.grad_x(x, y), x.shape[0], "grad_x")

    def grad_y(self, x: Any, y: Any) -> Any:
        """∇_y f(x, y), one call charged to agent Y."""
        self.calls["y"] += 1
        if self.record_support:
            self.support_log.append((self.rounds, "y", self._last_nonzero(x), self._last_nonzero(y)))
        return self._checked(self.problem.grad_y(x, y), y.shape[0], "grad_y")

    def grad(self, i: int, xs: Any) -> Any:
        """F_i(x) of an N-player game, one call charged to player ``str(i)``."""
        key = str(i)
        self.calls[key] = self.calls.get(key, 0) + 1
        return self._checked(self.problem.grad(i, xs), xs[i].shape[0], f"grad({i}, ·)")

    def exchange(self) -> None:
        """One simultaneous exchange of vectors: one round."""
        self.rounds += 1

    def stop_exchange(self) -> None:
        """One scalar exchange used only by the stopping test."""
        self.stop_rounds += 1

    def snapshot(self) -> dict[str, int]:
        return dict(self.calls)


@dataclass
class SaddleResult:
    """Outcome of a solver run.

    x [d_x], y [d_y] (for N-player games ``x`` is the tuple of the players' vectors and ``y`` is None);
    ``rounds``: vector exchanges; ``calls``: partial-gradient calls per agent; ``stop_rounds``: scalar exchanges of
    the stopping test; ``history``: ``(rounds, max_agent_calls, relative_error)`` at iteration ends (thinned to
    about 100 entries per decade of iterations); ``converged``: the stopping test passed; ``diverged``: the iterates
    became non-finite or the error grew beyond 1e12.
    """

    x: Any
    y: Any
    rounds: int
    calls: dict[str, int]
    history: list[tuple[int, int, float]] = field(default_factory=list)
    converged: bool = False
    diverged: bool = False
    stop_rounds: int = 0
    iterations: int = 0
    error: float = math.nan
    info: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    @property
    def max_calls(self) -> int:
        """Calls of the busiest agent (the parallel oracle cost)."""
        return max(self.calls.values()) if self.calls else 0

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


class StopRule:
    """‖z_k − z*‖ ≤ tol·‖z_0 − z*‖ when the problem has ``solution()``, else ‖F(z_k)‖ ≤ tol·‖F(z_0)‖
    (the caller supplies the residual, which costs one scalar exchange, charged to ``stop_rounds``).

    Divergence: the run stops with ``diverged=True`` as soon as the relative error is non-finite or exceeds
    ``diverge_factor`` (a convergent method of this library never moves its error that far above 1: EG and
    the Decoupled Method are non-expansive in ‖z − z*‖ at their default steps, and the transient of the others is
    a small constant), so a bad step is reported within a few iterations instead of running to ``max_rounds``.
    """

    DIVERGE_FACTOR = 1e4

    @validate(diverge_factor=Real(low=1.0, closed="neither"))
    def __init__(self, counter: CostCounter, parts0: tuple[Any, ...], tol: float, max_rounds: int,
                 callback: Callable[[int, tuple[Any, ...], float], Any] | None = None, *,
                 diverge_factor: float = DIVERGE_FACTOR):
        self.counter, self.tol, self.max_rounds, self.callback = counter, tol, max_rounds, callback
        self.diverge_factor = float(diverge_factor)
        self.reason = "max_rounds reached"
        sol = getattr(counter.problem, "solution", None)
        self.solution = tuple(sol()) if callable(sol) else None
        self.scale: float | None = None
        if self.solution is not None:
            self.scale = math.sqrt(sum(norm(p - s) ** 2 for p, s in zip(parts0, self.solution)))
        self.history: list[tuple[int, int, float]] = []
        self.iterations = 0
        self.error = 1.0
        self.converged = False
        self.diverged = False

    @property
    def uses_residual(self) -> bool:
        return self.solution is None

    def _record(self, err: float) -> None:
        k = self.iterations
        if k < 100 or k % max(1, k // 100) == 0:
            self.history.append((self.counter.rounds, max(self.counter.calls.values()), err))

    def start(self, residual0: float | None = None) -> bool:
        """Set the reference scale; True when z0 already satisfies the test (z0 = z* or F(z0) = 0)."""
        if self.solution is None:
            if residual0 is None:
                raise RuntimeError("residual stopping needs the residual at z0")
            self.counter.stop_exchange()
            self.scale = float(residual0)
        self.history.append((self.counter.rounds, max(self.counter.calls.values()), 1.0))
        if self.scale == 0.0:
            self.converged, self.error, self.reason = True, 0.0, "converged (z0 already solves the problem)"
        return self.converged

    def done(self, parts: tuple[Any, ...], residual: float | None = None) -> bool:
        """Call once per iteration with the current iterate; True when the run should stop."""
        self.iterations += 1
        if self.solution is not None:
            dist = math.sqrt(sum(norm(p - s) ** 2 for p, s in zip(parts, self.solution)))
            err = dist / self.scale
        else:
            if residual is None:
                raise RuntimeError("residual stopping needs the residual at every iteration")
            self.counter.stop_exchange()
            err = float(residual) / self.scale
        self.error = err
        self._record(err if math.isfinite(err) else math.inf)
        if self.callback is not None:
            self.callback(self.iterations, parts, err)
        if not math.isfinite(err):
            self.diverged, self.reason = True, f"diverged: non-finite iterate at round {self.counter.rounds}"
            return True
        if err > self.diverge_factor:
            self.diverged = True
            self.reason = (f"diverged: relative error {err:.3g} > {self.diverge_factor:g} at round "
                           f"{self.counter.rounds} (step too large, or wrong constants)")
            return True
        if err <= self.tol:
            self.converged, self.reason = True, "converged"
            return True
        return self.counter.rounds >= self.max_rounds

    def result(self, parts: tuple[Any, ...], info: dict[str, Any] | None = None) -> SaddleResult:
        c = self.counter
        two = len(parts) == 2 and set(c.calls) == {"x", "y"}
        return SaddleResult(x=parts[0] if two else tuple(parts), y=parts[1] if two else None, rounds=c.rounds,
                            calls=dict(c.calls), history=self.history, converged=self.converged,
                            diverged=self.diverged, stop_rounds=c.stop_rounds, iterations=self.iterations,
                            error=self.error, info=dict(info or {}), reason=self.reason)
