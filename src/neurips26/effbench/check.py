"""Claim check of P12 effbench on the real correctness matrices of ``effbench/correctness``.

Protocol (the paper's, at small scale): binned split (M source models drawn evenly from 10 accuracy
bins, all other models are targets), coreset n = 10% of the questions (full adds 5% and 15% at
M = 30), seeds = independent splits. Every selector is fitted once per cell; its coreset then feeds
the native estimator, ridge ("+") and degree-2 KRR ("++"). Errors are on target models only (pp);
rank correlations are reported target-only and pooled (the official, inflated variant).
"""

from __future__ import annotations

import time
import warnings
from collections import defaultdict
from typing import Any

import numpy as np

from neurips26.claims import CheckContext, CheckOutput, Claim, Evidence, Paper, Verdict, inconclusive, supported_if
from neurips26.data import effbench_names, load_effbench

from .baselines import AnchorPointsSelector, IRTSelector, LassoSelector, RandomSelector
from .metrics import binned_split, evaluate_split, nogueira_stability
from .mrmr import MRMRSelector
from .regress import KRRPredictor, RidgePredictor

MI_K = 5  # the spec's main-run setting (MIQ, mi_k = 5)
METHODS = ("Random", "Random+", "Random++", "AnchorPts", "AnchorPts++", "p-IRT", "gp-IRT", "gp-IRT++",
           "Lasso", "mRMR+", "mRMR++")
_SELECTOR_OF = {m: ("gp-IRT" if "IRT" in m else m.rstrip("+")) for m in METHODS}
REFIT_PAIRS = (("Random", "Random++"), ("AnchorPts", "AnchorPts++"))


# ---------------------------------------------------------------------------------------------------
# pre-registered decision rules (they read only the evidence handed to them)


def _decide_c1(ev: Evidence) -> Verdict:
    if ev.n < 2:
        return inconclusive(f"needs >= 2 (dataset, M >= 30, method) cells, got {ev.n}")
    frac = float(np.mean(np.asarray(ev.values) > 0))
    text = f"KRR refit lowers RMSE in {frac:.0%} of {ev.n} cells (mean gain {ev.mean:.2f} pp)"
    if frac >= 2 / 3:
        return Verdict("supported", text)
    if frac < 0.5:
        return Verdict("not supported", text)
    return inconclusive(text + "; between 1/2 and 2/3")


def _decide_c2(ev: Evidence) -> Verdict:
    per_m = ev.details.get("per_M", {})
    if not all(str(m) in per_m for m in (30, 50)):
        return inconclusive("needs M = 30 and M = 50 cells")
    if any(per_m[str(m)]["n_cells"] < 2 for m in (30, 50)):
        return inconclusive("needs >= 2 (dataset, seed) cells per M")
    m50 = per_m["50"]
    for rival in ("Random++", "AnchorPts++"):
        r = m50["vs"][rival]
        if r["mean_diff"] > r["se_diff"]:
            return Verdict("not supported", f"M=50: {rival} beats mRMR++ by {r['mean_diff']:.2f} pp "
                           f"> 1 SE ({r['se_diff']:.2f})")
    ok = [per_m[str(m)]["within_1se_of_best"] and per_m[str(m)]["top_tau"] for m in (30, 50)]
    text = "; ".join(f"M={m}: mRMR++ {p['mrmr_rmse']:.2f} pp vs best other {p['runner_up']} "
                     f"{p['runner_up_rmse']:.2f} (paired SE {p['runner_up_se']:.2f}), tau "
                     f"{p['mrmr_tau']:.3f} vs top other {p['top_other_tau']:.3f}"
                     for m, p in ((m, per_m[str(m)]) for m in (30, 50)))
    return supported_if(all(ok), text, otherwise="inconclusive")


def _decide_c3(ev: Evidence) -> Verdict:
    if ev.n < 1:
        return inconclusive("no timing measured")
    gmean = float(np.exp(np.mean(np.log(ev.values))))
    return supported_if(gmean >= 10, f"reference IRT selection / mRMR selection = {gmean:.1f}x "
                        f"(geometric mean over {ev.n} runs; min {min(ev.values):.1f}x)")


