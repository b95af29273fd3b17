"""Claim check for P08 routing: depth vs width of a decoder-only (gated, ReZero) TSP solver at equal parameters.

Data (seed-fixed, shared by every seed and config): uniform random TSP instances, labels from
``solve_tsp_reference`` (smoke/quick: TSP10, exact Held-Karp; full: TSP20, elkai, else fast_tsp; gpu: TSP100).
Each seed s fixes the model init (``torch.manual_seed``) and the sub-path data order; the two models of a pair
share data order, steps, batch, lr, head size and FFN ratio. Metric: mean greedy optimality gap (%) on the test
set. Training on CPU runs under ``torch_threads(1)``. Grid: smoke 16x4 vs 32x1; quick the first pair 32x8 vs
64x2 (TSP10, short training); full 32x8, 64x2, 64x8, 128x2 (+ the LEHD-style 32x8 ablation); gpu
d in {128, 256, 512} x L in {3, 6, 12} on TSP100 in bf16 (not run here: no GPU was lent).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, Verdict, measure, rules, torch_threads
from neurips26.data import DatasetNotFoundError, load_tsplib_small

from .baselines import nearest_neighbour_tours
from .decode import greedy_construct
from .grid import equal_param_pairs, scaling_grid
from .model import DecoderConfig, TSPDecoderOnly, count_params, train_step_flops
from .solvers import backend_available, resolve_tsp_backend, solve_tsp_reference
from .train import subpath_loss, train_supervised
from .tsp import make_tsp_instances, optimality_gap, random_tours, tour_length

# criteria (fixed before running)
WIN_SHARE = 2 / 3        # the deep model's gap is lower in at least this share of seeds ...
MARGIN_SEED_STDS = 1.0   # ... and the mean paired difference exceeds this many seed-stds of the differences
MIN_SEEDS = 3
MIN_PAIRS = 2            # "at both budgets"
ABLATION_SE = 2.0        # C3: LEHD-style minus ours, beyond 2 SE


# ---------------------------------------------------------------------------------------- settings
def _settings(ctx: CheckContext) -> dict[str, Any]:
    gpu = ctx.scale == "gpu"
    return {
        "n_nodes": ctx.pick({"smoke": 10, "quick": 10, "full": 20, "gpu": 100}),
        "n_train": ctx.pick({"smoke": 1000, "quick": 4000, "full": 11_000, "gpu": 50_000}),
        "n_test": ctx.pick({"smoke": 100, "quick": 200, "full": 500, "gpu": 1000}),
        "steps": ctx.pick({"smoke": 150, "quick": 300, "full": 500, "gpu": 1500}),
        "batch_size": ctx.pick({"smoke": 64, "quick": 128, "full": 128, "gpu": 256}),
        "lr": ctx.pick({"smoke": 2e-3, "quick": 1e-3, "full": 5e-4, "gpu": 5e-4}),
        "widths": ctx.pick({"smoke": (16, 32), "quick": (32, 64), "full": (32, 64, 128), "gpu": (128, 256, 512)}),
        "depths": ctx.pick({"smoke": (1, 4), "quick": (2, 8), "full": (2, 8), "gpu": (3, 6, 12)}),
        "ablation": ctx.scale in ("full", "gpu"),
        "tsplib_max_n": ctx.pick({"smoke": 0, "quick": 0, "full": 100, "gpu": 300}),
        "dtype": torch.bfloat16 if gpu else torch.float32,
        "device": ctx.device if gpu else "cpu",
    }


def _configs(ctx: CheckContext, s: dict[str, Any]) -> list[DecoderConfig]:
    grid = scaling_grid(s["widths"], s["depths"], n_nodes=s["n_nodes"])
    keep = {"smoke": {"16x4", "32x1"}, "quick": {"32x8", "64x2"},  # quick: only the first pair
            "full": {"32x8", "64x2", "64x8", "128x2"}}.get(ctx.scale)
    if keep is not None:
        grid = [g for g in grid if g.label in keep]
    cfgs = [g.config for g in grid]
    if s["ablation"]:  # the LEHD-style ablation of the smallest deep model
        deep = min((c for c in cfgs if c.n_layers == max(s["depths"])), key=lambda c: c.d_model)
        cfgs.append(DecoderConfig(deep.d_model, deep.n_layers, gated_attention=False, rezero=False))
    return cfgs


# ---------------------------------------------------------------------------------------- data
def _label_backend(n: int) -> str:
    if n <= 12:
        return "exact"
    return "elkai" if backend_available("elkai") else resolve_tsp_backend("auto", n)


def _data(ctx: CheckContext) -> dict[str, Any]:
    s = _settings(ctx)
    t0 = time.perf_counter()
    backend = _label_backend(s["n_nodes"])
    X = make_tsp_instances(s["n_train"], s["n_nodes"], seed=2026)
    X_test = make_tsp_instances(s["n_test"], s["n_nodes"], seed=2027)
    tours = solve_tsp_reference(X, backend, runs=1)
    ref = tour_length(X_test, solve_tsp_reference(X_test, backend, runs=10))
    nn_gap = float(optimality_gap(tour_length(X_test, nearest_neighbour_tours(X_test)), ref).mean())
    rand_gap = float(optimality_gap(tour_length(X_test, random_tours(len(X_test), s["n_nodes"], 0)), ref).mean())
    seconds = time.perf_counter() - t0
    tsplib: list[dict[str, Any]] = []
    if s["tsplib_max_n"]:
        try:
            tsplib = [i for i in load_tsplib_small() if i["n"] <= s["tsplib_max_n"]]
        except DatasetNotFoundError as err:
            ctx.note(f"TSPLIB generalisation not run: {err}")
    ctx.log(f"routing data: {s['n_train']} + {s['n_test']} TSP{s['n_nodes']} labelled by {backend} in {seconds:.1f}s")
    ctx.metrics["data"] = {"n_nodes": s["n_nodes"], "n_train": s["n_train"], "n_test": s["n_test"],
                           "label_backend": backend, "label_seconds": seconds,
                           "nearest_neighbour_gap_pct": nn_gap, "random_tour_gap_pct": rand_gap}
    return {"X": X, "tours": tours, "X_test": X_test, "ref": ref, "backend": backend, "random_gap": rand_gap,
            "tsplib": tsplib}


# ---------------------------------------------------------------------------------------- training
def _train_one(cfg: DecoderConfig, seed: int, data: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    torch.manual_seed(seed)
    model = TSPDecoderOnly(cfg).to(device=s["device"], dtype=s["dtype"])
    loss0 = subpath_loss(model, data["X"], data["tours"])
    res = train_supervised(model, data["X"], data["tours"], steps=s["steps"], batch_size=s["batch_size"],
                           lr=s["lr"], seed=seed)
    loss1 = subpath_loss(model, data["X"], data["tours"])
    decoded: list = []
    greedy_s = measure.time_once(lambda: decoded.append(greedy_construct(model, data["X_test"])), "wall")
    _, lengths = decoded[0]
    gap = float(optimality_gap(lengths.double().numpy(), data["ref"]).mean())
    tsplib = _tsplib_gaps(model, data["tsplib"]) if data["tsplib"] else {}
    n = s["n_nodes"]
    flops = res.samples * sum(train_step_flops(cfg, n - t) for t in range(1, n - 1)) / (n - 2)
    return {"gap_pct": gap, "eval_loss_before": loss0, "eval_loss_after": loss1, "train_seconds": res.seconds,
            "greedy_seconds": greedy_s, "samples": res.samples, "train_flops": flops,
            "tsplib_gap_pct": tsplib, "loss_curve": res.losses[:: max(1, len(res.losses) // 50)]}


def _tsplib_gaps(model: torch.nn.Module, instances: list[dict[str, Any]]) -> dict[str, float]:
    """Greedy gap (%) per TSPLIB instance: coordinates scaled into the unit square (aspect kept) for the
    model, tour length in the original coordinates with TSPLIB's nint distances vs the proven optimum."""
    out = {}
    for inst in instances:
        c = np.asarray(inst["coords"], dtype=np.float64)
        x = (c - c.min(0)) / (c.max(0) - c.min(0)).max()
        tour, _ = greedy_construct(model, x[None])
        length = tour_length(c[None], tour.numpy(), rounding="nint_half_up")
        out[inst["name"]] = float(optimality_gap(length, [inst["optimal_cost"]])[0])
    return out


