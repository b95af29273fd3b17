"""Claim check for P02 (EMC): accuracy vs the best other method, cost ratios vs GCAL, long-stream stability.

Data: CSBM streams with drifting covariates (synthetic) and Cora / CiteSeer with a progressive
covariate shift (real features, synthetic shift). Backbone: 2-layer GCN, hidden 64, BatchNorm, shared by
every method. Every arm with hyperparameters is tuned on a dev stream per regime (seed 100) over a grid
of the same size (``claims.tune_arms``); the check seeds are never used for a choice. The GCAL port runs
6 epochs per domain: the fewest at which its code trains and stores a memory (its paper gives no count).
Time = median per-domain ``adapt`` time (process CPU on CPU, wall on CUDA; :mod:`neurips26.claims.measure`);
memory = peak tensor bytes during ``adapt`` (CPU: dispatch-level tracking in a shadow pass; CUDA:
allocator peak), measured on the first domains.

C1 is decided over (stream, seed) cells, C2/C3 per regime (CSBM, Cora, CiteSeer); the cells are the
CSBM cells (``ctx.cache("csbm")``) and, when the Planetoid data are present, the Cora / CiteSeer cells
(``ctx.cache("planetoid")``). Without the Planetoid files they are decided on the CSBM cells alone (their
criteria need >= 3 cells, not Planetoid ones), with a note saying so. C4 uses CSBM only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, preconditions, rules, torch_threads, tune_arms
from neurips26.data import DatasetNotFoundError

from .baselines import GCAL, T3A, DirectClosedForm, RawEmbeddingMemory, SourceOnly, TentGraph
from .emc import EMC
from .encoder import train_source_gnn
from .evaluate import continual_eval
from .streams import csbm_stream, planetoid_shift_stream

MIN_CELLS = 3            # C1: (stream, seed) cells; C2/C3: seeds per regime; C4: seeds
C1_MARGIN = 0.01         # C1: EMC - best other method, AP points (fraction) the interval must clear
COST_RATIO_MIN = 5.0     # C2/C3: GCAL / EMC ratio, per regime (interval above it)
AF_MARGIN = 0.0          # C4: AF(direct) - AF(EMC) interval must lie above this (comparative, issue 48)
GCAL_OVER_SOURCE = 0.0   # C1 precondition: tuned GCAL beats the frozen source AP on every dev stream
HIDDEN = 64
BATCH_NORM = True        # GCAL's backbone has BatchNorm, and Tent adapts BatchNorm: every method shares it
DEV_SEED = 100           # the dev streams every arm is tuned on (never a check seed)
GCAL_EPOCHS = 6          # warmup 5 + 1: the fewest epochs at which GCAL's code trains and stores a memory

# Equal tuning (claims v3): every arm with hyperparameters searched over 4 configurations on the dev stream
# of each family; the frozen source has none. Scored by AP on the dev stream (its labels, never a check seed).
GRIDS: dict[str, dict[str, list[Any]]] = {
    "emc": {"rank": [4, 8], "ridge": [0.3, 1.0]},
    "direct": {"rank": [4, 8], "ridge": [0.3, 1.0]},
    "raw_memory": {"ridge": [0.1, 0.3, 1.0, 3.0]},
    "tent": {"lr": [1e-3, 1e-2], "steps": [10, 50]},
    "t3a": {"filter_k": [5, 20, 100, -1]},
    "gcal": {"lr_model": [1e-3, 1e-2], "params": ["all", "norm"]},
}
TRACKED = ("emc", "gcal")   # peak memory is measured for these two only (C3)


def _device(ctx: CheckContext) -> str:
    wants_cuda = ctx.device.startswith("cuda") or ctx.scale == "gpu"
    return "cuda" if wants_cuda and torch.cuda.is_available() else "cpu"


def _make(name: str, params: dict[str, Any], model: torch.nn.Module, n_classes: int, source: Any,
          seed: int) -> Any:
    """One method, built with its (tuned) hyperparameters and fitted on the source where it needs it."""
    if name == "source":
        return SourceOnly(model)
    if name == "emc":
        return EMC(model, n_classes, **params).fit_source(source)
    if name == "direct":
        return DirectClosedForm(model, n_classes, **params).fit_source(source)
    if name == "raw_memory":
        return RawEmbeddingMemory(model, n_classes, **params).fit_source(source)
    if name == "tent":
        return TentGraph(model, params="norm", **params)
    if name == "t3a":
        return T3A(model, **params)
    if name == "gcal":
        return GCAL(model, epochs=GCAL_EPOCHS, seed=seed, **params)
    raise KeyError(name)


def _specs(ctx: CheckContext, family: str) -> list[tuple[str, Any]]:
    """``(regime name, seed -> stream)`` for the CSBM family or the Planetoid family."""
    if family == "csbm":
        n, t = ctx.pick({"smoke": (300, 3), "quick": (500, 6), "full": (1000, 10), "gpu": (50_000, 20)})
        return [("csbm", lambda seed, n=n, t=t: csbm_stream(n_domains=t, n_nodes=n, seed=seed))]
    planetoid = ctx.pick({"smoke": [], "quick": [("cora", 4)], "full": [("cora", 8), ("citeseer", 6)],
                          "gpu": [("cora", 8), ("citeseer", 8)]})
    return [(name, lambda seed, name=name, t=t: planetoid_shift_stream(name, n_domains=t, seed=seed))
            for name, t in planetoid]


def _prepare(ctx: CheckContext, stream: list[Any], seed: int) -> tuple[list[Any], torch.nn.Module, int]:
    source_epochs = ctx.pick({"smoke": 40, "quick": 100, "full": 100})
    dev = torch.device(_device(ctx))
    stream = [g.to(dev) for g in stream]
    n_classes = int(stream[0].y.max()) + 1
    model = train_source_gnn(stream[0], hidden=HIDDEN, epochs=source_epochs, batch_norm=BATCH_NORM,
                             seed=seed).to(dev)
    return stream, model, n_classes


def _tune_regime(ctx: CheckContext, regime: str, make_stream: Any) -> dict[str, Any]:
    """Tune every arm on the regime's dev stream (seed ``DEV_SEED``) with equal grids; return the choices
    and the dev scores of the chosen configurations (and of the frozen source)."""
    stream, model, n_classes = _prepare(ctx, make_stream(DEV_SEED), DEV_SEED)

    def scorer(name: str) -> Any:
        def train_eval(params: dict[str, Any], split: str) -> float:
            method = _make(name, params, model, n_classes, stream[0], DEV_SEED)
            return continual_eval(method, stream[1:], track_memory=False).average_accuracy
        return train_eval

    tuned = tune_arms({f"{regime}:{name}": (scorer(name), grid) for name, grid in GRIDS.items()},
                      split=f"dev (seed {DEV_SEED})", ctx=ctx)
    source_ap = continual_eval(SourceOnly(model), stream[1:], track_memory=False).average_accuracy
    return {"best": {name: tuned[f"{regime}:{name}"].best for name in GRIDS},
            "dev_AP": {"source": source_ap, **{name: tuned[f"{regime}:{name}"].best_score for name in GRIDS}}}


def _run_stream(ctx: CheckContext, stream: list[Any], seed: int, best: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every method (tuned) over one stream (source domain first); accuracy, forgetting, time and memory."""
    memory_domains = ctx.pick({"smoke": 1, "quick": 1, "full": 2})
    stream, model, n_classes = _prepare(ctx, stream, seed)
    out = {}
    for name in ("source", *GRIDS):
        method = _make(name, best.get(name, {}), model, n_classes, stream[0], seed)
        res = continual_eval(method, stream[1:], memory_domains=memory_domains, track_memory=name in TRACKED)
        out[name] = {"AP": res.average_accuracy, "AF": res.forgetting, "adapt": res.adapt_accuracy,
                     "median_time_s": float(np.median(res.time_s)),
                     "median_cpu_time_s": float(np.median(res.cpu_time_s)), "total_time_s": res.total_time_s,
                     "peak_bytes": float(np.nanmax(res.peak_bytes)) if name in TRACKED else None}
    return out


