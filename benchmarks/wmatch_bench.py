"""Side by side on the ``neurips26.bench`` harness: the update time of design A (``DynamicWassersteinMatcher``)
against recomputing the exact matching after the update (SciPy ``linear_sum_assignment`` and POT ``emd``, the
real peers), the exact incremental Hungarian (ours, n <= 500) and online greedy (ours), on one balanced
update stream per n; the matching-cost ratio to OPT beside each; the slope of update time in n.

One "update" deletes one point and inserts a fresh one on the same side (the stream alternates A and B).
A timed call of a dynamic structure applies a block of ``--block`` updates (amortised costs such as a
rebuild land inside the block); a timed call of a recompute solves once. So the speed-up column of the
recompute rows is (one recompute) / (``block`` updates): multiply by ``block`` for the per-update speed-up,
which the row's note gives. 1 thread, process clock, interleaved pairs. Writes results/wmatch/bench.json.

    .venv/bin/python benchmarks/wmatch_bench.py [--ns 250 500 1000 2000] [--dim 2] [--block 20] [--repeats 7]
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np

from neurips26.bench import Bench
from neurips26.wmatch import DynamicWassersteinMatcher, GreedyOnline, IncrementalHungarian, exact_matching


class Stream:
    """A matcher fed a cyclic balanced update stream: ``step(k)`` applies the next ``k`` updates; the arrays
    ``XA``/``XB`` hold the live points, so a recompute solves exactly the matcher's current instance."""

    def __init__(self, matcher, n: int, dim: int, seed: int, bulk: bool) -> None:
        rng = np.random.default_rng(seed)
        self.XA, self.XB = rng.uniform(size=(n, dim)), 0.05 + 0.9 * rng.uniform(size=(n, dim))
        self.matcher = matcher
        if bulk:
            self.ids = {"A": list(matcher.insert_many(self.XA, "A")), "B": list(matcher.insert_many(self.XB, "B"))}
        else:
            self.ids = {"A": [], "B": []}
            for a, b in zip(self.XA, self.XB):
                self.ids["A"].append(matcher.insert(a, "A"))
                self.ids["B"].append(matcher.insert(b, "B"))
        plan = []
        for step in range(64):  # a fixed cycle of fresh points, the same for every matcher at this n
            side = "AB"[step % 2]
            x = rng.uniform(size=dim) if side == "A" else 0.05 + 0.9 * rng.uniform(size=dim)
            plan.append((side, int(rng.integers(n)), x))
        self._plan = itertools.cycle(plan)

    def step(self, k: int) -> None:
        for _ in range(k):
            side, slot, x = next(self._plan)
            self.matcher.delete(self.ids[side][slot])
            self.ids[side][slot] = self.matcher.insert(x, side)
            (self.XA if side == "A" else self.XB)[slot] = x

    def ratio_to_opt(self) -> float:
        opt, _ = exact_matching(self.XA, self.XB, method="lsa")
        return self.matcher.matching_cost() / opt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--dim", type=int, default=2)
    parser.add_argument("--block", type=int, default=20, help="updates per timed call of a dynamic structure")
    parser.add_argument("--hungarian-max-n", type=int, default=500)
    args, rest = parser.parse_known_args()
    bench = Bench("wmatch", description=f"update time of design A vs recompute (SciPy LSA, POT emd), incremental "
                  f"Hungarian and greedy; uniform points in [0,1]^{args.dim}, balanced delete+insert stream",
                  argv=rest)
    block = args.block
    per_update: dict[int, float] = {}  # median seconds per update of design A (from the LSA row)
    recompute: dict[int, float] = {}  # median seconds of one LSA recompute
    for n in args.ns:
        ours = Stream(DynamicWassersteinMatcher(args.dim), n, args.dim, seed=n, bulk=True)
        ours.step(block)  # settle
        ratio = ours.ratio_to_opt()
        for method, peer_name in (("lsa", "SciPy linear_sum_assignment (recompute)"),
                                  ("emd", "POT ot.emd (recompute)")):
            row = bench.compare(f"n={n}: {block} updates (ours) vs 1 recompute ({method})",
                                ours=lambda s=ours: s.step(block),
                                peer=lambda s=ours, m=method: exact_matching(s.XA, s.XB, method=m),
                                peer_name=peer_name, peer_kind="real",
                                note=f"per-update speed-up = {block} x the column")
            row.update(per_update_speedup=row["speedup"] * block, ours_ratio_to_opt=ratio)
            if method == "lsa":
                per_update[n], recompute[n] = row["ours_s"] / block, row["peer_s"]
        greedy = Stream(GreedyOnline(args.dim), n, args.dim, seed=n, bulk=False)
        bench.compare(f"n={n}: {block} updates, ours vs online greedy", ours=lambda s=ours: s.step(block),
                            peer=lambda s=greedy: s.step(block), peer_name="online greedy", peer_kind="ours")
        bench.count(f"n={n}: matching cost / OPT after the stream", ours=ours.ratio_to_opt(),
                    peer=greedy.ratio_to_opt(), peer_name="online greedy", peer_kind="ours", unit="cost / OPT")
        if n <= args.hungarian_max_n:
            hung = Stream(IncrementalHungarian(args.dim), n, args.dim, seed=n, bulk=False)
            bench.compare(f"n={n}: {block} updates, ours vs exact incremental Hungarian",
                          ours=lambda s=ours: s.step(block), peer=lambda s=hung: s.step(block),
                          peer_name="incremental Hungarian (exact)", peer_kind="ours")
    bench.scaling("design A, CPU seconds per update in n", sizes=[float(n) for n in args.ns],
                  time_of=lambda n: per_update[int(n)], claimed="amortised n^eps-type update (slope well below 1)")
    bench.scaling("LSA recompute, CPU seconds in n", sizes=[float(n) for n in args.ns],
                  time_of=lambda n: recompute[int(n)], claimed="(peer) O(n^3) worst case")
    bench.write()


if __name__ == "__main__":
    sys.exit(main())
