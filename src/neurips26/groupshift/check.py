"""Claim check for P07 GroupShift: exact recovery of the new optimum with less work than retraining.

Cases: scikit-learn's breast_cancer (measurement <-> statistic groups; least squares, plus logistic at
full scale), digits (pixel rows -> columns, rows -> 2×2 tiles), spline-expanded diabetes (feature groups <->
|corr| clusters) and a synthetic n=500, d=2000 problem (split, merge, move, inactive merge, cyclic shift,
random repartition), at λ = {0.3, 0.1(, 0.03 at full scale, not for the synthetic global transitions)}·λ_max(G').
Every method stops at duality gap <= 1e-9·P(0).
Work is counted in flops (n per column touched + n·d per full gap pass + block Lipschitz constants); wall
time is reported as within-run ratios (noisy on a shared 2-core machine).
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from neurips26.claims import (
    CheckContext,
    CheckOutput,
    Claim,
    Evidence,
    Paper,
    Verdict,
    inconclusive,
    supported_if,
)

from . import cases

TOL = 1e-9  # gap <= TOL · P(0) for every method
REL_OBJ = 1e-7  # |P_groupshift - P_cold| / P_cold
MIN_SPEEDUP_COLD = 3.0


def _decide_exact(ev: Evidence) -> Verdict:
    if ev.n == 0:
        return inconclusive("no cases run")
    certified = ev.details.get("n_certified", 0)
    worst = max(ev.values)
    ok = certified == ev.n and worst <= REL_OBJ
    return supported_if(ok, f"{certified}/{ev.n} cases certified (gap <= {TOL:g}·P(0)); worst |ΔP|/P = {worst:.2g} "
                            f"(bound {REL_OBJ:g})")


def _decide_cold(ev: Evidence) -> Verdict:
    if ev.n < 3:
        return inconclusive(f"only {ev.n} cases (need >= 3)")
    med = statistics.median(ev.values)
    return supported_if(med >= MIN_SPEEDUP_COLD, f"median flops ratio cold/groupshift = {med:.3g}× over {ev.n} "
                                                 f"cases (need >= {MIN_SPEEDUP_COLD:g}×); min {min(ev.values):.3g}×")


def _decide_warm(ev: Evidence) -> Verdict:
    if ev.n < 3:
        return inconclusive(f"only {ev.n} cases (need >= 3)")
    med = statistics.median(ev.values)
    worse = sum(v < 1.0 for v in ev.values)
    return supported_if(med > 1.0, f"median flops ratio warm/groupshift = {med:.3g}× over {ev.n} cases; "
                                   f"groupshift used more flops than warm start in {worse} case(s)")


def _decide_family(ev: Evidence) -> Verdict:
    if ev.n == 0:
        return inconclusive("no p != 2 cases run")
    certified = ev.details.get("n_certified", 0)
    worst = max(ev.values)
    return supported_if(certified == ev.n and worst <= REL_OBJ,
                        f"p ∈ {ev.details.get('ps')}: {certified}/{ev.n} certified, worst |ΔP|/P = {worst:.2g}")


CLAIMS = (
    Claim(id="C1", statement="GroupShift provably recovers the correct optimal solution for the new partition.",
          paper_value="exact recovery (no numbers found)",
          metric="|P_groupshift - P_cold| / P_cold per case, and the final duality gap",
          criterion=f"every case ends with duality gap <= {TOL:g}·P(0) and |ΔP|/P_cold <= {REL_OBJ:g}",
          decide=_decide_exact),
    Claim(id="C2", statement="GroupShift achieves significant acceleration over retraining from scratch.",
          paper_value="'significant acceleration' on real datasets (no numbers found)",
          metric="flops(cold) / flops(groupshift) per case (×)",
          criterion=f"median over cases >= {MIN_SPEEDUP_COLD:g}×", decide=_decide_cold,
          scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="The gain comes from the primitives' local work, not from the warm start alone "
                             "(the issue's 'better than plain warm start').",
          paper_value="not stated in the paper; our spec's prototype: warm start alone saves only 10-40%",
          metric="flops(warm start) / flops(groupshift) per case (×)",
          criterion="median over cases > 1× (cases where groupshift is worse are counted and reported)",
          decide=_decide_warm, scales=("quick", "full", "gpu")),
    Claim(id="C4", statement="The framework covers the group l_{p,1} family beyond the group lasso.",
          paper_value="l_{p,1} family (p = ∞ among others)",
          metric="|ΔP|/P_cold on p = ∞ (and p = 3 at full scale) cases",
          criterion=f"every p != 2 case certified and |ΔP|/P_cold <= {REL_OBJ:g}", decide=_decide_family),
)


def _case_list(ctx: CheckContext, seed: int, first_seed: bool):
    """(dataset, builder output, λ list, p, loss) items for this scale and seed."""
    items = []
    if ctx.scale == "smoke":
        X, y, tr = cases.synthetic(seed, n=200, d=200, n_active=4,
                                   which=("split-active", "merge-2-inactive", "move-1-feature"))
        items.append(("synthetic-small", X, y, tr, (0.2,), 2.0, "squared"))
        if first_seed:
            X, y, tr = cases.breast_cancer()
            items.append(("breast_cancer", X, y, tr[:1], (0.1,), 2.0, "squared"))
            items.append(("breast_cancer", X, y, tr[:1], (0.1,), math.inf, "squared"))
        return items
    lams = ctx.pick({"quick": (0.3, 0.1), "full": (0.3, 0.1, 0.03)})
    X, y, tr = cases.synthetic(seed)
    items.append(("synthetic", X, y, tr, lams, 2.0, "squared"))
    if first_seed:  # the real datasets are deterministic: run them once
        X, y, tr = cases.breast_cancer()
        items.append(("breast_cancer", X, y, tr, lams, 2.0, "squared"))
        items.append(("breast_cancer", X, y, tr, (0.1,), math.inf, "squared"))
        X, y, tr = cases.digits()
        items.append(("digits", X, y, tr, lams, 2.0, "squared"))
        X, y, tr = cases.diabetes_spline()
        items.append(("diabetes_spline", X, y, tr, lams, 2.0, "squared"))
        if ctx.scale in ("full", "gpu"):
            X, y, tr = cases.breast_cancer(logistic=True)
            items.append(("breast_cancer_logistic", X, y, tr, (0.3, 0.1), 2.0, "logistic"))
            X, y, tr = cases.diabetes_spline()
            items.append(("diabetes_spline", X, y, tr[:1], (0.1,), 3.0, "squared"))
            items.append(("digits", *cases.digits()[:2], cases.digits()[2][:1], (0.1,), math.inf, "squared"))
    return items


def run(ctx: CheckContext) -> CheckOutput:
    rows = []
    for i, seed in enumerate(ctx.progress(ctx.seeds, desc="seeds")):
        for dataset, X, y, transitions, lams, p, loss in _case_list(ctx, seed, i == 0):
            for name, kind, old, new in transitions:
                for lam_rel in lams:
                    if dataset == "synthetic" and kind == "global" and lam_rel < 0.1:
                        continue  # budget: these take thousands of epochs for every method in numpy
                    r = cases.run_case(X, y, old, new, lam_rel, p=p, loss=loss, tol=TOL,
                                       ablation=ctx.scale in ("full", "gpu"))
                    r.pop("coef_groupshift")
                    r.pop("coef_cold")
                    r.update({"dataset": dataset, "transition": name, "kind": kind, "seed": seed})
                    rows.append(r)
                    ctx.log(f"{dataset:22s} {name:22s} p={p:<4g} {loss:8s} λ={lam_rel:<5g} "
                            f"cold/gs {r['speedup_vs_cold']:7.2f}× warm/gs {r['speedup_vs_warm']:6.2f}× "
                            f"|ΔP|/P {r['rel_obj_diff']:.1e} closed-form "
                            f"{r['groupshift']['n_closed_form']}/{r['groupshift']['n_primitives']}")
    p2 = [r for r in rows if r["p"] == 2.0]
    other = [r for r in rows if r["p"] != 2.0]

    def by(key, subset):
        out = {}
        for r in subset:
            out.setdefault(r[key], []).append(r)
        return out

    def med(subset, field):
        return float(statistics.median([r[field] for r in subset])) if subset else math.nan

    evidence = {
        "C1": Evidence(values=[r["rel_obj_diff"] for r in rows], unit="|ΔP|/P (per case)",
                       details={"n_certified": sum(r["certified"] for r in rows),
                                "n_same_support": sum(r["same_support"] for r in rows)}),
        "C2": Evidence(values=[r["speedup_vs_cold"] for r in p2], unit="× flops (per case)",
                       details={"median_by_kind": {k: med(v, "speedup_vs_cold") for k, v in by("kind", p2).items()},
                                "median_by_dataset": {k: med(v, "speedup_vs_cold")
                                                      for k, v in by("dataset", p2).items()},
                                "median_epochs_ratio": float(statistics.median(
                                    [r["cold"]["epochs"] / max(r["groupshift"]["epochs"], 1) for r in p2]))
                                if p2 else math.nan}),
        "C3": Evidence(values=[r["speedup_vs_warm"] for r in p2], unit="× flops (per case)",
                       details={"median_by_kind": {k: med(v, "speedup_vs_warm") for k, v in by("kind", p2).items()},
                                "worse_than_warm": [f"{r['dataset']}:{r['transition']}@{r['lam_rel']}"
                                                    for r in p2 if r["speedup_vs_warm"] < 1.0]}),
        "C4": Evidence(values=[r["rel_obj_diff"] for r in other], unit="|ΔP|/P (per case)",
                       details={"n_certified": sum(r["certified"] for r in other),
                                "ps": sorted({str(r["p"]) for r in other})}),
    }
    n_prim = sum(r["groupshift"]["n_primitives"] for r in rows)
    n_cf = sum(r["groupshift"]["n_closed_form"] for r in rows)
    wall = {m: float(statistics.median([r[m]["wall_s"] for r in p2])) if p2 else math.nan
            for m in ("cold", "warm", "groupshift")}
    metrics = {
        "n_cases": len(rows),
        "fraction_primitives_closed_form": n_cf / n_prim if n_prim else math.nan,
        "cases_certified_without_solve": sum(r["groupshift"]["certified_without_solve"] for r in rows),
        "median_wall_s": wall,
        "median_wall_ratio_cold_over_groupshift": float(statistics.median(
            [r["cold"]["wall_s"] / r["groupshift"]["wall_s"] for r in p2])) if p2 else math.nan,
        "median_wall_ratio_warm_over_groupshift": float(statistics.median(
            [r["warm"]["wall_s"] / r["groupshift"]["wall_s"] for r in p2])) if p2 else math.nan,
        "support_agreement": f"{sum(r['same_support'] for r in rows)}/{len(rows)}",
        "median_flops_ratio_cold_over_groupshift_without_newton": float(statistics.median(
            [r["speedup_vs_cold_no_newton"] for r in p2])) if p2 and "speedup_vs_cold_no_newton" in p2[0]
        else "not run at this scale (full only)",
        "median_flops_ratio_by_kind": {k: med(v, "speedup_vs_cold") for k, v in by("kind", p2).items()},
        "median_flops_ratio_cold_newton_over_groupshift": float(statistics.median(
            [r["speedup_vs_cold_newton"] for r in p2 if "speedup_vs_cold_newton" in r]))
        if any("speedup_vs_cold_newton" in r for r in p2) else "not run at this scale (full only)",
        "cases": [{k: (v if not isinstance(v, np.generic) else v.item()) for k, v in r.items()} for r in rows],
    }
    plots = []
    if p2:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        xs = np.arange(len(p2))
        ax.bar(xs - 0.2, [r["speedup_vs_cold"] for r in p2], width=0.4, label="cold / groupshift")
        ax.bar(xs + 0.2, [r["speedup_vs_warm"] for r in p2], width=0.4, label="warm / groupshift")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(MIN_SPEEDUP_COLD, color="r", lw=0.8, ls="--", label=f"{MIN_SPEEDUP_COLD:g}× (C2)")
        ax.set_yscale("log")
        ax.set_xticks(xs, [f"{r['dataset'][:8]}:{r['transition'][:10]}@{r['lam_rel']}" for r in p2],
                      rotation=90, fontsize=6)
        ax.set_ylabel("flops ratio (×)")
        ax.legend(fontsize=7)
        path = ctx.save_figure(fig, "flops_ratios.png", dpi=120)
        plots.append(path)
    notes = [f"all methods stop at duality gap <= {TOL:g}·P(0); flops = n per column touched + n·d per full "
             "gap pass + n|g|²+|g|³ per block Lipschitz constant; warm start gets the old fit's Lipschitz cache",
             "real datasets are deterministic and run once; synthetic data and the random repartition vary by seed",
             "wall times are from one 2-core machine shared with other jobs: compare them only as ratios"]
    return CheckOutput(evidence=evidence, metrics=metrics, plots=plots, notes=notes)


PAPER = Paper(id="P07", slug="groupshift", claims=CLAIMS, run=run,
              default_seeds={"smoke": 1, "quick": 1, "full": 2, "gpu": 2})
