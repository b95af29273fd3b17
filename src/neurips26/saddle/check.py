"""Claim check for P13 saddle: rounds and per-agent oracle calls of the Decoupled Method against its peers.

Problems (seeded): Q (quadratic SCSC, d per player: smoke 10, quick 30, full 50), H (the chain hard instance,
d sized to its own span bound), V (3-player monotone quadratic game), DRO (distributionally robust logistic
regression on seeded 80 % subsamples of breast_cancer). Every run stops at ‖z − z*‖ ≤ 1e-6·‖z0 − z*‖ (z0 = 0;
DRO: the relative residual) or at 10⁶ rounds.

Protocol (fixed before the record runs, 2026-12-01, issue 43):

* **Equal tuning.** In every cell each arm is tuned with ``claims.tune_arms`` over 8 configurations on a
  *validation* instance (seed 1000, never a test seed): ours and EG over the step factors 2^{1.5, 1, …, −2}×
  their default, Decoupled SGDA over K ∈ {1, 5, 20, 100} local steps × {2, 1}× its default step, the accelerated
  primal–dual method (APD) over the step scales 2^{3, 2.5, …, −0.5} (its stability edge lies higher). The score
  is rounds (C1, C3, C6) or the busiest agent's calls (C2); a configuration that has not converged once it passes
  the arm's best so far stops there and scores as not converged (2·10⁶), for every arm alike. The chosen
  configuration then runs once per test seed.
* **Preconditions.** A comparison is decided only when every arm converged on every test seed at its tuned
  configuration, and (C1, C3) when EG's rounds do grow with L_xx (the gap the claim is about exists).
* **Decisions** by intervals over (cell, seed) units: ``rules.ratio_at_least`` on the log scale (t interval),
  slopes of per-seed log–log fits with their worst seed, the chain ratio's slope in κ with its 95 % t interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from neurips26.claims import CheckContext, Claim, Evidence, Paper, Precondition, Verdict, measure, rules, tune_arms

from .baselines import (
    accelerated_primal_dual,
    decoupled_sgda,
    extragradient,
    extragradient_vi,
    gda,
    jacobian_bound,
    optimistic_gda,
)
from .counter import CostCounter, SaddleResult
from .decoupled import decoupled_method, decoupled_method_vi, default_steps
from .problems import ChainHardInstance, DROLogistic, MultiPlayerQuadraticGame, QuadraticGame

TOL = 1e-6
MAX_ROUNDS = 10**6
NOT_CONVERGED = 2.0 * MAX_ROUNDS  # tuning score of a configuration that did not converge (or was stopped)
VALIDATION_SEED = 1000
STEP_FACTORS = tuple(2.0 ** (1.5 - k / 2) for k in range(8))  # 2.83, 2, 1.41, …, 0.25: 8 configurations
DSGDA_GRID = tuple({"local_steps": k, "factor": f} for k in (100, 20, 5, 1) for f in (2.0, 1.0))  # 8 as well
APD_FACTORS = tuple(2.0 ** (3 - k / 2) for k in range(8))  # 8, 5.66, …, 0.71: its stability edge is near 3-6

# criteria (fixed before running)
ROUNDS_SLOPE_MAX, ROUNDS_SLOPE_REFUTE = 0.2, 0.8   # C1: ours' rounds vs L_xx, per seed
EG_SLOPE_MIN = 0.8                                 # C1/C3 precondition: EG's rounds grow ≈ like L_xx
CALLS_RATIO_MIN = 1.5                              # C2: calls(EG)/calls(ours) >= 1.5 (interval)
APD_RATIO_MIN = 1.0                                # C2c: calls(APD)/calls(ours) >= 1 (interval)
ROUNDS_RATIO_MIN = 5.0                             # C3/C6: rounds(EG)/rounds(ours) >= 5 at L_xx/L_xy >= 100
PEER_RATIO_MIN = 1.0                               # C3b: rounds(DSGDA)/rounds(ours) >= 1 (interval)
LB_SLOPE_MAX = 0.2                                 # C4: ratio to the span bound grows slower than κ^0.2
KAPPA_SLOPE_MAX, KAPPA_SLOPE_REFUTE = 1.2, 1.5     # C5: ours' rounds vs L_xy/μ


@dataclass(frozen=True)
class Setting:
    d: int                          # dimension per player of Q
    lxx_ours: tuple[float, ...]     # L_xx grid of ours (C1)
    lxx_peers: tuple[float, ...]    # L_xx grid where EG and Decoupled SGDA also run (C1 precondition, C2, C3)
    chain_mus: tuple[float, ...]    # μ of H (C4)
    dro_rows: int                   # rows per DRO subsample (C2b)


SETTINGS = {
    "smoke": Setting(d=10, lxx_ours=(10.0, 100.0), lxx_peers=(10.0, 100.0), chain_mus=(0.2, 0.1), dro_rows=80),
    "quick": Setting(d=30, lxx_ours=(10.0, 100.0, 1000.0, 10000.0), lxx_peers=(10.0, 100.0),
                     chain_mus=(0.2, 0.1, 0.05), dro_rows=200),
    "full": Setting(d=50, lxx_ours=(10.0, 100.0, 1000.0, 10000.0), lxx_peers=(10.0, 100.0, 1000.0),
                    chain_mus=(0.2, 0.1, 0.05, 0.025), dro_rows=400),
}
SETTINGS["gpu"] = SETTINGS["full"]


def _setting(ctx: CheckContext) -> Setting:
    return ctx.pick(SETTINGS)


# ---------------------------------------------------------------------------------------------------------------
# the arms: one solver call per (problem, configuration), with a rounds cap for the tuning's early stop
# ---------------------------------------------------------------------------------------------------------------


def _zeros(g: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(g.d_x), np.zeros(g.d_y)


def _start(g: Any) -> tuple[np.ndarray, np.ndarray]:
    return g.initial_point() if hasattr(g, "initial_point") else _zeros(g)


def run_ours(g: Any, cfg: dict, cap: int = MAX_ROUNDS) -> SaddleResult:
    ex, ey, _ = default_steps(g, 0.5)
    return decoupled_method(g, *_start(g), eta_x=cfg["factor"] * ex, eta_y=cfg["factor"] * ey, tol=TOL,
                            max_rounds=cap)


def run_eg(g: Any, cfg: dict, cap: int = MAX_ROUNDS) -> SaddleResult:
    return extragradient(g, *_start(g), lr=cfg["factor"] / (2 * jacobian_bound(g)), tol=TOL, max_rounds=cap)


def run_dsgda(g: Any, cfg: dict, cap: int = MAX_ROUNDS) -> SaddleResult:
    L = max(g.constants["L_xx"], g.constants["L_yy"])
    return decoupled_sgda(g, *_start(g), local_steps=cfg["local_steps"], lr=cfg["factor"] / (2 * L), tol=TOL,
                          max_rounds=cap)


def run_apd(g: Any, cfg: dict, cap: int = MAX_ROUNDS) -> SaddleResult:
    return accelerated_primal_dual(g, *_start(g), step_scale=cfg["factor"], tol=TOL, max_rounds=cap)


ARMS: dict[str, tuple[Callable[..., SaddleResult], Any]] = {
    "ours": (run_ours, [{"factor": f} for f in STEP_FACTORS]),
    "eg": (run_eg, [{"factor": f} for f in STEP_FACTORS]),
    "dsgda": (run_dsgda, list(DSGDA_GRID)),
    "apd": (run_apd, [{"factor": f} for f in APD_FACTORS]),
}
PROPORTIONAL = ("eg", "apd")  # arms whose calls are proportional to their rounds


def _score(r: SaddleResult, objective: str) -> float:
    if not r.converged:
        return NOT_CONVERGED
    return float(r.rounds if objective == "rounds" else r.max_calls)


def _tuned_arms(ctx: CheckContext, make: Callable[[int], Any], arms: tuple[str, ...], objective: str,
                label: str) -> dict[str, dict]:
    """tune_arms on the validation instance ``make(VALIDATION_SEED)``: each arm's best configuration for
    ``objective``. A configuration stops once its rounds pass the arm's best converged rounds so far (then it
    cannot be the best for rounds; for calls, only EG's and APD's calls are proportional to their rounds, so the
    early stop is used for them alone there)."""
    g = make(VALIDATION_SEED)

    def train_eval(arm: str) -> Callable[[dict, str], float]:
        fn = ARMS[arm][0]
        best = {"rounds": MAX_ROUNDS}
        early = objective == "rounds" or arm in PROPORTIONAL

        def evaluate(cfg: dict, split: str) -> float:
            r = fn(g, cfg, best["rounds"] if early else MAX_ROUNDS)
            if r.converged:
                best["rounds"] = min(best["rounds"], r.rounds)
            return _score(r, objective)
        return evaluate

    tuned = tune_arms({a: (train_eval(a), ARMS[a][1]) for a in arms}, split=f"validation ({label}, {objective})",
                      higher_is_better=False, ctx=ctx)
    return {a: t.best for a, t in tuned.items()}


def _test_runs(ctx: CheckContext, make: Callable[[int], Any], configs: dict[str, dict]) -> dict[str, list[dict]]:
    """Each arm at its tuned configuration on every test seed: rounds, max calls, converged, reason."""
    out: dict[str, list[dict]] = {}
    for arm, cfg in configs.items():
        rows = []
        for seed in ctx.seeds:
            r = ARMS[arm][0](make(seed), cfg)
            rows.append({"seed": seed, "rounds": r.rounds, "calls": r.max_calls, "total_calls": r.total_calls,
                         "converged": r.converged, "reason": r.reason})
        out[arm] = rows
    return out


# ---------------------------------------------------------------------------------------------------------------
# Q: the L_xx sweep (C1, C2, C3, C3b)
# ---------------------------------------------------------------------------------------------------------------


def _q(ctx: CheckContext, L_xx: float, L_xy: float = 1.0, mu: float = 0.1) -> Callable[[int], QuadraticGame]:
    d = _setting(ctx).d
    return lambda seed: QuadraticGame.random(d, mu, L_xx, mu, L_xx, L_xy, seed)


def _sweep(ctx: CheckContext) -> list[dict]:
    """Per L_xx: the tuned configurations and test runs of ours (every L_xx) and of EG and Decoupled SGDA (the
    peers' grid), for the rounds objective and for the calls objective."""
    s = _setting(ctx)
    cells = []
    for L in ctx.progress(s.lxx_ours, desc="saddle Q: L_xx sweep"):
        make = _q(ctx, L)
        arms = ("ours", "eg", "dsgda", "apd") if L in s.lxx_peers else ("ours",)
        cell: dict[str, Any] = {"L_xx": L}
        for objective in ("rounds", "calls"):
            if len(arms) > 1:
                cfg = _tuned_arms(ctx, make, arms, objective, f"Q, L_xx = {L:g}")
            else:  # ours alone (no comparison at this L_xx): its own step search on the validation instance
                g = make(VALIDATION_SEED)
                scores = [_score(run_ours(g, c), objective) for c in ARMS["ours"][1]]
                cfg = {"ours": ARMS["ours"][1][int(np.argmin(scores))]}
            cell[objective] = {"configs": cfg, "runs": _test_runs(ctx, make, cfg)}
        r = {a: [row["rounds"] for row in cell["rounds"]["runs"][a]] for a in arms}
        ctx.log(f"L_xx={L:g}: rounds " + ", ".join(f"{a} {np.median(v):g}" for a, v in r.items()))
        cells.append(cell)
    ctx.metrics["lxx_sweep"] = cells
    _plot_sweep(ctx, cells)
    return cells


def _plot_sweep(ctx: CheckContext, cells: list[dict]) -> None:
    fig, axes = ctx.figure(1, 2, figsize=(10, 3.8))
    names = {"ours": "Decoupled (ours)", "eg": "Extragradient", "dsgda": "Decoupled SGDA (best K)",
             "apd": "accelerated primal-dual"}
    for ax, objective in zip(axes, ("rounds", "calls")):
        for arm, style in (("ours", "o-"), ("eg", "s--"), ("dsgda", "^:"), ("apd", "d-.")):
            pts = [(c["L_xx"], [row[objective] for row in c[objective]["runs"][arm]]) for c in cells
                   if arm in c[objective]["runs"]]
            if not pts:
                continue
            L = [p[0] for p in pts]
            med = [float(np.median(p[1])) for p in pts]
            lo = [m - min(p[1]) for m, p in zip(med, pts)]
            hi = [max(p[1]) - m for m, p in zip(med, pts)]
            ax.errorbar(L, med, yerr=[lo, hi], fmt=style, capsize=3, label=names[arm])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("L_xx = L_yy  (L_xy = 1, μ = 0.1)")
        ax.set_ylabel("rounds" if objective == "rounds" else "calls of the busiest agent")
        ax.legend(fontsize=8)
    fig.suptitle(f"Q, d = {_setting(ctx).d}: median and range over {len(ctx.seeds)} seeds, each arm at its "
                 "tuned configuration")
    ctx.save_figure(fig, "lxx_sweep.png", caption="rounds and max-agent calls vs L_xx (log-log), tuned arms")


def _cells(ctx: CheckContext) -> list[dict]:
    return ctx.cache("sweep", lambda: _sweep(ctx))


def _seed_slopes(cells: list[dict], arm: str, objective: str, grid: tuple[float, ...]) -> list[float]:
    """One log–log slope per test seed of ``objective`` vs L_xx over ``grid`` (NaN where a run failed)."""
    sel = [c for c in cells if c["L_xx"] in grid and arm in c[objective]["runs"]]
    slopes = []
    for i in range(len(sel[0][objective]["runs"][arm]) if sel else 0):
        rows = [c[objective]["runs"][arm][i] for c in sel]
        if len(rows) < 2 or not all(r["converged"] for r in rows):
            slopes.append(math.nan)
            continue
        slopes.append(measure.loglog_slope([c["L_xx"] for c in sel], [r[objective] for r in rows]).slope)
    return slopes


def _all_converged(cells: list[dict], objective: str, arms: tuple[str, ...], grid: tuple[float, ...]) -> Evidence:
    flags = [float(row["converged"]) for c in cells if c["L_xx"] in grid
             for a in arms if a in c[objective]["runs"] for row in c[objective]["runs"][a]]
    bad = [f"{a} at L_xx={c['L_xx']:g} seed {row['seed']}: {row['reason']}" for c in cells if c["L_xx"] in grid
           for a in arms if a in c[objective]["runs"] for row in c[objective]["runs"][a] if not row["converged"]]
    return Evidence(values=flags, unit="1 = converged (per arm, L_xx, test seed)", details={"failed": bad})


def measure_c1(ctx: CheckContext) -> Evidence:
    s, cells = _setting(ctx), _cells(ctx)
    slopes = _seed_slopes(cells, "ours", "rounds", s.lxx_ours)
    return Evidence(values=slopes, unit="log-log slope of ours' rounds vs L_xx, per test seed", allow_missing=True,
                    details={"L_xx": list(s.lxx_ours),
                             "ours_rounds": [[r["rounds"] for r in c["rounds"]["runs"]["ours"]] for c in cells],
                             "dsgda_slopes": _seed_slopes(cells, "dsgda", "rounds", s.lxx_peers)})


def measure_c1_converged(ctx: CheckContext) -> Evidence:
    return _all_converged(_cells(ctx), "rounds", ("ours",), _setting(ctx).lxx_ours)


def measure_eg_grows(ctx: CheckContext) -> Evidence:
    s = _setting(ctx)
    return Evidence(values=_seed_slopes(_cells(ctx), "eg", "rounds", s.lxx_peers), allow_missing=True,
                    unit=f"log-log slope of EG's rounds vs L_xx over {list(s.lxx_peers)}, per test seed")


def _ratios(cells: list[dict], objective: str, num: str, den: str, min_lxx: float = 0.0) -> tuple[list, list]:
    """Per (L_xx, seed) ratio objective(num)/objective(den) over the cells where both ran (NaN if one failed)."""
    vals, units = [], []
    for c in cells:
        runs = c[objective]["runs"]
        if c["L_xx"] < min_lxx or num not in runs or den not in runs:
            continue
        for a, b in zip(runs[num], runs[den]):
            ok = a["converged"] and b["converged"]
            vals.append(a[objective] / b[objective] if ok else math.nan)
            units.append(f"L_xx={c['L_xx']:g} seed {a['seed']}")
    return vals, units


def measure_c2(ctx: CheckContext) -> Evidence:
    vals, units = _ratios(_cells(ctx), "calls", "eg", "ours")
    return Evidence(values=vals, unit="calls(EG)/calls(ours), busiest agent, per (L_xx, test seed)",
                    details={"units": units}, allow_missing=True)


def measure_c2_converged(ctx: CheckContext) -> Evidence:
    return _all_converged(_cells(ctx), "calls", ("ours", "eg"), _setting(ctx).lxx_peers)


def measure_c2c(ctx: CheckContext) -> Evidence:
    vals, units = _ratios(_cells(ctx), "calls", "apd", "ours")
    return Evidence(values=vals, unit="calls(APD)/calls(ours), busiest agent, per (L_xx, test seed)",
                    details={"units": units}, allow_missing=True)


def measure_c2c_converged(ctx: CheckContext) -> Evidence:
    return _all_converged(_cells(ctx), "calls", ("ours", "apd"), _setting(ctx).lxx_peers)


def measure_c3(ctx: CheckContext) -> Evidence:
    vals, units = _ratios(_cells(ctx), "rounds", "eg", "ours", min_lxx=100.0)
    return Evidence(values=vals, unit="rounds(EG)/rounds(ours) per (L_xx >= 100·L_xy, test seed)",
                    details={"units": units}, allow_missing=True)


def measure_c3b(ctx: CheckContext) -> Evidence:
    cells = _cells(ctx)
    vals, units = _ratios(cells, "rounds", "dsgda", "ours", min_lxx=100.0)
    chain = ctx.cache("chain", lambda: _chain(ctx))
    apd, _ = _ratios(cells, "rounds", "apd", "ours", min_lxx=100.0)
    return Evidence(values=vals, unit="rounds(Decoupled SGDA)/rounds(ours) per (L_xx >= 100·L_xy, test seed)",
                    details={"units": units, "apd_over_ours_rounds": apd,
                             "dsgda_configs": [c["rounds"]["configs"].get("dsgda") for c in cells],
                             "on_H_dsgda_converged_configs": [row["dsgda_converged_configs"] for row in chain]},
                    allow_missing=True)


def measure_c3_converged(ctx: CheckContext) -> Evidence:
    return _all_converged(_cells(ctx), "rounds", ("ours", "eg", "dsgda"), _setting(ctx).lxx_peers)


# ---------------------------------------------------------------------------------------------------------------
# DRO logistic (C2b), H (C4, C4s), the κ sweeps (C5), V (C6)
# ---------------------------------------------------------------------------------------------------------------


def _dro(ctx: CheckContext) -> dict:
    """Ours vs EG on DRO logistic: tuned (calls) on the validation subsample, then each test subsample."""
    full = DROLogistic.breast_cancer(mu=1.0, rho=1.0)
    n = _setting(ctx).dro_rows

    def make(seed: int) -> DROLogistic:
        idx = np.sort(np.random.default_rng(seed).choice(full.X.shape[0], size=n, replace=False))
        return DROLogistic(full.X[idx], full.t[idx], mu=1.0, rho=1.0)

    cfg = _tuned_arms(ctx, make, ("ours", "eg"), "calls", f"DRO logistic, {n} rows")
    runs = _test_runs(ctx, make, cfg)
    ctx.metrics["dro"] = {"configs": cfg, "runs": runs}
    return runs


def measure_c2b(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("dro", lambda: _dro(ctx))
    vals = [e["calls"] / o["calls"] if e["converged"] and o["converged"] else math.nan
            for e, o in zip(runs["eg"], runs["ours"])]
    return Evidence(values=vals, unit="calls(EG)/calls(ours), busiest agent, per test subsample", allow_missing=True,
                    details={"ours_calls": [o["calls"] for o in runs["ours"]],
                             "eg_calls": [e["calls"] for e in runs["eg"]]})


def measure_c2b_converged(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("dro", lambda: _dro(ctx))
    return Evidence(values=[float(r["converged"]) for a in runs for r in runs[a]],
                    unit="1 = converged (per arm, test subsample)")


def _support_rounds(log: list[tuple[int, str, int, int]], r_lb: int) -> int | None:
    """First round after which the method's iterates can touch coordinate r_lb: the method's own span bound."""
    for rounds, _, ix, iy in log:
        if max(ix, iy) >= r_lb:
            return rounds
    return None


def _chain(ctx: CheckContext) -> list[dict]:
    """H at each μ: ours at its best step, the exact span bound r_lb(ε), ours' own span bound (the round at
    which its support first reaches r_lb), span violations of every method, Decoupled SGDA's grid."""
    rows = []
    for mu in ctx.progress(_setting(ctx).chain_mus, desc="saddle H: chain instance"):
        d = int(math.ceil(1.5 / mu * math.log(1 / TOL))) + 50  # long enough for its own bound at this μ
        h = ChainHardInstance(d, 1.0, mu)
        r_lb = h.span_lower_bound_rounds(TOL)
        cbest, best = min(((c, run_ours(h, c)) for c in ARMS["ours"][1]),
                          key=lambda p: (not p[1].converged, p[1].rounds))
        counter = CostCounter(h, record_support=True)  # the best run again, logging its support
        ex, ey, _ = default_steps(h, 0.5)
        decoupled_method(h, *_zeros(h), eta_x=cbest["factor"] * ex, eta_y=cbest["factor"] * ey, tol=TOL,
                         counter=counter)
        own = _support_rounds(counter.support_log, r_lb)
        violations = sum(max(ix, iy) > k for k, _, ix, iy in counter.support_log)
        for solve in (extragradient, optimistic_gda, gda):  # 2·d rounds: by then every coordinate could be active
            c = CostCounter(h, record_support=True)
            solve(h, *_zeros(h), tol=TOL, max_rounds=2 * d, counter=c)
            violations += sum(max(ix, iy) > k for k, _, ix, iy in c.support_log)
        # Decoupled SGDA over its whole grid, with 5·d rounds (ours needs about 2.5·d)
        dsgda_ok = [cfg for cfg in DSGDA_GRID if run_dsgda(h, cfg, cap=5 * d).converged]
        rows.append({"mu": mu, "kappa": h.constants["L_xy"] / mu, "d": d, "r_lb": r_lb, "ours_rounds": best.rounds,
                     "ours_converged": best.converged, "ours_own_span_bound": own, "span_violations": violations,
                     "dsgda_converged_configs": len(dsgda_ok)})
        ctx.log(f"H μ={mu:g} (d={d}): ours {best.rounds} rounds, span bound {r_lb}, ours' own {own}, "
                f"Decoupled SGDA converged in {len(dsgda_ok)}/{len(DSGDA_GRID)} configurations")
    ctx.metrics["chain"] = rows
    return rows


def _slope_interval(x: list[float], y: list[float], alpha: float = 0.05) -> tuple[float, float, float]:
    """Least-squares slope of log y on log x with its (1 − alpha) t interval."""
    from scipy import stats

    lx, ly = np.log(np.asarray(x)), np.log(np.asarray(y))
    fit = stats.linregress(lx, ly)
    t = stats.t.ppf(1 - alpha / 2, len(lx) - 2)
    return float(fit.slope), float(fit.slope - t * fit.stderr), float(fit.slope + t * fit.stderr)


def measure_c4(ctx: CheckContext) -> Evidence:
    rows = ctx.cache("chain", lambda: _chain(ctx))
    ok = [r for r in rows if r["ours_converged"] and r["ours_own_span_bound"]]
    ratios = [r["ours_rounds"] / r["ours_own_span_bound"] for r in ok]
    if len(ok) < 3:
        return Evidence(values=[], unit="slope of rounds(ours)/own span bound vs κ", allow_missing=True,
                        details={"ratios": ratios})
    slope, lo, hi = _slope_interval([r["kappa"] for r in ok], ratios)
    return Evidence(values=[slope], unit="log-log slope of rounds(ours)/(ours' own span bound) vs κ = L_xy/μ",
                    details={"ci95": [lo, hi], "ratios": ratios, "kappa": [r["kappa"] for r in ok],
                             "ratio_to_r_lb": [r["ours_rounds"] / r["r_lb"] for r in ok]})


def _decide_c4(ev: Evidence) -> Verdict:
    if not ev.finite or "ci95" not in ev.details:
        return Verdict("inconclusive", "fewer than 3 chain instances converged")
    lo, hi = ev.details["ci95"]
    said = f"slope {ev.finite[0]:.3g}, 95% interval [{lo:.3g}, {hi:.3g}]"
    if hi <= LB_SLOPE_MAX:
        return Verdict("supported", f"{said} lies below {LB_SLOPE_MAX:g}")
    if lo >= LB_SLOPE_MAX:
        return Verdict("not supported", f"{said} lies above {LB_SLOPE_MAX:g}")
    return Verdict("inconclusive", f"{said} spans {LB_SLOPE_MAX:g}")


def measure_c4_span(ctx: CheckContext) -> Evidence:
    rows = ctx.cache("chain", lambda: _chain(ctx))
    return Evidence(values=[r["span_violations"] for r in rows], unit="calls that touched coordinate k before "
                    "round k (ours, EG, OGDA, GDA), per μ")


def measure_c5(ctx: CheckContext) -> Evidence:
    def sweeps() -> list[dict]:
        pts = [(lxy, 0.1) for lxy in (0.1, 0.3, 1.0, 3.0, 10.0)] + [(1.0, mu) for mu in (1.0, 0.01)]
        out = []
        for lxy, mu in ctx.progress(pts, desc="saddle Q: L_xy and μ sweeps"):
            make = _q(ctx, 100.0, lxy, mu)
            g = make(VALIDATION_SEED)
            scores = [_score(run_ours(g, c), "rounds") for c in ARMS["ours"][1]]
            cfg = ARMS["ours"][1][int(np.argmin(scores))]
            out.append({"L_xy": lxy, "mu": mu, "kappa": lxy / mu,
                        "rounds": [run_ours(make(s), cfg).rounds for s in ctx.seeds]})
        return out

    cells = ctx.cache("kappa", sweeps)
    ctx.metrics["kappa_sweeps"] = cells
    slopes = [measure.loglog_slope([c["kappa"] for c in cells], [c["rounds"][i] for c in cells]).slope
              for i in range(len(ctx.seeds))]
    return Evidence(values=slopes, unit="log-log slope of ours' rounds vs L_xy/μ (sweeps ii and iii), per seed")


def _vi(ctx: CheckContext) -> dict:
    def make(L_loc: float) -> Callable[[int], MultiPlayerQuadraticGame]:
        return lambda seed: MultiPlayerQuadraticGame.random(3, 20, mu=0.1, L_local=L_loc, L_cross=1.0, seed=seed)

    def ours(g: Any, cfg: dict, cap: int) -> SaddleResult:
        return decoupled_method_vi(g, [np.zeros(20)] * 3, eta=cfg["factor"] * 0.5 / g.constants["L_cross"],
                                   tol=TOL, max_rounds=cap)

    def eg(g: Any, cfg: dict, cap: int) -> SaddleResult:
        lr = cfg["factor"] / (2 * (g.constants["L_local"] + g.constants["L_cross"]))
        return extragradient_vi(g, [np.zeros(20)] * 3, lr=lr, tol=TOL, max_rounds=cap)

    out = {}
    for L_loc in (100.0,):
        g = make(L_loc)(VALIDATION_SEED)

        def evaluate(fn: Callable, best: dict, g: Any = g) -> Callable[[dict, str], float]:
            def ev(cfg: dict, split: str) -> float:
                r = fn(g, cfg, best["rounds"])
                if r.converged:
                    best["rounds"] = min(best["rounds"], r.rounds)
                return _score(r, "rounds")
            return ev

        grid = [{"factor": f} for f in STEP_FACTORS]
        tuned = tune_arms({"ours": (evaluate(ours, {"rounds": MAX_ROUNDS}), grid),
                           "eg": (evaluate(eg, {"rounds": MAX_ROUNDS}), grid)},
                          split=f"validation (V, L_local = {L_loc:g}, rounds)", higher_is_better=False, ctx=ctx)
        runs = {arm: [fn(make(L_loc)(s), tuned[arm].best, MAX_ROUNDS) for s in ctx.seeds]
                for arm, fn in (("ours", ours), ("eg", eg))}
        out[L_loc] = {a: [{"rounds": r.rounds, "converged": r.converged} for r in rs] for a, rs in runs.items()}
    ctx.metrics["vi"] = {str(k): v for k, v in out.items()}
    return out


def measure_c6(ctx: CheckContext) -> Evidence:
    out = ctx.cache("vi", lambda: _vi(ctx))
    vals = [e["rounds"] / o["rounds"] if e["converged"] and o["converged"] else math.nan
            for cell in out.values() for e, o in zip(cell["eg"], cell["ours"])]
    return Evidence(values=vals, unit="rounds(EG)/rounds(ours) on V (3 players, L_local/L_cross = 100), per seed",
                    allow_missing=True)


def measure_c6_converged(ctx: CheckContext) -> Evidence:
    out = ctx.cache("vi", lambda: _vi(ctx))
    return Evidence(values=[float(r["converged"]) for cell in out.values() for a in cell for r in cell[a]],
                    unit="1 = converged (per arm, test seed)")


# ---------------------------------------------------------------------------------------------------------------
# claims
# ---------------------------------------------------------------------------------------------------------------

ALL_CONVERGED = rules.threshold(">=", 1.0, stat="min", min_n=3)


def _converged(what: str, fn: Callable[[CheckContext], Evidence]) -> Precondition:
    return Precondition(f"{what} converged on every test seed at the tuned configuration", fn, ALL_CONVERGED)


EG_GROWS = Precondition("EG's rounds grow with L_xx (slope >= 0.8 on every seed): the gap exists",
                        measure_eg_grows, rules.threshold(">=", EG_SLOPE_MIN, stat="min", min_n=3))
TUNING = "equal"

CLAIMS = (
    Claim(id="C1", statement="The Decoupled Method's rounds do not grow with the local smoothness L_xx, L_yy "
                             "(Extragradient's grow like L_xx): the communication cost depends on the coupling only.",
          paper_value="rounds O(L_xy/√(μ_xμ_y)·log 1/ε) (abstract; no numbers)",
          metric="per-seed log-log slope of ours' rounds vs L_xx = L_yy ∈ {10, 1e2, 1e3, 1e4} (Q, L_xy = 1, μ = 0.1)",
          rule=rules.threshold("<=", ROUNDS_SLOPE_MAX, stat="max", min_n=3, refute=(">=", ROUNDS_SLOPE_REFUTE)),
          measure=measure_c1, scales=("quick", "full", "gpu"), compares_trained=True,
          tuning="ours' step tuned alone on the validation instance (a scaling claim, no arm comparison); EG is "
                 "tuned in the precondition's cells",
          preconditions=(_converged("ours", measure_c1_converged), EG_GROWS)),
    Claim(id="C2", statement="Strict improvement over Extragradient's oracle cost (partial-gradient calls of the "
                             "busiest agent) on quadratic games where local smoothness dominates.",
          paper_value="first strict improvement over EG's oracle cost (abstract; our derivation √(L_xx·L_xy)/μ vs "
                      "L_xx/μ)",
          metric="calls(EG)/calls(ours) per (L_xx ∈ peers' grid, test seed), each arm tuned for calls",
          rule=rules.ratio_at_least(CALLS_RATIO_MIN, min_n=3, test="t"), measure=measure_c2,
          scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(_converged("ours and EG", measure_c2_converged),)),
    Claim(id="C2b", statement="The oracle-cost improvement over Extragradient holds on a non-quadratic problem "
                              "(DRO logistic regression, simplex-constrained player Y).",
          paper_value="\"general saddle problems\" (abstract)",
          metric="calls(EG)/calls(ours), busiest agent, per seeded 80% breast_cancer subsample (μ = 1, ρ = 1)",
          rule=rules.ratio_at_least(CALLS_RATIO_MIN, min_n=3, test="t"), measure=measure_c2b,
          scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(_converged("ours and EG", measure_c2b_converged),)),
    Claim(id="C2c", statement="The oracle-cost improvement is not matched by the accelerated primal-dual method "
                              "for bilinearly coupled games (what 'first' would mean on quadratic games).",
          paper_value="first strict improvement over EG's oracle cost (abstract); APD's known cost ≈ √(L_xx/μ) + "
                      "L_xy/μ vs our derivation √(L_xx·L_xy)/μ",
          metric="calls(APD)/calls(ours) per (L_xx ∈ peers' grid, test seed), each arm tuned for calls",
          rule=rules.ratio_at_least(APD_RATIO_MIN, min_n=3, test="t"), measure=measure_c2c,
          scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(_converged("ours and APD", measure_c2c_converged),)),
    Claim(id="C3", statement="Far fewer communication rounds than Extragradient when local smoothness dominates "
                             "(L_xx/L_xy >= 100).",
          paper_value="a gap between EG and the lower bound (abstract)",
          metric="rounds(EG)/rounds(ours) per (L_xx >= 100, test seed), each arm tuned for rounds",
          rule=rules.ratio_at_least(ROUNDS_RATIO_MIN, min_n=3, test="t"), measure=measure_c3,
          scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(_converged("ours, EG and Decoupled SGDA", measure_c3_converged), EG_GROWS)),
    Claim(id="C3b", statement="No gradient-span peer needs fewer rounds: the Decoupled Method needs no more rounds "
                              "than Decoupled SGDA (the setting's predecessor, best K and step) at L_xx/L_xy >= 100.",
          paper_value="attains the communication lower bound; settles communication complexity (abstract)",
          metric="rounds(Decoupled SGDA)/rounds(ours) per (L_xx >= 100, test seed), each tuned for rounds",
          rule=rules.ratio_at_least(PEER_RATIO_MIN, min_n=3, test="t"), measure=measure_c3b,
          scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(_converged("ours, EG and Decoupled SGDA", measure_c3_converged),)),
    Claim(id="C4", statement="The Decoupled Method matches the gradient-span lower bound up to a constant: on the "
                             "chain instance its rounds over its own span bound do not grow with κ = L_xy/μ.",
          paper_value="R ≥ c·L_xy/√(μ_xμ_y)·log(1/ε), matched (form inferred)",
          metric="slope of log(rounds(ours, best step)/ours' own span bound) vs log κ over μ, with its 95% t "
                 "interval (H, d sized to the bound)",
          rule=rules.custom(f"supported when the 95% interval of the slope lies below {LB_SLOPE_MAX:g}; not "
                            f"supported when it lies above {LB_SLOPE_MAX:g}; inconclusive when it spans it",
                            _decide_c4, min_n=1),
          measure=measure_c4),
    Claim(id="C4s", kind="sanity",
          statement="Span property of the implementations: no method touches coordinate k of the chain before "
                    "round k (true by construction for gradient-span methods; checks our counters).",
          paper_value="lower bound for gradient-span algorithms (abstract)",
          metric="calls of ours, EG, OGDA, GDA that touched coordinate k before round k, per μ",
          rule=rules.threshold("<=", 0, stat="max", min_n=1), measure=measure_c4_span),
    Claim(id="C5", statement="Rounds scale no worse than the lower bound's L_xy/√(μ_xμ_y).",
          paper_value="O(L_xy/√(μ_xμ_y)·log 1/ε)",
          metric="per-seed slope of ours' rounds vs L_xy/μ over sweeps (ii) L_xy ∈ {0.1..10} and (iii) μ ∈ {1, 0.01}",
          rule=rules.threshold("<=", KAPPA_SLOPE_MAX, stat="max", min_n=3, refute=(">", KAPPA_SLOPE_REFUTE)),
          measure=measure_c5, scales=("full", "gpu")),
    Claim(id="C6", statement="New state-of-the-art communication for distributed VIPs: far fewer rounds than "
                             "Extragradient on a multiplayer game where local smoothness dominates.",
          paper_value="(abstract; no numbers)",
          metric="rounds(EG)/rounds(ours) on V (3 players, d = 20, μ = 0.1, L_local/L_cross = 100), per test seed",
          rule=rules.ratio_at_least(ROUNDS_RATIO_MIN, min_n=3, test="t"), measure=measure_c6,
          scales=("full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(_converged("ours and EG", measure_c6_converged),)),
)

PAPER = Paper(id="P13", slug="saddle", method="Decoupled Method",
              title="Efficient Gradient Methods for Distributed Saddle Problems", arxiv="2605.18604",
              claims=CLAIMS, default_seeds={"smoke": 1, "quick": 3, "full": 3, "gpu": 3})