def _streams(ctx: CheckContext, family: str) -> dict[str, Any]:
    """``{"tuning": {regime: ...}, "cells": {"<regime>/seed<k>": results}}`` for one family."""
    tuning, cells = {}, {}
    with torch_threads(1):  # small graphs: a second OpenMP thread mostly spins on a shared machine
        for regime, make in _specs(ctx, family):
            tuning[regime] = _tune_regime(ctx, regime, make)
            ctx.log(f"{regime} tuned on dev: " + ", ".join(f"{k} {v:.3f}" for k, v in tuning[regime]["dev_AP"].items()))
        for seed in ctx.progress(ctx.seeds, desc=f"{family} streams"):
            for regime, make in _specs(ctx, family):
                cells[f"{regime}/seed{seed}"] = res = _run_stream(ctx, make(seed), seed, tuning[regime]["best"])
                ctx.log(f"{regime}/seed{seed}: " + ", ".join(f"{k} AP {v['AP']:.3f}" for k, v in res.items())
                        + f"; time x{_time_ratio(ctx, res):.1f}, memory x{_memory_ratio(res):.1f}")
    return {"tuning": tuning, "cells": cells}


def _regime(cell: str) -> str:
    return cell.split("/")[0]


def _results(ctx: CheckContext) -> tuple[dict[str, Any], dict[str, Any], str]:
    """All adaptation cells (ordered by seed: CSBM, then Cora/CiteSeer), the tuning per regime, and a note
    when Planetoid is absent."""
    csbm = ctx.cache("csbm", lambda: _streams(ctx, "csbm"))
    try:
        planetoid = ctx.cache("planetoid", lambda: _streams(ctx, "planetoid"))
        note = ""
    except DatasetNotFoundError as err:
        planetoid = {"tuning": {}, "cells": {}}
        note = f"Planetoid data absent ({str(err).splitlines()[0]}): decided on the CSBM cells alone"
        if note not in ctx.notes:
            ctx.note(note)
    ordered = {key: part["cells"][key] for seed in ctx.seeds for part in (csbm, planetoid)
               for key in part["cells"] if key.endswith(f"/seed{seed}")}
    tuning = {**csbm["tuning"], **planetoid["tuning"]}
    ctx.metrics["cells"] = ordered
    ctx.metrics["tuned"] = tuning
    return ordered, tuning, note


