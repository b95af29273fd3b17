"""Dynamic Wasserstein matching in 20 lines: keep W_1 between two clouds while points come and go."""

import numpy as np

from neurips26.wmatch import DynamicWassersteinMatcher, MetricDynamicMatcher, exact_matching, exact_transport

rng = np.random.default_rng(0)
m = DynamicWassersteinMatcher(dim=2, eps=0.5, seed=0)
a_ids = m.insert_many(rng.uniform(size=(500, 2)), "A")
m.insert_many(rng.uniform(size=(500, 2)), "B")
for pid in a_ids[:50]:  # 50 deletions and 50 insertions, each O(L) small solves
    m.delete(pid)
    m.insert(rng.uniform(size=2), "A")
_, A, _, B = m.points()
opt, _ = exact_matching(A, B)
print(f"design A: W_1 (sum) {m.matching_cost():.2f}, OPT {opt:.2f}, ratio {m.matching_cost() / opt:.3f}")

# a finite metric (points on a line): a (2k-1)-approximate matching kept exactly on a spanner
x = np.arange(60.0)
mm = MetricDynamicMatcher(np.abs(np.subtract.outer(x, x)), k=2)
mm.insert_many(list(range(0, 40, 2)), "A")
mm.insert_many(list(range(1, 40, 2)), "B")
mm.delete(0)
mm.insert(50, "A")
print(f"design B: cost {mm.matching_cost():.1f} (bound 3 x OPT)")

# the static weighted case, POT's convention: masses a, b on points X, Y
cost, plan = exact_transport(np.array([0.5, 0.5]), np.array([0.25, 0.75]), A[:2], B[:2])
print(f"W_1 of two weighted measures: {cost:.4f}")
