"""Side-by-side update time and approximation ratio vs n: design A (ours), exact recompute (SciPy LSA
and POT emd), the exact incremental Hungarian and online greedy, on one balanced update stream per n.

    .venv/bin/python benchmarks/wmatch_bench.py [--ns 250 500 1000 2000] [--dim 2] [--updates 40]

Prints a table of mean seconds per update with ratios to ours, the matching-cost ratio to OPT, and the
largest n each method handles at <= 1 ms per update. Single-threaded BLAS is advised for fairness:
OMP_NUM_THREADS=1.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neurips26.wmatch import DynamicWassersteinMatcher, GreedyOnline, IncrementalHungarian, exact_matching


def _stream(rng, n, dim, updates):
    A, B = rng.uniform(size=(n, dim)), 0.05 + 0.9 * rng.uniform(size=(n, dim))
    plan = []
    for step in range(updates):
        side = "AB"[step % 2]
        x = rng.uniform(size=dim) if side == "A" else 0.05 + 0.9 * rng.uniform(size=dim)
        plan.append((side, int(rng.integers(n)), x))
    return A, B, plan


def _run_dynamic(matcher, A, B, plan, bulk):
    if bulk:
        ids = {"A": matcher.insert_many(A, "A"), "B": matcher.insert_many(B, "B")}
    else:
        ids = {"A": [], "B": []}
        for a, b in zip(A, B):
            ids["A"].append(matcher.insert(a, "A"))
            ids["B"].append(matcher.insert(b, "B"))
    t0 = time.perf_counter()
    for side, slot, x in plan:
        matcher.delete(ids[side][slot])
        ids[side][slot] = matcher.insert(x, side)
    return (time.perf_counter() - t0) / (2 * len(plan)), matcher.matching_cost()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--dim", type=int, default=2)
    parser.add_argument("--updates", type=int, default=40)
    parser.add_argument("--hungarian-max-n", type=int, default=500)
    args = parser.parse_args()
    rows = []
    for n in args.ns:
        rng = np.random.default_rng(n)
        A, B, plan = _stream(rng, n, args.dim, args.updates)
        ours_s, ours_cost = _run_dynamic(DynamicWassersteinMatcher(args.dim), A, B, plan, bulk=True)
        greedy_s, greedy_cost = _run_dynamic(GreedyOnline(args.dim), A, B, plan, bulk=False)
        row = {"n": n, "ours": ours_s, "greedy": greedy_s}
        # final point sets are the same for every method: replay the plan on arrays
        XA, XB = A.copy(), B.copy()
        for side, slot, x in plan:
            (XA if side == "A" else XB)[slot] = x
        for method in ("lsa", "emd"):
            t0 = time.perf_counter()
            opt, _ = exact_matching(XA, XB, method=method)
            row[f"recompute_{method}"] = time.perf_counter() - t0
        if n <= args.hungarian_max_n:
            row["hungarian"], _ = _run_dynamic(IncrementalHungarian(args.dim), A, B, plan, bulk=False)
        row["ratio_ours"], row["ratio_greedy"] = ours_cost / opt, greedy_cost / opt
        rows.append(row)
    methods = ["ours", "greedy", "hungarian", "recompute_lsa", "recompute_emd"]
    print(f"{'n':>6} " + " ".join(f"{m:>22}" for m in methods) + "   ratio(ours) ratio(greedy)")
    for row in rows:
        cells = []
        for m in methods:
            if m in row:
                cells.append(f"{row[m] * 1e3:9.3f} ms ({row[m] / row['ours']:7.1f}x)")
            else:
                cells.append(f"{'-':>22}")
        print(f"{row['n']:>6} " + " ".join(cells) + f"   {row['ratio_ours']:11.3f} {row['ratio_greedy']:13.3f}")
    for m in methods:
        ok = [row["n"] for row in rows if m in row and row[m] <= 1e-3]
        print(f"largest n at <= 1 ms/update, {m}: {max(ok) if ok else 'none'}")


if __name__ == "__main__":
    main()
