"""Claim check for P16 smartres: pixel-space resolution routing vs token reduction on one mini MLLM.

Data: :class:`SyntheticEgoGrounding`, train / validation / test scenes on three separate seeds. One backbone
(:class:`MiniGroundingMLLM`) is trained once per run on mixed-resolution sequences (cached across claims) and
shared by every method; its full-resolution Acc@0.5 on the test scenes is measured inside the check and is the
precondition of every accuracy claim (a backbone that does not ground cannot tell the methods apart). Routers
(BCE, focal, BCE + margin) are trained on its frozen low-view features, one per seed and loss.

Equal tuning: every arm of the accuracy comparison gets a grid of the same size, scored on the validation
scenes (``claims.tune_arms``): SmartRes the router's learning rate, FastV and SparseVLM the LM block they prune
at, VisionZip the dominant / contextual split, ToMe the similarity it matches on. The router losses of C5 get
the same learning-rate grid, scored on validation recall@2.

Budget: SmartRes at k = 2 regions (k_min = k_max = 2) = N_L + 2·N_region LLM tokens (96 of 256 at 128²); every
token-reduction baseline reaches the LM head with the same count. FastV and SparseVLM score from the text-token
rows of the attention only (as their papers do). Latency: ``measure.timeit_pair`` (SmartRes and one baseline
interleaved in one process, 1 thread, process clock), on two geometries: the spec's (3 ViT : 3 LM blocks, the
trained backbone) and an LM-dominated one (3 ViT : 12 LM blocks, untrained weights: cost does not depend on
the weights), where FastV and SparseVLM prune at LM block 2 (the paper's K = 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, measure, preconditions, rules, tune_arms

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
from .router import ResolutionRouter
from .training import ScenePool, low_features, make_pool, train_backbone, train_router

# ----------------------------------------------- criteria (fixed before running; C1-C4 restated 2026-12-02)
FULL_ACC_MIN = 0.25             # C1, C2, C4 precondition: full-resolution Acc@0.5 of the backbone (test scenes)
FULL_SMALL_ACC_MIN = 0.10       # C2 precondition: the backbone grounds small targets at full resolution
RETENTION_MIN = 0.80            # C1: Acc@0.5(SmartRes) >= 0.80 Acc@0.5(full), interval of the per-scene difference
REDUCTION_MIN = 0.60            # C1: 1 - tokens(SmartRes) / tokens(full)
SMALL_GAP_MIN = 0.02            # C2: Acc@0.5 gap on small targets, every token-reduction baseline (2 pp)
NOT_MATCHED_MARGIN = 0.0        # C4: Acc@0.5 gap on all scenes, every baseline: interval above 0
SPEEDUP_MIN = 1.3               # C3a, C3b: latency(baseline) / latency(SmartRes), every baseline and batch
RECALL_SE = 2.0                 # C5: recall@2(margin) - recall@2(BCE) beyond 2 SE
ROUTER_BEATS_RANDOM = 0.05      # C5 precondition: recall@2 of the BCE router - random routing

TOKEN_REDUCTION = ("fastv", "tome", "sparsevlm", "visionzip")
SCORE_BASED = ("fastv", "sparsevlm", "visionzip")
ROUTER_LOSSES = ("bce", "focal", "margin")
ROUTER_LRS = (1e-3, 3e-3)       # the grid of every router (2 configurations, like every baseline's grid)
LM_HEAVY_BLOCKS = 12            # C3b: LM blocks of the LM-dominated geometry (ViT blocks as the backbone)
LM_HEAVY_PRUNE_LAYER = 2        # C3b: FastV's K (the paper's) and SparseVLM's layer there


@dataclass(frozen=True)
class Setting:
    """Sizes of one scale."""

    config: MLLMConfig
    n_train: int
    n_val: int
    n_test: int
    steps: int
    batch: int
    lr: float
    eval_every: int
    router_steps: int
    lat_batches: tuple[int, ...]
    repeats: int
    attribute_weight: float = 1.0


def _setting(ctx: CheckContext) -> Setting:
    return ctx.pick({
        "smoke": Setting(MLLMConfig(image_size=64, patch=8, dim=32, heads=2, vit_blocks=2, lm_blocks=2, region_px=16),
                         n_train=48, n_val=24, n_test=32, steps=8, batch=8, lr=2e-3, eval_every=4, router_steps=8,
                         lat_batches=(1, 4), repeats=2),
        "quick": Setting(MLLMConfig(image_size=128, patch=8, dim=64, heads=4, vit_blocks=3, lm_blocks=3, region_px=32),
                         n_train=1500, n_val=200, n_test=300, steps=320, batch=32, lr=3e-3, eval_every=160,
                         router_steps=200, lat_batches=(1, 16), repeats=5),
        "full": Setting(MLLMConfig(image_size=128, patch=8, dim=64, heads=4, vit_blocks=3, lm_blocks=3, region_px=32),
                        n_train=4000, n_val=300, n_test=1000, steps=2200, batch=32, lr=3e-3, eval_every=550,
                        router_steps=500, lat_batches=(1, 32), repeats=7),
        "gpu": Setting(MLLMConfig(image_size=512, patch=16, dim=384, heads=6, vit_blocks=6, lm_blocks=6, region_px=128),
                       n_train=5000, n_val=500, n_test=2000, steps=3000, batch=64, lr=2e-3, eval_every=500,
                       router_steps=1000, lat_batches=(1, 64), repeats=10)})


def _budget(c: MLLMConfig) -> dict[str, int]:
    """Token budget: SmartRes k = 2 keeps N_L + 2 N_region; every reduced method matches it at the LM head."""
    n_low, n_full, n_r = c.low_grid ** 2, c.full_grid ** 2, c.region_tokens
    keep = n_low + 2 * n_r
    recycle = max(1, keep // 12)
    return {"n_low": n_low, "n_full": n_full, "keep": keep, "sv_keep": keep - recycle, "sv_recycle": recycle}


# ------------------------------------------------------------------------------- shared, expensive work
def _scenes(ctx: CheckContext) -> dict[str, ScenePool]:
    s, seed0 = _setting(ctx), ctx.seeds[0]
    size = s.config.image_size
    prog = lambda it, desc: ctx.progress(it, desc=desc)  # noqa: E731
    return {name: make_pool(SyntheticEgoGrounding(n, size=size, seed=base + seed0), prog, f"{name} scenes")
            for name, n, base in (("train", s.n_train, 1000), ("validation", s.n_val, 5_000_000),
                                  ("test", s.n_test, 9_000_000))}


def _hits(fn, pool: ScenePool, batch: int = 50) -> dict[str, Any]:
    """Per-scene IoU of ``fn(images, query) -> MethodOutput`` on ``pool`` and the mean tokens per query."""
    ious, vit, llm = [], 0, 0
    with torch.no_grad():
        for i in range(0, len(pool), batch):
            images, query, boxes = pool.batch(torch.arange(i, min(i + batch, len(pool))))
            out = fn(images, query)
            ious.append(paired_iou(out.boxes, boxes))
            vit, llm = vit + out.vit_tokens, llm + out.llm_tokens
    iou = torch.cat(ious)
    return {"iou": iou, "hit50": (iou >= 0.5).float(), "vit_tokens": vit / len(pool), "llm_tokens": llm / len(pool)}


def _backbone(ctx: CheckContext) -> dict[str, Any]:
    """The shared backbone, trained once per run (cached); the curve is full-res Acc@0.5 on validation."""
    s, pools = _setting(ctx), ctx.cache("scenes", lambda: _scenes(ctx))
    torch.manual_seed(ctx.seeds[0])
    model = MiniGroundingMLLM(s.config)
    val = pools["validation"]
    log = train_backbone(model, pools["train"], steps=s.steps, batch=s.batch, lr=s.lr, seed=ctx.seeds[0],
                         progress=lambda it, desc: ctx.progress(it, desc=desc),
                         evaluate=lambda m: float(_hits(lambda im, q: run_full(m, im, q), val)["hit50"].mean()),
                         eval_every=s.eval_every, attribute_weight=s.attribute_weight)
    ctx.metrics["backbone"] = {"loss_first": log.losses[0], "loss_last50_mean": float(np.mean(log.losses[-50:])),
                               "val_full_acc50_curve": log.curve, "steps": s.steps, "batch": s.batch, "lr": s.lr,
                               "attribute_weight": s.attribute_weight}
    ctx.log(f"backbone: loss {log.losses[0]:.3f} -> {np.mean(log.losses[-50:]):.3f}; val full-res Acc@0.5 "
            + ", ".join(f"{a:.3f}@{st}" for st, a in log.curve))
    return {"model": model, "curve": log.curve}


def _features(ctx: CheckContext) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    model, pools = ctx.cache("backbone", lambda: _backbone(ctx))["model"], ctx.cache("scenes", lambda: _scenes(ctx))
    return {name: low_features(model, pool) for name, pool in pools.items()}


def _router(ctx: CheckContext, loss: str, lr: float, seed: int) -> ResolutionRouter:
    """A router trained on the frozen low-view features of the training scenes (cached per loss, lr, seed)."""
    def fit() -> ResolutionRouter:
        model = ctx.cache("backbone", lambda: _backbone(ctx))["model"]
        feats, qemb = ctx.cache("features", lambda: _features(ctx))["train"]
        boxes = ctx.cache("scenes", lambda: _scenes(ctx))["train"].boxes
        return train_router(model, feats, qemb, boxes, loss=loss, steps=_setting(ctx).router_steps, lr=lr,
                            seed=seed)
    return ctx.cache(f"router/{loss}/{lr}/{seed}", fit)


def _smartres(ctx: CheckContext, router: ResolutionRouter, k: int | None = 2) -> SmartRes:
    model = ctx.cache("backbone", lambda: _backbone(ctx))["model"]
    c = model.config
    kk = {} if k is None else {"k_min": k, "k_max": k}
    return SmartRes(model, router, c.lowres_scale, c.region_px, **kk)


def _baseline_fn(model: MiniGroundingMLLM, name: str, params: dict[str, Any], b: dict[str, int]):
    """name, tuned params -> fn(images, query) -> MethodOutput at the budget's LLM tokens."""
    if name == "fastv":
        return lambda im, q: run_fastv(model, im, q, keep=b["keep"], layer=params["layer"])
    if name == "sparsevlm":
        return lambda im, q: run_sparsevlm(model, im, q, keep=b["sv_keep"], recycle=b["sv_recycle"],
                                           layer=params["layer"])
    if name == "visionzip":
        n_ctx = max(1, round(b["keep"] * params["contextual_share"]))
        return lambda im, q: run_visionzip(model, im, q, n_dominant=b["keep"] - n_ctx, n_contextual=n_ctx)
    if name == "tome":
        return lambda im, q: run_tome(model, im, q, target=b["keep"], metric=params["metric"])
    raise ValueError(f"unknown baseline {name!r}")


