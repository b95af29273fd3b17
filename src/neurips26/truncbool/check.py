"""Claim check for P03 (truncbool): ℓ∞ rate under tiny mass, cost against rejection SGD, width × distance.

All data are synthetic, drawn by the exact log-space samplers (no rejection), seeded by the run's seeds.

* C1 (scaling): band ``S = {|x| ≤ ⌊n/4⌋}``, ``z* ∼ U[-1, 1]^n``; median ℓ∞ error of TruncPL-GD over the
  seeds on an (n, m) grid; fit ``log err = a + b log m + c log log n``; ``b`` decided on its interval over seeds.
* C2 (cost): band, ``n`` from 8 until ``μ_z(S) ≤ 1e-4``, ``m = 4000``: oracle calls to reach ℓ∞ error 0.5
  against the FKT'20 / delphi.ai rejection SGD, in both its forms (the ball ``r·log(1/√α)`` around the naive
  logits with an order-of-magnitude lower bound ``α`` on the mass, restart-until-interior; and ball-free),
  the better of the two per cell; every arm tuned on a validation instance over a 4-point grid; a run that
  spends its oracle budget without reaching the target is a failure counted at the budget.
* C3 (width × distance, an illustration, ``kind="sanity"``): ``n = 16``, ``z* = W·1``; the sample size ``m*``
  at which the ℓ∞ error reaches 0.2 (log-log interpolation on a doubling grid), on the full cube (``d_min = 1``;
  ours = the exact MLE there) and on even parity (``d_min = 2``; ours with pairs, and the exact truncated MLE).
  Our data show how these estimators' sample need grows with W; they cannot establish a lower bound.

The paper's text was not found: every criterion below is ours. C1's and C2's first criteria were fixed from
the spec before the first run (2026-12-01); the protocol of 2026-12-01 (v3) is in the README's history.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from neurips26.claims import (
    CheckContext,
    Claim,
    Evidence,
    Paper,
    Precondition,
    measure,
    preconditions,
    rules,
    tune_arms,
)

from .baselines import ExactTruncatedMLE, NaiveBooleanProduct, TruncatedMLESGD, UntruncatedBooleanProduct
from .estimator import TruncatedBooleanProduct
from .oracles import CallableOracle, Parity, WeightBand
from .samplers import log_mass, sample_product, sample_truncated_product

# ------------------------------------------------------------------------------------ criteria (fixed)
B_SUPPORT = (-0.55, -0.45)      # C1: the t interval of the per-seed slope b lies inside: supported
B_REFUTE = -0.4                 # C1: the interval lies wholly above: not supported
SPREAD_MAX = 2.5                # C1: max/min over n of err / sqrt(log n / m)
N_EXPONENT_REFUTE = 0.25        # C1: refuted if err grows like n^0.25 (or faster) at fixed m
LOG10_MASS_NEEDED = -15.0       # C1: the grid must reach μ_z(S) <= 1e-15
NAIVE_GAP_MIN = 0.3             # C1 precondition: truncation biases the naive fit by >= 0.3 (the task has signal)
TARGET_ERR_C2 = 0.5             # C2: matched ℓ∞ error for the oracle-call comparison
CALL_RATIO_MIN = 1.0            # C2: the interval of SGD calls / ours lies above this
EFFICIENCY_MAX = 2.0            # C2: PL error / exact-MLE error, n <= 16
LOG10_MASS_C2 = -4.0            # C2 precondition: the n-grid reaches μ_z(S) <= 1e-4
GROWTH_MARGIN = 0.0             # C2: per-seed slope of ln calls in n, SGD minus ours, interval above this
SGD_LR_GRID = [0.3, 1.0, 3.0, 10.0]   # C2 tuning grid of both SGD forms (4 points)
PL_WIDTH_GRID = [4.0, 8.0, 16.0, 32.0]  # C2 tuning grid of ours: the box W (4 points, the same size)
TUNE_N = 24                     # C2: the validation instance's dimension
TARGET_ERR_C3 = 0.2             # C3: m* is where the ℓ∞ error reaches this
# C3: (slope of ln m* in W) exact MLE on parity minus the cube, interval above 0. Why 0 and not the old 0.5:
# the exact MLE's asymptotic variance (inverse truncated covariance, by enumeration) predicts slopes 1.24 and
# 0.80 over W = 1..4 (gap 0.44) and 0.96 / 0.74 over W = 1..3: a gap of 1 (2 vs 1) is only reached as W grows.
SLOPE_GAP_MIN = 0.0
#: smoke is measured too (CI runs the whole pipeline); with one seed every interval rule is inconclusive there
DECIDED = ("smoke", "quick", "full", "gpu")


def _err(z_hat: np.ndarray, z: np.ndarray) -> float:
    """ℓ∞ error over identified coordinates (NaN coordinates would be counted as infinite error)."""
    return float(np.max(np.where(np.isfinite(z_hat), np.abs(z_hat - z), np.inf)))


def _fit_pl(S, X, **kw) -> TruncatedBooleanProduct:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TruncatedBooleanProduct(S, **kw).fit(X)


# ------------------------------------------------------------------------------------ C1: scaling
def _c1_grid(ctx: CheckContext) -> tuple[list[int], list[int]]:
    ns = ctx.pick({"smoke": [16, 64, 256], "quick": [16, 32, 64, 128, 256],
                   "full": [16, 32, 64, 128, 256, 512, 1024], "gpu": [16, 64, 256, 1024, 2048, 4096]})
    ms = ctx.pick({"smoke": [1000, 4000], "quick": [500, 1000, 2000, 4000, 8000],
                   "full": [500, 1000, 2000, 4000, 8000, 16000, 32000],
                   "gpu": [1000, 4000, 16000, 64000, 262144]})
    return ns, ms


def _c1_runs(ctx: CheckContext) -> dict:
    ns, ms = _c1_grid(ctx)
    err = np.zeros((len(ctx.seeds), len(ns), len(ms)))
    naive = np.zeros_like(err)
    untr = np.zeros_like(err)
    mass = np.zeros((len(ctx.seeds), len(ns)))
    fat = np.zeros_like(mass)
    conv = np.zeros(len(ctx.seeds))  # GD fits that did not converge, per seed
    for a, seed in enumerate(ctx.progress(ctx.seeds, desc="C1 seeds")):
        for b, n in enumerate(ns):
            rng = np.random.default_rng([seed, n, 1])
            z = rng.uniform(-1, 1, n)
            S = WeightBand(n // 4)
            mass[a, b] = log_mass(z, S) / math.log(10)
            X = sample_truncated_product(z, S, ms[-1], rng=rng)   # prefixes give the smaller m
            U = sample_product(z, ms[-1], rng=rng)                # untruncated: the minimax line
            for c, m in enumerate(ms):
                est = _fit_pl(S, X[:m])
                conv[a] += not est.converged_
                err[a, b, c] = _err(est.natural_params_, z)
                naive[a, b, c] = _err(NaiveBooleanProduct().fit(X[:m]).natural_params_, z)
                untr[a, b, c] = _err(UntruncatedBooleanProduct().fit(U[:m]).natural_params_, z)
            fat[a, b] = float(est.fatness_.min())
    return {"ns": ns, "ms": ms, "err": err, "naive": naive, "untruncated": untr, "log10_mass": mass, "fat": fat,
            "converged": conv}


def _fit_rate(med: np.ndarray, ns: list[int], ms: list[int]) -> np.ndarray:
    """Least squares ``log err = a + b log m + c log log n`` on a ``[n, m]`` grid: returns (a, b, c)."""
    lm, lln = np.meshgrid(np.log(ms), np.log(np.log(ns)))
    A = np.column_stack([np.ones(lm.size), lm.ravel(), lln.ravel()])
    return np.linalg.lstsq(A, np.log(med).ravel(), rcond=None)[0]


def measure_c1(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("c1", lambda: _c1_runs(ctx))
    ns, ms, err = runs["ns"], runs["ms"], runs["err"]
    med = np.median(err, axis=0)  # [n, m]
    a, b, c = _fit_rate(med, ns, ms)
    per_seed_b = [float(_fit_rate(err[s], ns, ms)[1]) for s in range(err.shape[0])]
    # err / sqrt(log n / m), geometric mean over m, per n; its spread across n
    norm = med / np.sqrt(np.log(ns)[:, None] / np.asarray(ms)[None, :])
    per_n = np.exp(np.log(norm).mean(axis=1))
    spread = float(per_n.max() / per_n.min())
    # growth with n at fixed m: mean over m of the log-log slope of median err against n
    n_exp = float(np.mean([measure.loglog_slope(ns, med[:, j]).slope for j in range(len(ms))]))
    naive_med = np.median(runs["naive"], axis=0)
    ctx.metrics["c1"] = {"ns": ns, "ms": ms, "median_err": med.round(4).tolist(),
                         "median_naive_err": naive_med.round(4).tolist(),
                         "median_untruncated_err": np.median(runs["untruncated"], axis=0).round(4).tolist(),
                         "log10_mass": runs["log10_mass"].mean(axis=0).round(2).tolist(),
                         "min_fatness": runs["fat"].min(axis=0).round(3).tolist(), "fit_abc": [a, b, c]}
    _plot_c1(ctx, runs, med)
    return Evidence(values=per_seed_b, unit="slope b of log err in log m (one fit per seed)",
                    details={"b_per_seed": per_seed_b, "b": float(b), "c": float(c), "spread": spread,
                             "n_exponent": n_exp,
                             "log10_min_mass": float(runs["log10_mass"].mean(axis=0).min()),
                             "median_err_largest_n": med[-1].round(4).tolist(),
                             "naive_err_largest_n": naive_med[-1].round(4).tolist(),
                             "pl_over_naive_max": float((med / naive_med).max())})


def _plot_c1(ctx: CheckContext, runs: dict, med: np.ndarray) -> None:
    import matplotlib.pyplot as plt

    ns, ms = runs["ns"], runs["ms"]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for b, n in enumerate(ns):
        q = np.percentile(runs["err"][:, b], [25, 75], axis=0)
        line = ax.errorbar(ms, med[b], yerr=[med[b] - q[0], q[1] - med[b]], marker="o", capsize=2,
                           label=f"n={n}, μ(S)≈1e{runs['log10_mass'][:, b].mean():.0f}")
        ax.plot(ms, np.median(runs["untruncated"][:, b], axis=0), ls=":", color=line[0].get_color())
    ax.plot(ms, np.median(runs["naive"][:, -1], axis=0), "k--", label=f"naive, n={ns[-1]}")
    ax.set(xscale="log", yscale="log", xlabel="samples m", ylabel="median ℓ∞ error",
           title="TruncPL-GD on |x| ≤ n/4 (dotted: untruncated MLE)")
    ax.legend(fontsize=7)
    ctx.save_figure(fig, "c1_loglog.png", caption="Median ℓ∞ error of TruncPL-GD against m per n (bars: "
                    "quartiles over seeds); dotted: the untruncated MLE on fresh untruncated samples; dashed: the "
                    "naive logit at the largest n.")


def measure_c1_signal(ctx: CheckContext) -> Evidence:
    """Per seed: naive error minus ours at the largest (n, m): the truncation bias the claim is about."""
    runs = ctx.cache("c1", lambda: _c1_runs(ctx))
    return Evidence(values=(runs["naive"][:, -1, -1] - runs["err"][:, -1, -1]).tolist(),
                    unit="ℓ∞ error, naive - TruncPL-GD at the largest (n, m), per seed")


def measure_c1_converged(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("c1", lambda: _c1_runs(ctx))
    return Evidence(values=runs["converged"].tolist(), unit="GD fits that did not converge, per seed")


# ------------------------------------------------------------------------------------ C2: cost
def _calls_to_target(errors: list[float], calls: list[int], spent: int) -> tuple[int, bool]:
    """Oracle calls at the first checkpoint with error <= target; a run that never gets there is a failure
    counted at everything it spent (a lower bound on its calls to the target)."""
    for e, c in zip(errors, calls):
        if e <= TARGET_ERR_C2:
            return int(c), True
    return int(spent), False


def _mass_lower_bound(log_mu: float) -> float:
    """The ``α`` a user supplies to the ball variant: the mass rounded down to a power of ten (an
    order-of-magnitude lower bound, as FKT'20 assume one; never the mass itself)."""
    return float(10.0 ** math.floor(log_mu / math.log(10) - 1e-12))


def _heldout_loglik(z_hat: np.ndarray, S, X_val: np.ndarray) -> float:
    """Mean ``log μ_{ẑ,S}(x)`` on validation rows: ``⟨ẑ, x⟩ - Σ log(1 + e^{ẑ_i}) - log μ_ẑ(S)`` (exact DP), nats."""
    z = np.nan_to_num(z_hat)
    return float(np.mean(X_val @ z) - np.logaddexp(0.0, z).sum() - log_mass(z, S))


def _c2_settings(ctx: CheckContext) -> dict:
    # n until the band's median mass is <= 1e-4 (n = 64: 10^-4.7; n = 72: 10^-5.7); the oracle budget per SGD
    # run binds only where the mass is tiny (it is the peer's blow-up we measure, counted as failures there)
    return {"ns": ctx.pick({"smoke": [8, 16], "quick": [8, 16, 32, 48, 64], "full": [8, 16, 24, 32, 48, 64, 72],
                            "gpu": [8, 16, 24, 32, 48, 64, 72]}),
            "m": ctx.pick({"smoke": 1000, "quick": 4000, "full": 4000, "gpu": 4000}),
            "steps": ctx.pick({"smoke": 200, "quick": 2000, "full": 2000, "gpu": 2000}),
            "cap": ctx.pick({"smoke": 10**6, "quick": 2 * 10**7, "full": 3 * 10**7, "gpu": 3 * 10**7}),
            "seeds": list(ctx.seeds[:5])}  # the SGD runs dominate the budget: at most 5 seeds


def _sgd(S, lr: float, alpha: float | None, st: dict, seed: int) -> TruncatedMLESGD:
    return TruncatedMLESGD(S, lr=lr, n_steps=st["steps"], alpha=alpha, max_oracle_calls=st["cap"],
                           on_limit="stop", random_state=seed)


def _c2_tuning(ctx: CheckContext, st: dict) -> dict:
    """Every arm tuned over a 4-point grid on a validation instance (its own z*, n = TUNE_N), scored by the
    held-out truncated log-likelihood; the choice is then used at every n."""
    rng = np.random.default_rng([10**6, TUNE_N, 2])
    z = rng.uniform(-1, 1, TUNE_N)
    S = WeightBand(TUNE_N // 4)
    X, X_val = sample_truncated_product(z, S, st["m"], rng=rng), sample_truncated_product(z, S, st["m"], rng=rng)
    alpha = _mass_lower_bound(log_mass(z, S))

    def pl(params: dict, split: str) -> float:
        return _heldout_loglik(_fit_pl(S, X, width_bound=params["width_bound"]).natural_params_, S, X_val)

    def sgd(a: float | None):
        return lambda params, split: _heldout_loglik(_sgd(S, params["lr"], a, st, 7).fit(X).natural_params_, S, X_val)

    tuned = tune_arms({"TruncPL-GD": (pl, {"width_bound": PL_WIDTH_GRID}),
                       "SGD ball": (sgd(alpha), {"lr": SGD_LR_GRID}),
                       "SGD ball-free": (sgd(None), {"lr": SGD_LR_GRID})}, split="validation", ctx=ctx)
    return {name: t.best for name, t in tuned.items()}


def _c2_one(seed: int, n: int, st: dict, best: dict) -> dict:
    rng = np.random.default_rng([seed, n, 2])
    z = rng.uniform(-1, 1, n)
    S = WeightBand(n // 4)
    m = st["m"]
    X = sample_truncated_product(z, S, m, rng=rng)
    lm = log_mass(z, S)
    sizes = [m >> k for k in range(6, -1, -1)]  # m/64 ... m: ours' calls to the target on prefixes
    pl: list = []
    t_pl = measure.time_once(lambda: pl.extend(_fit_pl(S, X[:mm], **best["TruncPL-GD"]) for mm in sizes), "process")
    pl_err = [_err(e.natural_params_, z) for e in pl]
    pl_calls, pl_ok = _calls_to_target(pl_err, [e.n_oracle_calls_ for e in pl], pl[-1].n_oracle_calls_)
    out = {"n": n, "seed": seed, "log10_mass": lm / math.log(10), "pl_calls": pl_calls, "pl_reached": pl_ok,
           "pl_err_full_m": pl_err[-1], "pl_not_converged": int(sum(not e.converged_ for e in pl)), "t_pl_s": t_pl,
           "naive_err": _err(NaiveBooleanProduct().fit(X).natural_params_, z)}
    for key, arm, alpha in (("ball", "SGD ball", _mass_lower_bound(lm)), ("free", "SGD ball-free", None)):
        sgd = _sgd(S, best[arm]["lr"], alpha, st, int(rng.integers(2**31)))
        t = measure.time_once(lambda sgd=sgd: sgd.fit(X), "process")
        errs = [_err(tr["z_avg"], z) for tr in sgd.trajectory_]
        calls, ok = _calls_to_target(errs, [tr["oracle_calls"] for tr in sgd.trajectory_], sgd.n_oracle_calls_)
        out.update({f"{key}_calls": calls, f"{key}_reached": ok, f"{key}_budget_hit": sgd.limit_reached_,
                    f"{key}_err_final": _err(sgd.natural_params_, z), f"{key}_trials": sgd.n_trials_,
                    f"t_{key}_s": t})
    # the peer is the better of its two forms in this cell (the fewer calls; a failure counts what it spent)
    pick = "ball" if out["ball_calls"] <= out["free_calls"] else "free"
    out.update({"sgd_calls": out[f"{pick}_calls"], "sgd_reached": out[f"{pick}_reached"], "sgd_form": pick})
    if n <= 16:
        out["exact_err"] = _err(ExactTruncatedMLE(S).fit(X).natural_params_, z)
    return out


def _c2_runs(ctx: CheckContext) -> dict:
    st = _c2_settings(ctx)
    best = _c2_tuning(ctx, st)
    cells = [(s, n) for s in st["seeds"] for n in st["ns"]]
    return {"settings": st, "tuned": best,
            "runs": [_c2_one(s, n, st, best) for s, n in ctx.progress(cells, desc="C2 (seed, n)")]}


def measure_c2(ctx: CheckContext) -> Evidence:
    data = ctx.cache("c2", lambda: _c2_runs(ctx))
    runs, ns, seeds = data["runs"], data["settings"]["ns"], data["settings"]["seeds"]
    ratio = [r["sgd_calls"] / r["pl_calls"] for r in runs]

    def slope(seed: int, key: str) -> float:
        cells = sorted((r for r in runs if r["seed"] == seed), key=lambda r: r["n"])
        return float(np.polyfit([r["n"] for r in cells], np.log([r[key] for r in cells]), 1)[0])

    growth = [slope(s, "sgd_calls") - slope(s, "pl_calls") for s in seeds] if len(ns) > 1 else []
    eff = [float(np.median([r["pl_err_full_m"] for r in runs if r["n"] == n])
                 / np.median([r["exact_err"] for r in runs if r["n"] == n])) for n in ns if n <= 16]
    keys = ("log10_mass", "pl_calls", "sgd_calls", "ball_calls", "free_calls", "t_pl_s", "t_ball_s", "t_free_s",
            "pl_err_full_m", "ball_err_final", "free_err_final", "naive_err")
    by_n = {n: {k: float(np.median([r[k] for r in runs if r["n"] == n])) for k in keys} for n in ns}
    ctx.metrics["c2"] = {"runs": runs, "by_n": by_n, "tuned": data["tuned"], "settings": data["settings"]}
    _plot_c2(ctx, ns, by_n)
    return Evidence(values=ratio, unit="x (SGD oracle calls / TruncPL-GD oracle calls to ℓ∞ error 0.5, per seed and n)",
                    details={"growth_gap": growth, "efficiency": eff,
                             "sgd_failures": sum(not r["sgd_reached"] for r in runs),
                             "ball_failures": sum(not r["ball_reached"] for r in runs),
                             "free_failures": sum(not r["free_reached"] for r in runs),
                             "budget_hits": sum(r["ball_budget_hit"] or r["free_budget_hit"] for r in runs),
                             "pl_failures": sum(not r["pl_reached"] for r in runs),
                             "median_ratio_by_n": [float(np.median([r["sgd_calls"] / r["pl_calls"] for r in runs
                                                                    if r["n"] == n])) for n in ns],
                             "log10_mass_by_n": [round(by_n[n]["log10_mass"], 2) for n in ns], "ns": ns},
                    note="a run that never reached the target counts the calls it spent (a lower bound)")


def measure_c2_mass(ctx: CheckContext) -> Evidence:
    data = ctx.cache("c2", lambda: _c2_runs(ctx))
    top = max(data["settings"]["ns"])
    return Evidence(values=[float(np.median([r["log10_mass"] for r in data["runs"] if r["n"] == top]))],
                    unit="log10 μ_z(S) at the largest n (median over seeds)")


def measure_c2_peer(ctx: CheckContext) -> Evidence:
    """Per cell with n <= 24 (where the budget lets it run to the end): naive error minus the peer's final
    error, for both forms — the peer does learn."""
    data = ctx.cache("c2", lambda: _c2_runs(ctx))
    return Evidence(values=[r["naive_err"] - r[f"{k}_err_final"] for r in data["runs"] if r["n"] <= 24
                            for k in ("ball", "free")], unit="ℓ∞ error, naive - SGD final (per cell and form)")


def measure_c2_converged(ctx: CheckContext) -> Evidence:
    data = ctx.cache("c2", lambda: _c2_runs(ctx))
    return Evidence(values=[r["pl_not_converged"] for r in data["runs"]],
                    unit="GD fits that did not converge, per cell")


def _plot_c2(ctx: CheckContext, ns: list[int], by_n: dict) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label, style in (("pl_calls", "TruncPL-GD", "o-"), ("ball_calls", "SGD, ball (α lower bound)", "s--"),
                              ("free_calls", "SGD, ball-free", "^--")):
        ax.plot(ns, [by_n[n][key] for n in ns], style, label=label)
    ax.set(yscale="log", xlabel="n (band |x| ≤ n/4)", ylabel=f"oracle calls to ℓ∞ error {TARGET_ERR_C2}",
           title="median over seeds; failures count what they spent")
    twin = ax.twinx()
    twin.plot(ns, [by_n[n]["log10_mass"] for n in ns], "k:", label="log10 μ(S)")
    twin.set_ylabel("log10 μ_z(S) (dotted)")
    ax.legend(fontsize=7)
    ctx.save_figure(fig, "c2_calls.png", caption="Oracle calls to reach ℓ∞ error 0.5 against n, TruncPL-GD and "
                    "both forms of the rejection-SGD peer (tuned on a validation instance); dotted: the band's mass.")


# ------------------------------------------------------------------------------------ C3: width × distance
def m_star(ms: list[int], errors: list[float], target: float) -> tuple[float, str]:
    """The sample size at which the error first reaches ``target``, interpolated linearly in (log m, log err)
    between the grid points around the first crossing: ``(m*, status)`` with status ``"ok"``, ``"below"``
    (already at the first grid point: m* ≤ ms[0]) or ``"above"`` (never: m* > ms[-1])."""
    for j, e in enumerate(errors):
        if e <= target:
            if j == 0:
                return float(ms[0]), "below"
            x0, x1, y0, y1 = math.log(ms[j - 1]), math.log(ms[j]), math.log(errors[j - 1]), math.log(e)
            t = (math.log(target) - y0) / (y1 - y0)
            return float(math.exp(x0 + t * (x1 - x0))), "ok"
    return float(ms[-1]), "above"


C3_ARMS = ("cube", "parity ours", "parity exact")


def fisher_slopes(Ws: list[int], n: int = 16) -> dict:
    """The slopes of ``ln m*`` in W that the exact MLE's asymptotic variance predicts, ``m* ∝ (I^{-1})_{11}``:
    the cube, ``1/(σ(W)(1-σ(W)))``; parity, the inverse truncated covariance ``Cov_{z,S}(x)^{-1}`` (enumeration)."""
    from .samplers import truncated_pmf

    cube, parity = [], []
    for W in Ws:
        q = 1 / (1 + math.exp(-W))
        cube.append(-math.log(q * (1 - q)))
        pts, p = truncated_pmf(np.full(n, float(W)), Parity(True))
        pts = pts.astype(np.float64)
        mean = p @ pts
        parity.append(math.log(np.linalg.inv((pts * p[:, None]).T @ pts - np.outer(mean, mean))[0, 0]))
    return {"cube": float(np.polyfit(Ws, cube, 1)[0]), "parity": float(np.polyfit(Ws, parity, 1)[0])}


def _c3_curve(arm: str, W: float, seed: int, grid: list[int]) -> list[float]:
    """ℓ∞ errors on the grid (prefixes of one sample), stopped one point after the first crossing."""
    n = 16
    z = np.full(n, float(W))
    parity = arm != "cube"
    rng = np.random.default_rng([seed, int(W), int(parity), 3])
    X = sample_truncated_product(z, Parity(True), grid[-1], rng=rng) if parity else sample_product(z, grid[-1], rng=rng)
    cube = CallableOracle(lambda A: np.ones(A.shape[0], dtype=bool), name="cube")
    errs: list[float] = []
    for m in grid:
        if arm == "cube":
            est = _fit_pl(cube, X[:m])
        elif arm == "parity ours":
            est = _fit_pl(Parity(True), X[:m], block_order=2, solver="lbfgs")
        else:
            est = ExactTruncatedMLE(Parity(True)).fit(X[:m])
        errs.append(_err(est.natural_params_, z))
        if len(errs) >= 2 and errs[-2] <= TARGET_ERR_C3:
            break
    return errs


def _c3_runs(ctx: CheckContext) -> dict:
    Ws = ctx.pick({"smoke": [1, 2], "quick": [1, 2, 3], "full": [1, 2, 3, 4], "gpu": [1, 2, 3, 4]})
    top = ctx.pick({"smoke": 8000, "quick": 128_000, "full": 512_000, "gpu": 512_000})
    grid = [125 * 2**k for k in range(20) if 125 * 2**k <= top]
    cells = [(arm, W, s) for arm in C3_ARMS for W in Ws for s in ctx.seeds]
    curves = {f"{arm}|{W}|{s}": _c3_curve(arm, W, s, grid) for arm, W, s in ctx.progress(cells, desc="C3 curves")}
    return {"W": Ws, "grid": grid, "curves": curves}


def measure_c3(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("c3", lambda: _c3_runs(ctx))
    Ws, grid = runs["W"], runs["grid"]
    m_st, status = {}, []
    for arm in C3_ARMS:
        for W in Ws:
            for s in ctx.seeds:
                m_st[(arm, W, s)], st = m_star(grid, runs["curves"][f"{arm}|{W}|{s}"], TARGET_ERR_C3)
                status.append(st)

    def slope(arm: str, s: int) -> float:
        return float(np.polyfit(Ws, np.log([m_st[(arm, W, s)] for W in Ws]), 1)[0])

    slopes = {arm: [slope(arm, s) for s in ctx.seeds] for arm in C3_ARMS}
    gap = [p - c for p, c in zip(slopes["parity exact"], slopes["cube"])]
    table = {arm: [float(np.median([m_st[(arm, W, s)] for s in ctx.seeds])) for W in Ws] for arm in C3_ARMS}
    ctx.metrics["c3"] = {"W": Ws, "grid": grid, "median_m_star": table, "slopes_per_seed": slopes}
    _plot_c3(ctx, Ws, table)
    return Evidence(values=gap, unit="slope of ln m* in W, exact MLE on parity minus the cube (per seed)",
                    details={"slope_gap_per_seed": gap, "censored": sum(st != "ok" for st in status),
                             "median_slope": {a: float(np.median(v)) for a, v in slopes.items()},
                             "median_m_star": table, "fisher_predicted_slopes": fisher_slopes(Ws),
                             "ours_over_exact_parity": [o / e for o, e in zip(table["parity ours"],
                                                                               table["parity exact"])]})


def _plot_c3(ctx: CheckContext, Ws: list[int], table: dict) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.6))
    for arm, style in zip(C3_ARMS, ("o-", "s-", "d--")):
        ax.plot(Ws, table[arm], style, label=arm)
    ax.set(yscale="log", xlabel="width W (z* = W·1, n = 16)", ylabel=f"m* (ℓ∞ err ≤ {TARGET_ERR_C3})")
    ax.legend(fontsize=8)
    ctx.save_figure(fig, "c3_width_distance.png", caption="Samples needed against the width (median over seeds "
                    "of the per-seed interpolated m*); cube: d_min = 1, parity: d_min = 2.")


# ------------------------------------------------------------------------------------ claims
B_LABEL = "the per-seed slope b"
C1_RULE = rules.provided(
    rules.on("log10_min_mass", rules.threshold("<=", LOG10_MASS_NEEDED, stat="value", min_n=1)),
    rules.decisive(
        rules.all_of(
            rules.on("b_per_seed", rules.better(margin=B_SUPPORT[0], min_n=3, test="t", label=B_LABEL)),  # b > -0.55
            # oriented: -b > 0.45, i.e. b < -0.45 (the criterion sentence reads "below -0.45")
            rules.on("b_per_seed", rules.better(margin=-B_SUPPORT[1], min_n=3, test="t", higher_is_better=False,
                                                label=B_LABEL)),
            rules.on("spread", rules.threshold("<", SPREAD_MAX, stat="value", min_n=1)),
            rules.on("n_exponent", rules.threshold("<", N_EXPONENT_REFUTE, stat="value", min_n=1))),
        rules.any_of(
            rules.on("b_per_seed", rules.better(margin=B_REFUTE, min_n=3, test="t", label=B_LABEL)),  # b above -0.4
            rules.on("n_exponent", rules.threshold(">=", N_EXPONENT_REFUTE, stat="value", min_n=1)))))

C2_RULE = rules.all_of(
    rules.ratio_at_least(CALL_RATIO_MIN, min_n=6, label="the per-cell ratio SGD calls / ours"),
    rules.on("growth_gap", rules.better(margin=GROWTH_MARGIN, min_n=3, test="t",
                                        label="the per-seed slope of ln calls in n, SGD minus ours")),
    rules.on("efficiency", rules.threshold("<=", EFFICIENCY_MAX, stat="max", min_n=1)))

C3_RULE = rules.provided(
    rules.on("censored", rules.threshold("<=", 0, stat="value", min_n=1)),
    rules.on("slope_gap_per_seed", rules.better(margin=SLOPE_GAP_MIN, min_n=3, test="t",
                                                label="the per-seed slope gap (exact MLE on parity - cube)")))

CLAIMS = (
    Claim(id="C1",
          statement="ℓ∞ recovery with O(log n / ε²) samples under (relative) fatness, matching the untruncated "
                    "minimax rate, even when μ_z(S) is exponentially small.",
          paper_value="O(log n / ε²) (no constants)",
          metric="band |x| ≤ n/4, z* ~ U[-1,1]^n: slope b of log(ℓ∞ err) in log m (fit a + b log m + c log log n "
                 "per seed); spread over n of err/sqrt(log n/m); exponent of err in n at fixed m",
          rule=C1_RULE, measure=measure_c1, scales=DECIDED,
          preconditions=(
              preconditions.signal_exists("truncation biases the naive fit", measure_c1_signal,
                                          delta=NAIVE_GAP_MIN, min_n=1),
              Precondition("every GD fit converged", measure_c1_converged,
                           rules.threshold("<=", 0, stat="max", min_n=1)))),
    Claim(id="C2",
          statement="The method is gradient descent and never samples at arbitrary parameters; prior FKT'20-style "
                    "estimators need model samples whose cost blows up as μ_z(S) shrinks.",
          paper_value="no numbers; Ω(2^n) for the prior work when μ_z(S) is exponentially small",
          metric="oracle calls to ℓ∞ error 0.5, rejection SGD (better of ball / ball-free) / TruncPL-GD per (seed, n), "
                 "band, m = 4000, n until μ(S) ≤ 1e-4; per-seed slope of ln calls in n, SGD minus ours; "
                 "TruncPL-GD error / exact truncated MLE error (n ≤ 16)",
          rule=C2_RULE, measure=measure_c2, scales=DECIDED, compares_trained=True, tuning="equal",
          preconditions=(
              Precondition("the n-grid reaches μ(S) ≤ 1e-4", measure_c2_mass,
                           rules.threshold("<=", LOG10_MASS_C2, stat="max", min_n=1)),
              preconditions.beats_reference("SGD peer beats its naive start (n ≤ 24, both forms)", measure_c2_peer,
                                            margin=0.0, min_n=2),
              Precondition("every TruncPL-GD fit converged", measure_c2_converged,
                           rules.threshold("<=", 0, stat="max", min_n=1)))),
    Claim(id="C3",
          statement="Illustration of the lower bound's direction (exponential in width × minimum distance of S): "
                    "the sample need of the exact truncated MLE grows faster in the width W on even parity "
                    "(d_min = 2) than on the full cube (d_min = 1). Our data cannot establish a lower bound.",
          paper_value="exponential in width × d_min (no constants)",
          metric="n = 16, z* = W·1: per-seed slope of ln m*(ℓ∞ err ≤ 0.2, interpolated) in W, exact MLE on "
                 "parity minus the cube (where ours = the exact MLE); ours on parity reported beside it",
          rule=C3_RULE, measure=measure_c3, scales=DECIDED, kind="sanity"),
)

PAPER = Paper(id="P03", slug="truncbool",
              method="Truncated pseudo-likelihood GD",
              title="TruncPL-GD for truncated Boolean product distributions (title not found)", arxiv=None,
              claims=CLAIMS,
              default_seeds={"smoke": 1, "quick": 3, "full": 10, "gpu": 10})
