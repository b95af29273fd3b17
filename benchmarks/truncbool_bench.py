"""TruncPL-GD against its peers: oracle calls and CPU time to a target ℓ∞ error, per n.

Peers: the delphi.ai-style truncated-MLE rejection SGD (our re-implementation, ``TruncatedMLESGD``; the
peer the paper improves on) and the exact truncated MLE (enumeration + Newton, n ≤ 16). Also GD against
L-BFGS for the same loss. Data: band ``|x| ≤ ⌊n/4⌋``, ``z* ∼ U[-1, 1]^n``, exact samples, m = 4000.

    .venv/bin/python benchmarks/truncbool_bench.py [--ns 8 12 16 20 24] [--m 4000] [--seeds 3] [--target 0.5]

Prints one row per n with medians over seeds and the ratios peer / ours.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from tqdm import tqdm

from neurips26.claims import measure
from neurips26.truncbool import (
    ExactTruncatedMLE,
    TruncatedBooleanProduct,
    TruncatedMLESGD,
    WeightBand,
    log_mass,
    sample_truncated_product,
)


def _err(a: np.ndarray, z: np.ndarray) -> float:
    return float(np.max(np.abs(a - z)))


def _first_reaching(errors, costs, target):
    for e, c in zip(errors, costs):
        if e <= target:
            return c
    return math.nan


def one(n: int, m: int, seed: int, target: float, steps: int) -> dict:
    rng = np.random.default_rng([seed, n])
    z = rng.uniform(-1, 1, n)
    S = WeightBand(n // 4)
    X = sample_truncated_product(z, S, m, rng=rng)
    sizes = [m >> k for k in range(6, -1, -1)]
    errs, calls, times = [], [], []
    for mm in sizes:
        est = TruncatedBooleanProduct(S)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times.append(measure.time_once(lambda est=est, mm=mm: est.fit(X[:mm]), "process"))
        errs.append(_err(est.natural_params_, z))
        calls.append(est.n_oracle_calls_)
    row = {"n": n, "mass": math.exp(log_mass(z, S)), "pl_calls": _first_reaching(errs, calls, target),
           "pl_time": _first_reaching(errs, np.cumsum(times), target), "pl_err": errs[-1]}
    t0 = time.process_time()
    sgd = TruncatedMLESGD(S, lr=3.0, n_steps=steps, alpha=row["mass"], random_state=seed).fit(X)
    row["sgd_time_total"] = time.process_time() - t0
    tr = sgd.trajectory_
    tr_err = [_err(t["z_avg"], z) for t in tr]
    row["sgd_calls"] = _first_reaching(tr_err, [t["oracle_calls"] for t in tr], target)
    # time to target, pro rata of the steps used
    row["sgd_time"] = _first_reaching(tr_err, [row["sgd_time_total"] * t["step"] / steps for t in tr], target)
    row["sgd_err"] = _err(sgd.natural_params_, z)
    gd = measure.timeit(lambda: TruncatedBooleanProduct(S, block_order=1).fit(X), repeats=3, warmup=0)
    lb = measure.timeit(lambda: TruncatedBooleanProduct(S, solver="lbfgs").fit(X), repeats=3, warmup=0)
    row["gd_over_lbfgs_time"] = gd.median / lb.median
    if n <= 16:
        ex = ExactTruncatedMLE(S)
        row["exact_time"] = measure.time_once(lambda: ex.fit(X), "process")
        row["exact_err"] = _err(ex.natural_params_, z)
        row["exact_calls"] = ex.n_oracle_calls_
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[8, 12, 16, 20, 24])
    ap.add_argument("--m", type=int, default=4000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--target", type=float, default=0.5)
    ap.add_argument("--steps", type=int, default=4000)
    args = ap.parse_args()
    rows = [one(n, args.m, s, args.target, args.steps)
            for n, s in tqdm([(n, s) for n in args.ns for s in range(args.seeds)], desc="(n, seed)")]
    print(f"\nband |x| <= n/4, m = {args.m}, target ℓ∞ error {args.target}, medians over {args.seeds} seeds "
          "(NaN: target not reached within the SGD run)")
    head = (f"{'n':>3} {'mu(S)':>8} {'PL calls':>9} {'SGD calls':>10} {'calls x':>8} {'PL s':>7} {'SGD s':>7} "
            f"{'time x':>7} {'PL err':>7} {'exact err':>9} {'PL/exact':>8} {'GD/LBFGS t':>10}")
    print(head)
    for n in args.ns:
        cell = [r for r in rows if r["n"] == n]

        def med(key, cell=cell):
            vals = [r[key] for r in cell if key in r]
            return float(np.nanmedian(vals)) if vals and not np.all(np.isnan(vals)) else math.nan

        print(f"{n:>3} {med('mass'):>8.1e} {med('pl_calls'):>9.0f} {med('sgd_calls'):>10.0f} "
              f"{med('sgd_calls') / med('pl_calls'):>8.1f} {med('pl_time'):>7.3f} {med('sgd_time'):>7.3f} "
              f"{med('sgd_time') / med('pl_time'):>7.1f} {med('pl_err'):>7.3f} {med('exact_err'):>9.3f} "
              f"{med('pl_err') / med('exact_err'):>8.2f} {med('gd_over_lbfgs_time'):>10.2f}")


if __name__ == "__main__":
    main()