def _grid(ctx: CheckContext) -> dict[str, Any]:
    """Train every config for every seed once; all claims read this."""
    s = _settings(ctx)
    data = ctx.cache("data", lambda: _data(ctx))
    cfgs = _configs(ctx, s)
    runs: dict[str, dict[int, dict[str, Any]]] = {c.label: {} for c in cfgs}
    jobs = [(c, seed) for seed in ctx.seeds for c in cfgs]
    with torch_threads(1):
        for cfg, seed in ctx.progress(jobs, desc="routing: train configs x seeds"):
            r = _train_one(cfg, seed, data, s)
            runs[cfg.label][seed] = r
            ctx.log(f"{cfg.label} seed {seed}: gap {r['gap_pct']:.2f}% (loss {r['eval_loss_before']:.3f} -> "
                    f"{r['eval_loss_after']:.3f}), {r['train_seconds']:.0f}s")
    table = {label: {"params": count_params(cfg), "gap_pct": [runs[label][sd]["gap_pct"] for sd in ctx.seeds],
                     "train_seconds": [runs[label][sd]["train_seconds"] for sd in ctx.seeds],
                     "train_flops": runs[label][ctx.seeds[0]]["train_flops"],
                     "samples": runs[label][ctx.seeds[0]]["samples"],
                     "tsplib_mean_gap_pct": [float(np.mean(list(runs[label][sd]["tsplib_gap_pct"].values())))
                                             for sd in ctx.seeds if runs[label][sd]["tsplib_gap_pct"]],
                     "eval_loss_after": [runs[label][sd]["eval_loss_after"] for sd in ctx.seeds],
                     "loss_drop": [1 - runs[label][sd]["eval_loss_after"] / runs[label][sd]["eval_loss_before"]
                                   for sd in ctx.seeds]}
             for label, cfg in ((c.label, c) for c in cfgs)}
    ctx.metrics["configs"] = table
    ctx.metrics["settings"] = {k: (str(v) if k in ("dtype",) else v) for k, v in s.items()}
    _plot(ctx, table, runs)
    return {"runs": runs, "table": table, "cfgs": cfgs, "settings": s}


