"""Side by side: rounds, max-agent calls and time to tolerance for the Decoupled Method, our Extragradient and
cooper-optim's ``ExtraSGD`` (the peer), on the same seeded quadratic game Q (d = 30, L_xy = 1, μ = 0.1).

ExtraSGD runs on the game as torch float64 tensors; its partial gradients are set by a counting wrapper
(∇_x f for X, ∇_y f with ``maximize=True`` for Y), 2 rounds and 2 calls per agent per iteration, at our EG's
default step 1/(2L). Stops at ‖z − z*‖ ≤ 1e-6‖z0 − z*‖. Not run in CI; needs ``pip install cooper-optim``.

    python benchmarks/saddle_bench.py [--lxx 1 10 100] [--d 30] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from neurips26.saddle import QuadraticGame, decoupled_method, extragradient


def cooper_extrasgd(g: QuadraticGame, lr: float, tol: float, max_iters: int) -> dict:
    from cooper.optim import ExtraSGD

    t = {k: torch.as_tensor(getattr(g, k)) for k in ("A", "B", "C", "a", "c")}
    xs, ys = (torch.as_tensor(v) for v in g.solution())
    x = torch.nn.Parameter(torch.zeros(g.d_x, dtype=torch.float64))
    y = torch.nn.Parameter(torch.zeros(g.d_y, dtype=torch.float64))
    opt_x, opt_y = ExtraSGD([x], lr=lr), ExtraSGD([y], lr=lr, maximize=True)
    calls = {"x": 0, "y": 0}
    scale = math.sqrt(float((xs ** 2).sum() + (ys ** 2).sum()))

    def set_grads() -> None:  # the counting wrapper: one partial-gradient call per agent
        with torch.no_grad():
            gx = t["A"] @ x + t["B"] @ y + t["a"]
            gy = t["B"].T @ x - t["C"] @ y - t["c"]
        x.grad, y.grad = gx, gy
        calls["x"] += 1
        calls["y"] += 1

    rounds, it, t0 = 0, 0, time.perf_counter()
    while it < max_iters:
        set_grads()
        opt_x.extrapolation()
        opt_y.extrapolation()
        rounds += 1
        set_grads()
        opt_x.step()
        opt_y.step()
        rounds += 1
        it += 1
        err = math.sqrt(float(((x.detach() - xs) ** 2).sum() + ((y.detach() - ys) ** 2).sum())) / scale
        if err <= tol:
            break
    return {"rounds": rounds, "calls": max(calls.values()), "time": time.perf_counter() - t0,
            "converged": err <= tol}


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lxx", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    ap.add_argument("--d", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-6)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"{'L_xx':>6} | {'ours R':>7} {'ours C':>7} {'ours s':>7} | {'EG R':>7} {'EG C':>7} {'EG s':>7} | "
          f"{'cooper R':>8} {'cooper C':>8} {'cooper s':>8} | cooper/ours R  C  time | cooper/EG time")
    for L in args.lxx:
        g = QuadraticGame.random(args.d, 0.1, L, 0.1, L, 1.0, args.seed)
        z = np.zeros(args.d)
        ours, t_ours = timed(lambda g=g, z=z: decoupled_method(g, z, z, tol=args.tol))
        eg, t_eg = timed(lambda g=g, z=z: extragradient(g, z, z, tol=args.tol))
        lr = eg.info["lr"]
        peer = cooper_extrasgd(g, lr, args.tol, max_iters=eg.iterations + 10)
        print(f"{L:6g} | {ours.rounds:7d} {ours.max_calls:7d} {t_ours:7.3f} | {eg.rounds:7d} {eg.max_calls:7d} "
              f"{t_eg:7.3f} | {peer['rounds']:8d} {peer['calls']:8d} {peer['time']:8.3f} | "
              f"{peer['rounds'] / ours.rounds:6.1f}x {peer['calls'] / ours.max_calls:5.1f}x "
              f"{peer['time'] / t_ours:6.1f}x | {peer['time'] / t_eg:5.2f}x")


if __name__ == "__main__":
    main()
