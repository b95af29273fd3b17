"""Dynamic short conv on the ``neurips26.bench`` harness: the low-rank dynamic conv (reference path; Triton on a
GPU) against the static depthwise ``F.conv1d`` (the speed bar, the real torch op) and the naive dynamic form that
materialises every token's filter (our re-implementation of the obvious way), forward and forward + backward;
the layers ``DynamicShortConv`` vs ``StaticShortConv``; the scaling of the dynamic conv in T. Writes
results/dynconv/bench.json (1 thread, process clock, interleaved pairs, t-interval on the log ratio).

    .venv/bin/python benchmarks/dynconv_bench.py [--quick] [--repeats 7]           # CPU, B=2, T=1024, D=256
    .venv/bin/python benchmarks/dynconv_bench.py --gpu --clock cuda                 # CUDA: + Triton, bf16

ours / limit: the FLOPs (filter generation ``z U``, 2·B·T·R·W·D, plus the W taps, 3·B·T·W·D) against the GEMM
rate, or the bytes (read x and z, write y; fwd+bwd about 3x) against the copy rate, whichever bound is larger:
a depthwise conv with W = 4 is bandwidth-bound.
"""

from __future__ import annotations

import argparse
import sys

import torch

from neurips26.bench import Bench
from neurips26.dynconv import (
    DynamicShortConv,
    StaticShortConv,
    lowrank_dynamic_conv1d,
    naive_lowrank_dynamic_conv1d,
    static_depthwise_conv1d,
)

W, R = 4, 15


def _inputs(b: int, t: int, d: int, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {"x": torch.randn(b, t, d, generator=g).to(device, dtype).requires_grad_(),
            "z": torch.randn(b, t, R, generator=g).to(device, dtype).requires_grad_(),
            "U": (0.02 * torch.randn(R, W * d, generator=g)).to(device, dtype).requires_grad_(),
            "s": (0.5 * torch.randn(W, d, generator=g)).to(device, dtype).requires_grad_(),
            "dy": torch.randn(b, t, d, generator=g).to(device, dtype)}


def _fwd_bwd(fn, dy: torch.Tensor, leaves: list[torch.Tensor]):
    def step() -> None:
        for leaf in leaves:
            leaf.grad = None
        fn().backward(dy)

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", action="store_true", help="CUDA at the paper's shape B=4, T=4096, D=2048, bf16")
    ap.add_argument("--quick", action="store_true", help="fewer scaling sizes")
    args, _ = ap.parse_known_args()
    bench = Bench("dynconv", description="low-rank dynamic short conv (W = 4, R = 15) vs the static depthwise "
                  "F.conv1d and the naive materialised-filter form, fwd and fwd+bwd; layers; scaling in T",
                  argv=sys.argv[1:])
    if args.gpu and not torch.cuda.is_available():
        raise SystemExit("--gpu: no CUDA device here")
    dev, dt = ("cuda", torch.bfloat16) if args.gpu else ("cpu", torch.float32)
    b, t, d = (4, 4096, 2048) if args.gpu else (2, 1024, 256)
    v = _inputs(b, t, d, dev, dt)
    x, z, U, s, dy = v["x"], v["z"], v["U"], v["s"], v["dy"]
    size = x.element_size()
    flops = 2.0 * b * t * R * W * d + 3.0 * b * t * W * d
    bytes_fwd = float(size * (2 * b * t * d + b * t * R))
    shape = f"B={b} T={t} D={d}"
    backend = "triton" if args.gpu else "torch"

    def ours():
        return lowrank_dynamic_conv1d(x, z, U, s, True, backend=backend)

    peers = {"static": (lambda: static_depthwise_conv1d(x, s, True), "torch F.conv1d depthwise (static filter)",
                        "real"),
             "naive": (lambda: naive_lowrank_dynamic_conv1d(x, z, U, s, True),
                       "naive dynamic conv (filters K = zU materialised)", "ours")}
    leaves = [x, z, U, s]
    with torch.no_grad():
        for key, (peer, name, kind) in peers.items():
            bench.compare(f"{shape}: dynamic ({backend}) vs {key}, forward", ours=ours, peer=peer, peer_name=name,
                          peer_kind=kind, flops=flops, bytes_moved=bytes_fwd)
    for key, (peer, name, kind) in peers.items():
        bench.compare(f"{shape}: dynamic ({backend}) vs {key}, fwd+bwd", ours=_fwd_bwd(ours, dy, leaves),
                      peer=_fwd_bwd(peer, dy, leaves), peer_name=name, peer_kind=kind, flops=3 * flops,
                      bytes_moved=3 * bytes_fwd)
    if args.gpu:
        bench.compare(f"{shape}: Triton vs torch reference, fwd+bwd", ours=_fwd_bwd(ours, dy, leaves),
                      peer=_fwd_bwd(lambda: lowrank_dynamic_conv1d(x, z, U, s, True, backend="torch"), dy, leaves),
                      peer_name="our torch reference of the same op", peer_kind="ours", flops=3 * flops,
                      bytes_moved=3 * bytes_fwd)
    torch.manual_seed(0)
    dyn = DynamicShortConv(d, W, R).to(dev, dt)
    with torch.no_grad():
        dyn.U.normal_(0, 0.02)
    stat = StaticShortConv(d, W).to(dev, dt)
    layer_flops = flops + 2.0 * b * t * d * R  # + the conditioning projection d -> R
    bench.compare(f"{shape}: DynamicShortConv vs StaticShortConv layer, fwd+bwd",
                  ours=_fwd_bwd(lambda: dyn(x), dy, [x, *dyn.parameters()]),
                  peer=_fwd_bwd(lambda: stat(x), dy, [x, *stat.parameters()]),
                  peer_name="StaticShortConv (F.conv1d depthwise + residual)", peer_kind="ours",
                  flops=3 * layer_flops, bytes_moved=3 * bytes_fwd)

    def time_at(tt: float) -> float:
        w = _inputs(b, int(tt), d, dev, dt)
        with torch.no_grad():
            return bench.time(lambda: lowrank_dynamic_conv1d(w["x"], w["z"], w["U"], w["s"], True,
                                                             backend=backend), repeats=5)

    sizes = [512, 2048, 8192] if args.quick else [512, 1024, 2048, 4096, 8192]
    bench.scaling(f"dynamic conv forward time in T (B={b}, D={d})", sizes=sizes, time_of=time_at,
                  claimed="O(T) per layer (W taps per token) -> slope 1")
    bench.write()


if __name__ == "__main__":
    main()
