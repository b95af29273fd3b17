"""Claim check for P02 (EMC): accuracy vs the GCAL-style competitor, cost ratios, long-stream stability.

Data: CSBM streams with drifting covariates (synthetic) and Cora / CiteSeer with a progressive
covariate shift (real features, synthetic shift). Backbone: 2-layer GCN, hidden 64, shared by every
method. The GCAL port runs 20 epochs per domain (>= 6 needed for it to train and store any memory).
Time = median per-domain ``adapt`` time (process CPU on CPU, wall on CUDA; :mod:`neurips26.claims.measure`);
memory = peak tensor bytes during ``adapt`` (CPU: dispatch-level tracking in a shadow pass; CUDA:
allocator peak), measured on the first domains.

C1-C3 are decided over (stream, seed) cells: the CSBM cells (``ctx.cache("csbm")``) and, when the
Planetoid data are present, the Cora / CiteSeer cells (``ctx.cache("planetoid")``). Without the
Planetoid files they are decided on the CSBM cells alone (their criteria need >= 3 cells, not Planetoid
ones), with a note saying so. C4 uses CSBM only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, preconditions, rules, torch_threads
from neurips26.data import DatasetNotFoundError

from .baselines import GCAL, DirectClosedForm, SourceOnly, TentGraph
from .emc import EMC
from .encoder import train_source_gnn
from .evaluate import continual_eval
from .streams import csbm_stream, planetoid_shift_stream

MIN_CELLS = 3            # C1-C3: (stream, seed) cells; C4: seeds
WIN_SHARE = 2 / 3        # C1: EMC >= GCAL in at least this share of cells (and mean difference >= 0)
COST_RATIO_MIN = 5.0     # C2/C3: median GCAL / EMC ratio
AF_MARGIN = 0.0          # C4: AF(direct) - AF(EMC) interval must lie above this (comparative, issue 48)
GCAL_OVER_SOURCE = 0.0   # C1 precondition: the GCAL port must beat the frozen source AP in every cell
HIDDEN = 64


def _device(ctx: CheckContext) -> str:
    wants_cuda = ctx.device.startswith("cuda") or ctx.scale == "gpu"
    return "cuda" if wants_cuda and torch.cuda.is_available() else "cpu"


def _methods(model: torch.nn.Module, n_classes: int, source: Any, gcal_epochs: int, seed: int) -> dict[str, Any]:
    return {
        "source": SourceOnly(model),
        "tent": TentGraph(model),
        "direct": DirectClosedForm(model, n_classes).fit_source(source),
        "gcal": GCAL(model, epochs=gcal_epochs, seed=seed),
        "emc": EMC(model, n_classes).fit_source(source),
    }


def _run_stream(ctx: CheckContext, stream: list[Any], seed: int) -> dict[str, dict[str, Any]]:
    """Every method over one stream (source domain first); accuracy, forgetting, time and memory."""
    gcal_epochs = ctx.pick({"smoke": 6, "quick": 20, "full": 20})
    source_epochs = ctx.pick({"smoke": 40, "quick": 100, "full": 100})
    memory_domains = ctx.pick({"smoke": 1, "quick": 1, "full": 2})
    dev = torch.device(_device(ctx))
    stream = [g.to(dev) for g in stream]
    n_classes = int(stream[0].y.max()) + 1
    model = train_source_gnn(stream[0], hidden=HIDDEN, epochs=source_epochs, seed=seed).to(dev)
    out = {}
    for name, method in _methods(model, n_classes, stream[0], gcal_epochs, seed).items():
        res = continual_eval(method, stream[1:], memory_domains=memory_domains)
        python_peaks = None if all(np.isnan(res.peak_python_bytes)) else float(np.nanmax(res.peak_python_bytes))
        out[name] = {"AP": res.average_accuracy, "AF": res.forgetting, "adapt": res.adapt_accuracy,
                     "median_time_s": float(np.median(res.time_s)),
                     "median_cpu_time_s": float(np.median(res.cpu_time_s)), "total_time_s": res.total_time_s,
                     "peak_bytes": float(np.nanmax(res.peak_bytes)), "peak_python_bytes": python_peaks}
    return out


def _streams(ctx: CheckContext, family: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Results per ``"<stream>/seed<k>"`` cell for the CSBM family or the Planetoid family."""
    if family == "csbm":
        n, t = ctx.pick({"smoke": (300, 3), "quick": (500, 6), "full": (1000, 10), "gpu": (50_000, 20)})
        specs = [("csbm", lambda seed, n=n, t=t: csbm_stream(n_domains=t, n_nodes=n, seed=seed))]
    else:
        planetoid = ctx.pick({"smoke": [], "quick": [("cora", 4)], "full": [("cora", 8), ("citeseer", 6)],
                              "gpu": [("cora", 8), ("citeseer", 8)]})
        specs = [(name, lambda seed, name=name, t=t: planetoid_shift_stream(name, n_domains=t, seed=seed))
                 for name, t in planetoid]
    cells = {}
    with torch_threads(1):  # small graphs: a second OpenMP thread mostly spins on a shared machine
        for seed in ctx.progress(ctx.seeds, desc=f"{family} streams"):
            for name, make in specs:
                cells[f"{name}/seed{seed}"] = res = _run_stream(ctx, make(seed), seed)
                ctx.log(f"{name}/seed{seed}: " + ", ".join(f"{k} AP {v['AP']:.3f}" for k, v in res.items())
                        + f"; time x{_time_ratio(ctx, res):.1f}, memory x{_memory_ratio(res):.1f}")
    return cells


