"""The Decoupled Method as two ``torch.distributed`` processes (gloo): each player owns its variable.

Rank 0 is player X (owns x), rank 1 is player Y (owns y). They share nothing but the problem definition and the
start point; per iteration they exchange vectors twice (the half-iterates, then the new iterates) with
``isend``/``recv``, and one scalar per stopping test with ``all_reduce`` (‖x − x*‖² + ‖y − y*‖² or the squared
residual), so ``stop_rounds`` counts one per iteration here even when z* is known. The arithmetic is the
single-process :func:`~neurips26.saddle.decoupled.decoupled_method`'s, so the iterates are the same.
"""

from __future__ import annotations

import math
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from neurips26.constraints import Optional, validate

from .counter import STEP, TOL, CostCounter, SaddleResult, StopRule, as_vector, need_constant, norm, problem_dims
from .decoupled import INNER_RULE, agd_prox, default_steps, inner_sigma


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _swap(mine: np.ndarray, n_other: int, rank: int) -> np.ndarray:
    """Send my vector to the other rank and receive theirs (one round)."""
    import torch
    import torch.distributed as dist

    out = torch.from_numpy(np.ascontiguousarray(mine, dtype=np.float64))
    buf = torch.empty(n_other, dtype=torch.float64)
    req = dist.isend(out, dst=1 - rank)
    dist.recv(buf, src=1 - rank)
    req.wait()
    return buf.numpy().copy()


def _sum_scalar(v: float) -> float:
    import torch
    import torch.distributed as dist

    t = torch.tensor([v], dtype=torch.float64)
    dist.all_reduce(t)
    return float(t.item())


def _player(rank: int, problem: Any, x0: np.ndarray, y0: np.ndarray, steps: dict[str, float], sigma: float,
            rule: str, tol: float, max_rounds: int, port: int, out_dir: str) -> None:
    """One player's loop (module level so that ``spawn`` can pickle it)."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        c = CostCounter(problem)
        is_x = rank == 0
        mine, other = (x0.copy(), y0.copy()) if is_x else (y0.copy(), x0.copy())
        n_other = other.shape[0]
        eta = steps["eta_x"] if is_x else steps["eta_y"]
        L = need_constant(problem, "L_xx" if is_x else "L_yy", why="the inner AGD", positive=False)
        mu = need_constant(problem, "mu_x" if is_x else "mu_y", why="the inner AGD", positive=False)
        sol = getattr(problem, "solution", None)
        star = None if not callable(sol) else (sol()[0] if is_x else sol()[1])

        def own_grad(me: np.ndarray, opp: np.ndarray) -> np.ndarray:
            # X: ∇_x f(x, y); Y: ∇_y f(x, y) (ascent)
            return c.grad_x(me, opp) if is_x else c.grad_y(opp, me)

        g = None
        if star is not None:
            scale = math.sqrt(_sum_scalar(norm(mine - star) ** 2))
        else:
            g = own_grad(mine, other)
            scale = math.sqrt(_sum_scalar(norm(g) ** 2))
        stop_rounds, rounds, converged, err, iters = 1, 0, scale == 0.0, 0.0 if scale == 0.0 else 1.0, 0
        while not converged and rounds < max_rounds:
            m_k, o_k = mine, other
            if is_x:
                half, g_old, _ = agd_prox(lambda v, o_k=o_k: own_grad(v, o_k), m_k, eta, L, mu, sigma=sigma,
                                          rule=rule, g0=g)
            else:
                half, g_neg, _ = agd_prox(lambda v, o_k=o_k: -own_grad(v, o_k), m_k, eta, L, mu, sigma=sigma, rule=rule,
                                          g0=None if g is None else -g)
                g_old = -g_neg
            o_half = _swap(half, n_other, rank)
            rounds += 1
            # X: x½ − η_x[∇_x f(x½, y½) − ∇_x f(x½, y_k)];  Y: y½ + η_y[∇_y f(x½, y½) − ∇_y f(x_k, y½)]
            sign = -1.0 if is_x else 1.0
            mine = half + sign * eta * (own_grad(half, o_half) - g_old)
            other = _swap(mine, n_other, rank)
            rounds += 1
            iters += 1
            if star is not None:
                g = None
                err = math.sqrt(_sum_scalar(norm(mine - star) ** 2)) / scale
            else:
                g = own_grad(mine, other)
                err = math.sqrt(_sum_scalar(norm(g) ** 2)) / scale
            stop_rounds += 1
            if not math.isfinite(err) or err > StopRule.DIVERGE_FACTOR:
                break
            converged = err <= tol
        key = "x" if is_x else "y"
        np.savez(Path(out_dir) / f"rank{rank}.npz", v=mine, calls=c.calls[key], rounds=rounds,
                 stop_rounds=stop_rounds, converged=converged, err=err, iters=iters)
        dist.barrier()
    finally:
        dist.destroy_process_group()


@validate(eta_x=Optional(STEP), eta_y=Optional(STEP), **INNER_RULE, **TOL)
def run_two_process(problem: Any, x0: Any, y0: Any, *, eta_x: float | None = None, eta_y: float | None = None,
                    theta: float = 0.5, sigma: float | None = None, inner_rule: str = "hpe", tol: float = 1e-6,
                    max_rounds: int = 10**6) -> SaddleResult:
    """Run :func:`~neurips26.saddle.decoupled.decoupled_method` (``inner="agd"``, unconstrained numpy problems)
    as two spawned gloo processes on this machine; ``problem`` must be picklable. Same arguments and result as
    the single-process solver (``history`` is empty)."""
    import torch.multiprocessing as mp

    theta, sigma, tol, max_rounds = float(theta), inner_sigma(inner_rule, sigma), float(tol), int(max_rounds)
    if getattr(problem, "project_x", None) is not None or getattr(problem, "project_y", None) is not None:
        raise ValueError("run_two_process supports unconstrained problems only (no project_x / project_y)")
    d_x, d_y = problem_dims(problem, x0, y0)
    x, y = as_vector(x0, d_x, "x0"), as_vector(y0, d_y, "y0")
    if eta_x is None or eta_y is None:
        ex, ey, _ = default_steps(problem, theta)
        eta_x = ex if eta_x is None else float(eta_x)
        eta_y = ey if eta_y is None else float(eta_y)
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_player_worker, args=(problem, x, y, {"eta_x": eta_x, "eta_y": eta_y}, sigma, inner_rule, tol,
                                       max_rounds, _free_port(), tmp), nprocs=2, join=True)
        r0 = dict(np.load(Path(tmp) / "rank0.npz"))
        r1 = dict(np.load(Path(tmp) / "rank1.npz"))
    err = float(r0["err"])
    diverged = not bool(r0["converged"]) and not err <= StopRule.DIVERGE_FACTOR
    reason = ("converged" if bool(r0["converged"]) else
              f"diverged: relative error {err:.3g}" if diverged else "max_rounds reached")
    return SaddleResult(x=r0["v"], y=r1["v"], rounds=int(r0["rounds"]),
                        calls={"x": int(r0["calls"]), "y": int(r1["calls"])}, converged=bool(r0["converged"]),
                        diverged=diverged, reason=reason,
                        stop_rounds=int(r0["stop_rounds"]), iterations=int(r0["iters"]), error=float(r0["err"]),
                        info={"eta_x": eta_x, "eta_y": eta_y, "sigma": sigma, "inner_rule": inner_rule,
                              "processes": 2, "backend": "gloo"})


def _player_worker(rank: int, *args: Any) -> None:
    _player(rank, *args)