def _plot(ctx: CheckContext, table: dict[str, Any], runs: dict[str, Any]) -> None:
    fig, ax = ctx.figure(figsize=(5.5, 4))
    for label, row in table.items():
        g = np.asarray(row["gap_pct"])
        deep = label.split("x")[1].split("-")[0]
        ax.errorbar(row["params"], g.mean(), yerr=g.std(ddof=1) if len(g) > 1 else 0, fmt="o", capsize=3,
                    label=f"{label} (L={deep})")
    ax.set_xscale("log")
    ax.set_xlabel("decoder parameters")
    ax.set_ylabel("greedy optimality gap (%)")
    ax.legend(fontsize=7)
    ctx.save_figure(fig, "gap_vs_params.png",
                    caption="Greedy gap vs parameters, mean ± seed std (paper's Fig. 1 analogue, small scale)")


# ---------------------------------------------------------------------------------------- decisions
def _pair_status(d: list[float]) -> tuple[str, str]:
    """'win' (>= 2/3 seeds positive and mean > 1 std), 'loss' (mean <= 0) or 'open'."""
    arr = np.asarray(d, float)
    need = math.ceil(WIN_SHARE * len(arr) - 1e-9)
    wins = int((arr > 0).sum())
    std = float(arr.std(ddof=1)) if len(arr) > 1 else 0.0
    said = f"{wins}/{len(arr)} seeds deep better, mean {arr.mean():+.3f} pp, seed-std {std:.3f}"
    if wins >= need and arr.mean() > MARGIN_SEED_STDS * std:
        return "win", said
    if arr.mean() <= 0:
        return "loss", said
    return "open", said


def _decide_depth(ev: Evidence) -> Verdict:
    pairs = ev.details.get("pairs", {})
    if len(pairs) < MIN_PAIRS:
        st = "; ".join(f"{k}: {_pair_status(v)[1]}" for k, v in pairs.items())
        return Verdict("inconclusive", f"{len(pairs)} equal-parameter pair(s) run, needs {MIN_PAIRS}. {st}")
    if any(len(v) < MIN_SEEDS for v in pairs.values()):
        return Verdict("inconclusive", f"needs >= {MIN_SEEDS} seeds per pair")
    status = {k: _pair_status(v) for k, v in pairs.items()}
    said = "; ".join(f"{k}: {s[1]}" for k, s in status.items())
    if all(s[0] == "win" for s in status.values()):
        return Verdict("supported", said)
    if all(s[0] == "loss" for s in status.values()):
        return Verdict("not supported", said)
    return Verdict("inconclusive", said)


def _decide_dominance(ev: Evidence) -> Verdict:
    if ev.n < MIN_SEEDS:
        return Verdict("inconclusive", f"{ev.n} seed(s), needs {MIN_SEEDS}")
    label, said = _pair_status(list(ev.values))
    return Verdict({"win": "supported", "loss": "not supported", "open": "inconclusive"}[label], said)


_SENTENCE = (f"per seed d = gap(wide) - gap(deep) in pp; a pair is won if d > 0 in >= 2/3 of >= {MIN_SEEDS} seeds "
             f"and mean(d) > {MARGIN_SEED_STDS:g} x std(d), lost if mean(d) <= 0")
DEPTH_RULE = rules.custom(f"{_SENTENCE}; supported if every equal-parameter pair is won (>= {MIN_PAIRS} budgets), "
                          "not supported if every pair is lost (wide <= deep at both budgets), else inconclusive",
                          _decide_depth, min_n=1)
DOMINANCE_RULE = rules.custom(f"{_SENTENCE.replace('gap(wide)', 'gap(larger wide model)')}; supported if won, "
                              "not supported if lost, else inconclusive", _decide_dominance, min_n=1)


