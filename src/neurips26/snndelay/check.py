"""Claim check for P11 (snndelay): fixed per-connection delays in a residual SNN phoneme decoder.

Everything runs on :func:`synthetic_speech_bci` (the real T12 recordings are not available offline):
64 channels -> 128 features, 600 train / 100 test sentences, 4 days. Per seed, every arm of a budget
trains from the same data order for the same number of steps (AdamW 2e-3, batch 32; the recipe of
:mod:`neurips26.snndelay.train`) under ``torch_threads(1)``. Budgets are shrunk for CPU: ~70k core
parameters (SNN hidden 128 x 3) and ~250k (256 x 3); baselines take the width closest to the SNN's
core count. Seeds change initialisation, delays and data order; the data set is fixed.

Claims: C1 delays lower PER (D = 8 vs D = 0, equal steps); C2 the gain flattens once the delay reach
covers the generator's horizon (D x sigma sweep); C3 delays lower the CTC posterior entropy at phoneme
boundaries; C4 the SNN's estimated energy per bin is below the GRU's and the TCN's; C5 the SNN has the
best PER among the matched baselines. ``quick`` trains one budget {D = 0, D = 8, GRU} for a short run
(C1 then lacks seeds and budgets and is inconclusive by its rule); ``full`` runs both budgets, 2 seeds,
all baselines and the sweep at fewer steps; ``gpu`` the spec's 256-feature, 2,000-sentence setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, Verdict, inconclusive, rules, torch_threads

from .baselines import build_decoder, matched_width
from .ctc import boundary_uncertainty
from .data import SpeechBCIData, make_batch, synthetic_speech_bci
from .energy import estimate_energy
from .model import ResidualDelaySNN, count_core_params
from .train import evaluate, train_ctc

# ---------------------------------------------------------------------------------------- criteria
DELAY = 8  # the "D > 0" arm of C1, C3, C4, C5
FLAT_TOL = 0.03  # C2: PER (fraction) within which a curve counts as flat
ENERGY_MIN_RATIO = 1.0  # C4: baseline energy / SNN energy must exceed this
SWEEP_DELAYS = (0, 1, 2, 4, 8, 16)
SWEEP_SIGMAS = (1.0, 2.0, 4.0, 6.0)
LEAD = 3


@dataclass(frozen=True)
class Setting:
    """What one scale trains."""

    n_train: int
    n_test: int
    n_channels: int
    budgets: dict[str, int]  # budget name -> SNN hidden width (n_layers = 3)
    arms: tuple[str, ...]
    steps: int
    batch: int
    equal_time: bool
    sweep_hidden: int
    sweep_steps: int
    sweep_delays: tuple[int, ...] = SWEEP_DELAYS
    sweep_sigmas: tuple[float, ...] = SWEEP_SIGMAS
    n_layers: int = 3
    lr: float = 2e-3


SETTINGS = {
    "smoke": Setting(24, 8, 16, {"tiny": 32}, ("d0", "d8", "gru"), 20, 8, False, 16, 10,
                     (0, 8), (1.0,), n_layers=2, lr=5e-3),
    # short run: batch 16, lr 5e-3 (chosen on the D = 0 arm alone: 150 steps, PER 0.88 at 2e-3, 0.82 at 5e-3)
    "quick": Setting(600, 100, 64, {"70k": 128}, ("d0", "d8", "gru"), 200, 16, False, 64, 100, lr=5e-3),
    "full": Setting(600, 100, 64, {"70k": 128, "250k": 256}, ("d0", "d8", "gru", "tcn", "mlp"), 400, 32, True,
                    64, 200),
    "gpu": Setting(2000, 200, 128, {"500k": 384, "2M": 768}, ("d0", "d8", "gru", "bigru", "tcn", "mlp"), 1500,
                   64, True, 256, 600, (0, 2, 4, 8, 16, 32), SWEEP_SIGMAS),
}


# ---------------------------------------------------------------------------------------- experiments
def _data(ctx: CheckContext, sigma: float) -> tuple[SpeechBCIData, SpeechBCIData]:
    """Train and test sets of the scale for a generator width ``sigma`` (generated once per run)."""
    setting = SETTINGS[ctx.scale]

    def make() -> tuple[SpeechBCIData, SpeechBCIData]:
        data = synthetic_speech_bci(setting.n_train + setting.n_test, setting.n_channels, sigma, LEAD, 4, seed=0)
        return data.split(setting.n_test)

    return ctx.cache(f"data_sigma_{sigma}", make)


def _build(arm: str, setting: Setting, hidden: int, n_in: int, seed: int, max_delay: int | None = None):
    torch.manual_seed(seed)
    if arm.startswith("d"):
        delay = int(arm[1:]) if max_delay is None else max_delay
        return ResidualDelaySNN(n_in, hidden, setting.n_layers, max_delay=delay, delay_seed=1000 * seed, n_days=4)
    snn_core = count_core_params(ResidualDelaySNN(n_in, hidden, setting.n_layers, n_days=1))
    width = matched_width(arm, n_in, snn_core)
    torch.manual_seed(seed)
    return build_decoder(arm, n_in, width, n_days=4)


def _fit(ctx: CheckContext, model, train, test, setting: Setting, seed: int, desc: str,
         steps: int, time_budget_s: float | None = None) -> dict[str, Any]:
    model = model.to(ctx.device)
    res = train_ctc(model, train, steps=steps, batch_size=setting.batch, lr=setting.lr, seed=seed,
                    time_budget_s=time_budget_s, progress=lambda it: ctx.progress(it, desc=desc))
    ev = evaluate(model, test)
    out = {"per": ev.per, "test_loss": ev.loss, "steps": res.steps, "wall_s": res.wall_s,
           "train_loss_end": float(np.mean(res.losses[-10:])), "core_params": count_core_params(model)}
    bu = boundary_uncertainty(ev.log_probs, [p.tolist() for p in test.phonemes], window=1)
    out.update(boundary_entropy=bu.boundary_entropy, interior_entropy=bu.interior_entropy)
    batch_idx = list(range(min(len(test), 50)))
    b = make_batch(test, batch_idx, ctx.device)
    out["energy"] = estimate_energy(model, b.x, b.day, lengths=b.lengths)
    ctx.log(f"{desc}: PER {ev.per:.3f}, {res.steps} steps in {res.wall_s:.0f} s, "
            f"{out['energy']['joules_per_bin'] * 1e9:.1f} nJ/bin")
    return out


def _main_runs(ctx: CheckContext) -> dict[str, dict[str, dict[int, dict]]]:
    """results[budget][arm][seed]: every arm of every budget, same data and order per seed."""
    setting = SETTINGS[ctx.scale]
    train, test = _data(ctx, 2.0)
    results: dict[str, dict[str, dict[int, dict]]] = {}
    with torch_threads(1):
        for budget, hidden in setting.budgets.items():
            results[budget] = {}
            for seed in ctx.seeds:
                for arm in setting.arms:
                    model = _build(arm, setting, hidden, train.n_features, seed)
                    results[budget].setdefault(arm, {})[seed] = _fit(
                        ctx, model, train, test, setting, seed, f"{budget} {arm} seed {seed}", setting.steps)
                if setting.equal_time:  # D = 0 and GRU for the wall time D = 8 took
                    wall = results[budget]["d8"][seed]["wall_s"]
                    for arm in ("d0", "gru"):
                        model = _build(arm, setting, hidden, train.n_features, seed)
                        results[budget].setdefault(f"{arm}_eqtime", {})[seed] = _fit(
                            ctx, model, train, test, setting, seed, f"{budget} {arm} equal time seed {seed}",
                            100 * setting.steps, time_budget_s=wall)
    ctx.metrics["runs"] = results
    return results


def _sweep(ctx: CheckContext) -> dict[float, dict[int, float]]:
    """PER[sigma][D] of the SNN (hidden ``sweep_hidden``), first seed only."""
    setting = SETTINGS[ctx.scale]
    seed = ctx.seeds[0]
    per: dict[float, dict[int, float]] = {}
    with torch_threads(1):
        for sigma in setting.sweep_sigmas:
            train, test = _data(ctx, sigma)
            per[sigma] = {}
            for d in setting.sweep_delays:
                model = _build("d", setting, setting.sweep_hidden, train.n_features, seed, max_delay=d)
                per[sigma][d] = _fit(ctx, model, train, test, setting, seed, f"sweep sigma={sigma} D={d}",
                                     setting.sweep_steps)["per"]
    ctx.metrics["sweep_per"] = {str(s): {str(d): v for d, v in row.items()} for s, row in per.items()}
    return per


# ---------------------------------------------------------------------------------------- measures
def measure_c1(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("main", lambda: _main_runs(ctx))
    gains, by_budget = [], {}
    for budget, arms in runs.items():
        d0 = [arms["d0"][s]["per"] for s in ctx.seeds]
        d8 = [arms["d8"][s]["per"] for s in ctx.seeds]
        g = [a - b for a, b in zip(d0, d8)]
        gains += g
        spread = max(np.std(d0, ddof=1), np.std(d8, ddof=1)) if len(d0) > 1 else float("nan")
        by_budget[budget] = {"gain": float(np.mean(g)), "spread": float(spread), "per_d0": d0, "per_d8": d8,
                             "n_seeds": len(d0)}
        if "d0_eqtime" in arms:
            by_budget[budget]["equal_time_per"] = {
                arm: [arms[arm][s]["per"] for s in ctx.seeds] for arm in ("d0_eqtime", "gru_eqtime")}
    _plot_per(ctx, runs)
    return Evidence(values=gains, unit="PER (fraction), D=0 minus D=8, per budget and seed",
                    details={"by_budget": by_budget})


def _decide_c1(ev: Evidence) -> Verdict:
    table = ev.details["by_budget"]
    if any(row["gain"] <= 0 for row in table.values() if row["n_seeds"] >= 2):
        return Verdict("not supported", "no PER gain from delays at a budget: " + _c1_text(table))
    if len(table) < 2 or any(row["n_seeds"] < 2 for row in table.values()):
        return inconclusive("needs >= 2 budgets with >= 2 seeds each: " + _c1_text(table))
    if all(row["gain"] > row["spread"] for row in table.values()):
        return Verdict("supported", "gain beyond the seed spread at every budget: " + _c1_text(table))
    return inconclusive("gain within the seed spread at some budget: " + _c1_text(table))


def _c1_text(table: dict) -> str:
    return "; ".join(f"{b}: gain {r['gain']:.3f} (spread {r['spread']:.3f}, n={r['n_seeds']})"
                     for b, r in table.items())


def measure_c2(ctx: CheckContext) -> Evidence:
    per = ctx.cache("sweep", lambda: _sweep(ctx))
    setting = SETTINGS[ctx.scale]
    reach = setting.n_layers + 1  # delayed synapse stages in series (blocks + readout)
    past, to_cover, table = [], [], {}
    for sigma, row in per.items():
        horizon = LEAD + 3 * sigma
        delays = sorted(row)
        cover = next((d for d in delays if d > 0 and reach * d >= horizon), delays[-1])
        beyond = [row[d] for d in delays if d > cover]
        past.append(row[cover] - min(beyond) if beyond else float("nan"))
        to_cover.append(row[0] - row[cover])
        table[str(sigma)] = {"horizon": horizon, "d_cover": cover, "per": {str(d): row[d] for d in delays},
                             "best_d": min(delays, key=lambda d: row[d])}
    _plot_sweep(ctx, per)
    return Evidence(values=past, unit="PER gained beyond D_cover (fraction), per sigma", allow_missing=True,
                    details={"gain_to_cover": to_cover, "table": table})


def measure_c3(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("main", lambda: _main_runs(ctx))
    drops, excess = [], []
    for arms in runs.values():
        for s in ctx.seeds:
            a, b = arms["d0"][s], arms["d8"][s]
            drops.append(a["boundary_entropy"] - b["boundary_entropy"])
            excess.append((a["boundary_entropy"] - a["interior_entropy"])
                          - (b["boundary_entropy"] - b["interior_entropy"]))
    return Evidence(values=drops, unit="nats, boundary entropy D=0 minus D=8 (w = 1), per budget and seed",
                    details={"excess_drop": excess, "train_steps": _min_steps(runs)})


def _min_steps(runs: dict) -> int:
    """Fewest training steps of any D = 0 / D = 8 model (a precondition of C3 and C4)."""
    return min(r["steps"] for arms in runs.values() for arm in ("d0", "d8") for r in arms[arm].values())


def _energy_ratio(ctx: CheckContext, arm: str) -> list[float]:
    """Energy per bin of a matched baseline over the trained SNN's (ANN MACs do not depend on weights,
    so an untrained TCN is used where the scale trains none)."""
    runs = ctx.cache("main", lambda: _main_runs(ctx))
    setting = SETTINGS[ctx.scale]
    out = []
    for budget, arms in runs.items():
        for s in ctx.seeds:
            snn = arms["d8"][s]["energy"]["joules_per_bin"]
            if arm in arms:
                base = arms[arm][s]["energy"]["joules_per_bin"]
            else:
                _, test = _data(ctx, 2.0)
                b = make_batch(test, list(range(min(len(test), 50))))
                model = _build(arm, setting, setting.budgets[budget], test.n_features, s)
                base = estimate_energy(model, b.x, b.day, lengths=b.lengths)["joules_per_bin"]
            out.append(base / snn)
    return out


def measure_c4(ctx: CheckContext) -> Evidence:
    gru, tcn = _energy_ratio(ctx, "gru"), _energy_ratio(ctx, "tcn")
    runs = ctx.cache("main", lambda: _main_runs(ctx))
    rates = [arms["d8"][s]["energy"]["spike_rate"] for arms in runs.values() for s in ctx.seeds]
    return Evidence(values=gru, unit="x, GRU energy / SNN (D=8) energy per bin, per budget and seed",
                    details={"ratio_tcn": tcn, "spike_rate": rates, "train_steps": _min_steps(runs)})


def measure_c5(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("main", lambda: _main_runs(ctx))
    margins, table = [], {}
    for budget, arms in runs.items():
        peers = [a for a in ("gru", "tcn", "mlp") if a in arms]
        for s in ctx.seeds:
            best = min(arms[a][s]["per"] for a in peers)
            margins.append(best - arms["d8"][s]["per"])
        table[budget] = {a: [arms[a][s]["per"] for s in ctx.seeds] for a in ("d8", *peers)}
    return Evidence(values=margins, unit="PER (fraction), best baseline minus SNN D=8, per budget and seed",
                    details={"per": table})


# ---------------------------------------------------------------------------------------- plots
def _plot_per(ctx: CheckContext, runs: dict) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for k, (budget, arms) in enumerate(runs.items()):
        names = [a for a in arms if not a.endswith("eqtime")]
        vals = [[arms[a][s]["per"] for s in ctx.seeds] for a in names]
        x = np.arange(len(names)) + 0.35 * k
        ax.bar(x, [np.mean(v) for v in vals], 0.35, yerr=[np.std(v) if len(v) > 1 else 0 for v in vals],
               label=budget, capsize=3)
        ax.set_xticks(np.arange(len(names)) + 0.175 * (len(runs) - 1), names)
    ax.set_ylabel("test PER")
    ax.legend(title="core params")
    ctx.save_figure(fig, "per_by_arm.png", caption="Test PER per decoder at equal steps (mean ± std over seeds).")


def _plot_sweep(ctx: CheckContext, per: dict) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for sigma, row in per.items():
        ds = sorted(row)
        ax.plot(ds, [row[d] for d in ds], "o-", label=f"σ={sigma:g} (H={LEAD + 3 * sigma:g})")
    ax.set_xlabel("D_max (bins)")
    ax.set_ylabel("test PER")
    ax.legend()
    ctx.save_figure(fig, "delay_sweep.png", caption="SNN test PER vs maximum delay, per generator width σ.")


# ---------------------------------------------------------------------------------------- claims
def _decide_c2(ev: Evidence) -> Verdict:
    flat = rules.threshold("<=", FLAT_TOL, stat="all", min_n=1)(ev)
    helps = rules.on("gain_to_cover", rules.threshold(">", FLAT_TOL, stat="all", min_n=1))(ev)
    text = f"beyond D_cover: {flat.reason}; up to D_cover: {helps.reason}"
    if flat.label == "not supported":
        return Verdict("not supported", "PER still falls past the horizon: " + text)
    if helps.label == "not supported":
        return Verdict("not supported", "no gain up to the horizon: " + text)
    if flat.label == helps.label == "supported":
        return Verdict("supported", text)
    return inconclusive(text)


# C3 and C4 read trained models: fewer steps than this leave them undecided (the smoke scale trains 30)
MIN_STEPS = 100


def _when_trained(rule: rules.Rule) -> rules.Rule:
    """``rule``, but inconclusive whenever some model trained fewer than ``MIN_STEPS`` steps."""

    def decide(ev: Evidence) -> Verdict:
        if int(ev.details.get("train_steps", 0)) < MIN_STEPS:
            return inconclusive(f"models trained {ev.details.get('train_steps')} steps (< {MIN_STEPS})")
        return rule(ev)

    return rules.custom(f"{rule.criterion}; inconclusive if any model trained < {MIN_STEPS} steps", decide, min_n=1)


CLAIMS = (
    Claim(id="C1",
          statement="Fixed connection-specific delays lower phoneme error rate at every core-parameter budget.",
          paper_value="lower PER at 500k, 2M and 5M core parameters (numbers not in the abstract)",
          metric="test PER of the SNN with D_max=0 minus with D_max=8 (equal core params, steps, data order), "
                 "synthetic data, ~70k and ~250k core params",
          rule=rules.custom("supported if at every budget (>= 2 budgets, >= 2 seeds each) the mean PER gain of "
                            "D=8 over D=0 exceeds the larger seed std of the two arms; not supported if the mean "
                            "gain is <= 0 at a budget with >= 2 seeds; else inconclusive", _decide_c1, min_n=1),
          measure=measure_c1, scales=("smoke", "quick", "full", "gpu")),
    Claim(id="C2",
          statement="PER gains saturate once the delay range covers the task-relevant temporal horizon.",
          paper_value="gains saturate (abstract; no numbers)",
          metric="SNN test PER over D_max in {0,1,2,4,8,16} x generator sigma in {1,2,4,6}; horizon "
                 "H = lead + 3 sigma bins; reach (n_layers + 1) * D_max; D_cover = smallest D with reach >= H",
          rule=rules.custom(f"supported if for every sigma PER falls by more than {FLAT_TOL} from D=0 to D_cover "
                            f"and by at most {FLAT_TOL} from D_cover to any larger D; not supported if either "
                            "fails (no gain, or a gain that keeps growing past the horizon)", _decide_c2, min_n=1),
          measure=measure_c2, scales=("full", "gpu")),
    Claim(id="C3",
          statement="Delays reduce local CTC uncertainty around phoneme transitions.",
          paper_value="lower boundary-aligned uncertainty with delays (no numbers)",
          metric="mean posterior entropy (nats) within 1 bin of forced-aligned phoneme boundaries, D=0 minus "
                 "D=8; also the boundary-minus-interior excess",
          rule=_when_trained(rules.all_of(rules.threshold(">", 0.0, stat="all", min_n=1),
                                          rules.on("excess_drop", rules.threshold(">", 0.0, stat="mean", min_n=1)))),
          measure=measure_c3, scales=("smoke", "quick", "full", "gpu")),
    Claim(id="C4",
          statement="The SNN's estimated operation-level energy is lower than the strongest non-spiking "
                    "baselines' (paper: about 2-4x).",
          paper_value="~2-4x lower estimated energy",
          metric="energy per 20-ms bin (E_AC = 0.9 pJ per SOP from actual test-set spikes, E_MAC = 4.6 pJ per "
                 "MAC), GRU / SNN and TCN / SNN at matched core params",
          rule=_when_trained(rules.all_of(
              rules.threshold(">", ENERGY_MIN_RATIO, stat="all", min_n=1),
              rules.on("ratio_tcn", rules.threshold(">", ENERGY_MIN_RATIO, stat="all", min_n=1)))),
          measure=measure_c4, scales=("smoke", "quick", "full", "gpu")),
    Claim(id="C5",
          statement="At matched core parameters the SNN reaches the best PER among recurrent, convolutional and "
                    "feed-forward baselines (500k and 2M).",
          paper_value="best PER at 500k and 2M, second at 5M",
          metric="test PER of the best of GRU, TCN, frame-stacking MLP minus the SNN's (D=8), per budget and seed",
          rule=rules.threshold(">", 0.0, stat="all", min_n=4),
          measure=measure_c5, scales=("full", "gpu")),
)

PAPER = Paper(id="P11", slug="snndelay",
              method="Residual SNN with synaptic delays",
              title="Residual SNN with synaptic delays for phoneme decoding (title not found)", arxiv=None,
              claims=CLAIMS,
              default_seeds={"smoke": 1, "quick": 1, "full": 2, "gpu": 3})
