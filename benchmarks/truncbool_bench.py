"""TruncPL-GD against its peers: oracle calls and CPU time to a target ℓ∞ error, per n.

Peers: the FKT'20 / delphi.ai truncated-MLE rejection SGD (our re-implementation, ``TruncatedMLESGD``) in both
forms — the ball ``r·log(1/√α)`` around the naive logits with ``α`` the mass rounded down to a power of ten
(a user's order-of-magnitude lower bound), restart-until-interior; and ball-free (box only) — and the exact
truncated MLE (enumeration + Newton, n ≤ 16). Also GD against L-BFGS for the same loss (``timeit_pair``,
interleaved, 1 thread). Data: band ``|x| ≤ ⌊n/4⌋``, ``z* ∼ U[-1, 1]^n``, exact samples, m = 4000. An SGD run
that spends its oracle budget (``--cap``) without reaching the target is a failure: its calls are a lower bound.

    .venv/bin/python benchmarks/truncbool_bench.py [--ns 8 16 24 32 48 64] [--m 4000] [--seeds 3]
        [--lr-ball 10] [--lr-free 3]
        [--target 0.5] [--steps 2000] [--cap 20000000] [--repeats 7] [--no-write]

Runs on the ``neurips26.bench`` harness and writes results/truncbool/bench.json: per n, the median oracle calls to
the target of ours against each SGD form (deterministic counts; a failed peer run counts what it spent, so its
ratio is a lower bound, said in the row's note) with every (n, seed) run kept in the row, and the GD vs L-BFGS-B
CPU time (interleaved pairs, 1 thread, process clock). Also prints the per-n table.
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
from tqdm import tqdm

from neurips26.bench import Bench
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


def _first(errors, costs, target, spent):
    """(cost at the first error <= target, reached?); a run that never gets there counts what it spent."""
    for e, c in zip(errors, costs):
        if e <= target:
            return float(c), True
    return float(spent), False


def bench_gd_vs_lbfgs(bench: Bench | None, S: WeightBand, X: np.ndarray, n: int, seed: int) -> float:
    """CPU time of L-BFGS-B over ours (GD) on the same loss: a harness row when ``bench`` is given."""
    def ours():
        return TruncatedBooleanProduct(S).fit(X)

    def peer():
        return TruncatedBooleanProduct(S, solver="lbfgs").fit(X)

    if bench is None:
        return measure.timeit_pair(ours, peer, repeats=5).ratio
    return bench.compare(f"n={n} (seed {seed}): fit, GD (ours) vs L-BFGS-B on the same loss", ours=ours,
                         peer=peer, peer_name="SciPy L-BFGS-B", peer_kind="real")["speedup"]


def one(n: int, m: int, seed: int, args) -> dict:
    rng = np.random.default_rng([seed, n])
    z = rng.uniform(-1, 1, n)
    S = WeightBand(n // 4)
    X = sample_truncated_product(z, S, m, rng=rng)
    lm = log_mass(z, S)
    row = {"n": n, "seed": seed, "mass": math.exp(lm)}
    errs, calls, times = [], [], []
    for mm in [m >> k for k in range(6, -1, -1)]:
        est = TruncatedBooleanProduct(S)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times.append(measure.time_once(lambda est=est, mm=mm: est.fit(X[:mm]), "process"))
        errs.append(_err(est.natural_params_, z))
        calls.append(est.n_oracle_calls_)
    row["pl_calls"], row["pl_reached"] = _first(errs, calls, args.target, calls[-1])
    row["pl_time"] = _first(errs, np.cumsum(times), args.target, float(np.sum(times)))[0]
    row["pl_err"] = errs[-1]
    alpha = 10.0 ** math.floor(lm / math.log(10) - 1e-12)
    for key, a, lr in (("ball", alpha, args.lr_ball), ("free", None, args.lr_free)):
        sgd = TruncatedMLESGD(S, lr=lr, n_steps=args.steps, alpha=a, max_oracle_calls=args.cap,
                              on_limit="stop", random_state=seed)
        total = measure.time_once(lambda sgd=sgd: sgd.fit(X), "process")
        tr = sgd.trajectory_
        tr_err = [_err(t["z_avg"], z) for t in tr]
        row[f"{key}_calls"], row[f"{key}_reached"] = _first(tr_err, [t["oracle_calls"] for t in tr], args.target,
                                                            sgd.n_oracle_calls_)
        # time to target, pro rata of the steps used
        row[f"{key}_time"] = _first(tr_err, [total * (i + 1) / len(tr) for i in range(len(tr))], args.target,
                                    total)[0]
        row[f"{key}_err"] = _err(sgd.natural_params_, z)
        row[f"{key}_budget_hit"] = sgd.limit_reached_
    row["lbfgs_over_gd_time"] = bench_gd_vs_lbfgs(None, S, X, n, seed)
    if n <= 16:
        ex = ExactTruncatedMLE(S)
        row["exact_time"] = measure.time_once(lambda: ex.fit(X), "process")
        row["exact_err"] = _err(ex.natural_params_, z)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[8, 16, 24, 32, 48, 64])
    ap.add_argument("--m", type=int, default=4000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--lr-ball", type=float, default=10.0, help="η_0 of the ball form (C2's tuning chose it)")
    ap.add_argument("--lr-free", type=float, default=3.0, help="η_0 of the ball-free form (C2's tuning chose it)")
    ap.add_argument("--target", type=float, default=0.5)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--cap", type=int, default=2 * 10**7)
    args, rest = ap.parse_known_args()
    bench = Bench("truncbool", description=f"TruncPL-GD vs truncated-MLE rejection SGD (FKT'20 / delphi.ai, our "
                  f"re-implementation, ball and ball-free): oracle calls to l-inf error {args.target}, "
                  f"band |x| <= n/4, m = {args.m}, {args.seeds} seeds", argv=rest)
    rows = [one(n, args.m, s, args) for n, s in tqdm([(n, s) for n in args.ns for s in range(args.seeds)],
                                                     desc="(n, seed)")]
    print(f"\nband |x| <= n/4, m = {args.m}, target ℓ∞ error {args.target}, medians over {args.seeds} seeds; "
          f"SGD failures (budget {args.cap:.0e} or {args.steps} steps without the target) count what they spent")
    print(f"{'n':>3} {'mu(S)':>8} {'PL calls':>9} {'ball calls':>11} {'free calls':>11} {'ball x':>7} {'free x':>7} "
          f"{'fails b/f':>9} {'PL s':>7} {'free s':>7} {'PL err':>7} {'exact err':>9} {'LBFGS/GD t':>10}")
    for n in args.ns:
        cell = [r for r in rows if r["n"] == n]

        def med(key, cell=cell):
            vals = [r[key] for r in cell if key in r]
            return float(np.median(vals)) if vals else math.nan

        fails = f"{sum(not r['ball_reached'] for r in cell)}/{sum(not r['free_reached'] for r in cell)}"
        print(f"{n:>3} {med('mass'):>8.1e} {med('pl_calls'):>9.0f} {med('ball_calls'):>11.0f} "
              f"{med('free_calls'):>11.0f} {med('ball_calls') / med('pl_calls'):>7.1f} "
              f"{med('free_calls') / med('pl_calls'):>7.1f} {fails:>9} {med('pl_time'):>7.3f} {med('free_time'):>7.3f} "
              f"{med('pl_err'):>7.3f} {med('exact_err'):>9.3f} {med('lbfgs_over_gd_time'):>10.2f}")
        for key, peer_name in (("free", "rejection SGD, ball-free (FKT'20 form)"),
                               ("ball", "rejection SGD, ball r log(1/sqrt(alpha)) (FKT'20 / delphi.ai)")):
            failed = sum(not r[f"{key}_reached"] for r in cell)
            row = bench.count(f"n={n} (mu {med('mass'):.1e}): median oracle calls to the target", ours=med("pl_calls"),
                              peer=med(f"{key}_calls"), peer_name=peer_name, peer_kind="ours", unit="oracle calls",
                              note=(f"{failed}/{len(cell)} peer runs never reached the target (they count what they "
                                    "spent: the ratio is a lower bound)") if failed else "")
            row["runs"] = [{k: v for k, v in r.items() if k == "n" or k == "seed" or k.startswith(("pl_", key))}
                           for r in cell]
    largest = max(args.ns)
    rng = np.random.default_rng([0, largest])
    z = rng.uniform(-1, 1, largest)
    S = WeightBand(largest // 4)
    bench_gd_vs_lbfgs(bench, S, sample_truncated_product(z, S, args.m, rng=rng), largest, 0)
    bench.write()


if __name__ == "__main__":
    main()
