"""Dynamic short conv: kernel and layer timings vs static depthwise conv and the naive dynamic form.

    .venv/bin/python benchmarks/dynconv_bench.py            # CPU: reference path, B=2, T=1024, D=256
    .venv/bin/python benchmarks/dynconv_bench.py --gpu      # CUDA: + Triton, B=4, T=4096, D=2048, bf16

Prints one table per run with each method's time and its ratio to the static ``F.conv1d`` depthwise
conv (the speed bar) and to the naive dynamic form. Timings on a shared CPU are noisy: read the ratios
within one run, not absolute numbers across runs. Not run in CI.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from neurips26.dynconv import (
    DynamicShortConv,
    StaticShortConv,
    lowrank_dynamic_conv1d,
    naive_lowrank_dynamic_conv1d,
    static_depthwise_conv1d,
)


def _time(fn, reps: int, cuda: bool) -> float:
    """Median seconds of ``reps`` calls (after 2 warm-up calls)."""
    for _ in range(2):
        fn()
    out = []
    for _ in range(reps):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return sorted(out)[len(out) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="run on CUDA at the paper's bench shape")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    cuda = args.gpu
    if cuda and not torch.cuda.is_available():
        raise SystemExit("--gpu: no CUDA device here")
    dev, dt = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    b, t, d, w, r = (4, 4096, 2048, 4, 15) if cuda else (2, 1024, 256, 4, 15)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(b, t, d, generator=g).to(dev, dt).requires_grad_()
    z = torch.randn(b, t, r, generator=g).to(dev, dt).requires_grad_()
    U = (0.02 * torch.randn(r, w * d, generator=g)).to(dev, dt).requires_grad_()
    s = (0.5 * torch.randn(w, d, generator=g)).to(dev, dt).requires_grad_()
    dy = torch.randn(b, t, d, generator=g).to(dev, dt)

    ops = {"static F.conv1d (depthwise)": lambda: static_depthwise_conv1d(x, s, True),
           "naive dynamic (materialised K)": lambda: naive_lowrank_dynamic_conv1d(x, z, U, s, True),
           "reference dynamic (W shifts)": lambda: lowrank_dynamic_conv1d(x, z, U, s, True, backend="torch")}
    if cuda:
        ops["triton dynamic (fused)"] = lambda: lowrank_dynamic_conv1d(x, z, U, s, True, backend="triton")
    dyn = DynamicShortConv(d, w, r).to(dev, dt)
    with torch.no_grad():
        dyn.U.normal_(0, 0.02)
    stat = StaticShortConv(d, w).to(dev, dt)
    layers = {"StaticShortConv layer": lambda: stat(x), "DynamicShortConv layer (auto)": lambda: dyn(x)}

    rows = []
    for group in (ops, layers):
        for name, fn in group.items():
            fwd = _time(lambda fn=fn: fn(), args.reps, cuda)
            fb = _time(lambda fn=fn: fn().backward(dy), args.reps, cuda)
            rows.append((name, fwd, fb))
    base = {"fwd": rows[0][1], "fb": rows[0][2]}
    naive = {"fwd": rows[1][1], "fb": rows[1][2]}
    print(f"shape B={b} T={t} D={d} W={w} R={r} {dt} on {dev}; times in ms (median of {args.reps})")
    head = f"{'method':34s} {'fwd':>9s} {'fwd+bwd':>9s} {'fb/static':>10s} {'fb/naive':>9s}"
    print(head)
    print("-" * len(head))
    for name, fwd, fb in rows:
        print(f"{name:34s} {1e3 * fwd:9.2f} {1e3 * fb:9.2f} {fb / base['fb']:10.2f} {fb / naive['fb']:9.2f}")


if __name__ == "__main__":
    main()
