"""Side by side on the ``neurips26.bench`` harness: SmartRes (k = 2 regions) vs FastV, SparseVLM, VisionZip, ToMe
and full resolution on one mini MLLM, at equal LLM tokens, on two geometries. Writes results/smartres/bench.json.

The backbone is the check's 128² model (patch 8, d 64) with random weights: cost does not depend on training
(SmartRes runs at a fixed k = 2 regions, so its token count does not depend on the router). Geometries: the
spec's 3 ViT : 3 LM blocks (FastV / SparseVLM prune at LM block 1) and an LM-dominated 3 ViT : 12 LM blocks
(they prune at block 2, the paper's K = 2), where, as in a real MLLM, the LM holds most of the compute. Every
reduced method reaches the LM head with 96 tokens (SmartRes: 64 global + 2 × 16 region tokens); VisionZip keeps
80 dominant + 16 contextual, SparseVLM 88 + 8 recycled, ToMe merges inside the ViT down to 96.

Peers are our re-implementations (their own code targets LLaVA / Qwen and needs those weights). FastV and
SparseVLM score from the text-token attention rows only (as their papers read them); one extra row per
geometry times FastV's whole-matrix recompute (``scoring="full"``, the FlashAttention situation) against the
row-only version. Timings: 1 thread, process clock, interleaved pairs (harness defaults); FLOPs per query and
ViT / LLM tokens per query as deterministic counts (``torch.utils.flop_counter``).

    .venv/bin/python benchmarks/smartres_bench.py [--batch 1 32] [--repeats 7] [--dim 64] [--no-write]
"""

from __future__ import annotations

import argparse
import sys

import torch
from torch.utils.flop_counter import FlopCounterMode

from neurips26.bench import Bench
from neurips26.smartres import (
    MiniGroundingMLLM,
    MLLMConfig,
    ResolutionRouter,
    SmartRes,
    run_fastv,
    run_full,
    run_smartres,
    run_sparsevlm,
    run_tome,
    run_visionzip,
)

GEOMETRIES = ((3, 1), (12, 2))           # (LM blocks, FastV / SparseVLM pruning layer); 3 ViT blocks each
PEERS = {"fastv": "FastV", "sparsevlm": "SparseVLM", "visionzip": "VisionZip", "tome": "ToMe",
         "full": "full resolution (no reduction)"}


def methods(c: MLLMConfig, layer: int, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    model = MiniGroundingMLLM(c).eval()
    sr = SmartRes(model, ResolutionRouter(c.dim, 2 * c.dim).eval(), c.lowres_scale, c.region_px, k_min=2, k_max=2)
    keep = c.low_grid ** 2 + 2 * c.region_tokens
    return {
        "smartres": lambda im, q: run_smartres(sr, im, q),
        "fastv": lambda im, q: run_fastv(model, im, q, keep=keep, layer=layer),
        "fastv_full_matrix": lambda im, q: run_fastv(model, im, q, keep=keep, layer=layer, scoring="full"),
        "sparsevlm": lambda im, q: run_sparsevlm(model, im, q, keep=keep - keep // 12, recycle=keep // 12,
                                                 layer=layer),
        "visionzip": lambda im, q: run_visionzip(model, im, q, n_dominant=keep - keep // 6, n_contextual=keep // 6),
        "tome": lambda im, q: run_tome(model, im, q, target=keep),
        "full": lambda im, q: run_full(model, im, q),
    }


def flops_of(fn, images, query) -> int:
    counter = FlopCounterMode(display=False)
    with counter:
        fn(images, query)
    return int(counter.get_total_flops())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--dim", type=int, default=64)
    args, rest = ap.parse_known_args()
    bench = Bench("smartres", argv=rest,
                  description=f"SmartRes (k = 2 regions) vs token reduction at 96 of 256 LLM tokens, mini MLLM 128², "
                              f"patch 8, d {args.dim}, random weights; geometries 3 ViT : 3 LM and 3 ViT : 12 LM "
                              f"blocks; batches {', '.join(map(str, args.batch))}")
    with torch.no_grad():
        for lm_blocks, layer in GEOMETRIES:
            c = MLLMConfig(image_size=128, patch=8, dim=args.dim, heads=4, vit_blocks=3, lm_blocks=lm_blocks,
                           region_px=32)
            fns = methods(c, layer)
            geo = f"3:{lm_blocks}"
            for b in args.batch:
                gen = torch.Generator().manual_seed(b)
                images = torch.rand(b, 3, 128, 128, generator=gen)
                query = torch.stack([torch.randint(10, (b,), generator=gen), torch.randint(4, (b,), generator=gen)], 1)
                ours = lambda f=fns["smartres"], im=images, q=query: f(im, q)  # noqa: E731
                sr_flops = flops_of(fns["smartres"], images, query)
                for name, label in PEERS.items():
                    at = f" at LM block {layer}" if name in ("fastv", "sparsevlm") else ""
                    bench.compare(f"{geo}, b={b}: SmartRes vs {label}{at}", ours=ours,
                                  peer=lambda fn=fns[name], im=images, q=query: fn(im, q), peer_name=label,
                                  peer_kind="ours", flops=sr_flops,
                                  note="96 LLM tokens each" if name != "full" else "256 LLM tokens")
                bench.compare(f"{geo}, b={b}: FastV row-only vs whole-matrix scoring",
                              ours=lambda f=fns["fastv"], im=images, q=query: f(im, q),
                              peer=lambda f=fns["fastv_full_matrix"], im=images, q=query: f(im, q),
                              peer_name="FastV, whole T x T attention recomputed", peer_kind="ours",
                              note="same selections; the row-only version is the peer used above")
            # deterministic work per query (batch 1)
            images, query = torch.rand(1, 3, 128, 128), torch.tensor([[3, 1]])
            out = {n: fns[n](images, query) for n in ("smartres", *PEERS)}
            fl = {n: flops_of(fns[n], images, query) for n in ("smartres", *PEERS)}
            for name, label in PEERS.items():
                bench.count(f"{geo}: FLOPs per query", ours=fl["smartres"] / 1e9, peer=fl[name] / 1e9,
                            peer_name=label, peer_kind="ours", unit="GFLOP")
                if lm_blocks == GEOMETRIES[0][0]:     # token counts do not depend on the LM depth
                    bench.count("ViT tokens per query", ours=out["smartres"].vit_tokens,
                                peer=out[name].vit_tokens, peer_name=label, peer_kind="ours", unit="tokens")
                    bench.count("LLM tokens at the head per query", ours=out["smartres"].llm_tokens,
                                peer=out[name].llm_tokens, peer_name=label, peer_kind="ours", unit="tokens")
    bench.write()


if __name__ == "__main__":
    sys.exit(main())