def _tuned(ctx: CheckContext) -> dict[str, dict[str, Any]]:
    """Every arm of the accuracy comparison tuned over 2 configurations on validation Acc@0.5 (recorded)."""
    model = ctx.cache("backbone", lambda: _backbone(ctx))["model"]
    pools = ctx.cache("scenes", lambda: _scenes(ctx))
    b = _budget(model.config)

    def score(fn, split: str) -> float:
        return float(_hits(fn, pools[split])["hit50"].mean())

    def smartres_eval(params: dict, split: str) -> float:
        sr = _smartres(ctx, _router(ctx, "margin", params["router_lr"], ctx.seeds[0]))
        return score(lambda im, q: run_smartres(sr, im, q), split)

    def baseline_eval(name: str):
        return lambda params, split: score(_baseline_fn(model, name, params, b), split)

    arms = {"smartres": (smartres_eval, {"router_lr": list(ROUTER_LRS)}),
            "fastv": (baseline_eval("fastv"), {"layer": [0, 1]}),
            "sparsevlm": (baseline_eval("sparsevlm"), {"layer": [0, 1]}),
            "visionzip": (baseline_eval("visionzip"), {"contextual_share": [1 / 6, 1 / 3]}),
            "tome": (baseline_eval("tome"), {"metric": ["keys", "tokens"]})}
    tuned = tune_arms(arms, split="validation", ctx=ctx)
    return {name: t.best for name, t in tuned.items()}


