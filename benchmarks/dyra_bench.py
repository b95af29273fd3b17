"""Side-by-side: CPU time and output error of DyRA against dense, torch.svd_lowrank SVD and whitened SVD (SVD-LLM-
style peer, our re-implementation), at equal FLOPs per token, on the ``neurips26.bench`` harness (1 thread,
process clock, interleaved A/B, bootstrap interval; writes results/dyra/bench.json).

    .venv/bin/python benchmarks/dyra_bench.py [--threads 1] [--repeats 7]

Layer 3072×768 (ViT-B fc1), N = 1,608 tokens (8 images × 201), 35 % of dense FLOPs. Inputs are synthetic
"activations" with a decaying spectrum and a few outlier channels (calibration and test drawn from different
mixtures, so adaptivity can matter); the weight has a decaying spectrum. Rows: DyRA (whitened base) vs dense
``nn.Linear`` (the real peer), vs weight-only ``svd_lowrank`` and whitened SVD at the same FLOPs (speed and
error), where the time goes (the structured path alone and the correction alone, each against dense with its own
FLOP count, so each shows its ours / limit), the fused forward vs the unfused ``structured(x) + correction(x)``, and
a whole ViT-B block (LayerNorm, attention, MLP) with every linear on SVD(0.25)+DyRA(32) vs the dense block.
"""

from __future__ import annotations

import sys

import torch
from torch import nn

from neurips26.bench import Bench
from neurips26.dyra import DyRALinear, StructuredLinear, budget_rank, dense_flops, dyra_budget_rank, gram
from neurips26.dyra.baselines import relative_output_error
from neurips26.dyra.vit import ViTBlock, dyra_vit_block, vit_block_flops

N_IN, N_OUT, TOKENS, BUDGET, K = 768, 3072, 1608, 0.35, 32


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
    bench = Bench("dyra", description="DyRA (structured + dynamic residual-output correction) vs dense and "
                  "weight-only SVD at 35 % of dense FLOPs; ViT-B fc1 layer and a whole ViT-B block, N = 1,608",
                  argv=sys.argv[1:])
    lin, xcal, xtest = _data(N_IN, N_OUT, TOKENS, 0)
    G = gram(xcal)
    r_w = budget_rank(N_OUT, N_IN, BUDGET)
    r_d = dyra_budget_rank(N_OUT, N_IN, BUDGET, K, n_tokens=TOKENS)
    white = StructuredLinear.from_linear(lin, "whitened_svd", rank=r_w, calib_gram=G)
    lowrank = StructuredLinear.from_linear(lin, "svd", rank=r_w, svd_method="lowrank")
    ours = DyRALinear(lin, StructuredLinear.from_linear(lin, "whitened_svd", rank=r_d, calib_gram=G), rank=K,
                      residual_dtype=torch.float32)
    f_ours = ours.flops_per_token(TOKENS) * TOKENS
    with torch.inference_mode():
        y = lin(xtest)
        errors = {"dyra_error": relative_output_error(ours(xtest), y),
                  "svd_lowrank_error": relative_output_error(lowrank(xtest), y),
                  "whitened_error": relative_output_error(white(xtest), y)}
        row = bench.compare(f"fc1 {N_OUT}x{N_IN}: whitened r={r_d} + DyRA k={K} vs dense", ours=lambda: ours(xtest),
                            peer=lambda: lin(xtest), peer_name="torch nn.Linear (dense)", peer_kind="real",
                            flops=f_ours, note=f"FLOPs {ours.flops_per_token(TOKENS) / dense_flops(N_OUT, N_IN):.3f} "
                                               "of dense")
        row.update(errors)
        row = bench.compare(f"fc1: DyRA vs svd_lowrank r={r_w} (same FLOPs)", ours=lambda: ours(xtest),
                            peer=lambda: lowrank(xtest), peer_name="torch.svd_lowrank weight-only SVD",
                            peer_kind="ours", flops=f_ours)
        row.update(errors)
        row = bench.compare(f"fc1: DyRA vs whitened SVD r={r_w} (same FLOPs)", ours=lambda: ours(xtest),
                            peer=lambda: white(xtest), peer_name="SVD-LLM-style whitened SVD", peer_kind="ours",
                            flops=f_ours)
        row.update(errors)
        f_struct = ours.structured.flops_per_token() * TOKENS
        bench.compare(f"fc1: where the time goes: structured path alone (whitened r={r_d}) vs dense",
                      ours=lambda: ours.structured(xtest), peer=lambda: lin(xtest), peer_name="torch nn.Linear (dense)",
                      peer_kind="real", flops=f_struct, note=f"{f_struct / f_ours:.2f} of DyRA's FLOPs")
        bench.compare("fc1: where the time goes: DyRA correction alone (sketch, QR, E products, B Q^T) vs dense",
                      ours=lambda: ours.correction(xtest), peer=lambda: lin(xtest),
                      peer_name="torch nn.Linear (dense)", peer_kind="real", flops=f_ours - f_struct,
                      note=f"{(f_ours - f_struct) / f_ours:.2f} of DyRA's FLOPs; unfused (its own output tensor)")
        bench.compare("fc1: fused forward vs unfused structured(x) + correction(x)", ours=lambda: ours(xtest),
                      peer=lambda: ours.structured(xtest) + ours.correction(xtest),
                      peer_name="DyRA unfused (separate correction tensor and add)", peer_kind="ours", flops=f_ours)
        torch.manual_seed(0)
        block = ViTBlock(768, 3072, 12).eval()
        dyra_block = dyra_vit_block(block, "batch")
        x = torch.randn(8, 201, 768)
        bench.compare("ViT-B block, 8x201 tokens: SVD(0.25)+DyRA(32) vs dense", ours=lambda: dyra_block(x),
                      peer=lambda: block(x), peer_name="dense ViT-B block (torch)", peer_kind="real",
                      flops=vit_block_flops(dyra_block, 8, 201))
    for r in bench.rows:
        print(f"  {r['name']}: {r.get('speedup', float('nan')):.2f}x")
    bench.write()


if __name__ == "__main__":
    main()
