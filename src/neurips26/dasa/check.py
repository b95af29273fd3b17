"""Claim check for P15 dasa on moving sprites with the tiny AR video DiT (see the README for what is inferred).

Protocol 4 (2026-12-02, issue 44). One dense teacher per run, trained by teacher forcing on all four regimes
(half of the clips from ``occlusion``, where a sweeping bar, already in the context frames, hides each band for
three frames, so a band it uncovers was last seen two chunks back). The teacher has the **copy prior**
(x̂₀ = previous frame + f, f zero at initialisation: an untrained teacher is exactly "repeat the last frame").
Per regime the same seeded contexts are rolled out with every policy;
fidelity is PSNR of each rollout vs the dense rollout of the same seed (per video, paired), with the error vs the
true video beside it. Components are tested apart:

* the cache alone (C3): DASA's compressed cache with the static-region path off (every query attends to the
  whole cache) vs the rolling window, sink + window, random drop and TempCache merge at DASA's measured KV memory;
* region allocation (C7): DASA (its cache + regions of highest predicted dynamics) vs the same cache with random
  regions of the same count, random drop with random regions, and sink + window on the same region path, at
  (near) equal attended pairs (measured and reported).

Every fidelity claim needs its history first: on ``occlusion`` the previous-chunk-only rollout must differ from
the dense one (PSNR < 35 dB) and be further from the truth. DASA settings: ρ = 0.3, G = 4, static policy
"local", count bias, region size and dilation from the grid (2×2, no dilation on the 8×8 token grid of 64²
frames). Attention time (C2, full/gpu) is one chunk's attention per layer at the end of a rollout: DASA on the
compiled block-sparse ``flex_attention`` path vs dense SDPA, interleaved at 1 thread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from neurips26.claims import CheckContext, Claim, Evidence, Paper, Precondition, measure, rules, torch_threads

from .attention import dasa_attention, dasa_attention_flex, plan_flex
from .baselines import DenseKVCache, RandomDropKVCache, SinkWindowKVCache, TempCacheMerge, WindowKVCache
from .cache import DynamicKVCache
from .distill import copy_model, dynamics_guided_distill, train_teacher
from .dynamics import DASAConfig, region_mask, token_dynamics
from .model import ARVideoDiT, VideoDiTConfig, patchify
from .video import mini_vbench, moving_sprites, psnr

# ------------------------------------------------------------------ criteria (fixed before running, 2026-12-02)
KEEP_RATIO = 0.3                                # DASA's ρ (spec 0.25-0.4)
KEYS_RATIO_MIN, KEYS_REFUTE = 2.0, 1.2          # C1: dense / DASA attended (q, k) pairs, every regime but pans
SPEEDUP_MIN = 1.5                               # C2: dense SDPA / DASA flex attention time per chunk
HISTORY_PSNR_MAX = 35.0                         # precondition: previous-chunk-only vs dense < 35 dB (occlusion)
HISTORY_USE_DB = 0.5                            # precondition: dense beats previous-chunk-only vs truth by > 0.5 dB
FIDELITY_MARGIN_DB = 0.0                        # C3, C7: DASA − baseline PSNR-vs-dense interval above 0 dB
VBENCH_TOL = 0.02                               # C4: |score/dense − 1| <= 2 %
TAU = 0.1                                       # C5: threshold mode, relative L2 change τ (flicker is ±2 %)
PAN_KEYS_FRACTION_MAX, PAN_PSNR_MIN = 0.75, 20.0  # C5: keys ratio on pans <= 0.75 × sparse's; PSNR >= 20 dB
GAP_PSNR_MAX = 35.0                             # C6 precondition: training-free DASA vs teacher < 35 dB
DISTILL_MARGIN_DB = 0.0                         # C6: weighted − uniform interval above 0 dB
FLEX_MAX_ABS = 1e-4                             # S1: flex vs gather outputs
MIN_VIDEOS = 6
CACHE_BASELINES = ("window", "sink_window", "random", "tempcache")
REGION_BASELINES = ("dasa_random_regions", "random_random_regions", "sink_window_regions")
HISTORY_REGIME = "occlusion"


@dataclass(frozen=True)
class Setting:
    size: int
    dim: int
    depth: int
    heads: int
    train_steps: int        # teacher training steps (fixed: a time budget would make the teacher depend on load)
    clip: int               # frames per training clip
    clips: int              # training clips
    frames: int             # rollout length
    videos: int             # rollouts per regime
    batch: int = 4
    lr: float = 3e-3
    distill_steps: int = 0
    distill_frames: int = 8
    repeats: int = 7
    compile: bool = True


def _setting(ctx: CheckContext) -> Setting:
    return ctx.pick({
        "smoke": Setting(size=32, dim=24, depth=1, heads=2, train_steps=2, clip=4, clips=4, frames=6, videos=2,
                         batch=2, distill_steps=2, distill_frames=4, repeats=2, compile=False),
        "quick": Setting(size=64, dim=48, depth=2, heads=2, train_steps=280, clip=12, clips=64, frames=16,
                         videos=6),
        "full": Setting(size=64, dim=48, depth=3, heads=2, train_steps=800, clip=12, clips=128, frames=20,
                        videos=12, lr=2e-3, distill_steps=200),
        "gpu": Setting(size=128, dim=384, depth=8, heads=4, train_steps=3000, clip=16, clips=128, frames=64,
                       videos=24, distill_steps=300)})


def _cfg(**kw) -> DASAConfig:
    # region size and dilation: None = from the token grid (2×2 and 0 on 8×8; 4×4 on 16×16)
    kw.setdefault("keep_ratio", None if "threshold" in kw else KEEP_RATIO)
    return DASAConfig(keyframe_every=4, count_bias=True, **kw)


# ------------------------------------------------------------------ teacher
def _teacher(ctx: CheckContext) -> ARVideoDiT:
    s = _setting(ctx)
    torch.manual_seed(ctx.seeds[0])
    # copy prior: x̂₀ = previous frame + f(·), f zero at init (inferred; see the README)
    model = ARVideoDiT(VideoDiTConfig(frame_size=s.size, dim=s.dim, depth=s.depth, heads=s.heads,
                                      copy_prior=True))
    # half the clips from the history regime, the rest spread over sparse / medium / pans
    names = [HISTORY_REGIME if i % 2 else ("sparse", "medium", "dense")[(i // 2) % 3] for i in range(s.clips)]
    clips = torch.stack([moving_sprites(r, s.clip, s.size, 10_000 + i).frames
                         for i, r in enumerate(ctx.progress(names, desc="dasa training clips"))])
    with torch_threads(1):
        losses = train_teacher(model, clips, steps=s.train_steps, batch=s.batch, lr=s.lr, seed=ctx.seeds[0])
    tail = float(np.mean(losses[-20:]))
    ctx.metrics["teacher"] = {"steps": len(losses), "first_loss": losses[0], "last_loss_mean20": tail,
                              "params": sum(p.numel() for p in model.parameters()),
                              "curve_mean_per_tenth": [float(np.mean(c)) for c in np.array_split(losses, 10)]}
    ctx.log(f"teacher: {len(losses)} steps, loss {losses[0]:.4f} -> {tail:.4f}")
    return model


# ------------------------------------------------------------------ rollouts
def _videos(ctx: CheckContext, regime: str) -> list:
    s = _setting(ctx)
    return ctx.cache(f"videos:{regime}", lambda: [moving_sprites(regime, s.frames, s.size, 500 + i)
                                                  for i in range(s.videos)])


def _budget(ctx: CheckContext, regime: str) -> dict:
    """DASA's KV memory (its cache-only rollout), as a window length in frames and a keep ratio."""
    ro = _rollout(ctx, regime, "dasa_cache")
    s = _setting(ctx)
    model = ctx.cache("teacher", lambda: _teacher(ctx))
    p, f = model.config.tokens_per_frame, s.frames
    kf_frames = model.config.chunk_frames * len(range(0, f // model.config.chunk_frames, 4))
    rho = (ro["kv_tokens"] - kf_frames * p) / max(1, (f - kf_frames) * p)
    return {"frames": max(1, round(ro["kv_tokens"] / p)), "rho": float(min(1.0, max(1e-3, rho))),
            "kv_tokens": ro["kv_tokens"]}


def _make(ctx: CheckContext, regime: str, name: str):
    """``(cache, generate kwargs)`` of a named policy."""
    depth = ctx.cache("teacher", lambda: _teacher(ctx)).config.depth
    local, full = _cfg(static_policy="local"), _cfg(static_policy="full")
    if name == "dense":
        return DenseKVCache(depth), {"regions": False}
    if name == "prev_chunk":
        return WindowKVCache(depth, 2), {"regions": False}
    if name == "dasa_cache":
        return DynamicKVCache(depth, full), {"cfg": full, "regions": False}
    if name == "dasa":
        return DynamicKVCache(depth, local), {"cfg": local, "regions": True}
    if name == "dasa_random_regions":
        return DynamicKVCache(depth, local), {"cfg": local, "regions": True, "region_policy": "random"}
    if name == "dasa_tau":
        tau = _cfg(threshold=TAU, static_policy="local")
        return DynamicKVCache(depth, tau), {"cfg": tau, "regions": True}
    b = _budget(ctx, regime)
    if name == "window":
        return WindowKVCache(depth, b["frames"]), {"regions": False}
    if name in ("sink_window", "sink_window_regions"):
        pol = SinkWindowKVCache(depth, max(1, b["frames"] - 2), sink_frames=2)
        return pol, ({"cfg": local, "regions": True} if name.endswith("regions") else {"regions": False})
    if name == "random":
        return RandomDropKVCache(depth, b["rho"], seed=0, cfg=full), {"cfg": full, "regions": False}
    if name == "random_random_regions":
        return (RandomDropKVCache(depth, b["rho"], seed=0, cfg=local),
                {"cfg": local, "regions": True, "region_policy": "random"})
    if name == "tempcache":
        return TempCacheMerge(depth, b["rho"]), {"regions": False}
    raise KeyError(name)


def _rollout(ctx: CheckContext, regime: str, name: str) -> dict:
    def run() -> dict:
        model = ctx.cache("teacher", lambda: _teacher(ctx))
        vids = _videos(ctx, regime)
        truth = torch.stack([v.frames for v in vids])
        pol, kw = _make(ctx, regime, name)
        stats: dict = {}
        with torch_threads(1):
            video = model.generate(truth[:, :2], truth.shape[1], policy=pol, stats=stats,
                                   generator=torch.Generator().manual_seed(7), **kw)
        out = {"video": video, "pairs": int(stats["pairs"]), "kv_tokens": int(pol.num_tokens), "cache": pol,
               "psnr_vs_truth": [psnr(video[i], truth[i]) for i in range(len(vids))]}
        if name != "dense":
            dense = _rollout(ctx, regime, "dense")["video"]
            out["psnr_vs_dense"] = [psnr(video[i], dense[i]) for i in range(len(vids))]
        row = {"pairs": out["pairs"], "kv_tokens": out["kv_tokens"],
               "psnr_vs_truth": float(np.mean(out["psnr_vs_truth"]))}
        if "psnr_vs_dense" in out:
            row["psnr_vs_dense"] = float(np.mean(out["psnr_vs_dense"]))
        ctx.metrics.setdefault("rollouts", {}).setdefault(regime, {})[name] = row
        return out
    return ctx.cache(f"rollout:{regime}:{name}", run)


def _psnr_table(ctx: CheckContext, regime: str, names) -> dict:
    return {n: _rollout(ctx, regime, n)["psnr_vs_dense"] for n in names}


# ------------------------------------------------------------------ preconditions
def measure_history_gap(ctx: CheckContext) -> Evidence:
    return Evidence(values=_rollout(ctx, HISTORY_REGIME, "prev_chunk")["psnr_vs_dense"],
                    unit="dB, previous-chunk-only rollout vs dense, per video (occlusion)")


def measure_history_use(ctx: CheckContext) -> Evidence:
    d = _rollout(ctx, HISTORY_REGIME, "dense")["psnr_vs_truth"]
    p = _rollout(ctx, HISTORY_REGIME, "prev_chunk")["psnr_vs_truth"]
    return Evidence(values=[a - b for a, b in zip(d, p)],
                    unit="dB vs the true video, dense − previous-chunk-only, per video (occlusion)",
                    details={"dense_vs_truth": d, "prev_chunk_vs_truth": p})


def measure_teacher_sane(ctx: CheckContext) -> Evidence:
    """Dense rollout vs the truth, minus the trivial video that repeats the last context frame (sparse)."""
    vids = _videos(ctx, "sparse")
    dense = _rollout(ctx, "sparse", "dense")["psnr_vs_truth"]
    still = [psnr(v.frames[1:2].expand_as(v.frames), v.frames) for v in vids]
    return Evidence(values=[a - b for a, b in zip(dense, still)],
                    unit="dB vs the true video, dense rollout − repeating the last context frame, per video (sparse)",
                    details={"dense_vs_truth": dense, "still_vs_truth": still})


SANE = Precondition("the teacher's rollouts beat repeating the last context frame (sparse)", measure_teacher_sane,
                    rules.threshold(">", 0.0, stat="mean", min_n=2))

HISTORY = (
    Precondition("history matters: the previous chunk alone is far from dense (occlusion)", measure_history_gap,
                 rules.threshold("<", HISTORY_PSNR_MAX, stat="mean", min_n=2)),
    Precondition("the teacher uses its history: dense is closer to the truth than previous-chunk-only",
                 measure_history_use, rules.threshold(">", HISTORY_USE_DB, stat="mean", min_n=2)),
    SANE,
)


# ------------------------------------------------------------------ claims
def measure_c1(ctx: CheckContext) -> Evidence:
    regimes = ("sparse", "medium", HISTORY_REGIME)
    ratios = [_rollout(ctx, r, "dense")["pairs"] / _rollout(ctx, r, "dasa")["pairs"] for r in regimes]
    return Evidence(values=ratios, unit="x fewer attended (query, key) pairs, dense / DASA (sparse, medium, "
                                        "occlusion)",
                    details={"kv_tokens_dense": [_rollout(ctx, r, "dense")["kv_tokens"] for r in regimes],
                             "kv_tokens_dasa": [_rollout(ctx, r, "dasa")["kv_tokens"] for r in regimes]})


def _flex_kernel(s: Setting):
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False) if s.compile else None


def measure_c2(ctx: CheckContext) -> Evidence:
    """One chunk's attention over every layer at the end of a medium rollout: DASA = one flex plan (the cache's
    layout is the same in every layer: one dynamics mask is written to all) + per layer 4 denoising steps on the
    compiled block-sparse flex path and the clean re-run over the compressed cache; dense = per layer the same
    5 calls of SDPA over the dense cache."""
    s = _setting(ctx)
    model = ctx.cache("teacher", lambda: _teacher(ctx))
    c = model.config
    dasa_ro, dense_ro = _rollout(ctx, "medium", "dasa"), _rollout(ctx, "medium", "dense")
    cfg = _cfg(static_policy="local").for_grid((c.grid, c.grid))
    tail = patchify(dasa_ro["video"][:, -2:], c.patch).view(s.videos, 2, c.tokens_per_frame, -1)
    rm = region_mask(token_dynamics(tail[:, 0], tail[:, 1]), (c.grid, c.grid), cfg)
    n, hd = c.chunk_frames * c.tokens_per_frame, c.dim // c.heads
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(s.videos, c.heads, n, hd, generator=g) for _ in range(3))
    kernel = _flex_kernel(s)
    dasa_cache, dense_cache = dasa_ro["cache"], dense_ro["cache"]
    layers = range(c.depth)

    def dasa_chunk():
        plan = plan_flex(dasa_cache, 0, rm, cfg, n)
        for layer in layers:
            for _ in range(4):
                dasa_attention_flex(q, k, v, dasa_cache, layer, rm, cfg, plan=plan, kernel=kernel)
            dasa_attention(q, k, v, dasa_cache, layer, None, cfg)

    def dense_chunk():
        for layer in layers:
            kd, vd, _, _ = dense_cache.get(layer)
            for _ in range(5):
                F.scaled_dot_product_attention(q, torch.cat([kd, k], 2), torch.cat([vd, v], 2))

    dense_plan = plan_flex(dense_cache, 0, None, cfg, n)

    def flex_dense_chunk():
        for layer in layers:
            for _ in range(5):
                dasa_attention_flex(q, k, v, dense_cache, layer, None, cfg, plan=dense_plan, kernel=kernel)

    def gather_chunk():
        for layer in layers:
            for _ in range(4):
                dasa_attention(q, k, v, dasa_cache, layer, rm, cfg)
            dasa_attention(q, k, v, dasa_cache, layer, None, cfg)

    main = measure.timeit_pair(dasa_chunk, dense_chunk, repeats=s.repeats, threads=1)
    same_kernel = measure.timeit_pair(dasa_chunk, flex_dense_chunk, repeats=s.repeats, threads=1)
    gather = measure.timeit_pair(gather_chunk, dense_chunk, repeats=s.repeats, threads=1)
    ctx.log(f"C2 attention per chunk: dense SDPA / DASA flex {main.summary()}; flex dense / DASA flex "
            f"{same_kernel.summary()}; dense SDPA / DASA gather {gather.summary()}")
    ev = main.evidence("x (dense SDPA time / DASA block-sparse flex time, one chunk's attention in every layer, per "
                       "interleaved pair)")
    ev.details.update({"same_kernel_flex_dense_over_dasa": same_kernel.record(),
                       "gather_path_dense_over_dasa": gather.record(), "compiled": s.compile,
                       "kv_tokens": {"dasa": dasa_cache.num_tokens, "dense": dense_cache.num_tokens},
                       "block_sparsity_percent": float(plan_flex(dasa_cache, 0, rm, cfg, n).block_mask.sparsity())})
    return ev


