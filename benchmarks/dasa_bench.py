"""Side by side on the ``neurips26.bench`` harness: DASA's cache and attention against the dense cache
(Self-Forcing's full KV cache, our re-implementation) and the rolling window / TempCache merge at DASA's KV
memory, in the tiny AR video DiT (64² frames, 8×8 tokens per frame, d = 96, 3 blocks, untrained: the
work and the time do not depend on the weights; fidelity is the claim check's business). Writes
results/dasa/bench.json.

Rows:
* counts: attended (query, key) pairs over a rollout and KV bytes at its end (deterministic);
* end to end: one whole rollout (4 steps + clean re-run per chunk), DASA on the gather path vs dense;
* attention only: one chunk's attention in every layer at the end of the rollout (4 steps over
  ``[cache ; chunk]`` + the clean re-run), DASA on the gather path and on the compiled block-sparse
  ``flex_attention`` path vs dense SDPA over the full cache;
* published: the paper's and the cited peers' reported speed-ups (not runnable here).

1 thread, process clock, interleaved pairs (the harness). At these sizes attention is a small part of a
forward, so the end-to-end row measures mostly the MLPs and Python overhead.

    .venv/bin/python benchmarks/dasa_bench.py [--frames 32] [--regime sparse] [--no-compile] [--repeats 7]
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

from neurips26.bench import Bench
from neurips26.dasa import (
    ARVideoDiT,
    DASAConfig,
    DenseKVCache,
    DynamicKVCache,
    TempCacheMerge,
    VideoDiTConfig,
    WindowKVCache,
    dasa_attention,
    dasa_attention_flex,
    moving_sprites,
    patchify,
    plan_flex,
    region_mask,
    token_dynamics,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=32, help="rollout length (the spec: 32 frames)")
    ap.add_argument("--regime", default="sparse")
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled flex_attention row")
    args, rest = ap.parse_known_args()
    torch.manual_seed(0)
    depth, heads = 3, 4
    model = ARVideoDiT(VideoDiTConfig(frame_size=64, dim=96, depth=depth, heads=heads)).eval()
    c = model.config
    cfg = DASAConfig(keep_ratio=0.3).for_grid((c.grid, c.grid))        # 2x2 regions, no dilation on 8x8
    bench = Bench("dasa", description=f"DASA (rho = 0.3, keyframes every 4 chunks, {cfg.region_size[0]}x"
                  f"{cfg.region_size[1]} regions) vs the dense KV cache and equal-memory baselines, tiny AR video "
                  f"DiT (64^2 frames, 64 tokens/frame, d = 96, 3 blocks, untrained), {args.frames}-frame "
                  f"{args.regime} rollouts", argv=rest)
    ctx = moving_sprites(args.regime, 2, 64, 0).frames[None]
    gen = torch.Generator

    def rollout(policy, regions: bool, stats: dict | None = None) -> None:
        model.generate(ctx, args.frames, policy=policy, cfg=cfg, regions=regions, stats=stats,
                       generator=gen().manual_seed(0))

    caches, stats = {}, {}
    dasa = DynamicKVCache(depth, cfg)
    caches["dasa"], stats["dasa"] = dasa, {}
    rollout(dasa, True, stats["dasa"])
    p = c.tokens_per_frame
    budget_frames = max(1, round(dasa.num_tokens / p))
    rho = min(1.0, dasa.num_tokens / (args.frames * p))
    for name, pol in (("dense", DenseKVCache(depth)), ("window", WindowKVCache(depth, budget_frames)),
                      ("tempcache", TempCacheMerge(depth, rho))):
        caches[name], stats[name] = pol, {}
        rollout(pol, False, stats[name])
    peers = {"dense": "dense full KV cache (Self-Forcing)", "window": f"rolling window of {budget_frames} frames "
             "(Self-Forcing local window)", "tempcache": f"TempCache-style merge (keep {rho:.2f})"}
    for name in ("dense", "window", "tempcache"):
        bench.count(f"attended (query, key) pairs over a {args.frames}-frame rollout: DASA vs {name}",
                    ours=stats["dasa"]["pairs"], peer=stats[name]["pairs"], peer_name=peers[name], peer_kind="ours",
                    unit="(query, key) pairs")
    bench.count("KV bytes at the end of the rollout (all layers): DASA vs dense", ours=dasa.nbytes,
                peer=caches["dense"].nbytes, peer_name=peers["dense"], peer_kind="ours", unit="bytes")

    bench.compare(f"end to end: one {args.frames}-frame rollout, DASA (gather path) vs dense",
                  ours=lambda: rollout(DynamicKVCache(depth, cfg), True),
                  peer=lambda: rollout(DenseKVCache(depth), False), peer_name=peers["dense"], peer_kind="ours",
                  note="attention is a small share of a forward at 64 tokens/frame; mostly MLP and Python time")

    # one chunk's attention in every layer at the end of the rollout (the region mask from the last two frames)
    video = model.generate(ctx, args.frames, policy=DynamicKVCache(depth, cfg), cfg=cfg,
                           generator=gen().manual_seed(0))
    tail = patchify(video[:, -2:], c.patch).view(1, 2, p, -1)
    rm = region_mask(token_dynamics(tail[:, 0], tail[:, 1]), (c.grid, c.grid), cfg)
    n, hd = c.chunk_frames * p, c.dim // heads
    g = gen().manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, hd, generator=g) for _ in range(3))
    dense_cache = caches["dense"]

    def dense_chunk() -> None:
        for layer in range(depth):
            kd, vd, _, _ = dense_cache.get(layer)
            for _ in range(5):
                F.scaled_dot_product_attention(q, torch.cat([kd, k], 2), torch.cat([vd, v], 2))

    def gather_chunk() -> None:
        for layer in range(depth):
            for _ in range(4):
                dasa_attention(q, k, v, dasa, layer, rm, cfg)
            dasa_attention(q, k, v, dasa, layer, None, cfg)

    bench.compare("attention only: one chunk in every layer at the end, DASA gather + SDPA vs dense SDPA",
                  ours=gather_chunk, peer=dense_chunk, peer_name="dense SDPA over the full cache", peer_kind="ours",
                  note=f"DASA cache {dasa.num_tokens} vs dense {dense_cache.num_tokens} tokens per layer")
    if not args.no_compile:
        from torch.nn.attention.flex_attention import flex_attention

        kernel = torch.compile(flex_attention, dynamic=False)

        def flex_chunk() -> None:
            plan = plan_flex(dasa, 0, rm, cfg, n)            # one plan per chunk, shared by the layers
            for layer in range(depth):
                for _ in range(4):
                    dasa_attention_flex(q, k, v, dasa, layer, rm, cfg, plan=plan, kernel=kernel)
                dasa_attention(q, k, v, dasa, layer, None, cfg)

        bench.compare("attention only: one chunk in every layer at the end, DASA compiled flex BlockMask vs "
                      "dense SDPA", ours=flex_chunk, peer=dense_chunk, peer_name="dense SDPA over the full cache",
                      peer_kind="ours", note="includes building the BlockMask once per chunk")
    bench.published("end-to-end speed-up, Wan-1.3B class AR video (VBench prompts, GPU)", peer_name="DASA (paper)",
                    value="2.16x", source="DASA abstract", ours="not reproducible at this scale")
    bench.published("end-to-end speed-up on Self-Forcing 480p (H200)", peer_name="Forcing-KV", value="1.50x",
                    source="arXiv 2605.09681")
    bench.published("end-to-end speed-up on MAGI-1", peer_name="MotionCache", value="1.64x",
                    source="arXiv 2605.01725")
    bench.write()


if __name__ == "__main__":
    sys.exit(main())
