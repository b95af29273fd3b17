"""Side by side on the ``neurips26.bench`` harness: max-agent gradient calls, rounds and CPU time to tolerance of
the Decoupled Method, our Extragradient and cooper-optim's ``ExtraSGD`` (the real peer), on the same seeded
quadratic game Q (d = 30, L_xy = 1, μ = 0.1), for L_xx = L_yy in {1, 10, 100}. Writes results/saddle/bench.json.

ExtraSGD runs on the game as torch float64 tensors; its partial gradients are set by a counting wrapper
(∇_x f for X, ∇_y f with ``maximize=True`` for Y), 2 rounds and 2 calls per agent per iteration, at our EG's
default step 1/(2L). Every method stops at ‖z − z*‖ ≤ 1e-6‖z0 − z*‖.

The call counts are the sound comparison: on 30-dimensional vectors a run's time is mostly interpreter and
torch dispatch overhead, so the timing rows (1 thread, process clock, interleaved pairs) measure the
implementations, not the methods. Needs ``pip install -e '.[bench]'`` (cooper-optim) for the peer rows.

    .venv/bin/python benchmarks/saddle_bench.py [--lxx 1 10 100] [--d 30] [--seed 0] [--repeats 7]
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import torch

from neurips26.bench import Bench
from neurips26.saddle import QuadraticGame, decoupled_method, extragradient


def cooper_extrasgd(g: QuadraticGame, lr: float, tol: float, max_iters: int) -> dict:
    """cooper's ExtraSGD on the game; returns rounds, max-agent calls and whether it reached ``tol``."""
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

    rounds, it, err = 0, 0, math.inf
    while it < max_iters:
        set_grads()
        opt_x.extrapolation()
        opt_y.extrapolation()
        set_grads()
        opt_x.step()
        opt_y.step()
        rounds, it = rounds + 2, it + 1
        err = math.sqrt(float(((x.detach() - xs) ** 2).sum() + ((y.detach() - ys) ** 2).sum())) / scale
        if err <= tol:
            break
    return {"rounds": rounds, "calls": max(calls.values()), "converged": err <= tol}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lxx", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    ap.add_argument("--d", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-6)
    args, rest = ap.parse_known_args()
    bench = Bench("saddle", description=f"Decoupled Method vs Extragradient (ours) and cooper-optim ExtraSGD on "
                  f"the quadratic game Q (d = {args.d}, L_xy = 1, mu = 0.1), to relative error {args.tol:g}",
                  argv=rest)
    try:
        import cooper  # noqa: F401

        have_cooper = True
    except ImportError:
        have_cooper = False
        print("cooper-optim is not installed (pip install -e '.[bench]'): its rows are left out")
    for L in args.lxx:
        g = QuadraticGame.random(args.d, 0.1, L, 0.1, L, 1.0, args.seed)
        z = np.zeros(args.d)
        ours = decoupled_method(g, z, z, tol=args.tol)
        eg = extragradient(g, z, z, tol=args.tol)
        bench.count(f"L_xx={L:g}: max-agent calls to tolerance", ours=ours.max_calls, peer=eg.max_calls,
                    peer_name="Extragradient", peer_kind="ours", unit="gradient calls of the busier agent")
        bench.count(f"L_xx={L:g}: communication rounds to tolerance", ours=ours.rounds, peer=eg.rounds,
                    peer_name="Extragradient", peer_kind="ours", unit="rounds")
        bench.compare(f"L_xx={L:g}: CPU time to tolerance",
                      ours=lambda g=g, z=z: decoupled_method(g, z, z, tol=args.tol),
                      peer=lambda g=g, z=z: extragradient(g, z, z, tol=args.tol), peer_name="Extragradient",
                      peer_kind="ours", note="d = 30: mostly per-iteration overhead")
        if have_cooper:
            lr, cap = eg.info["lr"], eg.iterations + 10
            peer = cooper_extrasgd(g, lr, args.tol, max_iters=cap)
            bench.count(f"L_xx={L:g}: max-agent calls to tolerance", ours=ours.max_calls, peer=peer["calls"],
                        peer_name="cooper-optim ExtraSGD", peer_kind="real", unit="gradient calls of the busier agent",
                        note="" if peer["converged"] else f"peer did not reach tolerance in {cap} iterations")
            bench.compare(f"L_xx={L:g}: CPU time to tolerance",
                          ours=lambda g=g, z=z: decoupled_method(g, z, z, tol=args.tol),
                          peer=lambda g=g, lr=lr, cap=cap: cooper_extrasgd(g, lr, args.tol, max_iters=cap),
                          peer_name="cooper-optim ExtraSGD", peer_kind="real",
                          note="d = 30: mostly torch dispatch overhead; the call counts are the sound comparison")
    bench.write()


if __name__ == "__main__":
    sys.exit(main())