def _time_ratio(ctx: CheckContext, res: dict[str, dict[str, Any]]) -> float:
    key = "median_time_s" if _device(ctx) == "cuda" else "median_cpu_time_s"
    return res["gcal"][key] / res["emc"][key]


def _memory_ratio(res: dict[str, dict[str, Any]]) -> float:
    return res["gcal"]["peak_bytes"] / res["emc"]["peak_bytes"]


def _cells(ctx: CheckContext) -> tuple[dict[str, dict[str, dict[str, Any]]], str]:
    """All adaptation cells, ordered by seed (CSBM, then Cora/CiteSeer), and a note when Planetoid is absent."""
    csbm = ctx.cache("csbm", lambda: _streams(ctx, "csbm"))
    try:
        planetoid = ctx.cache("planetoid", lambda: _streams(ctx, "planetoid"))
        note = ""
    except DatasetNotFoundError as err:
        planetoid = {}
        note = f"Planetoid data absent ({str(err).splitlines()[0]}): decided on the CSBM cells alone"
        if note not in ctx.notes:
            ctx.note(note)
    ordered = {key: cells[key] for seed in ctx.seeds for cells in (csbm, planetoid)
               for key in cells if key.endswith(f"/seed{seed}")}
    ctx.metrics["cells"] = ordered
    return ordered, note


# ------------------------------------------------------------------------------------------ C1-C3
def measure_c1(ctx: CheckContext) -> Evidence:
    cells, note = _cells(ctx)
    diffs = [v["emc"]["AP"] - v["gcal"]["AP"] for v in cells.values()]
    best_other = [v["emc"]["AP"] - max(r["AP"] for k, r in v.items() if k != "emc") for v in cells.values()]
    return Evidence(values=diffs, unit="AP difference EMC - GCAL (fraction, per cell)", note=note,
                    details={"cells": list(cells), "emc_minus_best_other": best_other})


def measure_c2(ctx: CheckContext) -> Evidence:
    cells, note = _cells(ctx)
    return Evidence(values=[_time_ratio(ctx, v) for v in cells.values()], unit="x (GCAL / EMC time, per cell)",
                    note=note, details={"cells": list(cells), "clock": "cuda" if _device(ctx) == "cuda" else "process"})


def measure_c3(ctx: CheckContext) -> Evidence:
    cells, note = _cells(ctx)
    return Evidence(values=[_memory_ratio(v) for v in cells.values()], unit="x (GCAL / EMC peak bytes, per cell)",
                    note=note, details={"cells": list(cells)})


def measure_gcal_beats_source(ctx: CheckContext) -> Evidence:
    """C1 precondition (issue 48): a GCAL port at or below the frozen source has collapsed, and a
    comparison against it cannot answer C1."""
    cells, note = _cells(ctx)
    return Evidence(values=[v["gcal"]["AP"] - v["source"]["AP"] for v in cells.values()],
                    unit="AP GCAL - frozen source (per cell)", note=note, details={"cells": list(cells)})