def _cells(ctx: CheckContext) -> tuple[dict[str, Any], str]:
    cells, _, note = _results(ctx)
    return cells, note


def _by_regime(cells: dict[str, Any], value: Any) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    for key, res in cells.items():
        groups.setdefault(_regime(key), []).append(float(value(res)))
    return groups


# ------------------------------------------------------------------------------------------ C1-C3
def measure_c1(ctx: CheckContext) -> Evidence:
    """Per cell, EMC's AP minus the AP of the best other method of its regime (the baseline with the highest
    mean test AP over that regime's cells: chosen after the fact, the strictest fixed comparator)."""
    cells, note = _cells(ctx)
    others = [k for k in ("source", *GRIDS) if k != "emc"]
    best = {}
    for regime in dict.fromkeys(_regime(k) for k in cells):
        mean_ap = {m: float(np.mean([v[m]["AP"] for k, v in cells.items() if _regime(k) == regime])) for m in others}
        best[regime] = max(mean_ap, key=mean_ap.get)
    diffs = [v["emc"]["AP"] - v[best[_regime(k)]]["AP"] for k, v in cells.items()]
    per_cell_max = [v["emc"]["AP"] - max(v[m]["AP"] for m in others) for v in cells.values()]
    return Evidence(values=diffs, unit="AP EMC - best other method of the regime (fraction, per cell)", note=note,
                    details={"cells": list(cells), "best_other": best, "emc_minus_gcal":
                             [v["emc"]["AP"] - v["gcal"]["AP"] for v in cells.values()],
                             "emc_minus_per_cell_best": per_cell_max,
                             "AP": {m: [v[m]["AP"] for v in cells.values()] for m in ("source", *GRIDS)}})


