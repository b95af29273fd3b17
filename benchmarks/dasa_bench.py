"""DASA benchmark: time per frame, attention time, attended keys and KV bytes of DASA vs dense, rolling window and
TempCache merge at DASA's KV budget, on an untrained tiny AR video DiT (64² frames, 2 threads), as ratios.

    .venv/bin/python benchmarks/dasa_bench.py [--frames 16] [--repeats 5] [--regime sparse] [--region 2] [--dilation 0]
"""

from __future__ import annotations

import argparse
import math

import torch

from neurips26.claims import measure, torch_threads
from neurips26.dasa import (
    ARVideoDiT,
    DASAConfig,
    DenseKVCache,
    DynamicKVCache,
    TempCacheMerge,
    VideoDiTConfig,
    WindowKVCache,
    dasa_attention,
    moving_sprites,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--regime", default="sparse")
    ap.add_argument("--region", type=int, default=2, help="region side in tokens (the check's 64² protocol: 2)")
    ap.add_argument("--dilation", type=int, default=0, help="mask dilation (the check's 64² protocol: 0)")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = ARVideoDiT(VideoDiTConfig(frame_size=64, dim=96, depth=3, heads=4)).eval()
    cfg = DASAConfig(keep_ratio=0.3, region_size=(a.region, a.region), dilation=a.dilation)
    ctx = moving_sprites(a.regime, 2, 64, 0).frames[None]
    probe = DynamicKVCache(3, cfg)
    model.generate(ctx, a.frames, policy=probe, cfg=cfg, generator=torch.Generator().manual_seed(0))
    p = model.config.tokens_per_frame
    budget_frames = max(1, round(probe.num_tokens / p))
    rho = min(1.0, probe.num_tokens / (a.frames * p))
    policies = {"dense": lambda: DenseKVCache(3), "dasa": lambda: DynamicKVCache(3, cfg),
                "window": lambda: WindowKVCache(3, budget_frames), "tempcache": lambda: TempCacheMerge(3, rho)}
    rows = {}
    with torch_threads(2):
        # one untimed rollout per policy first: the first rollout of a process pays allocator and thread-pool
        # start-up, which otherwise lands on whichever policy is timed first (dense looked 4x slower).
        for name, make in policies.items():
            model.generate(ctx, a.frames, policy=make(), cfg=cfg, regions=name == "dasa",
                           generator=torch.Generator().manual_seed(0))
        for name, make in policies.items():
            stats, pol = {}, make()

            def run(pol=pol, name=name):
                model.generate(ctx, a.frames, policy=pol, cfg=cfg, regions=name == "dasa",
                               generator=torch.Generator().manual_seed(0))

            t = measure.timeit(run, warmup=1, repeats=a.repeats, clock="wall").median / a.frames
            model.generate(ctx, a.frames, policy=pol, cfg=cfg, regions=name == "dasa", stats=stats,
                           generator=torch.Generator().manual_seed(0))
            q = torch.randn(1, 4, 2 * p, 24)
            n_regions = (model.config.grid // a.region) ** 2
            rm = torch.rand(1, n_regions) < 0.3 if name == "dasa" else None
            ta = measure.timeit(lambda pol=pol, rm=rm, q=q: dasa_attention(q, q, q, pol, 0, rm, cfg),
                                repeats=a.repeats,
                                clock="wall").median
            rows[name] = {"frame_s": t, "attn_s": ta, "pairs": stats["pairs"], "kv_bytes": pol.nbytes}
    d = rows["dense"]
    print(f"regime {a.regime}, {a.frames} frames, budget {budget_frames} frames / rho {rho:.2f}")
    print(f"{'policy':10s} {'ms/frame':>9s} {'speed-up':>8s} {'attn ms':>8s} {'attn x':>7s} {'keys x':>7s} "
          f"{'KV x':>6s}")
    for name, r in rows.items():
        print(f"{name:10s} {1e3 * r['frame_s']:9.1f} {d['frame_s'] / r['frame_s']:8.2f} {1e3 * r['attn_s']:8.2f} "
              f"{d['attn_s'] / r['attn_s']:7.2f} {d['pairs'] / r['pairs']:7.2f} "
              f"{d['kv_bytes'] / max(1, r['kv_bytes']):6.2f}")
    assert all(math.isfinite(r["frame_s"]) for r in rows.values())


if __name__ == "__main__":
    main()