# ------------------------------------------------------------------------------------------ C4
def measure_c4(ctx: CheckContext) -> Evidence:
    """Forgetting of direct adaptation vs EMC on one long CSBM stream per seed (closed forms, no memory tracking)."""
    long_n, long_t = ctx.pick({"smoke": (300, 6), "quick": (500, 30), "full": (1000, 40), "gpu": (1000, 40)})
    source_epochs = ctx.pick({"smoke": 40, "quick": 100, "full": 100})
    rows = {}
    with torch_threads(1):
        for seed in ctx.progress(ctx.seeds, desc="long stream"):
            stream = csbm_stream(n_domains=long_t, n_nodes=long_n, seed=seed)
            model = train_source_gnn(stream[0], hidden=HIDDEN, epochs=source_epochs, seed=seed)
            rows[seed] = {}
            for name, method in (("direct", DirectClosedForm(model, 4).fit_source(stream[0])),
                                 ("emc", EMC(model, 4).fit_source(stream[0])), ("source", SourceOnly(model))):
                res = continual_eval(method, stream[1:], track_memory=False)
                rows[seed][name] = {"AP": res.average_accuracy, "AF": res.forgetting,
                                    "final_row": [float(v) for v in res.accuracy[-1]]}
            ctx.log(f"long stream seed {seed}: " + ", ".join(f"{k} AF {v['AF']:.3f} AP {v['AP']:.3f}"
                                                             for k, v in rows[seed].items()))
    ctx.metrics["long_stream"] = {f"seed{s}": r for s, r in rows.items()}
    _plot_long_stream(ctx, rows, long_t)
    af_direct = [r["direct"]["AF"] for r in rows.values()]
    af_emc = [r["emc"]["AF"] for r in rows.values()]
    ctx.note(f"device {_device(ctx)}; long stream n={long_n}, T={long_t}. Times on a shared CPU are noisy; ratios "
             "are within one run. EMC defaults (rank 8, ridge 0.3) were chosen on CSBM dev seeds 100-101, never "
             "on the check's seeds or target labels.")
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
CLAIMS = (
    Claim(id="C1", statement="EMC outperforms the state of the art (GCAL, generative memory) on graphs under "
          "non-stationary covariate shift.",
          paper_value="superior accuracy vs SOTA (numbers not in the abstract)",
          metric="EMC AP - GCAL AP per (seed, stream) cell (AP = mean final-row accuracy)",
          rule=rules.all_of(rules.at_least(WIN_SHARE, ">=", 0.0, min_n=MIN_CELLS),
                            rules.threshold(">=", 0.0, min_n=MIN_CELLS)),
          measure=measure_c1, scales=DECIDED, compares_trained=True,
          tuning="not equal (issue 48 open): EMC's rank/ridge chosen on CSBM dev seeds; baselines at GCAL's "
                 "code defaults, untuned",
          preconditions=(preconditions.beats_reference("GCAL port beats the frozen source (not collapsed)",
                                                       measure_gcal_beats_source, margin=GCAL_OVER_SOURCE,
                                                       min_n=MIN_CELLS),)),
    Claim(id="C2", statement="EMC reduces average runtime relative to the recent competitor.",
          paper_value="-87.4% runtime (7.9x) vs GCAL-like competitor, GPU",
          metric="GCAL / EMC median per-domain adaptation time (x; process CPU time on CPU, robust to other "
                 "jobs on a shared machine; CUDA-event time on a GPU; wall times are in the metrics)",
          rule=rules.threshold(">=", COST_RATIO_MIN, stat="median", min_n=MIN_CELLS),
          measure=measure_c2, scales=DECIDED),
    Claim(id="C3", statement="EMC reduces memory consumption relative to the recent competitor.",
          paper_value="-92.4% GPU memory (13x) vs GCAL-like competitor",
          metric="GCAL / EMC peak tensor bytes during adaptation (x; CPU tracked tensors, CUDA allocator)",
          rule=rules.threshold(">=", COST_RATIO_MIN, stat="median", min_n=MIN_CELLS),
          measure=measure_c3, scales=DECIDED),
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
