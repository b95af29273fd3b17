"""Fully dynamic approximate Wasserstein matching (P14).

*What.* Keep a low-cost matching between two point sets A and B while points are inserted and deleted,
so that W_p(A, B) (and the pairs realising it) is available after every update without an O(n^3)
re-solve. Two structures: :class:`DynamicWassersteinMatcher` for points in R^d under any ℓ_p norm
(a randomly shifted grid hierarchy whose cells solve small transport problems between their children,
exactly when small, greedily over a nearest-neighbour oracle when large), and
:class:`MetricDynamicMatcher` for a finite metric (ball-growing covers at geometric scales, pairs made
closest-first inside clusters, bottom-up).

*Why.* The paper proves an O(d ε^{-3/2}) approximation with n^ε-type amortised update in R^d and
2k(1+ε) with O(k n^{1+1/k} ε^{-1} log Δ) update in finite metrics. Its data structures are not public:
ours are reconstructions (see README), and we measure their ratio and update time instead of claiming
the constants. Baselines: exact static OPT (SciPy/POT), recompute-after-every-update, an exact
incremental Hungarian, online greedy; ANN backends: brute force, p-stable LSH, faiss.
"""

from .ann import BruteForceANN, FaissANN, PStableLSH, make_ann
from .baselines import (
    GreedyOnline,
    IncrementalHungarian,
    MetricIncrementalHungarian,
    RecomputeBaseline,
    exact_matching,
    exact_transport,
)
from .drift import DriftResult, wasserstein_drift
from .grid import DynamicWassersteinMatcher
from .metric import MetricDynamicMatcher, thorup_zwick_spanner

__all__ = [
    "BruteForceANN", "DriftResult", "DynamicWassersteinMatcher", "FaissANN", "GreedyOnline",
    "IncrementalHungarian", "MetricDynamicMatcher", "MetricIncrementalHungarian", "PStableLSH",
    "RecomputeBaseline", "exact_matching", "exact_transport", "make_ann", "thorup_zwick_spanner", "wasserstein_drift",
]