def measure_gcal_beats_source(ctx: CheckContext) -> Evidence:
    """C1 precondition (issue 48): the tuned GCAL port beats the frozen source on each regime's dev stream;
    at or below it, the port has collapsed and cannot stand for the state of the art."""
    _, tuning, note = _results(ctx)
    return Evidence(values=[t["dev_AP"]["gcal"] - t["dev_AP"]["source"] for t in tuning.values()],
                    unit="dev-stream AP, tuned GCAL - frozen source (per regime)", note=note,
                    details={"regimes": list(tuning), "dev_AP": {r: t["dev_AP"] for r, t in tuning.items()}})


def _time_ratio(ctx: CheckContext, res: dict[str, Any]) -> float:
    key = "median_time_s" if _device(ctx) == "cuda" else "median_cpu_time_s"
    return res["gcal"][key] / res["emc"][key]


def _memory_ratio(res: dict[str, Any]) -> float:
    return res["gcal"]["peak_bytes"] / res["emc"]["peak_bytes"]


def measure_c2(ctx: CheckContext) -> Evidence:
    cells, note = _cells(ctx)
    return Evidence(values=[_time_ratio(ctx, v) for v in cells.values()],
                    unit="x (GCAL / EMC median per-domain adapt time, per cell)", note=note,
                    details={"cells": list(cells), "regimes": _by_regime(cells, lambda r: _time_ratio(ctx, r)),
                             "gcal_epochs": GCAL_EPOCHS, "clock": "cuda" if _device(ctx) == "cuda" else "process"})


def measure_c3(ctx: CheckContext) -> Evidence:
    cells, note = _cells(ctx)
    return Evidence(values=[_memory_ratio(v) for v in cells.values()], unit="x (GCAL / EMC peak bytes, per cell)",
                    note=note, details={"cells": list(cells), "regimes": _by_regime(cells, _memory_ratio)})


# ------------------------------------------------------------------------------------------ C4
def measure_c4(ctx: CheckContext) -> Evidence:
    """Forgetting of direct adaptation vs EMC on one long CSBM stream per seed (closed forms, no memory tracking)."""
    long_n, long_t = ctx.pick({"smoke": (300, 6), "quick": (500, 30), "full": (1000, 40), "gpu": (1000, 40)})
    _, tuning, _ = _results(ctx)
    best = tuning["csbm"]["best"]  # EMC and direct as tuned on the CSBM dev stream
    rows = {}
    with torch_threads(1):
        for seed in ctx.progress(ctx.seeds, desc="long stream"):
            stream, model, n_classes = _prepare(ctx, csbm_stream(n_domains=long_t, n_nodes=long_n, seed=seed), seed)
            rows[seed] = {}
            for name in ("direct", "emc", "source"):
                method = _make(name, best.get(name, {}), model, n_classes, stream[0], seed)
                res = continual_eval(method, stream[1:], track_memory=False)
                rows[seed][name] = {"AP": res.average_accuracy, "AF": res.forgetting,
                                    "final_row": [float(v) for v in res.accuracy[-1]]}
            ctx.log(f"long stream seed {seed}: " + ", ".join(f"{k} AF {v['AF']:.3f} AP {v['AP']:.3f}"
                                                             for k, v in rows[seed].items()))
    ctx.metrics["long_stream"] = {f"seed{s}": r for s, r in rows.items()}
    _plot_long_stream(ctx, rows, long_t)
    af_direct = [r["direct"]["AF"] for r in rows.values()]
    af_emc = [r["emc"]["AF"] for r in rows.values()]
    ctx.note(f"device {_device(ctx)}; long stream n={long_n}, T={long_t}; EMC and direct with their CSBM dev-stream "
             f"settings {best['emc']} / {best['direct']}. Times on a shared CPU are noisy; ratios are within one "
             "run (same process, one thread).")
    return Evidence(values=[d - e for d, e in zip(af_direct, af_emc, strict=True)],
                    unit="AF(direct) - AF(EMC) (per seed)", details={"AF_emc": af_emc, "AF_direct": af_direct})