def _router_lrs(ctx: CheckContext) -> dict[str, float]:
    """Each router loss's learning rate, tuned over the same grid on validation recall@2 (recorded)."""
    model = ctx.cache("backbone", lambda: _backbone(ctx))["model"]
    c = model.config
    feats, qemb = ctx.cache("features", lambda: _features(ctx))["validation"]
    fg = region_labels(ctx.cache("scenes", lambda: _scenes(ctx))["validation"].boxes, c.image_size, c.region_grid)

    def recall_eval(loss: str):
        def fn(params: dict, split: str) -> float:
            with torch.no_grad():
                logits = _router(ctx, loss, params["lr"], ctx.seeds[0])(feats, (c.low_grid,) * 2, qemb, c.region_grid)
            return foreground_recall_at_k(logits, fg, 2)
        return fn

    tuned = tune_arms({loss: (recall_eval(loss), {"lr": list(ROUTER_LRS)}) for loss in ROUTER_LOSSES},
                      split="validation", ctx=ctx)
    return {loss: float(t.best["lr"]) for loss, t in tuned.items()}


def _accuracy(ctx: CheckContext) -> dict[str, Any]:
    """Per-scene Acc@0.5 hits on the test scenes: references, tuned baselines, SmartRes per router seed."""
    model = ctx.cache("backbone", lambda: _backbone(ctx))["model"]
    pools = ctx.cache("scenes", lambda: _scenes(ctx))
    test, b = pools["test"], _budget(model.config)
    tuned = ctx.cache("tuned", lambda: _tuned(ctx))
    threshold = _selector_threshold(model, pools["train"], b)
    fns = {"full": lambda im, q: run_full(model, im, q), "low": lambda im, q: run_low(model, im, q),
           "global_selector": lambda im, q: run_global_selector(model, im, q, threshold)}
    fns.update({n: _baseline_fn(model, n, tuned[n], b) for n in TOKEN_REDUCTION})
    res = {n: _hits(fn, test) for n, fn in ctx.progress(list(fns.items()), desc="baselines")}
    lr = tuned["smartres"]["router_lr"]
    per_seed = {}
    for seed in ctx.progress(ctx.seeds, desc="SmartRes per router seed"):
        sr = _smartres(ctx, _router(ctx, "margin", lr, seed))
        per_seed[seed] = _hits(lambda im, q, sr=sr: run_smartres(sr, im, q), test)
    tau = _smartres(ctx, _router(ctx, "margin", lr, ctx.seeds[0]), k=None)
    res["smartres_tau"] = _hits(lambda im, q: run_smartres(tau, im, q), test)
    res["smartres"] = {"hit50": torch.stack([per_seed[s]["hit50"] for s in ctx.seeds]).mean(0),
                       "vit_tokens": per_seed[ctx.seeds[0]]["vit_tokens"],
                       "llm_tokens": per_seed[ctx.seeds[0]]["llm_tokens"]}
    small = test.small
    summary = {n: {"acc50": float(r["hit50"].mean()), "acc50_small": float(r["hit50"][small].mean()),
                   "acc50_medium": float(r["hit50"][~small].mean()), "vit_tokens": r["vit_tokens"],
                   "llm_tokens": r["llm_tokens"]} for n, r in res.items()}
    summary["smartres"]["acc50_per_seed"] = [float(per_seed[s]["hit50"].mean()) for s in ctx.seeds]
    ctx.metrics["accuracy"] = summary
    ctx.metrics["tuned"] = tuned
    _plot_accuracy(ctx, summary)
    return {"hits": {n: r["hit50"] for n, r in res.items()}, "small": small, "summary": summary,
            "per_seed": {s: per_seed[s]["hit50"] for s in ctx.seeds}}