# ---------------------------------------------------------------------------------------- measures
def _pairs(cfgs: list[DecoderConfig], s: dict[str, Any]) -> list[tuple[str, str]]:
    grid = [g for g in scaling_grid(s["widths"], s["depths"], n_nodes=s["n_nodes"])
            if g.config in cfgs]
    return [(a.label, b.label) for a, b in equal_param_pairs(grid)]


def measure_depth(ctx: CheckContext) -> Evidence:
    g = ctx.cache("grid", lambda: _grid(ctx))
    table = g["table"]
    pairs = {}
    for deep, wide in _pairs(g["cfgs"], g["settings"]):
        pairs[f"{deep} vs {wide}"] = [w - d for w, d in zip(table[wide]["gap_pct"], table[deep]["gap_pct"])]
    first = next(iter(pairs.values()), [])
    return Evidence(values=first, unit="pp, gap(wide) - gap(deep) of the first pair, per seed",
                    details={"pairs": pairs,
                             "params": {k: v["params"] for k, v in table.items()}})


def _dominance_pair(cfgs: list[DecoderConfig]) -> tuple[str, str] | None:
    """The smallest deepest gated model vs the largest shallowest gated model (>= 2x its parameters)."""
    gated = [c for c in cfgs if c.gated_attention and c.rezero]
    if not gated:
        return None
    deep = min((c for c in gated if c.n_layers == max(x.n_layers for x in gated)), key=lambda c: c.d_model)
    wide = max((c for c in gated if c.n_layers == min(x.n_layers for x in gated)), key=lambda c: c.d_model)
    if count_params(wide) < 2 * count_params(deep):
        return None
    return deep.label, wide.label


def measure_dominance(ctx: CheckContext) -> Evidence:
    g = ctx.cache("grid", lambda: _grid(ctx))
    pair = _dominance_pair(g["cfgs"])
    if pair is None:
        return Evidence(values=[], unit="pp", details={"reason": "no larger wide model in this grid"})
    deep, wide = pair
    t = g["table"]
    d = [w - x for w, x in zip(t[wide]["gap_pct"], t[deep]["gap_pct"])]
    return Evidence(values=d, unit=f"pp, gap({wide}) - gap({deep}) per seed",
                    details={"deep": deep, "wide": wide, "params_ratio": t[wide]["params"] / t[deep]["params"]})


def measure_ablation(ctx: CheckContext) -> Evidence:
    g = ctx.cache("grid", lambda: _grid(ctx))
    lehd = [c for c in g["cfgs"] if not c.gated_attention and not c.rezero]
    if not lehd:
        return Evidence(values=[], unit="nats")
    ab = lehd[0]
    ours = DecoderConfig(ab.d_model, ab.n_layers)
    t = g["table"]
    d = [a - o for a, o in zip(t[ab.label]["eval_loss_after"], t[ours.label]["eval_loss_after"])]
    gaps = [a - o for a, o in zip(t[ab.label]["gap_pct"], t[ours.label]["gap_pct"])]
    return Evidence(values=d, unit=f"nats, sub-path eval loss {ab.label} - {ours.label} after equal steps, per seed",
                    details={"gap_difference_pp": gaps})


CLAIMS = (
    Claim(id="C1",
          statement="At equal parameters, scaling depth reduces the optimality gap more than scaling width "
                    "(parameter count alone does not predict quality).",
          paper_value="depth > width (Fig. 1; numbers not in the public text)",
          metric="greedy gap (%) on seed-fixed random TSP, per seed: wide minus deep for each equal-parameter "
                 "pair (32x8 vs 64x2, 64x8 vs 128x2 at full)",
          rule=DEPTH_RULE, measure=measure_depth, scales=("smoke", "quick", "full", "gpu")),
    Claim(id="C2",
          statement="Depth-prioritised models dominate at least one larger model.",
          paper_value="a depth-first model beats a larger one (Fig. 1)",
          metric="greedy gap (%) of the largest shallow model minus the smallest deep model (32x8 vs 128x2, 4.2x "
                 "the parameters, at full), per seed",
          rule=DOMINANCE_RULE, measure=measure_dominance, scales=("full", "gpu")),
    Claim(id="C3",
          statement="Gated attention and ReZero speed up convergence (secondary summary).",
          paper_value="faster convergence (no numbers recovered)",
          metric="sub-path cross-entropy after equal steps: LEHD-style (no gate, plain residual) minus "
                 "gated+ReZero, same width/depth/data order, per seed",
          rule=rules.beyond_se(ABLATION_SE, direction="greater", min_n=MIN_SEEDS),
          measure=measure_ablation, scales=("full", "gpu")),
)

PAPER = Paper(id="P08", slug="routing",
              method="Depth-first decoder scaling",
              title="Efficient Decoder Scaling Strategy for Neural Routing Solvers", arxiv=None,
              claims=CLAIMS,
              default_seeds={"smoke": 1, "quick": 3, "full": 3, "gpu": 3})
