"""Side-by-side: latency and output error of dense, torch.svd_lowrank SVD and whitened SVD (SVD-LLM-style peer,
our re-implementation), each with and without DyRA, at equal FLOPs per token; printed as ratios to dense.

    .venv/bin/python benchmarks/dyra_bench.py [--n 768 --m 3072 --tokens 1608 --budget 0.35 --threads 2]

Inputs are synthetic "activations" with a decaying spectrum and a few outlier channels (calibration and test
drawn from different mixtures, so adaptivity can matter); the weight has a decaying spectrum. Times are the
median wall clock of repeated calls (``neurips26.claims.measure.timeit``) under ``torch.inference_mode``.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from neurips26.claims import measure, torch_threads
from neurips26.dyra import DyRALinear, StructuredLinear, budget_rank, dense_flops, dyra_budget_rank, gram
from neurips26.dyra.baselines import relative_output_error


def _data(n: int, m: int, tokens: int, seed: int) -> tuple[nn.Linear, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    U = torch.linalg.qr(torch.randn(m, min(m, n), generator=g)).Q
    V = torch.linalg.qr(torch.randn(n, min(m, n), generator=g)).Q
    s = torch.arange(1, min(m, n) + 1, dtype=torch.float32) ** -0.5
    lin = nn.Linear(n, m)
    with torch.no_grad():
        lin.weight.copy_((U * s) @ V.T)

    def acts(shift: int) -> torch.Tensor:
        scale = torch.logspace(0.5, -1.5, n)
        x = torch.randn(tokens, n, generator=g) * scale.roll(shift)
        x[:, (torch.arange(4) * 97 + shift) % n] *= 20  # outlier channels
        return x

    return lin, acts(0), acts(n // 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=768)
    ap.add_argument("--m", type=int, default=3072)
    ap.add_argument("--tokens", type=int, default=1608)
    ap.add_argument("--budget", type=float, default=0.35)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    lin, xcal, xtest = _data(a.n, a.m, a.tokens, 0)
    G = gram(xcal)
    r_w = budget_rank(a.m, a.n, a.budget)
    r_d = dyra_budget_rank(a.m, a.n, a.budget, a.k, n_tokens=a.tokens)
    if r_d < 1:
        raise SystemExit(f"budget {a.budget} cannot hold DyRA k={a.k} at N={a.tokens}")
    arms = {
        "dense": lin,
        f"svd_lowrank r={r_w}": StructuredLinear.from_linear(lin, "svd", rank=r_w, svd_method="lowrank"),
        f"whitened r={r_w}": StructuredLinear.from_linear(lin, "whitened_svd", rank=r_w, calib_gram=G),
        f"svd_lowrank r={r_d} + DyRA k={a.k}": DyRALinear(
            lin, StructuredLinear.from_linear(lin, "svd", rank=r_d, svd_method="lowrank"), rank=a.k,
            residual_dtype=torch.float32),
        f"whitened r={r_d} + DyRA k={a.k}": DyRALinear(
            lin, StructuredLinear.from_linear(lin, "whitened_svd", rank=r_d, calib_gram=G), rank=a.k,
            residual_dtype=torch.float32),
    }
    dense_f = dense_flops(a.m, a.n)
    with torch_threads(a.threads), torch.inference_mode():
        y = lin(xtest)
        t_dense = measure.timeit(lambda: lin(xtest), warmup=2, repeats=a.repeats, clock="wall").median
        print(f"layer {a.m}x{a.n}, N = {a.tokens}, budget {a.budget:.2f} of dense FLOPs, {a.threads} threads; "
              f"dense {t_dense * 1e3:.2f} ms")
        print(f"{'arm':36s} {'FLOPs/dense':>11s} {'time/dense':>10s} {'speed-up':>9s} {'rel. out err':>12s}")
        for name, mod in arms.items():
            f = mod.flops_per_token(a.tokens) if isinstance(mod, DyRALinear) else \
                (mod.flops_per_token() if isinstance(mod, StructuredLinear) else dense_f)
            t = measure.timeit(lambda mod=mod: mod(xtest), warmup=2, repeats=a.repeats, clock="wall").median
            err = relative_output_error(mod(xtest), y)
            print(f"{name:36s} {f / dense_f:11.3f} {t / t_dense:10.3f} {t_dense / t:9.2f} {err:12.4f}")


if __name__ == "__main__":
    main()
