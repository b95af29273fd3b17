"""GroupShift vs warm start vs cold retraining vs skglm's GroupLasso (cold and warm), side by side.

For each problem/transition/λ (p = 2, squared loss, X standardised, y centred, no intercept):
  * our three refits (same BCD + certificate; stop at duality gap <= tol · P(0)), wall time, epochs, flops;
  * skglm ``GroupLasso`` cold and warm (``warm_start=True`` with ``coef_`` preset to the old optimum), wall time
    with its numba JIT compiled beforehand (one warm-up fit, not timed), at ``tol=1e-10`` on its own KKT score;
  * agreement: |P_skglm - P_ours| / P_ours and our duality gap evaluated at skglm's solution;
  * coldN: an extra baseline, retraining with BCD to 1e-4·P(0) then the same active-set Newton step groupshift uses.

On the ``neurips26.bench`` harness (1 thread, process clock, interleaved pairs, t-interval on the log ratio;
writes results/groupshift/bench.json): per case GroupShift against skglm warm and cold (the real peer) and our
cold retraining, plus the flop counts (deterministic) of cold and cold+Newton over GroupShift. Our solver is numpy
(a Python loop over groups), skglm is numba-compiled, so time ratios against skglm measure implementation speed as
much as algorithm; the flop counts compare the algorithms. The printed table keeps the agreement columns.

    .venv/bin/python benchmarks/groupshift_bench.py [--quick] [--repeats 7] [--no-write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from functools import partial

import numpy as np

from neurips26.bench import Bench
from neurips26.groupshift import cases, duality_gap, group_lambda_max, groupshift, skglm_group_lasso, solve_group_l1
from neurips26.groupshift.baselines import cold_newton_refit, cold_refit, warm_refit


def _fresh_cache(fn, cache):
    """``fn`` called with a fresh copy of the Lipschitz cache each time (so no call reuses another's work)."""
    return lambda: fn(lipschitz_cache=dict(cache))


def _objective(X, y, w, part, lam):
    return float(np.sum((y - X @ w) ** 2) / (2 * len(y))
                 + lam * sum(np.sqrt(g.size) * np.linalg.norm(w[g]) for g in part.groups))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer problems (breast_cancer + 3 synthetic transitions)")
    ap.add_argument("--tol", type=float, default=1e-9)
    args, rest = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    bench = Bench("groupshift", description="GroupShift refit after a re-partition vs skglm GroupLasso (warm, cold) "
                  f"and our cold retraining; p = 2, squared loss, tol {args.tol:g} x P(0)", argv=rest)

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

    agreement = []
    for pname, X, y, transitions in problems:
        for tname, _kind, old, new in transitions:
            for lam_rel in lams:
                case = f"{pname}:{tname} @ {lam_rel:g} lam_max"
                lam = lam_rel * group_lambda_max(X, y, new)
                cache: dict = {}
                first = solve_group_l1(X, y, old, lam, tol=args.tol, lipschitz_cache=cache)
                ours = _fresh_cache(partial(groupshift, X, y, first.coef, old, new, lam, tol=args.tol,
                                            old_dual_scale=first.dual_scale,
                                            old_group_scores=first.extra["scores"]), cache)
                w_gs, info = ours()
                bench.compare(f"{case}: vs skglm warm", ours=ours, peer=partial(
                    skglm_group_lasso, X, y, new, lam, tol=1e-10, w0=first.coef), peer_name="skglm GroupLasso, "
                    "warm start", peer_kind="real", note="numba vs numpy: implementation speed as much as algorithm")
                bench.compare(f"{case}: vs skglm cold", ours=ours, peer=partial(
                    skglm_group_lasso, X, y, new, lam, tol=1e-10), peer_name="skglm GroupLasso, cold",
                    peer_kind="real")
                bench.compare(f"{case}: vs our cold refit", ours=ours,
                              peer=partial(cold_refit, X, y, new, lam, tol=args.tol), peer_name="cold BCD refit",
                              peer_kind="ours")
                cold = cold_refit(X, y, new, lam, tol=args.tol)
                coldn = cold_newton_refit(X, y, new, lam, tol=args.tol)
                warm = warm_refit(X, y, first.coef, new, lam, tol=args.tol, lipschitz_cache=dict(cache))
                for peer_name, res in (("cold BCD refit", cold), ("cold BCD + active-set Newton", coldn),
                                       ("warm-started BCD", warm)):
                    bench.count(f"{case}: flops to the certificate", ours=info["n_flops"], peer=res.n_flops,
                                peer_name=peer_name, peer_kind="ours", unit="flops (counted)")
                skc = skglm_group_lasso(X, y, new, lam, tol=1e-10)
                p_ours, p_sk = info["primal"], _objective(X, y, skc.coef_, new, lam)
                agreement.append((case, abs(p_sk - p_ours) / p_ours,
                                  duality_gap(X, y, skc.coef_, new, lam) / info["tol_abs"]))
    print("\nagreement with skglm (|P_sk - P_ours| / P_ours; our duality gap at skglm's cold solution / our tol):")
    for case, dp, gap in agreement:
        print(f"  {case:50s} {dp:9.1e} {gap:10.2f}")
    speed = [r["speedup"] for r in bench.rows if r["peer"] == "skglm GroupLasso, warm start"]
    print(f"median speed-up vs skglm warm: {statistics.median(speed):.2f}x over {len(speed)} cases")
    bench.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