def _plot_long_stream(ctx: CheckContext, rows: dict[int, dict[str, Any]], long_t: int) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name in ("source", "direct", "emc"):
        acc = np.array([r[name]["final_row"] for r in rows.values()])
        se = acc.std(axis=0, ddof=1) / np.sqrt(len(acc)) if len(acc) > 1 else np.zeros(acc.shape[1])
        ax.errorbar(range(1, long_t + 1), acc.mean(axis=0), yerr=se, capsize=2, label=name)
    ax.set_xlabel("domain j")
    ax.set_ylabel("accuracy after the last domain")
    ax.set_title(f"CSBM, {long_t} domains: final-row accuracy")
    ax.legend()
    ctx.save_figure(fig, "long_stream_final_row.png", dpi=100,
                    caption=f"Accuracy on each domain j after adapting to all {long_t} CSBM domains; mean over "
                            f"{len(rows)} seed(s), error bars 1 SE over seeds.")


# ------------------------------------------------------------------------------------------ claims
DECIDED = ("quick", "full", "gpu")
PER_REGIME_RATIO = rules.each("regimes", rules.ratio_at_least(COST_RATIO_MIN, min_n=MIN_CELLS, test="t"))
TUNING = ("equal: every arm with hyperparameters (EMC, direct, raw-embedding memory, Tent, T3A, GCAL) searched "
          "over 4 configurations on each regime's dev stream (seed 100, its labels), scored by AP; the frozen source "
          "has none; backbone shared (2-layer GCN, hidden 64, BatchNorm)")
CLAIMS = (
    Claim(id="C1", statement="EMC outperforms the state of the art (GCAL, generative memory) and the other "
          "test-time methods on graphs under non-stationary covariate shift.",
          paper_value="superior accuracy vs SOTA (numbers not in the abstract)",
          metric="AP(EMC) - AP(best other method of the regime) per (regime, seed) cell; AP = mean final-row "
                 "accuracy; the best other method = highest mean test AP among frozen source, Tent (BN), T3A, "
                 "direct, raw-embedding memory, GCAL",
          rule=rules.better(margin=C1_MARGIN, min_n=MIN_CELLS, test="t",
                            label="AP(EMC) - AP(best other method), per cell"),
          measure=measure_c1, scales=DECIDED, compares_trained=True, tuning=TUNING,
          preconditions=(preconditions.beats_reference("tuned GCAL port beats the frozen source on the dev stream "
                                                       "(not collapsed)", measure_gcal_beats_source,
                                                       margin=GCAL_OVER_SOURCE, min_n=1),)),
    Claim(id="C2", statement="EMC reduces average runtime relative to the recent competitor.",
          paper_value="-87.4% runtime (7.9x) vs GCAL-like competitor, GPU",
          metric=f"GCAL / EMC median per-domain adaptation time per cell, decided per regime (GCAL at {GCAL_EPOCHS} "
                 "epochs per domain, the fewest that train and store its memory; process CPU time on CPU, "
                 "CUDA-event time on a GPU)",
          rule=PER_REGIME_RATIO, measure=measure_c2, scales=DECIDED),
    Claim(id="C3", statement="EMC reduces memory consumption relative to the recent competitor.",
          paper_value="-92.4% GPU memory (13x) vs GCAL-like competitor",
          metric="GCAL / EMC peak tensor bytes during adaptation per cell, decided per regime (CPU tracked "
                 "tensors, CUDA allocator)",
          rule=PER_REGIME_RATIO, measure=measure_c3, scales=DECIDED),
    Claim(id="C4", statement="State-evolving memory keeps accuracy stable over long streams, where direct "
          "adaptation forgets (tighter bound than direct adaptation).",
          paper_value="qualitative (bound); no number in the abstract",
          metric="AF(direct closed form) - AF(EMC) on a CSBM stream of >= 30 domains, per seed (t interval)",
          rule=rules.better(margin=AF_MARGIN, min_n=MIN_CELLS, test="t"),
          measure=measure_c4, scales=DECIDED),
)

PAPER = Paper(id="P02", slug="emc",
              method="Efficient Memory Crystallization",
              title="EMC: training-free test-time continual graph adaptation (title not found)", arxiv=None,
              claims=CLAIMS, default_seeds={"smoke": 1, "quick": 3, "full": 3, "gpu": 5})