def measure_c3(ctx: CheckContext) -> Evidence:
    table = _psnr_table(ctx, HISTORY_REGIME, ("dasa_cache",) + CACHE_BASELINES)
    diffs = [a - b for bl in CACHE_BASELINES for a, b in zip(table["dasa_cache"], table[bl])]
    kv = {n: _rollout(ctx, HISTORY_REGIME, n)["kv_tokens"] for n in ("dasa_cache",) + CACHE_BASELINES}
    return Evidence(values=diffs, unit="dB, PSNR vs dense: DASA cache alone − each baseline, per video (occlusion)",
                    details={**table, "kv_tokens": kv, "budget": _budget(ctx, HISTORY_REGIME),
                             "psnr_vs_truth": {n: _rollout(ctx, HISTORY_REGIME, n)["psnr_vs_truth"]
                                               for n in ("dense", "prev_chunk", "dasa_cache") + CACHE_BASELINES}})


def measure_c4(ctx: CheckContext) -> Evidence:
    vids = _videos(ctx, HISTORY_REGIME)
    scores = {}
    for name in ("dense", "dasa"):
        video = _rollout(ctx, HISTORY_REGIME, name)["video"]
        per = [mini_vbench(video[i], vids[i].static_mask, vids[i].background) for i in range(len(vids))]
        scores[name] = {k: float(np.mean([p[k] for p in per])) for k in per[0]}
    keys = sorted(scores["dense"])
    return Evidence(values=[abs(scores["dasa"][k] / scores["dense"][k] - 1) for k in keys],
                    unit="|mini-VBench(DASA) / mini-VBench(dense) − 1| per score (occlusion)",
                    details={"scores": keys, "dense": scores["dense"], "dasa": scores["dasa"]})