def _decide_c4(ev: Evidence) -> Verdict:
    phi = ev.details.get("mean_phi", {})
    if ev.details.get("n_seeds", 0) < 2 or not phi:
        return inconclusive("Phi needs >= 2 seeds")
    m, a, r = phi["mRMR"], phi["AnchorPts"], phi["Random"]
    text = f"Phi mRMR {m:.3f}, AnchorPts {a:.3f}, Random {r:.3f} (mean over {ev.n} (dataset, M) cells)"
    return supported_if(m > a > r and abs(r) < 0.05, text)


CLAIMS = (
    Claim(id="C1", statement="Refitting existing selectors' coresets with degree-2 kernel ridge (++) beats "
          "their native estimators (anchor points, random).",
          paper_value="RMSE AnchorPts 4.87 -> 2.65 pp, Random 3.81 -> 2.67 pp (10%, M=30, Table 2)",
          metric="target RMSE(native) - RMSE(++) per (dataset, M >= 30, method) cell, mean over seeds (pp)",
          criterion="supported if ++ is better in >= 2/3 of the cells; not supported if in < 1/2; "
          "inconclusive in between",
          decide=_decide_c1, scales=("quick", "full", "gpu")),
    Claim(id="C2", statement="mRMR++ gives the lowest RMSE and the highest rank correlation for M >= 30 "
          "source models.",
          paper_value="RMSE 2.34 pp vs gp-IRT++ 2.50, AnchorPts++ 2.65, Random++ 2.67; tau 0.853 (10%, M=30)",
          metric="target RMSE (pp) and target Kendall tau, mean over (dataset, seed) cells, per M",
          criterion="not supported if Random++ or AnchorPts++ has lower mean RMSE than mRMR++ by more than "
          "1 SE of the paired difference at M=50; supported if at both M=30 and M=50 mRMR++ is within 1 "
          "paired SE of the best mean RMSE and has the top mean tau; else inconclusive",
          decide=_decide_c2, scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="mRMR selection is far faster than IRT-based selection (about 2 s vs 54-130 s).",
          paper_value="mRMR ~2 s vs gp-IRT 130 s, p-IRT 54 s (5%, M=15)",
          metric="selection time of reference-style IRT anchors (10-D 2PL, 2000 Adam steps + KMeans) / "
          "mRMR selection time (x), same split",
          criterion="supported if the geometric mean ratio over seeds is >= 10",
          decide=_decide_c3, scales=("quick", "full", "gpu")),
    Claim(id="C4", statement="mRMR coresets are more stable across seeds/splits than anchor points, which "
          "are more stable than random.",
          paper_value="Nogueira Phi ordering mRMR > AnchorPts > Random (~0)",
          metric="Nogueira Phi of the coresets over seeds per (dataset, M) cell, mean over cells",
          criterion="supported if mean Phi(mRMR) > Phi(AnchorPts) > Phi(Random) and |Phi(Random)| < 0.05",
          decide=_decide_c4, scales=("quick", "full", "gpu")),
)


# ---------------------------------------------------------------------------------------------------
# the experiment


def _cell(S: np.ndarray, y: np.ndarray, src: np.ndarray, tgt: np.ndarray, frac: float, seed: int,
          with_irt: bool) -> tuple[dict[str, dict[str, float]], dict[str, np.ndarray], dict[str, float]]:
    """Fit every method on one split; returns (metrics per method, coresets, selection seconds)."""
    S_src, y_src = S[src], y[src]
    results: dict[str, dict[str, float]] = {}
    coresets: dict[str, np.ndarray] = {}
    times: dict[str, float] = {}

    def run_selector(name, selector):
        start = time.perf_counter()
        selector.fit(S_src, y_src)
        times[name] = time.perf_counter() - start
        coresets[name] = selector.selected_
        return selector

    def score(label, idx, predictor):
        pred_src = np.clip(predictor.predict(S_src[:, idx]), 0, 1)
        pred_tgt = np.clip(predictor.predict(S[tgt][:, idx]), 0, 1)
        out = evaluate_split(y_src, pred_src, y[tgt], pred_tgt)
        out["n_questions"] = int(len(idx))
        results[label] = out

    def refits(prefix, sel, plus: bool):
        idx = sel.selected_
        if plus:
            score(prefix + "+", idx, RidgePredictor().fit(S_src[:, idx], y_src))
        score(prefix + "++", idx, KRRPredictor().fit(S_src[:, idx], y_src))

    sel = run_selector("Random", RandomSelector(frac, random_state=seed))
    score("Random", sel.selected_, sel.native_predictor())
    refits("Random", sel, plus=True)
    sel = run_selector("AnchorPts", AnchorPointsSelector(frac, random_state=seed))
    score("AnchorPts", sel.selected_, sel.native_predictor())
    refits("AnchorPts", sel, plus=False)
    if with_irt:
        sel = run_selector("gp-IRT", IRTSelector(frac, random_state=seed))
        native = sel.native_predictor()
        score("gp-IRT", sel.selected_, native)
        native.estimate = "p-irt"
        score("p-IRT", sel.selected_, native)
        refits("gp-IRT", sel, plus=False)
    sel = run_selector("Lasso", LassoSelector(frac))
    score("Lasso", sel.selected_, sel.native_predictor())
    sel = run_selector("mRMR", MRMRSelector(frac, mi_k=MI_K, random_state=seed))
    refits("mRMR", sel, plus=True)
    return results, coresets, times


