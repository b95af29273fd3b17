"""Claim check for P16 smartres: pixel-space resolution routing vs token reduction on one mini MLLM.

Data: :class:`SyntheticEgoGrounding` (train and test scenes on separate seeds). One backbone
(:class:`MiniGroundingMLLM`) is trained once per run on mixed-resolution sequences and shared by every
method; routers (BCE, focal, BCE + margin) are trained on its frozen low-view features, one per seed.
Budget: SmartRes with k = 2 regions (k_min = k_max = 2) = N_L + 2·N_region LLM tokens (96 of 256 at 128²);
every token-reduction baseline is set to the same count at the LM head (FastV and SparseVLM at LM block 1 of
3, after all tokens went through block 0). Latency: median of 5 (process clock, 1 thread), batch 1 and 32,
low-view pass and router included. FLOPs: ``torch.utils.flop_counter.FlopCounterMode`` at batch 1.

Scales: smoke 64² (patch 8, d 32, 2+2 blocks, 10 steps: exercises the code only); quick 64² (patch 8: 64
full-res tokens, 16 global, 4 per 16-px region, so k = 2 is again 62.5 % fewer tokens; d 48, 3+3 blocks, 300
steps of batch 16, 800 training scenes, 400 test scenes — far below the spec's training, see the README);
full the spec's 128² protocol (d 96, 3+3 blocks, 2000 steps of 32, 5000 training scenes, 2000 test scenes,
3 router seeds, bootstrap intervals); gpu the spec's 512² variant (patch 16, d 384, 6+6 blocks), latency at
batch 64 (written, not run: no GPU was lent; the model is not moved to ``ctx.device`` yet).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, measure, rules, torch_threads

from .baselines import (
    low_confidence,
    run_fastv,
    run_full,
    run_global_selector,
    run_low,
    run_smartres,
    run_sparsevlm,
    run_tome,
    run_visionzip,
)
from .data import SyntheticEgoGrounding, region_labels
from .metrics import foreground_recall_at_k, paired_iou
from .model import MiniGroundingMLLM, MLLMConfig, SmartRes
from .training import low_features, make_pool, train_backbone, train_router

# ---------------------------------------------------------------- criteria (fixed before running, 2026-12-01)
RETENTION_MIN = 0.80            # C1: Acc@0.5(SmartRes) / Acc@0.5(full) at k = 2
REDUCTION_MIN = 0.60            # C1: 1 - tokens(SmartRes) / tokens(full)
FULL_ACC_MIN = 0.25             # C1 precondition: the backbone grounds at all (else inconclusive)
GAP_MIN_PP, GAP_REFUTE_PP = 2.0, -2.0   # C2: min over baselines of Acc@0.5 gap, percentage points
SPEEDUP_MIN, SPEEDUP_REFUTE = 1.3, 1.0  # C3: latency(baseline) / latency(SmartRes), every baseline and batch
RECALL_SE = 2.0                 # C5: recall@2(margin) - recall@2(BCE) beyond 2 SE

TOKEN_REDUCTION = ("fastv", "tome", "sparsevlm", "visionzip")
SCORE_BASED = ("fastv", "sparsevlm", "visionzip")


def _config(ctx: CheckContext) -> MLLMConfig:
    return ctx.pick({
        "smoke": MLLMConfig(image_size=64, patch=8, dim=32, heads=2, vit_blocks=2, lm_blocks=2, region_px=16),
        "quick": MLLMConfig(image_size=64, patch=8, dim=48, heads=4, vit_blocks=3, lm_blocks=3, region_px=16),
        "full": MLLMConfig(image_size=128, patch=8, dim=96, heads=4, vit_blocks=3, lm_blocks=3, region_px=32),
        "gpu": MLLMConfig(image_size=512, patch=16, dim=384, heads=6, vit_blocks=6, lm_blocks=6, region_px=128)})


def _settings(ctx: CheckContext) -> dict[str, Any]:
    return ctx.pick({
        "smoke": {"n_train": 32, "n_test": 32, "steps": 10, "batch": 8, "router_steps": 10, "lat_batches": (1, 8)},
        "quick": {"n_train": 800, "n_test": 400, "steps": 300, "batch": 16, "router_steps": 200,
                  "lat_batches": (1, 32)},
        "full": {"n_train": 5000, "n_test": 2000, "steps": 2000, "batch": 32, "router_steps": 1000,
                 "lat_batches": (1, 32)},
        "gpu": {"n_train": 5000, "n_test": 2000, "steps": 3000, "batch": 64, "router_steps": 1000,
                "lat_batches": (1, 64)}})


def _budget(c: MLLMConfig) -> dict[str, int]:
    n_low, n_full, n_r = c.low_grid ** 2, c.full_grid ** 2, c.region_tokens
    keep = n_low + 2 * n_r
    recycle = max(1, keep // 12)
    n_ctx = max(1, keep // 6)
    return {"n_low": n_low, "n_full": n_full, "keep": keep, "sv_keep": keep - recycle, "sv_recycle": recycle,
            "vz_dom": keep - n_ctx, "vz_ctx": n_ctx}


# ------------------------------------------------------------------------------- shared, expensive work
def _trained(ctx: CheckContext) -> dict[str, Any]:
    """Scenes, the backbone, and one router per (seed, loss) — computed once, read by every claim."""
    c, s = _config(ctx), _settings(ctx)
    seed0 = ctx.seeds[0]
    prog = lambda it, desc: ctx.progress(it, desc=desc)  # noqa: E731
    train = make_pool(SyntheticEgoGrounding(s["n_train"], size=c.image_size, seed=1000 + seed0), prog, "train scenes")
    test = make_pool(SyntheticEgoGrounding(s["n_test"], size=c.image_size, seed=9_000_000 + seed0), prog, "test scenes")
    torch.manual_seed(seed0)
    model = MiniGroundingMLLM(c)
    log = train_backbone(model, train, steps=s["steps"], batch=s["batch"], seed=seed0, progress=prog)
    ctx.metrics["backbone_loss"] = {"first": log.losses[0], "last10_mean": float(np.mean(log.losses[-10:]))}
    ctx.log(f"backbone: loss {log.losses[0]:.3f} -> {np.mean(log.losses[-10:]):.3f} over {s['steps']} steps")
    feats, qemb = low_features(model, train)
    routers = {}
    for seed in ctx.progress(ctx.seeds, desc="routers"):
        for loss in ("bce", "focal", "margin"):
            routers[(seed, loss)] = train_router(model, feats, qemb, train.boxes, loss=loss,
                                                 steps=s["router_steps"], seed=seed)
    # the global selector's threshold: the confidence quantile that sends the budget's share to full res
    b = _budget(c)
    with torch.no_grad():
        conf = torch.cat([low_confidence(model, *train.batch(torch.arange(i, min(i + 128, len(train))))[:2])
                          for i in range(0, min(len(train), 512), 128)])
    share = (b["keep"] - b["n_low"]) / (b["n_full"] - b["n_low"])
    threshold = float(torch.quantile(conf, share))
    return {"config": c, "train": train, "test": test, "model": model, "routers": routers,
            "selector_threshold": threshold, "budget": b}


def _smartres(t: dict, seed: int, loss: str = "margin", k: int | None = 2) -> SmartRes:
    c = t["config"]
    if k is None:
        return SmartRes(t["model"], t["routers"][(seed, loss)], c.lowres_scale, c.region_px)
    return SmartRes(t["model"], t["routers"][(seed, loss)], c.lowres_scale, c.region_px, k_min=k, k_max=k)


def _methods(t: dict, seed: int) -> dict[str, Any]:
    """name -> fn(images, query) -> MethodOutput, all at the same LLM-token budget except the references."""
    m, b = t["model"], t["budget"]
    sr, sr_tau, sr_bce = _smartres(t, seed), _smartres(t, seed, k=None), _smartres(t, seed, "bce")
    return {
        "smartres": lambda im, q: run_smartres(sr, im, q),
        "smartres_tau": lambda im, q: run_smartres(sr_tau, im, q),
        "smartres_bce": lambda im, q: run_smartres(sr_bce, im, q),
        "fastv": lambda im, q: run_fastv(m, im, q, keep=b["keep"], layer=1),
        "tome": lambda im, q: run_tome(m, im, q, target=b["keep"]),
        "sparsevlm": lambda im, q: run_sparsevlm(m, im, q, keep=b["sv_keep"], recycle=b["sv_recycle"], layer=1),
        "visionzip": lambda im, q: run_visionzip(m, im, q, n_dominant=b["vz_dom"], n_contextual=b["vz_ctx"]),
        "global_selector": lambda im, q: run_global_selector(m, im, q, t["selector_threshold"]),
        "low": lambda im, q: run_low(m, im, q),
        "full": lambda im, q: run_full(m, im, q),
    }


def _accuracy(ctx: CheckContext) -> dict[int, dict[str, dict[str, float]]]:
    """Per seed and method: Acc@0.5 overall / small / medium, Acc@0.3, mean ViT and LLM tokens per query."""
    t = ctx.cache("trained", lambda: _trained(ctx))
    test = t["test"]
    out: dict[int, dict[str, dict[str, float]]] = {}
    shared: dict[str, dict[str, float]] = {}
    for seed in ctx.progress(ctx.seeds, desc="evaluation"):
        out[seed] = {}
        for name, fn in _methods(t, seed).items():
            if not name.startswith("smartres") and name in shared:     # the backbone is shared: same numbers
                out[seed][name] = shared[name]
                continue
            ious, vit, llm = [], 0, 0
            with torch.no_grad():
                for i in range(0, len(test), 64):
                    idx = torch.arange(i, min(i + 64, len(test)))
                    images, query, boxes = test.batch(idx)
                    res = fn(images, query)
                    ious.append(paired_iou(res.boxes, boxes))
                    vit, llm = vit + res.vit_tokens, llm + res.llm_tokens
            iou = torch.cat(ious)
            small = test.small
            out[seed][name] = {"acc50": float((iou >= 0.5).float().mean()), "acc30": float((iou >= 0.3).float().mean()),
                               "acc50_small": float((iou[small] >= 0.5).float().mean()),
                               "acc50_medium": float((iou[~small] >= 0.5).float().mean()),
                               "vit_tokens": vit / len(test), "llm_tokens": llm / len(test),
                               "ci95_acc50": _bootstrap(iou >= 0.5, seed)}
            if not name.startswith("smartres"):
                shared[name] = out[seed][name]
    ctx.metrics["accuracy"] = {str(s): v for s, v in out.items()}
    _plot_accuracy(ctx, out)
    return out


def _bootstrap(hits: torch.Tensor, seed: int, n: int = 500) -> list[float]:
    rng = np.random.default_rng(seed)
    h = hits.float().numpy()
    means = h[rng.integers(0, len(h), (n, len(h)))].mean(1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def _plot_accuracy(ctx: CheckContext, acc: dict) -> None:
    names = list(next(iter(acc.values())).keys())
    fig, ax = ctx.figure(figsize=(7, 4))
    for key, marker in (("acc50", "o"), ("acc50_small", "s")):
        for name in names:
            ys = [acc[s][name][key] for s in acc]
            x = acc[ctx.seeds[0]][name]["llm_tokens"]
            ax.errorbar(x, np.mean(ys), yerr=np.std(ys) if len(ys) > 1 else None, fmt=marker,
                        label=f"{name} ({'all' if key == 'acc50' else 'small'})")
    ax.set_xlabel("visual tokens seen by the LLM (per query)")
    ax.set_ylabel("Acc@0.5")
    ax.legend(fontsize=6, ncol=2)
    ctx.save_figure(fig, "accuracy_vs_tokens.png",
                    caption="Acc@0.5 (all and small targets) vs LLM tokens; error bars: std over router seeds")


def _latency(ctx: CheckContext) -> dict[str, Any]:
    """Median latency per method and batch size (process clock, 1 thread), and FLOPs at batch 1."""
    from torch.utils.flop_counter import FlopCounterMode

    t = ctx.cache("trained", lambda: _trained(ctx))
    methods = _methods(t, ctx.seeds[0])
    names = ("smartres", "fastv", "sparsevlm", "visionzip", "tome", "full")
    lat: dict[str, dict[str, float]] = {n: {} for n in names}
    flops: dict[str, int] = {}
    repeats = ctx.pick({"smoke": 2, "quick": 5, "full": 9, "gpu": 20})
    for bsz in _settings(ctx)["lat_batches"]:
        images, query, _ = t["test"].batch(torch.arange(min(bsz, len(t["test"]))))
        with torch.no_grad(), torch_threads(1):
            for n in ctx.progress(names, desc=f"latency b={bsz}"):
                timing = measure.timeit(lambda n=n, im=images, q=query: methods[n](im, q), warmup=1, repeats=repeats)
                lat[n][str(bsz)] = timing.median
    images, query, _ = t["test"].batch(torch.arange(1))
    with torch.no_grad():
        for n in names:
            counter = FlopCounterMode(display=False)
            with counter:
                methods[n](images, query)
            flops[n] = int(counter.get_total_flops())
    res = {"latency_s": lat, "flops_b1": flops}
    ctx.metrics["latency"] = res
    return res


# --------------------------------------------------------------------------------------------- measures
def measure_c1(ctx: CheckContext) -> Evidence:
    acc = ctx.cache("accuracy", lambda: _accuracy(ctx))
    b = ctx.cache("trained", lambda: _trained(ctx))["budget"]
    ret = [acc[s]["smartres"]["acc50"] / max(acc[s]["full"]["acc50"], 1e-9) for s in ctx.seeds]
    full = acc[ctx.seeds[0]]["full"]["acc50"]
    return Evidence(values=ret, unit="Acc@0.5 retention (SmartRes k=2 / full res), per router seed",
                    details={"acc_full": full, "token_reduction": 1 - b["keep"] / b["n_full"],
                             "acc_smartres": [acc[s]["smartres"]["acc50"] for s in ctx.seeds],
                             "acc_low": acc[ctx.seeds[0]]["low"]["acc50"],
                             "smartres_tau_tokens": [acc[s]["smartres_tau"]["llm_tokens"] for s in ctx.seeds],
                             "smartres_tau_acc50": [acc[s]["smartres_tau"]["acc50"] for s in ctx.seeds]})


def measure_c2(ctx: CheckContext) -> Evidence:
    acc = ctx.cache("accuracy", lambda: _accuracy(ctx))
    gaps, small_minus_all, per = [], [], {}
    for s in ctx.seeds:
        a = acc[s]
        g_all = {n: 100 * (a["smartres"]["acc50"] - a[n]["acc50"]) for n in TOKEN_REDUCTION}
        g_small = {n: 100 * (a["smartres"]["acc50_small"] - a[n]["acc50_small"]) for n in TOKEN_REDUCTION}
        gaps.append(min(g_all.values()))
        small_minus_all.append(min(g_small.values()) - min(g_all.values()))
        per[str(s)] = {"all": g_all, "small": g_small}
    return Evidence(values=gaps, unit="pp, min over FastV/ToMe/SparseVLM/VisionZip of Acc@0.5(SmartRes) - Acc@0.5(b)",
                    details={"small_minus_all": small_minus_all, "gaps": per})


def measure_c3(ctx: CheckContext) -> Evidence:
    lat = ctx.cache("latency", lambda: _latency(ctx))
    L = lat["latency_s"]
    ratios, names = [], []
    for n in SCORE_BASED:
        for bsz in L["smartres"]:
            ratios.append(L[n][bsz] / L["smartres"][bsz])
            names.append(f"{n}@b{bsz}")
    f = lat["flops_b1"]
    return Evidence(values=ratios, unit="x, median latency(baseline) / latency(SmartRes k=2), per baseline and batch",
                    details={"cells": names, "flops_ratio": {n: f[n] / f["smartres"] for n in f},
                             "latency_s": L})


def measure_c4(ctx: CheckContext) -> Evidence:
    acc = ctx.cache("accuracy", lambda: _accuracy(ctx))
    lat = ctx.cache("latency", lambda: _latency(ctx))["latency_s"]
    big = max(lat["smartres"], key=int)
    a = {n: float(np.mean([acc[s][n]["acc50"] for s in ctx.seeds])) for n in ("smartres", *TOKEN_REDUCTION)}
    dominated = [float(a[n] >= a["smartres"] and lat[n][big] <= lat["smartres"][big]) for n in TOKEN_REDUCTION]
    return Evidence(values=dominated, unit="1 if the baseline matches SmartRes Acc@0.5 with <= latency, per baseline",
                    details={"baselines": list(TOKEN_REDUCTION), "acc50": a, "batch": int(big)})


def measure_c5(ctx: CheckContext) -> Evidence:
    t = ctx.cache("trained", lambda: _trained(ctx))
    c, test, model = t["config"], t["test"], t["model"]
    feats, qemb = low_features(model, test)
    fg = region_labels(test.boxes, c.image_size, c.region_grid)
    diffs, table = [], {}
    with torch.no_grad():
        for s in ctx.seeds:
            rec = {}
            for loss in ("bce", "focal", "margin"):
                logits = t["routers"][(s, loss)](feats, (c.low_grid, c.low_grid), qemb, c.region_grid)
                rec[loss] = {"recall@1": foreground_recall_at_k(logits, fg, 1),
                             "recall@2": foreground_recall_at_k(logits, fg, 2)}
            diffs.append(rec["margin"]["recall@2"] - rec["bce"]["recall@2"])
            table[str(s)] = rec
    ctx.metrics["router_recall"] = table
    return Evidence(values=diffs, unit="recall@2(BCE + margin) - recall@2(BCE), per router seed",
                    details={"recall": table})


CLAIMS = (
    Claim(id="C1", statement="SmartRes reduces visual tokens by up to 67% while retaining 86.4% of "
                             "full-resolution performance.",
          paper_value="-67% tokens, 86.4% retention (Ego4D, EgoIntention)",
          metric="Acc@0.5 retention of SmartRes (k = 2 regions) vs full resolution, at 62.5% fewer tokens",
          rule=rules.provided(rules.on("acc_full", rules.threshold(">=", FULL_ACC_MIN, stat="value", min_n=1)),
                              rules.all_of(rules.threshold(">=", RETENTION_MIN, min_n=1),
                                           rules.on("token_reduction",
                                                    rules.threshold(">=", REDUCTION_MIN, stat="value", min_n=1)))),
          measure=measure_c1, scales=("quick", "full", "gpu")),
    Claim(id="C2", statement="SmartRes has higher accuracy than token-reduction methods at equal tokens, "
                             "most on small objects.",
          paper_value="higher accuracy than FastV / SparseVLM / VisionZip; strong small-object grounding",
          metric="min over FastV, ToMe, SparseVLM, VisionZip of the Acc@0.5 gap (pp) at equal LLM tokens",
          rule=rules.decisive(rules.all_of(rules.threshold(">=", GAP_MIN_PP, min_n=1),
                                           rules.on("small_minus_all", rules.threshold(">=", 0.0, min_n=1))),
                              rules.threshold("<=", GAP_REFUTE_PP, min_n=1)),
          measure=measure_c2, scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="SmartRes is up to 1.66x faster than state-of-the-art token reduction.",
          paper_value="1.66x (vs token reduction)",
          metric="median end-to-end latency ratio vs FastV, SparseVLM, VisionZip at batch 1 and 32 (CPU, 1 thread)",
          rule=rules.threshold(">=", SPEEDUP_MIN, stat="min", refute=("<", SPEEDUP_REFUTE), min_n=1),
          measure=measure_c3, scales=("quick", "full", "gpu")),
    Claim(id="C4", statement="No token-reduction baseline matches SmartRes accuracy at equal tokens with "
                             "equal or lower latency (the spec's refutation test).",
          paper_value="(implied by 'faster with higher accuracy')",
          metric="per baseline: 1 if Acc@0.5 >= SmartRes and latency <= SmartRes at the large batch",
          rule=rules.threshold("<=", 0.0, stat="max", min_n=1), measure=measure_c4, scales=("quick", "full", "gpu")),
    Claim(id="C5", statement="The margin-regularised objective raises foreground recall over BCE.",
          paper_value="higher FG-BG separation and FG recall (no number)",
          metric="router recall@2 on test scenes, BCE + margin minus BCE, per router seed",
          rule=rules.beyond_se(RECALL_SE, min_n=3), measure=measure_c5, scales=("quick", "full", "gpu")),
)

PAPER = Paper(id="P16", slug="smartres",
              method="SmartRes resolution routing",
              title="SmartRes: dynamic resolution routing for egocentric visual grounding", arxiv=None,
              claims=CLAIMS,
              default_seeds={"smoke": 1, "quick": 3, "full": 3, "gpu": 3})