def measure_c5(ctx: CheckContext) -> Evidence:
    kr = {r: _rollout(ctx, r, "dense")["pairs"] / _rollout(ctx, r, "dasa_tau")["pairs"] for r in ("sparse", "dense")}
    return Evidence(values=[kr["dense"] / kr["sparse"]],
                    unit="keys saving on pans / keys saving on sparse (threshold mode, τ = 0.1)",
                    details={"psnr_dense_pan": float(np.mean(_rollout(ctx, "dense", "dasa_tau")["psnr_vs_dense"])),
                             "keys_ratio_sparse": kr["sparse"], "keys_ratio_pan": kr["dense"],
                             "kv_tokens": {r: _rollout(ctx, r, "dasa_tau")["kv_tokens"] for r in ("sparse", "dense")}})


def measure_c7(ctx: CheckContext) -> Evidence:
    table = _psnr_table(ctx, HISTORY_REGIME, ("dasa",) + REGION_BASELINES)
    diffs = [a - b for bl in REGION_BASELINES for a, b in zip(table["dasa"], table[bl])]
    dense_pairs = _rollout(ctx, HISTORY_REGIME, "dense")["pairs"]
    pairs = {n: _rollout(ctx, HISTORY_REGIME, n)["pairs"] for n in ("dasa",) + REGION_BASELINES}
    return Evidence(values=diffs, unit="dB, PSNR vs dense: DASA − each region-path baseline, per video (occlusion)",
                    details={**table, "pairs": pairs,
                             "pairs_over_dasa": {n: p / pairs["dasa"] for n, p in pairs.items()},
                             "dense_over_dasa_pairs": dense_pairs / pairs["dasa"]})