def _c2_summary(rmse: dict[str, list[float]], tau: dict[str, list[float]]) -> dict[str, Any]:
    means = {m: float(np.mean(v)) for m, v in rmse.items()}
    best = min(means, key=means.get)
    ours = np.asarray(rmse["mRMR++"])
    vs = {}
    for rival, vals in rmse.items():
        if rival == "mRMR++":
            continue
        diff = ours - np.asarray(vals)  # > 0: rival better
        vs[rival] = {"mean_diff": float(diff.mean()),
                     "se_diff": float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0.0}
    se_best = 0.0 if best == "mRMR++" else vs[best]["se_diff"]
    taus = {m: float(np.nanmean(v)) for m, v in tau.items()}
    other_tau = max(t for m, t in taus.items() if m != "mRMR++")
    runner_up = min((m for m in means if m != "mRMR++"), key=means.get)
    return {"n_cells": int(ours.size), "mean_rmse": means, "mean_tau": taus, "best": best,
            "runner_up": runner_up, "runner_up_rmse": means[runner_up], "runner_up_se": vs[runner_up]["se_diff"],
            "best_rmse": means[best], "mrmr_rmse": means["mRMR++"], "se_best": se_best,
            "within_1se_of_best": bool(best == "mRMR++" or vs[best]["mean_diff"] <= se_best),
            "mrmr_tau": taus["mRMR++"], "top_other_tau": other_tau, "top_tau": bool(taus["mRMR++"] >= other_tau),
            "vs": vs}


def _plot(path, table: dict[tuple[int, str], list[float]], sizes: list[int]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [m for m in METHODS if any((M, m) in table for M in sizes)]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    width = 0.8 / max(1, len(sizes))
    for k, M in enumerate(sizes):
        vals = [np.mean(table.get((M, m), [np.nan])) for m in methods]
        ax.bar(np.arange(len(methods)) + k * width, vals, width, label=f"M = {M}")
    ax.set_xticks(np.arange(len(methods)) + width * (len(sizes) - 1) / 2, methods, rotation=30, ha="right")
    ax.set_ylabel("target RMSE (pp), mean over datasets x seeds")
    ax.set_title("effbench: 10% coreset, binned split")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(ctx: CheckContext) -> CheckOutput:
    from threadpoolctl import threadpool_limits

    # small matrices: one BLAS/OpenMP thread per call is faster than oversubscribed pools
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="only .* source models")
        return _run(ctx)


