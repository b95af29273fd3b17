"""SmartRes vs FastV, VisionZip (and SparseVLM, ToMe) on one mini MLLM backbone: latency, ViT and LLM tokens,
FLOPs, as ratios to SmartRes.

The backbone is the spec's 128² model (patch 8, d 96, 3 + 3 blocks) with random weights: cost does not depend
on training (SmartRes is run at a fixed k = 2 regions, so its token count does not depend on the router).
All methods at 96 LLM tokens (SmartRes: 64 global + 2 × 16 region tokens); FastV and SparseVLM prune at LM
block 1, VisionZip keeps 80 dominant + 16 contextual tokens, ToMe merges inside the ViT down to 96. Latency:
median of ``--repeats`` calls, process clock, 1 thread; FLOPs from ``torch.utils.flop_counter``.

FastV and SparseVLM score from the text-token attention rows only (``scoring="rows"``); ``--scoring full``
times the whole-matrix recompute instead. ``--lm-blocks 12`` gives the LM-dominated geometry (3 ViT : 12 LM).

    python benchmarks/smartres_bench.py [--batch 1 32] [--repeats 7] [--size 128] [--dim 96] [--lm-blocks 3]
                                        [--prune-layer 1] [--scoring rows]
"""

from __future__ import annotations

import argparse

import torch
from torch.utils.flop_counter import FlopCounterMode

from neurips26.claims import measure, torch_threads
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--dim", type=int, default=96)
    ap.add_argument("--lm-blocks", type=int, default=3)
    ap.add_argument("--prune-layer", type=int, default=1)
    ap.add_argument("--scoring", choices=("rows", "full"), default="rows")
    args = ap.parse_args()
    torch.manual_seed(0)
    c = MLLMConfig(image_size=args.size, dim=args.dim, lm_blocks=args.lm_blocks)
    k, sc = args.prune_layer, args.scoring
    model = MiniGroundingMLLM(c).eval()
    sr = SmartRes(model, ResolutionRouter(c.dim, 2 * c.dim).eval(), c.lowres_scale, c.region_px, k_min=2, k_max=2)
    keep = c.low_grid ** 2 + 2 * c.region_tokens
    methods = {
        "smartres": lambda im, q: run_smartres(sr, im, q),
        "fastv": lambda im, q: run_fastv(model, im, q, keep=keep, layer=k, scoring=sc),
        "visionzip": lambda im, q: run_visionzip(model, im, q, n_dominant=keep - keep // 6, n_contextual=keep // 6),
        "sparsevlm": lambda im, q: run_sparsevlm(model, im, q, keep=keep - keep // 12, recycle=keep // 12, layer=k,
                                             scoring=sc),
        "tome": lambda im, q: run_tome(model, im, q, target=keep),
        "full": lambda im, q: run_full(model, im, q),
    }
    print(f"mini MLLM {args.size}² patch {c.patch} d {c.dim}, {c.vit_blocks} ViT : {c.lm_blocks} LM blocks, "
          f"{keep} LLM tokens for every reduced method; FastV/SparseVLM at LM block {k}, {sc} scoring")
    print(f"{'method':<10} {'batch':>5} {'ViT tok':>8} {'LLM tok':>8} {'ms':>9} {'GFLOP':>8} "
          f"{'lat/SmartRes':>12} {'FLOP/SmartRes':>13}")
    for b in args.batch:
        images = torch.rand(b, 3, args.size, args.size)
        query = torch.stack([torch.randint(10, (b,)), torch.randint(4, (b,))], 1)
        rows = {}
        with torch.no_grad(), torch_threads(1):
            for name, fn in methods.items():
                out = fn(images, query)
                timing = measure.timeit(lambda fn=fn, im=images, q=query: fn(im, q), warmup=1, repeats=args.repeats)
                counter = FlopCounterMode(display=False)
                with counter:
                    fn(images, query)
                rows[name] = (out.vit_tokens / b, out.llm_tokens / b, timing.median, counter.get_total_flops())
        ref = rows["smartres"]
        for name, (vit, llm, t, fl) in rows.items():
            print(f"{name:<10} {b:>5} {vit:>8.0f} {llm:>8.0f} {t * 1e3:>9.2f} {fl / 1e9:>8.3f} "
                  f"{t / ref[2]:>12.2f} {fl / ref[3]:>13.2f}")


if __name__ == "__main__":
    main()