def _distill(ctx: CheckContext) -> dict:
    s = _setting(ctx)
    teacher = ctx.cache("teacher", lambda: _teacher(ctx))
    cfg = _cfg(static_policy="local")
    contexts = torch.stack([moving_sprites(HISTORY_REGIME if i % 2 else "medium", 2, s.size, 700 + i).frames
                            for i in range(8)])
    evals = torch.stack([moving_sprites(HISTORY_REGIME, 2, s.size, 800 + i).frames for i in range(s.videos)])
    depth = teacher.config.depth
    with torch_threads(1):
        ref = teacher.generate(evals, s.frames, generator=torch.Generator().manual_seed(3))
        free = teacher.generate(evals, s.frames, policy=DynamicKVCache(depth, cfg), cfg=cfg,
                                generator=torch.Generator().manual_seed(3))
    out = {"free": [psnr(free[i], ref[i]) for i in range(len(evals))]}
    curves = {}
    for name, lam in ctx.progress((("uniform", 0.0), ("weighted", 1.0)), desc="dasa distillation"):
        student = copy_model(teacher)
        with torch_threads(1):
            res = dynamics_guided_distill(student, teacher, contexts, cfg, steps=s.distill_steps, lr=5e-5,
                                          weight_lambda=lam, num_frames=s.distill_frames, seed=ctx.seeds[0])
            vid = student.generate(evals, s.frames, policy=DynamicKVCache(depth, cfg), cfg=cfg,
                                   generator=torch.Generator().manual_seed(3))
        out[name] = [psnr(vid[i], ref[i]) for i in range(len(evals))]
        curves[name] = [float(np.mean(c)) for c in np.array_split(res["losses"], min(10, len(res["losses"])))]
    ctx.metrics["distill_psnr_vs_teacher"] = {k: float(np.mean(v)) for k, v in out.items()}
    ctx.metrics["distill_loss_curves"] = curves
    return out