def _run(ctx: CheckContext) -> CheckOutput:
    available = effbench_names()
    datasets = ctx.pick({"smoke": ["mmlu", "ifeval"], "quick": ["ifeval", "musr", "mmlu", "mrpc"],
                         "full": available})
    datasets = [d for d in datasets if d in available]
    sizes = ctx.pick({"smoke": [30], "quick": [15, 30, 50], "full": [15, 30, 50]})
    extra_budgets = ctx.pick({"smoke": [], "quick": [], "full": [0.05, 0.15]})  # at M = 30 only
    with_irt = True
    timing_sets = ctx.pick({"smoke": ["mmlu"], "quick": ["ifeval"], "full": ["ifeval", "mmlu", "openllm_math"]})
    ref_steps = ctx.pick({"smoke": 50, "quick": 2000, "full": 2000})

    rows: list[dict[str, Any]] = []
    coresets: dict[tuple[str, int, float, str], list[np.ndarray]] = defaultdict(list)
    n_questions: dict[str, int] = {}
    jobs = [(d, M, 0.1) for d in datasets for M in sizes] + [(d, 30, f) for d in datasets for f in extra_budgets]
    for name, M, frac in ctx.progress(jobs, desc="effbench cells"):
        S, _ = load_effbench(name)
        S = S.astype(np.float64)
        keep = S.sum(1) > 0  # drop all-zero models (openllm_math has some)
        S = S[keep]
        y = S.mean(1)
        n_questions[name] = S.shape[1]
        for seed in ctx.seeds:
            src, tgt = binned_split(y, M, rng=np.random.default_rng([seed, M]))
            res, cs, times = _cell(S, y, src, tgt, frac, seed, with_irt)
            for method, met in res.items():
                rows.append({"dataset": name, "M": M, "budget": frac, "seed": seed, "method": method, **met,
                             "select_s": times.get(_SELECTOR_OF[method], 0.0)})
            for sel_name, idx in cs.items():
                coresets[(name, M, frac, sel_name)].append(np.asarray(idx))
        ctx.log(f"{name} M={M} n={frac:.0%}: " + ", ".join(
            f"{m} {np.mean([r['target_rmse_pp'] for r in rows if r['dataset'] == name and r['M'] == M and r['budget'] == frac and r['method'] == m]):.2f}"  # noqa: E501
            for m in ("Random", "AnchorPts++", "gp-IRT", "mRMR++")))

    main = [r for r in rows if r["budget"] == 0.1]

    def cell_mean(method, name, M, key="target_rmse_pp"):
        return float(np.mean([r[key] for r in main if r["method"] == method and r["dataset"] == name
                              and r["M"] == M]))

    # C1: native vs ++ per (dataset, M >= 30, method)
    c1_vals, c1_cells = [], []
    for name in datasets:
        for M in [m for m in sizes if m >= 30]:
            for native, plus in REFIT_PAIRS:
                gain = cell_mean(native, name, M) - cell_mean(plus, name, M)
                c1_vals.append(gain)
                c1_cells.append({"dataset": name, "M": M, "method": native, "native_rmse": cell_mean(native, name, M),
                                 "refit_rmse": cell_mean(plus, name, M), "gain_pp": gain})

    # C2: per M, paired over (dataset, seed)
    per_m: dict[str, Any] = {}
    c2_values: list[float] = []
    for M in sizes:
        rmse: dict[str, list[float]] = defaultdict(list)
        tau: dict[str, list[float]] = defaultdict(list)
        for name in datasets:
            for seed in ctx.seeds:
                for r in main:
                    if r["dataset"] == name and r["M"] == M and r["seed"] == seed:
                        rmse[r["method"]].append(r["target_rmse_pp"])
                        tau[r["method"]].append(r["target_kendall"])
        summary = _c2_summary(rmse, tau)
        wins = {}
        for name in datasets:
            means = {m: cell_mean(m, name, M) for m in rmse}
            wins[name] = min(means, key=means.get)
        summary["best_per_dataset"] = wins
        summary["mrmr_win_rate"] = float(np.mean([w == "mRMR++" for w in wins.values()]))
        per_m[str(M)] = summary
        if M == 50:
            best_other = min((m for m in rmse if m != "mRMR++"), key=lambda m: np.mean(rmse[m]))
            c2_values = list(np.asarray(rmse["mRMR++"]) - np.asarray(rmse[best_other]))

    # C3: reference-style IRT vs mRMR selection time on the same split
    c3_vals, c3_rows = [], []
    for name in [d for d in timing_sets if d in available]:
        S, _ = load_effbench(name)
        S = S[S.sum(1) > 0].astype(np.float64)
        y = S.mean(1)
        for seed in ctx.seeds:
            src, _ = binned_split(y, 30, rng=np.random.default_rng([seed, 30]))
            t0 = time.perf_counter()
            MRMRSelector(0.1, mi_k=MI_K, random_state=seed).fit(S[src])
            t_mrmr = time.perf_counter() - t0
            t0 = time.perf_counter()
            IRTSelector(0.1, dims=10, optimizer="adam", steps=ref_steps, random_state=seed).fit(S[src])
            t_ref = time.perf_counter() - t0
            c3_vals.append(t_ref / t_mrmr)
            c3_rows.append({"dataset": name, "seed": seed, "mrmr_s": t_mrmr, "irt_ref_s": t_ref,
                            "ratio": t_ref / t_mrmr})
    lean = {m: float(np.mean([r["select_s"] for r in main if r["method"] == m]))
            for m in ("Random", "AnchorPts", "gp-IRT", "Lasso", "mRMR++")}

    # C4: Nogueira Phi over seeds per (dataset, M) cell
    phi_cells = []
    if len(ctx.seeds) >= 2:
        for name in datasets:
            for M in sizes:
                row = {"dataset": name, "M": M}
                for sel_name in ("mRMR", "AnchorPts", "Random", "gp-IRT"):
                    sets = coresets.get((name, M, 0.1, sel_name))
                    if sets:
                        row[sel_name] = nogueira_stability(sets, n_questions[name])
                phi_cells.append(row)
    mean_phi = ({k: float(np.mean([c[k] for c in phi_cells])) for k in ("mRMR", "AnchorPts", "Random", "gp-IRT")
                 if all(k in c for c in phi_cells)} if phi_cells else {})

    # summary tables
    summary_table = {}
    for M in sizes:
        for method in METHODS:
            sel = [r for r in main if r["M"] == M and r["method"] == method]
            if sel:
                summary_table[f"M={M} {method}"] = {
                    k: float(np.nanmean([r[k] for r in sel]))
                    for k in ("target_rmse_pp", "target_mae_pp", "target_kendall", "target_spearman",
                              "pooled_kendall", "pooled_spearman", "select_s", "n_questions")}
    budget_table = {}
    for frac in extra_budgets + ([0.1] if extra_budgets else []):
        for method in METHODS:
            sel = [r for r in rows if r["M"] == 30 and r["budget"] == frac and r["method"] == method]
            if sel:
                budget_table[f"n={frac:.0%} {method}"] = float(np.mean([r["target_rmse_pp"] for r in sel]))

    plot_path = ctx.plot_path("effbench_rmse.png")
    table = defaultdict(list)
    for r in main:
        table[(r["M"], r["method"])].append(r["target_rmse_pp"])
    _plot(plot_path, table, sizes)

    evidence = {
        "C1": Evidence(values=c1_vals, unit="pp", details={"cells": c1_cells}),
        "C2": Evidence(values=c2_values, unit="pp (mRMR++ minus best other, M=50)", details={"per_M": per_m}),
        "C3": Evidence(values=c3_vals, unit="x", details={"runs": c3_rows, "lean_select_s": lean,
                                                         "reference_adam_steps": ref_steps}),
        "C4": Evidence(values=[c["mRMR"] - c["AnchorPts"] for c in phi_cells], unit="Phi(mRMR) - Phi(AnchorPts)",
                       details={"mean_phi": mean_phi, "cells": phi_cells, "n_seeds": len(ctx.seeds)}),
    }
    notes = [
        f"datasets: {', '.join(datasets)} (the 8 matrices of correctness.npz; the spec's 14-matrix "
        "effbench_binary.npz and the pass@k file are not available)",
        f"mRMR: MIQ, mi_k={MI_K}; n = 10% of the questions; binned split; seeds = independent splits",
        "timings are wall clock on a shared 2-core machine: compare the ratios within this run only",
        f"lean selection seconds (mean per cell): {', '.join(f'{k} {v:.3f}' for k, v in lean.items())}",
    ]
    all_finite = all(np.isfinite(r["target_rmse_pp"]) and np.isfinite(r["target_mae_pp"]) for r in rows)
    notes.append(f"all target RMSE/MAE finite: {all_finite}")
    return CheckOutput(evidence=evidence,
                       metrics={"summary": summary_table, "budgets_at_M30": budget_table, "rows": rows,
                                "n_questions": n_questions},
                       plots=[plot_path], notes=notes)


PAPER = Paper(id="P12", slug="effbench", claims=CLAIMS, run=run,
              default_seeds={"smoke": 2, "quick": 3, "full": 5, "gpu": 5})
