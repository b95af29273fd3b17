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

from neurips26.claims import CheckContext, Claim, Evidence, Paper, rules

from . import cases

TOL = 1e-9  # gap <= TOL · P(0) for every method
REL_OBJ = 1e-7  # |P_groupshift - P_cold| / P_cold
MIN_SPEEDUP_COLD = 3.0


# Exactness (C1, C4): every case certified by its duality gap, and the objective equal to the cold solve's.
RULE_EXACT = rules.all_of(rules.threshold("<=", REL_OBJ, stat="max", min_n=1),
                          rules.on("n_uncertified", rules.threshold("<=", 0, stat="value", min_n=1)))
RULE_COLD = rules.threshold(">=", MIN_SPEEDUP_COLD, stat="median", min_n=3)
RULE_WARM = rules.threshold(">", 1.0, stat="median", min_n=3)


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


def _run_cases(ctx: CheckContext) -> list[dict]:
    """Every (dataset, transition, λ, p, loss) case of this scale, solved by all three methods."""
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
    _record_metrics(ctx, rows)
    _plot_ratios(ctx, [r for r in rows if r["p"] == 2.0])
    ctx.note(f"all methods stop at duality gap <= {TOL:g}·P(0); flops = n per column touched + n·d per full gap "
             "pass + n|g|²+|g|³ per block Lipschitz constant; warm start gets the old fit's Lipschitz cache")
    ctx.note("real datasets are deterministic and run once; synthetic data and the random repartition vary by seed")
    ctx.note("wall times are from one 2-core machine shared with other jobs: compare them only as ratios")
    return rows


def _cases(ctx: CheckContext) -> list[dict]:
    return ctx.cache("cases", lambda: _run_cases(ctx))


def _median(subset: list[dict], key: str) -> float:
    return float(statistics.median([r[key] for r in subset])) if subset else math.nan