def measure_c6(ctx: CheckContext) -> Evidence:
    d = ctx.cache("distill", lambda: _distill(ctx))
    return Evidence(values=[a - b for a, b in zip(d["weighted"], d["uniform"])],
                    unit="dB, PSNR vs teacher rollout: dynamics-weighted − uniform distillation, per video (occlusion)",
                    details=d)


def measure_gap(ctx: CheckContext) -> Evidence:
    return Evidence(values=ctx.cache("distill", lambda: _distill(ctx))["free"],
                    unit="dB, training-free DASA rollout vs teacher rollout, per video (occlusion)")


def measure_distill_helps(ctx: CheckContext) -> Evidence:
    d = ctx.cache("distill", lambda: _distill(ctx))
    return Evidence(values=[a - b for a, b in zip(d["uniform"], d["free"])],
                    unit="dB, uniform-distilled − training-free DASA, PSNR vs teacher, per video")


def measure_s1(ctx: CheckContext) -> Evidence:
    """The flex path against the gather path on a real rollout cache (DASA, occlusion, every layer)."""
    model = ctx.cache("teacher", lambda: _teacher(ctx))
    c = model.config
    ro = _rollout(ctx, HISTORY_REGIME, "dasa")
    cfg = _cfg(static_policy="local").for_grid((c.grid, c.grid))
    tail = patchify(ro["video"][:, -2:], c.patch).view(ro["video"].shape[0], 2, c.tokens_per_frame, -1)
    rm = region_mask(token_dynamics(tail[:, 0], tail[:, 1]), (c.grid, c.grid), cfg)
    n, hd = c.chunk_frames * c.tokens_per_frame, c.dim // c.heads
    g = torch.Generator().manual_seed(1)
    diffs = []
    for layer in range(c.depth):
        q, k, v = (torch.randn(ro["video"].shape[0], c.heads, n, hd, generator=g) for _ in range(3))
        a = dasa_attention(q, k, v, ro["cache"], layer, rm, cfg)
        b = dasa_attention_flex(q, k, v, ro["cache"], layer, rm, cfg)
        diffs.append(float((a - b).abs().max()))
    return Evidence(values=diffs, unit="max |flex − gather| per layer (DASA cache after an occlusion rollout)")


