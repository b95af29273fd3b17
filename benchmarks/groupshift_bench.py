"""GroupShift vs warm start vs cold retraining vs skglm's GroupLasso (cold and warm), side by side.

For each problem/transition/λ (p = 2, squared loss, X standardised, y centred, no intercept):
  * our three refits (same BCD + certificate; stop at duality gap <= tol · P(0)), wall time, epochs, flops;
  * skglm ``GroupLasso`` cold and warm (``warm_start=True`` with ``coef_`` preset to the old optimum), wall time
    with its numba JIT compiled beforehand (one warm-up fit, not timed), at ``tol=1e-10`` on its own KKT score;
  * agreement: |P_skglm - P_ours| / P_ours and our duality gap evaluated at skglm's solution;
  * coldN: an extra baseline, retraining with BCD to 1e-4·P(0) then the same active-set Newton step groupshift uses.

Wall time: median of ``--repeats`` runs, single thread recommended (``OMP_NUM_THREADS=1``). On a shared 2-core
machine absolute times are noisy: read the ratios within one run. Our solver is numpy (Python loop over groups),
skglm is numba-compiled, so wall-time ratios against skglm measure implementation speed as much as algorithm.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/groupshift_bench.py [--quick] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import numpy as np

from neurips26.groupshift import cases, duality_gap, group_lambda_max, groupshift, skglm_group_lasso, solve_group_l1
from neurips26.groupshift.baselines import cold_newton_refit, cold_refit, warm_refit


def _timed(fn, repeats, cache=None):
    """Median wall time of ``fn()`` (``fn(lipschitz_cache=copy)`` with a fresh copy of ``cache`` per run)."""
    times, out = [], None
    for _ in range(repeats):
        kwargs = {} if cache is None else {"lipschitz_cache": dict(cache)}
        t = time.perf_counter()
        out = fn(**kwargs)
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _objective(X, y, w, part, lam):
    return float(np.sum((y - X @ w) ** 2) / (2 * len(y))
                 + lam * sum(np.sqrt(g.size) * np.linalg.norm(w[g]) for g in part.groups))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer problems (breast_cancer + 3 synthetic transitions)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tol", type=float, default=1e-9)
    args = ap.parse_args(argv)

    problems = [("breast_cancer", *cases.breast_cancer())]
    if not args.quick:
        problems += [("digits", *cases.digits()), ("diabetes_spline", *cases.diabetes_spline())]
    which = ("split-active", "merge-2-inactive", "cyclic-shift-3") if args.quick else None
    problems.append(("synthetic", *cases.synthetic(0, which=which)))
    lams = (0.3, 0.1)

    # numba JIT warm-up for skglm (excluded from timings)
    X0, y0, tr0 = problems[0][1], problems[0][2], problems[0][3]
    skglm_group_lasso(X0, y0, tr0[0][3], 0.1 * group_lambda_max(X0, y0, tr0[0][3]), tol=1e-6)
    skglm_group_lasso(X0, y0, tr0[0][3], 0.1 * group_lambda_max(X0, y0, tr0[0][3]), tol=1e-6,
                      w0=np.zeros(X0.shape[1]))

    header = (f"{'problem':16s} {'transition':22s} {'λ/λmax':>6s} | {'gs ms':>8s} {'warm ms':>8s} {'cold ms':>8s} "
              f"{'skW ms':>8s} {'skC ms':>8s} | {'cold/gs':>7s} {'warm/gs':>7s} {'skC/gs':>7s} {'skW/gs':>7s} | "
              f"{'coldN/gs':>8s} {'flops c/gs':>10s} {'flops cN/gs':>11s} {'ep gs/w/c':>12s} | "
              f"{'|ΔP|/P sk':>9s} {'gap@sk/tol':>10s}")
    print(header)
    print("-" * len(header))
    ratios: dict[str, list[float]] = {k: [] for k in ("cold", "warm", "skC", "skW", "coldN", "flops", "flopsN")}
    for pname, X, y, transitions in problems:
        for tname, _kind, old, new in transitions:
            for lam_rel in lams:
                lam = lam_rel * group_lambda_max(X, y, new)
                cache: dict = {}
                first = solve_group_l1(X, y, old, lam, tol=args.tol, lipschitz_cache=cache)
                t_gs, (w_gs, info) = _timed(partial(
                    groupshift, X, y, first.coef, old, new, lam, tol=args.tol, old_dual_scale=first.dual_scale,
                    old_group_scores=first.extra["scores"]), args.repeats, cache)
                t_w, warm = _timed(partial(warm_refit, X, y, first.coef, new, lam, tol=args.tol), args.repeats, cache)
                t_c, cold = _timed(partial(cold_refit, X, y, new, lam, tol=args.tol), args.repeats)
                t_cn, coldn = _timed(partial(cold_newton_refit, X, y, new, lam, tol=args.tol), args.repeats)
                t_skc, skc = _timed(partial(skglm_group_lasso, X, y, new, lam, tol=1e-10), args.repeats)
                t_skw, skw = _timed(partial(skglm_group_lasso, X, y, new, lam, tol=1e-10, w0=first.coef),
                                    args.repeats)
                p_ours = info["primal"]
                p_sk = _objective(X, y, skc.coef_, new, lam)
                gap_sk = duality_gap(X, y, skc.coef_, new, lam) / info["tol_abs"]
                r = {"cold": t_c / t_gs, "warm": t_w / t_gs, "skC": t_skc / t_gs, "skW": t_skw / t_gs,
                     "coldN": t_cn / t_gs, "flops": cold.n_flops / info["n_flops"],
                     "flopsN": coldn.n_flops / info["n_flops"]}
                for k, v in r.items():
                    ratios[k].append(v)
                print(f"{pname:16s} {tname:22s} {lam_rel:6.2f} | {1e3 * t_gs:8.2f} {1e3 * t_w:8.2f} {1e3 * t_c:8.2f} "
                      f"{1e3 * t_skw:8.2f} {1e3 * t_skc:8.2f} | {r['cold']:7.2f} {r['warm']:7.2f} {r['skC']:7.2f} "
                      f"{r['skW']:7.2f} | {r['coldN']:8.2f} {r['flops']:10.2f} {r['flopsN']:11.2f} "
                      f"{info['n_epochs']:>3d}/{warm.n_epochs:>3d}/{cold.n_epochs:>4d} | "
                      f"{abs(p_sk - p_ours) / p_ours:9.1e} {gap_sk:10.2f}")
    print("-" * len(header))
    print("median ratios (>1: groupshift faster): " + ", ".join(
        f"{k}/gs {statistics.median(v):.2f}" for k, v in ratios.items()))
    print("gap@sk/tol: our duality gap at skglm's cold solution divided by our tolerance (<= 1: same optimum "
          "to our certificate); skglm's own tol bounds a KKT score, not a gap.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