def _selector_threshold(model: MiniGroundingMLLM, train: ScenePool, b: dict[str, int]) -> float:
    """The global selector's confidence quantile that sends the budget's share of images to full resolution
    (calibrated on training scenes; the selector is a reference, not one of the compared arms)."""
    with torch.no_grad():
        conf = torch.cat([low_confidence(model, *train.batch(torch.arange(i, min(i + 128, len(train))))[:2])
                          for i in range(0, min(len(train), 512), 128)])
    return float(torch.quantile(conf, (b["keep"] - b["n_low"]) / (b["n_full"] - b["n_low"])))


def _plot_accuracy(ctx: CheckContext, summary: dict[str, dict[str, Any]]) -> None:
    fig, ax = ctx.figure(figsize=(7, 4))
    for key, marker in (("acc50", "o"), ("acc50_small", "s")):
        for name, row in summary.items():
            ax.plot(row["llm_tokens"], row[key], marker, label=f"{name} ({'all' if key == 'acc50' else 'small'})")
    seeds = summary["smartres"]["acc50_per_seed"]
    ax.errorbar(summary["smartres"]["llm_tokens"], np.mean(seeds), yerr=np.std(seeds), fmt="none", color="k")
    ax.set_xlabel("visual tokens seen by the LLM (per query)")
    ax.set_ylabel("Acc@0.5 (test scenes)")
    ax.legend(fontsize=6, ncol=2)
    ctx.save_figure(fig, "accuracy_vs_tokens.png",
                    caption="Acc@0.5 (all and small targets) vs LLM tokens; bar: std of SmartRes over router seeds")


