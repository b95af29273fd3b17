"""Claim check for P02 (EMC): accuracy vs the GCAL-style competitor, cost ratios, long-stream stability.

Data: CSBM streams with drifting covariates (synthetic) and Cora / CiteSeer with a progressive
covariate shift (real features, synthetic shift). Backbone: 2-layer GCN, hidden 64, shared by every
method. The GCAL port runs 20 epochs per domain (>= 6 needed for it to train and store any memory).
Time = median per-domain ``adapt`` wall time; memory = peak tensor bytes during ``adapt`` (CPU:
dispatch-level tracking in a shadow pass; CUDA: allocator peak), measured on the first domains.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neurips26.claims import (
    CheckContext,
    CheckOutput,
    Claim,
    Evidence,
    Paper,
    Verdict,
    inconclusive,
    supported_if,
    torch_threads,
)

from .baselines import GCAL, DirectClosedForm, SourceOnly, TentGraph
from .emc import EMC
from .encoder import train_source_gnn
from .evaluate import continual_eval
from .streams import csbm_stream, planetoid_shift_stream


def _decide_c1(ev: Evidence) -> Verdict:
    if ev.n < 3:
        return inconclusive(f"needs >= 3 (seed, dataset) cells, got {ev.n}")
    wins = sum(v >= 0 for v in ev.values)
    return supported_if(wins >= math.ceil(2 * ev.n / 3) and ev.mean >= 0,
                        f"EMC AP - GCAL AP = {ev.mean:+.3f} ± {ev.sem:.3f} (SE); EMC >= GCAL in {wins}/{ev.n} cells")


def _ratio_rule(name: str):  # noqa: ANN202
    def decide(ev: Evidence) -> Verdict:
        if ev.n < 3:
            return inconclusive(f"needs >= 3 cells, got {ev.n}")
        med = float(np.median(ev.values))
        return supported_if(med >= 5.0, f"median GCAL/EMC {name} ratio {med:.1f}x over {ev.n} cells "
                            f"(range {min(ev.values):.1f}-{max(ev.values):.1f}x; threshold 5x)")
    return decide


def _decide_c4(ev: Evidence) -> Verdict:
    if ev.n < 3:
        return inconclusive(f"needs >= 3 seeds, got {ev.n}")
    af_emc = ev.details.get("AF_emc", [])
    below = sum(v > 0 for v in ev.values)
    ok = below == ev.n and float(np.mean(af_emc)) <= 0.05
    return supported_if(ok, f"AF(direct) - AF(EMC) = {ev.mean:+.3f} ± {ev.sem:.3f}; EMC forgets less in "
                        f"{below}/{ev.n} seeds; mean AF(EMC) = {float(np.mean(af_emc)):.3f}")


CLAIMS = (
    Claim(id="C1", statement="EMC outperforms the state of the art (GCAL, generative memory) on graphs under "
          "non-stationary covariate shift.",
          paper_value="superior accuracy vs SOTA (numbers not in the abstract)",
          metric="EMC AP - GCAL AP per (seed, dataset) cell (AP = mean final-row accuracy)",
          criterion="supported if EMC AP >= GCAL AP in >= 2/3 of the cells and the mean difference >= 0; "
                    "needs >= 3 cells", decide=_decide_c1, scales=("quick", "full", "gpu")),
    Claim(id="C2", statement="EMC reduces average runtime relative to the recent competitor.",
          paper_value="-87.4% runtime (7.9x) vs GCAL-like competitor, GPU",
          metric="GCAL / EMC median per-domain adaptation time (x; process CPU time on CPU, robust to other "
                 "jobs on a shared machine; wall time on CUDA; wall times are in the metrics)",
          criterion="supported if the median ratio over cells is >= 5x", decide=_ratio_rule("time"),
          scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="EMC reduces memory consumption relative to the recent competitor.",
          paper_value="-92.4% GPU memory (13x) vs GCAL-like competitor",
          metric="GCAL / EMC peak tensor bytes during adaptation (x; CPU tracked tensors, CUDA allocator)",
          criterion="supported if the median ratio over cells is >= 5x", decide=_ratio_rule("memory"),
          scales=("quick", "full", "gpu")),
    Claim(id="C4", statement="State-evolving memory keeps accuracy stable over long streams, where direct "
          "adaptation forgets (tighter bound than direct adaptation).",
          paper_value="qualitative (bound); no number in the abstract",
          metric="AF(direct closed form) - AF(EMC) on a CSBM stream of >= 30 domains, per seed",
          criterion="supported if EMC forgets less than direct adaptation in every seed and mean AF(EMC) "
                    "<= 0.05", decide=_decide_c4, scales=("quick", "full", "gpu")),
)


def _methods(model: torch.nn.Module, n_classes: int, source: Any, gcal_epochs: int, seed: int,
             ) -> dict[str, Any]:
    return {
        "source": SourceOnly(model),
        "tent": TentGraph(model),
        "direct": DirectClosedForm(model, n_classes).fit_source(source),
        "gcal": GCAL(model, epochs=gcal_epochs, seed=seed),
        "emc": EMC(model, n_classes).fit_source(source),
    }


def _run_stream(stream: list[Any], seed: int, gcal_epochs: int, memory_domains: int, device: str,
                source_epochs: int) -> dict[str, dict[str, Any]]:
    source = stream[0]
    n_classes = int(source.y.max()) + 1
    dev = torch.device(device)
    stream = [g.to(dev) for g in stream]
    model = train_source_gnn(stream[0], hidden=64, epochs=source_epochs, seed=seed).to(dev)
    out = {}
    for name, method in _methods(model, n_classes, stream[0], gcal_epochs, seed).items():
        res = continual_eval(method, stream[1:], memory_domains=memory_domains)
        out[name] = {"AP": res.average_accuracy, "AF": res.forgetting, "adapt": res.adapt_accuracy,
                     "median_time_s": float(np.median(res.time_s)),
                     "median_cpu_time_s": float(np.median(res.cpu_time_s)), "total_time_s": res.total_time_s,
                     "peak_bytes": float(np.nanmax(res.peak_bytes)),
                     "peak_python_bytes": float(np.nanmax(res.peak_python_bytes))
                     if not all(np.isnan(res.peak_python_bytes)) else None}
    return out


def run(ctx: CheckContext) -> CheckOutput:
    # one intra-op thread: these graphs are small, and on a shared 2-core machine a second OpenMP
    # thread mostly spins (10x slower here); restored afterwards
    with torch_threads(1):
        return _run(ctx)


def _run(ctx: CheckContext) -> CheckOutput:
    device = "cuda" if ctx.device.startswith("cuda") or ctx.scale == "gpu" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        device = "cpu"
    csbm_n, csbm_t = ctx.pick({"smoke": (300, 3), "quick": (500, 6), "full": (1000, 10), "gpu": (50_000, 20)})
    planetoid = ctx.pick({"smoke": [], "quick": [("cora", 4)], "full": [("cora", 8), ("citeseer", 6)],
                          "gpu": [("cora", 8), ("citeseer", 8)]})
    gcal_epochs = ctx.pick({"smoke": 6, "quick": 20, "full": 20})
    long_n, long_t = ctx.pick({"smoke": (300, 6), "quick": (500, 30), "full": (1000, 40), "gpu": (1000, 40)})
    source_epochs = ctx.pick({"smoke": 40, "quick": 100, "full": 100})
    memory_domains = ctx.pick({"smoke": 1, "quick": 1, "full": 2})

    cells: dict[str, dict[str, dict[str, Any]]] = {}
    diff, t_ratio, m_ratio = [], [], []
    for seed in ctx.progress(ctx.seeds, desc="seeds"):
        streams = [("csbm", csbm_stream(n_domains=csbm_t, n_nodes=csbm_n, seed=seed))]
        streams += [(name, planetoid_shift_stream(name, n_domains=t, seed=seed)) for name, t in planetoid]
        for name, stream in streams:
            res = _run_stream(stream, seed, gcal_epochs, memory_domains, device, source_epochs)
            key = f"{name}/seed{seed}"
            cells[key] = res
            diff.append(res["emc"]["AP"] - res["gcal"]["AP"])
            key_t = "median_time_s" if device == "cuda" else "median_cpu_time_s"
            t_ratio.append(res["gcal"][key_t] / res["emc"][key_t])
            m_ratio.append(res["gcal"]["peak_bytes"] / res["emc"]["peak_bytes"])
            ctx.log(f"{key}: " + ", ".join(f"{k} AP {v['AP']:.3f}" for k, v in res.items())
                    + f"; time x{t_ratio[-1]:.1f}, memory x{m_ratio[-1]:.1f}")

    # C4: long stream, EMC vs direct adaptation (both closed form; no memory tracking needed)
    af_direct, af_emc, long_rows = [], [], {}
    for seed in ctx.progress(ctx.seeds, desc="long stream"):
        stream = csbm_stream(n_domains=long_t, n_nodes=long_n, seed=seed)
        model = train_source_gnn(stream[0], hidden=64, epochs=source_epochs, seed=seed)
        row = {}
        for name, method in (("direct", DirectClosedForm(model, 4).fit_source(stream[0])),
                             ("emc", EMC(model, 4).fit_source(stream[0])),
                             ("source", SourceOnly(model))):
            res = continual_eval(method, stream[1:], track_memory=False)
            row[name] = {"AP": res.average_accuracy, "AF": res.forgetting,
                         "final_row": [float(v) for v in res.accuracy[-1]]}
        long_rows[f"seed{seed}"] = row
        af_direct.append(row["direct"]["AF"])
        af_emc.append(row["emc"]["AF"])
        ctx.log(f"long stream seed {seed}: AF direct {af_direct[-1]:.3f}, EMC {af_emc[-1]:.3f}; "
                f"AP direct {row['direct']['AP']:.3f}, EMC {row['emc']['AP']:.3f}, source {row['source']['AP']:.3f}")

    plots = []
    try:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        first = next(iter(long_rows.values()))
        for name in ("source", "direct", "emc"):
            ax.plot(range(1, long_t + 1), first[name]["final_row"], label=name)
        ax.set_xlabel("domain j")
        ax.set_ylabel("accuracy after the last domain")
        ax.set_title(f"CSBM, {long_t} domains: final-row accuracy (seed {ctx.seeds[0]})")
        ax.legend()
        path = ctx.save_figure(fig, "long_stream_final_row.png", dpi=100)
        plots.append(path)
    except Exception as err:  # plotting is optional
        ctx.log(f"plot skipped: {err}")

    best_other = [max(v[k]["AP"] for k in v if k != "emc") for v in cells.values()]
    evidence = {
        "C1": Evidence(values=diff, unit="AP difference (fraction)",
                       details={"cells": list(cells), "emc_minus_best_other": [
                           v["emc"]["AP"] - b for v, b in zip(cells.values(), best_other, strict=True)]}),
        "C2": Evidence(values=t_ratio, unit="x (GCAL / EMC time)"),
        "C3": Evidence(values=m_ratio, unit="x (GCAL / EMC peak bytes)"),
        "C4": Evidence(values=[d - e for d, e in zip(af_direct, af_emc, strict=True)], unit="AF difference",
                       details={"AF_emc": af_emc, "AF_direct": af_direct}),
    }
    notes = [f"device {device}; CSBM n={csbm_n}, T={csbm_t}; planetoid {planetoid}; GCAL {gcal_epochs} "
             f"epochs/domain; long stream n={long_n}, T={long_t}; memory tracked on the first "
             f"{memory_domains} domains (shadow pass)",
             "Times on a shared CPU are noisy; ratios are within one run. EMC defaults (rank 8, ridge 0.3) "
             "were chosen on CSBM dev seeds 100-101, never on the check's seeds or target labels."]
    return CheckOutput(evidence=evidence, metrics={"cells": cells, "long_stream": long_rows}, plots=plots,
                       notes=notes)


PAPER = Paper(id="P02", slug="emc", claims=CLAIMS, run=run,
              default_seeds={"smoke": 1, "quick": 3, "full": 3, "gpu": 5})