def _by(key: str, subset: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in subset:
        out.setdefault(r[key], []).append(r)
    return out


def _record_metrics(ctx: CheckContext, rows: list[dict]) -> None:
    p2 = [r for r in rows if r["p"] == 2.0]
    n_prim = sum(r["groupshift"]["n_primitives"] for r in rows)
    n_cf = sum(r["groupshift"]["n_closed_form"] for r in rows)

    def wall_ratio(method: str) -> float:
        return float(statistics.median([r[method]["wall_s"] / r["groupshift"]["wall_s"] for r in p2])) if p2 \
            else math.nan

    full_only = "not run at this scale (full only)"
    ctx.metrics.update({
        "n_cases": len(rows),
        "fraction_primitives_closed_form": n_cf / n_prim if n_prim else math.nan,
        "cases_certified_without_solve": sum(r["groupshift"]["certified_without_solve"] for r in rows),
        "median_wall_s": {m: float(statistics.median([r[m]["wall_s"] for r in p2])) if p2 else math.nan
                          for m in ("cold", "warm", "groupshift")},
        "median_wall_ratio_cold_over_groupshift": wall_ratio("cold"),
        "median_wall_ratio_warm_over_groupshift": wall_ratio("warm"),
        "support_agreement": f"{sum(r['same_support'] for r in rows)}/{len(rows)}",
        "median_flops_ratio_cold_over_groupshift_without_newton":
            _median(p2, "speedup_vs_cold_no_newton") if p2 and "speedup_vs_cold_no_newton" in p2[0] else full_only,
        "median_flops_ratio_by_kind": {k: _median(v, "speedup_vs_cold") for k, v in _by("kind", p2).items()},
        "median_flops_ratio_cold_newton_over_groupshift":
            _median([r for r in p2 if "speedup_vs_cold_newton" in r], "speedup_vs_cold_newton")
            if any("speedup_vs_cold_newton" in r for r in p2) else full_only,
        "cases": [{k: (v if not isinstance(v, np.generic) else v.item()) for k, v in r.items()} for r in rows],
    })


def _plot_ratios(ctx: CheckContext, p2: list[dict]) -> None:
    if not p2:
        return
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
    ctx.save_figure(fig, "flops_ratios.png", caption="C2/C3: flops of retraining from scratch (cold) and of a "
                    "plain warm start, each over GroupShift's, per case (one deterministic run per case; "
                    "log scale; dashed: the 3× bar of C2).")


# ---------------------------------------------------------------------------------------- one measure per claim
def measure_exact(ctx: CheckContext, *, family_only: bool) -> Evidence:
    """|ΔP|/P_cold per case: C1 over every case, C4 (``family_only``) over the p != 2 cases."""
    rows = [r for r in _cases(ctx) if not family_only or r["p"] != 2.0]
    details: dict = {"n_uncertified": sum(not r["certified"] for r in rows)}
    if family_only:
        details["ps"] = sorted({str(r["p"]) for r in rows})
    else:
        details["n_same_support"] = sum(r["same_support"] for r in rows)
    return Evidence(values=[r["rel_obj_diff"] for r in rows], unit="|ΔP|/P (per case)", details=details)


def measure_ratio(ctx: CheckContext, key: str) -> Evidence:
    """C2 (``speedup_vs_cold``) and C3 (``speedup_vs_warm``): flops ratio per p = 2 case."""
    p2 = [r for r in _cases(ctx) if r["p"] == 2.0]
    details: dict = {"median_by_kind": {k: _median(v, key) for k, v in _by("kind", p2).items()}}
    if key == "speedup_vs_cold":
        details["median_by_dataset"] = {k: _median(v, key) for k, v in _by("dataset", p2).items()}
        details["median_epochs_ratio"] = float(statistics.median(
            [r["cold"]["epochs"] / max(r["groupshift"]["epochs"], 1) for r in p2])) if p2 else math.nan
    else:
        details["worse_than_warm"] = [f"{r['dataset']}:{r['transition']}@{r['lam_rel']}" for r in p2
                                      if r["speedup_vs_warm"] < 1.0]
    return Evidence(values=[r[key] for r in p2], unit="× flops (per case)", details=details, allow_missing=True)


# ---------------------------------------------------------------------------------------- claims
CLAIMS = (
    Claim(id="C1", statement="GroupShift provably recovers the correct optimal solution for the new partition.",
          paper_value="exact recovery (no numbers found)",
          metric="|P_groupshift - P_cold| / P_cold per case, and the final duality gap",
          context=f"duality gap <= {TOL:g}·P(0) in every case (none uncertified); |ΔP|/P_cold over cases:",
          rule=RULE_EXACT, measure=lambda ctx: measure_exact(ctx, family_only=False)),
    Claim(id="C2", statement="GroupShift achieves significant acceleration over retraining from scratch.",
          paper_value="'significant acceleration' on real datasets (no numbers found)",
          metric="flops(cold) / flops(groupshift) per case (×)",
          context="cold/groupshift flops ratio over cases:", rule=RULE_COLD,
          measure=lambda ctx: measure_ratio(ctx, "speedup_vs_cold"), scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="The gain comes from the primitives' local work, not from the warm start alone "
                             "(the issue's 'better than plain warm start').",
          paper_value="not stated in the paper; our spec's prototype: warm start alone saves only 10-40%",
          metric="flops(warm start) / flops(groupshift) per case (×)",
          context="warm/groupshift flops ratio over cases (cases where groupshift is worse are reported):",
          rule=RULE_WARM, measure=lambda ctx: measure_ratio(ctx, "speedup_vs_warm"),
          scales=("quick", "full", "gpu")),
    Claim(id="C4", statement="The framework covers the group l_{p,1} family beyond the group lasso.",
          paper_value="l_{p,1} family (p = ∞ among others)",
          metric="|ΔP|/P_cold on p = ∞ (and p = 3 at full scale) cases",
          context=f"duality gap <= {TOL:g}·P(0) in every p != 2 case; |ΔP|/P_cold over those cases:",
          rule=RULE_EXACT, measure=lambda ctx: measure_exact(ctx, family_only=True)),
)


PAPER = Paper(id="P07", slug="groupshift",
              method="GroupShift re-partitioning",
              title="Warm-started re-partitioning of group l_{p,1} models (title not found)", arxiv=None,
              claims=CLAIMS,
              default_seeds={"smoke": 1, "quick": 1, "full": 2, "gpu": 2})