# --------------------------------------------------------------------------------------------- latency
def _latency_cells(ctx: CheckContext, model: MiniGroundingMLLM, router: ResolutionRouter,
                   params: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``timeit_pair(SmartRes k=2, baseline)`` per score-based baseline and batch; FLOPs at batch 1."""
    from torch.utils.flop_counter import FlopCounterMode

    s, c = _setting(ctx), model.config
    b = _budget(c)
    sr = SmartRes(model, router, c.lowres_scale, c.region_px, k_min=2, k_max=2)
    fns = {n: _baseline_fn(model, n, params[n], b) for n in SCORE_BASED}
    test = ctx.cache("scenes", lambda: _scenes(ctx))["test"]
    cells, medians, flops = {}, {}, {}
    with torch.no_grad():
        for bsz in s.lat_batches:
            images, query, _ = test.batch(torch.arange(bsz) % len(test))
            if images.shape[-1] != c.image_size:
                raise ValueError("latency scenes must match the geometry's image size")
            for n in ctx.progress(SCORE_BASED, desc=f"latency b={bsz}"):
                cmp = measure.timeit_pair(lambda im=images, q=query: run_smartres(sr, im, q),
                                          lambda n=n, im=images, q=query: fns[n](im, q),
                                          repeats=s.repeats, warmup=1, threads=1, clock="process")
                cells[f"{n}@b{bsz}"] = list(cmp.ratios)
                medians[f"{n}@b{bsz}"] = {"smartres_s": cmp.a.median, "baseline_s": cmp.b.median}
        images, query, _ = test.batch(torch.arange(1))
        for n, fn in {"smartres": lambda im, q: run_smartres(sr, im, q), **fns}.items():
            counter = FlopCounterMode(display=False)
            with counter:
                fn(images, query)
            flops[n] = int(counter.get_total_flops())
    return {"cells": cells, "medians": medians, "flops_b1": flops,
            "flops_ratio": {n: flops[n] / flops["smartres"] for n in flops}}


def measure_c3a(ctx: CheckContext) -> Evidence:
    model = ctx.cache("backbone", lambda: _backbone(ctx))["model"]
    tuned = ctx.cache("tuned", lambda: _tuned(ctx))
    router = _router(ctx, "margin", tuned["smartres"]["router_lr"], ctx.seeds[0])
    res = _latency_cells(ctx, model, router, tuned)
    ctx.metrics["latency_spec_geometry"] = res
    means = [float(np.exp(np.mean(np.log(v)))) for v in res["cells"].values()]
    return Evidence(values=means, unit="x, geometric-mean latency(baseline) / latency(SmartRes k=2), per cell",
                    details={"cells": res["cells"], "medians": res["medians"], "flops_ratio": res["flops_ratio"],
                             "geometry": f"{model.config.vit_blocks} ViT : {model.config.lm_blocks} LM blocks",
                             "baseline_settings": {n: tuned[n] for n in SCORE_BASED}})


def measure_c3b(ctx: CheckContext) -> Evidence:
    c0 = _setting(ctx).config
    c = MLLMConfig(image_size=c0.image_size, patch=c0.patch, dim=c0.dim, heads=c0.heads, vit_blocks=c0.vit_blocks,
                   lm_blocks=LM_HEAVY_BLOCKS, region_px=c0.region_px, lowres_scale=c0.lowres_scale)
    torch.manual_seed(ctx.seeds[0])
    model = MiniGroundingMLLM(c).eval()
    router = ResolutionRouter(c.dim, 2 * c.dim).eval()
    tuned = ctx.cache("tuned", lambda: _tuned(ctx))
    params = {"fastv": {"layer": LM_HEAVY_PRUNE_LAYER}, "sparsevlm": {"layer": LM_HEAVY_PRUNE_LAYER},
              "visionzip": tuned["visionzip"]}
    res = _latency_cells(ctx, model, router, params)
    ctx.metrics["latency_lm_dominated"] = res
    means = [float(np.exp(np.mean(np.log(v)))) for v in res["cells"].values()]
    return Evidence(values=means, unit="x, geometric-mean latency(baseline) / latency(SmartRes k=2), per cell",
                    details={"cells": res["cells"], "medians": res["medians"], "flops_ratio": res["flops_ratio"],
                             "geometry": f"{c.vit_blocks} ViT : {c.lm_blocks} LM blocks (untrained weights)",
                             "baseline_settings": params})


# --------------------------------------------------------------------------------------------- measures
def measure_full_acc(ctx: CheckContext) -> Evidence:
    acc = ctx.cache("accuracy", lambda: _accuracy(ctx))["summary"]
    curve = ctx.cache("backbone", lambda: _backbone(ctx))["curve"]
    return Evidence(values=[acc["full"]["acc50"]], unit="full-resolution Acc@0.5 of the backbone (test scenes)",
                    details={"val_curve": [list(p) for p in curve], "acc_low": acc["low"]["acc50"]})


def measure_full_small_acc(ctx: CheckContext) -> Evidence:
    acc = ctx.cache("accuracy", lambda: _accuracy(ctx))["summary"]
    return Evidence(values=[acc["full"]["acc50_small"]], unit="full-resolution Acc@0.5 on small targets (test)")


def measure_c1(ctx: CheckContext) -> Evidence:
    acc = ctx.cache("accuracy", lambda: _accuracy(ctx))
    b = _budget(ctx.cache("backbone", lambda: _backbone(ctx))["model"].config)
    h, full = acc["hits"]["smartres"], acc["hits"]["full"]
    summary = acc["summary"]
    # Acc(SmartRes) >= r Acc(full)  <=>  mean_i (s_i - r f_i) >= 0: a per-scene difference with an interval
    diff = (h - RETENTION_MIN * full).tolist()
    return Evidence(values=diff, unit=f"per test scene: SmartRes hit (mean over router seeds) - {RETENTION_MIN} x "
                                      "full-res hit (Acc@0.5)",
                    details={"token_reduction": 1 - b["keep"] / b["n_full"],
                             "retention": summary["smartres"]["acc50"] / max(summary["full"]["acc50"], 1e-9),
                             "retention_per_seed": [a / max(summary["full"]["acc50"], 1e-9)
                                                    for a in summary["smartres"]["acc50_per_seed"]],
                             "acc_full": summary["full"]["acc50"], "acc_smartres": summary["smartres"]["acc50"],
                             "acc_low": summary["low"]["acc50"], "acc_smartres_tau": summary["smartres_tau"]["acc50"],
                             "smartres_tau_llm_tokens": summary["smartres_tau"]["llm_tokens"]})


def _gaps(ctx: CheckContext, subset: str) -> dict[str, list[float]]:
    acc = ctx.cache("accuracy", lambda: _accuracy(ctx))
    mask = acc["small"] if subset == "small" else torch.ones_like(acc["small"])
    s = acc["hits"]["smartres"][mask]
    return {n: (s - acc["hits"][n][mask]).tolist() for n in TOKEN_REDUCTION}


def measure_c2(ctx: CheckContext) -> Evidence:
    gaps = _gaps(ctx, "small")
    summary = ctx.cache("accuracy", lambda: _accuracy(ctx))["summary"]
    return Evidence(values=[float(np.mean(g)) for g in gaps.values()],
                    unit="Acc@0.5 gap on small targets, SmartRes - baseline (FastV, ToMe, SparseVLM, VisionZip)",
                    details={"small_gaps": gaps, "acc50_small": {n: summary[n]["acc50_small"] for n in summary},
                             "llm_tokens": {n: summary[n]["llm_tokens"] for n in summary}})


def measure_c4(ctx: CheckContext) -> Evidence:
    gaps = _gaps(ctx, "all")
    summary = ctx.cache("accuracy", lambda: _accuracy(ctx))["summary"]
    return Evidence(values=[float(np.mean(g)) for g in gaps.values()],
                    unit="Acc@0.5 gap on all test scenes, SmartRes - baseline (FastV, ToMe, SparseVLM, VisionZip)",
                    details={"gaps": gaps, "acc50": {n: summary[n]["acc50"] for n in summary},
                             "llm_tokens": {n: summary[n]["llm_tokens"] for n in summary},
                             "vit_tokens": {n: summary[n]["vit_tokens"] for n in summary}})


def _recall(ctx: CheckContext) -> dict[str, Any]:
    model = ctx.cache("backbone", lambda: _backbone(ctx))["model"]
    c = model.config
    feats, qemb = ctx.cache("features", lambda: _features(ctx))["test"]
    fg = region_labels(ctx.cache("scenes", lambda: _scenes(ctx))["test"].boxes, c.image_size, c.region_grid)
    lrs = ctx.cache("router_lrs", lambda: _router_lrs(ctx))
    table = {}
    with torch.no_grad():
        for s in ctx.seeds:
            rec = {}
            for loss in ROUTER_LOSSES:
                logits = _router(ctx, loss, lrs[loss], s)(feats, (c.low_grid, c.low_grid), qemb, c.region_grid)
                rec[loss] = {"recall@1": foreground_recall_at_k(logits, fg, 1),
                             "recall@2": foreground_recall_at_k(logits, fg, 2)}
            gen = torch.Generator().manual_seed(s)
            rec["random"] = {"recall@2": foreground_recall_at_k(torch.rand(fg.shape, generator=gen), fg, 2)}
            table[str(s)] = rec
    ctx.metrics["router_recall"] = table
    ctx.metrics["router_lrs"] = lrs
    return table


def measure_c5(ctx: CheckContext) -> Evidence:
    table = ctx.cache("recall", lambda: _recall(ctx))
    diffs = [table[str(s)]["margin"]["recall@2"] - table[str(s)]["bce"]["recall@2"] for s in ctx.seeds]
    return Evidence(values=diffs, unit="recall@2(BCE + margin) - recall@2(BCE), per router seed",
                    details={"recall": table})


def measure_router_beats_random(ctx: CheckContext) -> Evidence:
    table = ctx.cache("recall", lambda: _recall(ctx))
    return Evidence(values=[table[str(s)]["bce"]["recall@2"] - table[str(s)]["random"]["recall@2"] for s in ctx.seeds],
                    unit="recall@2(BCE router) - recall@2(random scores), per router seed")


GROUNDS = preconditions.headroom(f"the backbone grounds: full-resolution Acc@0.5 >= {FULL_ACC_MIN}",
                                 measure_full_acc, at_least=FULL_ACC_MIN, min_n=1)
GROUNDS_SMALL = preconditions.headroom(f"the backbone grounds small targets: full-resolution Acc@0.5 (small) >= "
                                       f"{FULL_SMALL_ACC_MIN}", measure_full_small_acc, at_least=FULL_SMALL_ACC_MIN,
                                       min_n=1)
TUNING = "equal: every arm tuned over 2 configurations on validation Acc@0.5 (claims.tune_arms)"

CLAIMS = (
    Claim(id="C1", statement="SmartRes reduces visual tokens by up to 67% while retaining 86.4% of "
                             "full-resolution performance.",
          paper_value="-67% tokens, 86.4% retention (Ego4D, EgoIntention)",
          metric="Acc@0.5 retention of SmartRes (k = 2 regions) vs full resolution, at 62.5% fewer LLM tokens",
          rule=rules.all_of(rules.better(margin=0.0, min_n=30, label=f"per-scene SmartRes hit - {RETENTION_MIN} x "
                                                                     "full-res hit"),
                            rules.on("token_reduction", rules.threshold(">=", REDUCTION_MIN, stat="value", min_n=1))),
          measure=measure_c1, scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(GROUNDS,)),
    Claim(id="C2", statement="SmartRes grounds small objects better than token-reduction methods at equal tokens.",
          paper_value="strong small-object grounding; higher accuracy than FastV / SparseVLM / VisionZip",
          metric="Acc@0.5 on small targets, SmartRes - each token-reduction baseline (paired over test scenes)",
          rule=rules.each("small_gaps", rules.better(margin=SMALL_GAP_MIN, min_n=30)),
          measure=measure_c2, scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(GROUNDS, GROUNDS_SMALL)),
    Claim(id="C3a", statement="SmartRes is up to 1.66x faster than state-of-the-art token reduction "
                              "(the spec's geometry, 3 ViT : 3 LM blocks).",
          paper_value="1.66x (vs token reduction)",
          metric="latency(baseline) / latency(SmartRes) per interleaved pair, FastV, SparseVLM, VisionZip x batch "
                 "(CPU, 1 thread, process clock)",
          rule=rules.each("cells", rules.ratio_at_least(SPEEDUP_MIN, min_n=5)),
          measure=measure_c3a, scales=("quick", "full", "gpu")),
    Claim(id="C3b", statement="SmartRes is up to 1.66x faster than state-of-the-art token reduction "
                              "(an LM-dominated geometry, 3 ViT : 12 LM blocks, like a real MLLM).",
          paper_value="1.66x (vs token reduction)",
          metric="latency(baseline) / latency(SmartRes) per interleaved pair, FastV and SparseVLM at K = 2, "
                 "VisionZip, x batch (CPU, 1 thread, process clock; untrained weights)",
          rule=rules.each("cells", rules.ratio_at_least(SPEEDUP_MIN, min_n=5)),
          measure=measure_c3b, scales=("quick", "full", "gpu")),
    Claim(id="C4", statement="No token-reduction baseline matches SmartRes accuracy at equal tokens.",
          paper_value="(implied by 'faster with higher accuracy')",
          metric="Acc@0.5 on all test scenes, SmartRes - each token-reduction baseline (paired over scenes)",
          rule=rules.each("gaps", rules.better(margin=NOT_MATCHED_MARGIN, min_n=30)),
          measure=measure_c4, scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(GROUNDS,)),
    Claim(id="C5", statement="The margin-regularised objective raises foreground recall over BCE.",
          paper_value="higher FG-BG separation and FG recall (no number)",
          metric="router recall@2 on test scenes, BCE + margin minus BCE, per router seed",
          rule=rules.beyond_se(RECALL_SE, min_n=3), measure=measure_c5, scales=("quick", "full", "gpu"),
          compares_trained=True,
          tuning="equal: each loss's learning rate over the same 2-point grid on validation recall@2",
          preconditions=(preconditions.beats_reference("the BCE router beats random routing (recall@2)",
                                                       measure_router_beats_random, margin=ROUTER_BEATS_RANDOM,
                                                       min_n=3),)),
)

PAPER = Paper(id="P16", slug="smartres",
              method="SmartRes resolution routing",
              title="SmartRes: dynamic resolution routing for egocentric visual grounding", arxiv=None,
              claims=CLAIMS,
              default_seeds={"smoke": 1, "quick": 3, "full": 3, "gpu": 3},
              full_budget_cpu_s=1200,
              full_budget_reason="the session's limit for an oversubscribed 2-core machine (2026-12-02): 2200 "
                                 "backbone steps of batch 32 at 1 thread (~700 CPU-s) before routers, tuning, "
                                 "evaluation on 1000 test scenes and timing (~300 CPU-s)")