DISTILL_PRE = HISTORY + (
    Precondition("the student starts from a measurable gap (training-free DASA vs teacher)", measure_gap,
                 rules.threshold("<", GAP_PSNR_MAX, stat="mean", min_n=2)),
    Precondition("distillation helps at all (uniform beats training-free)", measure_distill_helps,
                 rules.threshold(">", 0.0, stat="mean", min_n=2)),
)

CLAIMS = (
    Claim(id="C1", statement="DASA's compressed cache and region allocation cut attention work.",
          paper_value="2.16x speed-up (VBench); attended keys not reported",
          metric="dense / DASA attended (q, k) pairs over a rollout, sparse, medium and occlusion regimes",
          rule=rules.threshold(">=", KEYS_RATIO_MIN, stat="min", refute=("<", KEYS_REFUTE), min_n=3),
          measure=measure_c1, scales=("quick", "full", "gpu")),
    Claim(id="C2", statement="DASA accelerates autoregressive video generation (its attention, here).",
          paper_value="2.16x end to end (VBench, GPU)",
          metric="one chunk's attention in every layer (4 steps + clean re-run) at the end of a medium rollout: "
                 "dense SDPA time / DASA block-sparse flex_attention time (compiled), interleaved, 1 thread",
          rule=rules.ratio_at_least(SPEEDUP_MIN, min_n=7), measure=measure_c2, scales=("full", "gpu")),
    Claim(id="C3", statement="The dynamic-only KV cache keeps fidelity better than other cache policies at equal "
                             "KV memory (static-region path off: the cache alone).",
          paper_value="'high visual fidelity' (no baselines stated)",
          metric="PSNR vs dense (dB, per video, occlusion): DASA cache − window, sink + window, random drop, "
                 "TempCache at DASA's KV memory",
          rule=rules.all_of(*(rules.better("dasa_cache", b, margin=FIDELITY_MARGIN_DB, min_n=MIN_VIDEOS, test="t")
                              for b in CACHE_BASELINES)),
          measure=measure_c3, scales=("quick", "full", "gpu"), preconditions=HISTORY),
    Claim(id="C4", statement="Visual quality is preserved (VBench).",
          paper_value="'high visual fidelity' (VBench deltas not found)",
          metric="mini-VBench of DASA relative to dense (occlusion)",
          rule=rules.threshold("<=", VBENCH_TOL, stat="max", min_n=2), measure=measure_c4,
          scales=("quick", "full", "gpu"), preconditions=HISTORY),
    Claim(id="C5", statement="Motion-driven: the saving shrinks on dense motion (camera pans) without collapse "
                             "(threshold mode: the keep set adapts to motion).",
          paper_value="(inferred from 'motion confined to sparse areas')",
          metric="keys saving on pans / on sparse, DASA with τ = 0.1; DASA PSNR vs dense on pans",
          rule=rules.all_of(rules.threshold("<=", PAN_KEYS_FRACTION_MAX, stat="value", min_n=1),
                            rules.on("psnr_dense_pan", rules.threshold(">=", PAN_PSNR_MIN, stat="value", min_n=1))),
          measure=measure_c5, scales=("quick", "full", "gpu"), preconditions=(SANE,)),
    Claim(id="C6", statement="Dynamics-guided distillation improves on plain (uniform) distillation.",
          paper_value="'enhances performance' (no numbers)",
          metric="PSNR vs teacher rollout, dynamics-weighted − uniform distillation (dB, per video, occlusion)",
          rule=rules.better(margin=DISTILL_MARGIN_DB, min_n=MIN_VIDEOS, test="t"), measure=measure_c6,
          scales=("full", "gpu"), compares_trained=True, preconditions=DISTILL_PRE,
          tuning="fixed and the same for both arms (not tuned: CPU budget): AdamW peak lr 5e-5, 10 % warm-up, "
                 "cosine to 0, clip 1, 200 steps at full"),
    Claim(id="C7", statement="Region-level allocation by dynamics beats allocation without it at equal attended "
                             "pairs.",
          paper_value="(concept in the abstract; no numbers)",
          metric="PSNR vs dense (dB, per video, occlusion): DASA − DASA cache with random regions, random drop with "
                 "random regions, sink + window on the same region path",
          rule=rules.all_of(*(rules.better("dasa", b, margin=FIDELITY_MARGIN_DB, min_n=MIN_VIDEOS, test="t")
                              for b in REGION_BASELINES)),
          measure=measure_c7, scales=("quick", "full", "gpu"), preconditions=HISTORY),
    Claim(id="S1", statement="The block-sparse flex_attention path computes the gather path's attention.",
          paper_value="-", metric="max |flex − gather| over layers", kind="sanity",
          rule=rules.threshold("<=", FLEX_MAX_ABS, stat="max", min_n=1), measure=measure_s1,
          scales=("quick", "full", "gpu")),
)

PAPER = Paper(id="P15", slug="dasa",
              method="Dynamics-Aware Sparse Attention",
              title="DASA: Dynamics-Aware Sparse Attention for autoregressive video diffusion", arxiv=None,
              claims=CLAIMS, default_seeds={"smoke": 1, "quick": 1, "full": 1, "gpu": 1},
              full_budget_cpu_s=None)
