"""Claim check for P13 saddle: rounds and per-agent oracle calls of the Decoupled Method vs Extragradient.

Problems (seeded): Q (quadratic SCSC, d per player: smoke 10, quick 30, full 50, gpu 4096 in torch float64),
H (the chain hard instance, d = 200), V (3-player monotone quadratic game, full/gpu). Every run stops at
‖z − z*‖ ≤ 1e-6·‖z0 − z*‖ (z0 = 0) or at 10⁶ rounds; every method gets its best step of {0.25, 0.5, 1, 2}× its
default (ours: best for rounds and best for calls chosen separately); cells are medians over seeds; slopes are
log–log least-squares fits (`claims.measure.loglog_slope`). Sweep (i): L_xx = L_yy ∈ {1, 10, 100, 1000},
L_xy = 1, μ = 0.1; (ii) L_xy ∈ {0.1, 0.3, 1, 3, 10} at L_xx = 100; (iii) μ ∈ {1, 0.1, 0.01} at L_xx = 100.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from neurips26.claims import CheckContext, Claim, Evidence, Paper, measure, rules

from .baselines import extragradient, extragradient_vi, gda, optimistic_gda
from .counter import CostCounter
from .decoupled import decoupled_method, decoupled_method_vi, default_steps, fit_lower_bound_constant
from .problems import ChainHardInstance, MultiPlayerQuadraticGame, QuadraticGame

TOL = 1e-6
MAX_ROUNDS = 10**6
FACTORS = (2.0, 1.0, 0.5, 0.25)  # step grid, × each method's default (largest first: see _best_eg)
# criteria (fixed before running)
ROUNDS_SLOPE_MAX, ROUNDS_SLOPE_REFUTE = 0.2, 0.8      # C1: ours' rounds vs L_xx
CALLS_SLOPE_MAX, CALLS_SLOPE_REFUTE = 0.7, 0.9        # C2: ours' calls vs L_xx (≈ 0.5 predicted)
EG_SLOPE_MIN = 0.8                                    # C1/C2 precondition: EG grows ≈ linearly
ROUNDS_RATIO_MAX = 0.2                                # C3/C6: rounds(ours) ≤ 0.2·rounds(EG) at L_xx/L_xy ≥ 100
LB_RATIO_MAX = 3.0                                    # C4: ours within 3× the fitted lower bound on H
KAPPA_SLOPE_MAX, KAPPA_SLOPE_REFUTE = 1.2, 1.5        # C5: ours' rounds vs L_xy/√(μ_xμ_y)


def _dim(ctx: CheckContext) -> int:
    return ctx.pick({"smoke": 10, "quick": 30, "full": 50, "gpu": 4096})


def _game(ctx: CheckContext, L_xx: float, L_xy: float, mu: float, seed: int) -> QuadraticGame:
    d = _dim(ctx)
    if ctx.scale == "gpu":
        return QuadraticGame.random(d, mu, L_xx, mu, L_xx, L_xy, seed, backend="torch",
                                    device=ctx.device if str(ctx.device).startswith("cuda") else "cpu")
    return QuadraticGame.random(d, mu, L_xx, mu, L_xx, L_xy, seed)


def _zeros(g: Any) -> tuple[Any, Any]:
    return 0 * g.a, 0 * g.c


def _best_ours(g: Any, x0: Any, y0: Any, **kw: Any) -> dict[str, Any]:
    """Best of the step grid for rounds and, separately, for max-agent calls (converged runs only)."""
    ex, ey, _ = default_steps(g, 0.5)
    runs = [decoupled_method(g, x0, y0, eta_x=f * ex, eta_y=f * ey, tol=TOL, max_rounds=MAX_ROUNDS, **kw)
            for f in FACTORS]
    ok = [(f, r) for f, r in zip(FACTORS, runs) if r.converged]
    if not ok:
        return {"rounds": math.nan, "calls": math.nan, "total_calls": math.nan, "factor_rounds": None}
    fr, rr = min(ok, key=lambda p: (p[1].rounds, p[1].max_calls))
    fc, rc = min(ok, key=lambda p: (p[1].max_calls, p[1].rounds))
    return {"rounds": rr.rounds, "calls": rc.max_calls, "total_calls": rc.total_calls, "factor_rounds": fr,
            "factor_calls": fc}


def _best_eg(solve: Any, g: Any, x0: Any, y0: Any, lr0: float) -> dict[str, Any]:
    """EG-type baselines: rounds and calls are proportional, so one best; each later run is capped at the best
    rounds so far (a run that cannot beat it stops early; the minimum is unchanged)."""
    best, cap = None, MAX_ROUNDS
    for f in FACTORS:
        r = solve(g, x0, y0, lr=f * lr0, tol=TOL, max_rounds=cap)
        if r.converged and (best is None or r.rounds < best[1].rounds):
            best, cap = (f, r), r.rounds
    if best is None:
        return {"rounds": math.nan, "calls": math.nan, "factor": None}
    return {"rounds": best[1].rounds, "calls": best[1].max_calls, "factor": best[0]}


def _eg_lr(g: Any) -> float:
    c = g.constants
    return 1.0 / (2 * (max(c["L_xx"], c["L_yy"]) + c["L_xy"]))


def _median(rows: list[dict], key: str) -> float:
    vals = [r[key] for r in rows]
    return math.nan if any(not math.isfinite(v) for v in vals) else float(statistics.median(vals))


def _cell(ctx: CheckContext, L_xx: float, L_xy: float, mu: float) -> dict[str, Any]:
    ours, eg = [], []
    for seed in ctx.seeds:
        g = _game(ctx, L_xx, L_xy, mu, seed)
        x0, y0 = _zeros(g)
        ours.append(_best_ours(g, x0, y0))
        eg.append(_best_eg(extragradient, g, x0, y0, _eg_lr(g)))
    return {"L_xx": L_xx, "L_xy": L_xy, "mu": mu, "kappa": L_xy / mu,
            "ours_rounds": _median(ours, "rounds"), "ours_calls": _median(ours, "calls"),
            "ours_total_calls": _median(ours, "total_calls"), "eg_rounds": _median(eg, "rounds"),
            "eg_calls": _median(eg, "calls"), "ours_factors": [o["factor_rounds"] for o in ours],
            "eg_factors": [e["factor"] for e in eg]}


def _sweep_lxx(ctx: CheckContext) -> list[dict[str, Any]]:
    grid = ctx.pick({"smoke": (1.0, 100.0), "quick": (1.0, 10.0, 100.0, 1000.0), "full": (1.0, 10.0, 100.0, 1000.0)})
    cells = [_cell(ctx, L, 1.0, 0.1) for L in ctx.progress(grid, desc="saddle L_xx sweep")]
    for c in cells:
        ctx.log(f"L_xx={c['L_xx']:g}: ours rounds {c['ours_rounds']:g}, calls {c['ours_calls']:g}; "
                f"EG rounds {c['eg_rounds']:g}, calls {c['eg_calls']:g}")
    ctx.metrics["lxx_sweep"] = cells
    _plot_lxx(ctx, cells)
    return cells


def _plot_lxx(ctx: CheckContext, cells: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    L = [c["L_xx"] for c in cells]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, what in zip(axes, ("rounds", "calls")):
        for who, style in (("ours", "o-"), ("eg", "s--")):
            ys = [c[f"{who}_{what}"] for c in cells]
            label = {"ours": "Decoupled (ours)", "eg": "Extragradient"}[who]
            if len(L) >= 2 and all(math.isfinite(y) and y > 0 for y in ys):
                label += f" (slope {measure.loglog_slope(L, ys).slope:.2f})"
            ax.loglog(L, ys, style, label=label)
        ax.set_xlabel("L_xx = L_yy  (L_xy = 1, μ = 0.1)")
        ax.set_ylabel("rounds" if what == "rounds" else "calls per agent (max)")
        ax.legend(fontsize=8)
    fig.suptitle(f"Q, d = {_dim(ctx)}, medians over {len(ctx.seeds)} seed(s), tol 1e-6")
    ctx.save_figure(fig, "lxx_sweep.png", caption="rounds and max-agent calls vs L_xx, log-log, with fitted slopes")


def _slope(cells: list[dict], x: str, y: str) -> float:
    xs, ys = [c[x] for c in cells], [c[y] for c in cells]
    if len(xs) < 2 or not all(math.isfinite(v) and v > 0 for v in ys):
        return math.nan
    return measure.loglog_slope(xs, ys).slope


def measure_c1(ctx: CheckContext) -> Evidence:
    cells = ctx.cache("lxx", lambda: _sweep_lxx(ctx))
    return Evidence(values=[_slope(cells, "L_xx", "ours_rounds")], unit="log-log slope of rounds vs L_xx (ours)",
                    details={"eg_slope": _slope(cells, "L_xx", "eg_rounds"),
                             "ours_rounds": [c["ours_rounds"] for c in cells],
                             "eg_rounds": [c["eg_rounds"] for c in cells], "L_xx": [c["L_xx"] for c in cells]},
                    allow_missing=True)


def measure_c2(ctx: CheckContext) -> Evidence:
    cells = ctx.cache("lxx", lambda: _sweep_lxx(ctx))
    ratio = [c["ours_calls"] / c["eg_calls"] for c in cells if c["L_xx"] >= 10]
    return Evidence(values=[_slope(cells, "L_xx", "ours_calls")],
                    unit="log-log slope of max-agent calls vs L_xx (ours)",
                    details={"eg_slope": _slope(cells, "L_xx", "eg_calls"), "calls_ratio_Lxx_ge_10": ratio,
                             "ours_calls": [c["ours_calls"] for c in cells],
                             "eg_calls": [c["eg_calls"] for c in cells]}, allow_missing=True)


def measure_c3(ctx: CheckContext) -> Evidence:
    cells = ctx.cache("lxx", lambda: _sweep_lxx(ctx))
    sel = [c for c in cells if c["L_xx"] / c["L_xy"] >= 100]
    return Evidence(values=[c["ours_rounds"] / c["eg_rounds"] for c in sel],
                    unit="rounds(ours)/rounds(EG) per L_xx with L_xx/L_xy >= 100",
                    details={"L_xx": [c["L_xx"] for c in sel]}, allow_missing=True)


def measure_c4(ctx: CheckContext) -> Evidence:
    mus = ctx.pick({"smoke": (0.1,), "quick": (0.2, 0.1, 0.05), "full": (0.2, 0.1, 0.05, 0.02)})
    ratios, violations, table = [], 0, []
    for mu in ctx.progress(mus, desc="saddle chain instance H"):
        h = ChainHardInstance(200, 1.0, mu)
        c_fit = fit_lower_bound_constant(h)
        lb = c_fit * h.constants["L_xy"] / mu * math.log(1 / TOL)
        best = _best_ours(h, np.zeros(200), np.zeros(200))
        ratios.append(best["rounds"] / lb)
        row = {"mu": mu, "c_fit": c_fit, "lower_bound_rounds": lb, "span_bound_rounds": h.span_lower_bound_rounds(TOL),
               "ours_rounds": best["rounds"]}
        for name, solve in (("decoupled", decoupled_method), ("extragradient", extragradient),
                            ("optimistic_gda", optimistic_gda), ("gda", gda)):
            counter = CostCounter(h, record_support=True)
            r = solve(h, np.zeros(200), np.zeros(200), tol=TOL, max_rounds=MAX_ROUNDS, counter=counter)
            violations += sum(max(ix, iy) > k for k, _, ix, iy in counter.support_log)
            row[f"{name}_rounds_default"] = r.rounds
        table.append(row)
        ctx.log(f"H μ={mu:g}: ours {best['rounds']} rounds, fitted lower bound {lb:.0f} (c = {c_fit:.3f})")
    ctx.metrics["chain"] = table
    return Evidence(values=ratios, unit="rounds(ours, best step) / fitted lower bound, per μ",
                    details={"span_violations": violations}, allow_missing=True)


def measure_c5(ctx: CheckContext) -> Evidence:
    def sweeps() -> list[dict]:
        cells = [_cell(ctx, 100.0, lxy, 0.1) for lxy in ctx.progress((0.1, 0.3, 1.0, 3.0, 10.0), desc="L_xy sweep")]
        cells += [_cell(ctx, 100.0, 1.0, mu) for mu in ctx.progress((1.0, 0.01), desc="μ sweep")]
        return cells

    cells = ctx.cache("kappa", sweeps)
    ctx.metrics["kappa_sweeps"] = cells
    return Evidence(values=[_slope(cells, "kappa", "ours_rounds")],
                    unit="log-log slope of rounds vs L_xy/μ (ours; sweeps ii and iii)",
                    details={"eg_slope": _slope(cells, "kappa", "eg_rounds")}, allow_missing=True)


def measure_c6(ctx: CheckContext) -> Evidence:
    rows = []
    for L_loc in ctx.progress((1.0, 10.0, 100.0), desc="V (3 players)"):
        ours, eg = [], []
        for seed in ctx.seeds:
            game = MultiPlayerQuadraticGame.random(3, 20, mu=0.1, L_local=L_loc, L_cross=1.0, seed=seed)
            x0 = [np.zeros(20)] * 3
            eta0 = 0.5 / game.constants["L_cross"]
            ours.append(min((r.rounds for r in (decoupled_method_vi(game, x0, eta=f * eta0, tol=TOL)
                                                for f in FACTORS) if r.converged), default=math.nan))
            lr0 = 1 / (2 * (game.constants["L_local"] + game.constants["L_cross"]))
            eg.append(_best_eg(lambda g, x, y, lr, tol, max_rounds: extragradient_vi(g, x, lr=lr, tol=tol,
                                                                                       max_rounds=max_rounds),
                               game, x0, None, lr0)["rounds"])
        rows.append({"L_local": L_loc, "ours_rounds": float(np.median(ours)), "eg_rounds": float(np.median(eg))})
    ctx.metrics["vi_sweep"] = rows
    sel = [r for r in rows if r["L_local"] >= 100]
    return Evidence(values=[r["ours_rounds"] / r["eg_rounds"] for r in sel],
                    unit="rounds(ours)/rounds(EG) on V at L_local/L_cross >= 100", details={"rows": rows},
                    allow_missing=True)


CLAIMS = (
    Claim(id="C1", statement="The Decoupled Method matches the communication lower bound: its rounds do not grow "
                             "with the local smoothness L_xx, L_yy (Extragradient's grow like L_xx).",
          paper_value="rounds O(L_xy/√(μ_xμ_y)·log 1/ε) (abstract; no numbers)",
          metric="slope of median rounds vs L_xx = L_yy ∈ {1, 10, 100, 1000} (Q, L_xy = 1, μ = 0.1)",
          rule=rules.all_of(rules.threshold("<=", ROUNDS_SLOPE_MAX, refute=(">=", ROUNDS_SLOPE_REFUTE), min_n=1),
                            rules.on("eg_slope", rules.threshold(">=", EG_SLOPE_MIN, otherwise="inconclusive", min_n=1))),
          measure=measure_c1, scales=("quick", "full", "gpu")),
    Claim(id="C2", statement="First strict improvement over Extragradient's oracle cost for general saddle problems.",
          paper_value="oracle cost below EG's (abstract; our derivation: ≈ √(L_xx·L_xy)/μ vs L_xx/μ)",
          metric="slope of median max-agent calls vs L_xx; calls(ours)/calls(EG) at L_xx >= 10",
          rule=rules.all_of(rules.threshold("<=", CALLS_SLOPE_MAX, refute=(">=", CALLS_SLOPE_REFUTE), min_n=1),
                            rules.on("calls_ratio_Lxx_ge_10", rules.threshold("<", 1.0, stat="all", min_n=1)),
                            rules.on("eg_slope", rules.threshold(">=", EG_SLOPE_MIN, otherwise="inconclusive", min_n=1))),
          measure=measure_c2, scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="Fewer communication rounds than Extragradient when local smoothness dominates.",
          paper_value="gap between EG and the lower bound (abstract)",
          metric="rounds(ours)/rounds(EG), medians over seeds, each at L_xx/L_xy >= 100",
          rule=rules.threshold("<=", ROUNDS_RATIO_MAX, stat="max", refute=(">=", 1.0), min_n=1),
          measure=measure_c3),
    Claim(id="C4", statement="Lower bound for gradient-span algorithms (each round activates at most one new "
                             "coordinate of the chain instance), which the Decoupled Method matches.",
          paper_value="R ≥ c·L_xy/√(μ_xμ_y)·log(1/ε) (form inferred)",
          metric="on H (d = 200): rounds(ours)/fitted lower bound per μ; span violations of ours, EG, OGDA, GDA",
          rule=rules.all_of(rules.threshold("<=", LB_RATIO_MAX, stat="max", min_n=1),
                            rules.on("span_violations", rules.threshold("<=", 0, stat="max", min_n=1))),
          measure=measure_c4),
    Claim(id="C5", statement="Rounds scale like the lower bound's L_xy/√(μ_xμ_y).",
          paper_value="O(L_xy/√(μ_xμ_y)·log 1/ε)",
          metric="slope of median rounds vs L_xy/μ over sweeps (ii) L_xy ∈ {0.1..10} and (iii) μ ∈ {1, 0.1, 0.01}",
          rule=rules.threshold("<=", KAPPA_SLOPE_MAX, refute=(">", KAPPA_SLOPE_REFUTE), min_n=1),
          measure=measure_c5, scales=("full", "gpu")),
    Claim(id="C6", statement="New state-of-the-art communication complexity for distributed VIPs (multiplayer games).",
          paper_value="(abstract; no numbers)",
          metric="rounds(ours)/rounds(EG) on V (3 players, d = 20, μ = 0.1) at L_local/L_cross >= 100",
          rule=rules.threshold("<=", ROUNDS_RATIO_MAX, stat="max", refute=(">=", 1.0), min_n=1),
          measure=measure_c6, scales=("full", "gpu")),
)

PAPER = Paper(id="P13", slug="saddle",
              method="Decoupled distributed saddle method",
              title="Efficient Gradient Methods for Distributed Saddle Problems", arxiv="2605.18604",
              claims=CLAIMS, default_seeds={"smoke": 1, "quick": 1, "full": 3, "gpu": 3})
