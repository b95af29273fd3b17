r"""Reference TSP solvers that label training data and define gaps.

``solve_tsp_reference(X, backend=...)`` returns one tour per instance, starting at node 0:

- ``"exact"``: Held–Karp dynamic programming, optimal, $O(2^n n^2)$, here for $n \le 12$, batched over
  instances. With $S \subseteq \{1..n-1\}$ and $j \in S$,
  $C(S, j) = \min_{k \in S \setminus \{j\}} C(S \setminus \{j\}, k) + d_{kj}$, $C(\{j\}, j) = d_{0j}$,
  and the optimum is $\min_j C(\{1..n-1\}, j) + d_{j0}$.
- ``"elkai"``: LKH-3 (extra ``lkh``; LKH's licence is non-commercial). LKH needs integers, so float
  distances are scaled to about $10^7$ before rounding (rounding unit-square distances directly would
  make every edge 0 or 1 and the tour arbitrary).
- ``"fast_tsp"``: 2-opt/Or-opt local search (extra ``routing``; exact for $n \le 20$); entries must fit
  uint16, so float distances are scaled to about 60,000.
- ``"pyvrp"``: PyVRP's iterated local search on a one-vehicle, uncapacitated routing model (extra
  ``routing``), stopped after ``max_iterations`` (deterministic for a seed).
``"auto"`` picks elkai, then fast_tsp, then exact (n <= 12), then pyvrp, whichever is installed.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from ..constraints import ArrayLike, Choice, Int, Real, validate
from .tsp import ROUNDINGS, as_instances, distance_matrix

BACKENDS = ("auto", "exact", "elkai", "fast_tsp", "pyvrp")
EXACT_MAX_NODES = 12
_EXTRA = {"elkai": ("elkai", "lkh"), "fast_tsp": ("fast_tsp", "routing"), "pyvrp": ("pyvrp", "routing")}

__all__ = ["BACKENDS", "EXACT_MAX_NODES", "backend_available", "held_karp", "resolve_tsp_backend",
           "solve_tsp_reference"]


@validate(backend=Choice(*BACKENDS[1:]))
def backend_available(backend: str) -> bool:
    """Whether a solver backend can run here (``"exact"`` always can)."""
    if backend == "exact":
        return True
    return importlib.util.find_spec(_EXTRA[backend][0]) is not None


@validate(backend=Choice(*BACKENDS), n_nodes=Int(low=3))
def resolve_tsp_backend(backend: str, n_nodes: int) -> str:
    """The concrete backend ``solve_tsp_reference`` uses for ``backend`` and ``n_nodes`` cities."""
    if backend == "auto":
        for name in ("elkai", "fast_tsp"):
            if backend_available(name):
                return name
        if n_nodes <= EXACT_MAX_NODES:
            return "exact"
        if backend_available("pyvrp"):
            return "pyvrp"
        raise ImportError(f"no TSP solver for n = {n_nodes} > {EXACT_MAX_NODES}: install one with "
                          "`pip install 'neurips26[lkh]'` (elkai) or `pip install 'neurips26[routing]'`")
    if backend == "exact":
        if n_nodes > EXACT_MAX_NODES:
            raise ValueError(f'backend="exact" (Held-Karp) supports n <= {EXACT_MAX_NODES} cities, got n = {n_nodes}; '
                             'use "elkai", "fast_tsp" or "pyvrp"')
        return backend
    if not backend_available(backend):
        module, extra = _EXTRA[backend]
        raise ImportError(f"backend={backend!r} needs the package {module!r}: `pip install 'neurips26[{extra}]'`")
    return backend


# ------------------------------------------------------------------------------------------ Held-Karp
@validate(D=ArrayLike(ndim=3))
def held_karp(D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimal tours for a batch of distance matrices ``D`` ``[B, n, n]``: (tours int64 ``[B, n]``, cost ``[B]``).

    Vectorised over the batch; the loop runs over the $2^{n-1}$ subsets in increasing order, so every
    $S \\setminus \\{j\\}$ is finished before $S$. Memory is $2^{n-1} (n-1) B$ floats, so ``n`` is capped at
    ``EXACT_MAX_NODES``.
    """
    D = np.asarray(D, dtype=np.float64)
    if D.shape[1] != D.shape[2] or D.shape[0] < 1 or not 2 <= D.shape[1] <= EXACT_MAX_NODES:
        raise ValueError(f"held_karp: D must have shape [B >= 1, n, n] with 2 <= n <= {EXACT_MAX_NODES} cities "
                         f"(Held-Karp memory grows as 2^n), got shape {list(D.shape)}")
    B, n, _ = D.shape
    m = n - 1  # cities 1..n-1 are bits 0..m-1
    full = (1 << m) - 1
    cost = np.full((1 << m, m, B), np.inf)
    parent = np.full((1 << m, m, B), -1, dtype=np.int8)
    Dm = np.moveaxis(D[:, 1:, 1:], 0, -1)  # [m (k), m (j), B]: d_{k j} between cities k+1, j+1
    for j in range(m):
        # C({j}, j) = d_{0 j}
        cost[1 << j, j] = D[:, 0, j + 1]
    for S in range(1, 1 << m):
        js = [j for j in range(m) if S >> j & 1]
        if len(js) < 2:
            continue
        for j in js:
            prev = cost[S ^ (1 << j)]  # [m (k), B]; inf where k is not in S \ {j}
            # C(S, j) = min_k C(S \ {j}, k) + d_{k j}
            cand = prev + Dm[:, j, :]
            best = cand.argmin(axis=0)
            cost[S, j] = np.take_along_axis(cand, best[None], axis=0)[0]
            parent[S, j] = best
    # close the tour: min_j C(full, j) + d_{j 0}
    closing = cost[full] + np.moveaxis(D[:, 1:, 0], 0, -1)  # [m, B]
    last = closing.argmin(axis=0)
    total = closing[last, np.arange(B)]
    tours = np.zeros((B, n), dtype=np.int64)
    for b in range(B):
        S, j = full, int(last[b])
        for pos in range(n - 1, 0, -1):
            tours[b, pos] = j + 1
            j, S = int(parent[S, j, b]), S ^ (1 << j)
    return tours, total


# ------------------------------------------------------------------------------------------ wrappers
def _integer_matrix(D: np.ndarray, rounding: str, target_max: float) -> np.ndarray:
    if rounding == "nint_half_up":
        return D.astype(np.int64)  # already floor(d + 0.5)
    scale = target_max / max(float(D.max()), 1e-12)
    return np.floor(D * scale + 0.5).astype(np.int64)


def _rotate_to_zero(tour: list[int], n: int) -> np.ndarray:
    t = np.asarray(tour[:n], dtype=np.int64)
    if t.shape != (n,) or sorted(t.tolist()) != list(range(n)):
        raise RuntimeError(f"solver returned an invalid tour: {tour}")
    return np.roll(t, -int(np.flatnonzero(t == 0)[0]))


def _solve_elkai(D: np.ndarray, rounding: str, runs: int) -> np.ndarray:
    import elkai

    M = _integer_matrix(D, rounding, 1e7)
    return _rotate_to_zero(elkai.DistanceMatrix(M.tolist()).solve_tsp(runs=runs), len(D))


def _solve_fast_tsp(D: np.ndarray, rounding: str, time_s: float) -> np.ndarray:
    import fast_tsp

    M = _integer_matrix(D, rounding, 60_000.0)
    if M.max() > 65_535:
        raise ValueError(f'backend="fast_tsp" needs integer distances <= 65,535, got {int(M.max())}; use "elkai"')
    tour = fast_tsp.find_tour(M.tolist(), duration_seconds=time_s, stop_when_converged=True)
    return _rotate_to_zero(tour, len(D))


def _solve_pyvrp(X: np.ndarray, D: np.ndarray, rounding: str, max_iterations: int, seed: int) -> np.ndarray:
    from pyvrp import Model
    from pyvrp.stop import MaxIterations

    M = _integer_matrix(D, rounding, 1e7)
    model = Model()
    locs = [model.add_location(float(x), float(y)) for x, y in X]
    model.add_depot(locs[0])
    for loc in locs[1:]:
        model.add_client(loc)
    model.add_vehicle_type(num_available=1)
    for i, a in enumerate(locs):
        for j, b in enumerate(locs):
            model.add_edge(a, b, int(M[i, j]))
    best = model.solve(MaxIterations(max_iterations), seed=seed, display=False).best
    # clients are numbered 0..n-2 in PyVRP's client list; our node is idx + 1 (the depot is node 0)
    visits = [0] + [act.idx + 1 for act in best.routes()[0] if act.is_client()]
    return _rotate_to_zero(visits, len(D))


@validate(rounding=Choice(*ROUNDINGS), runs=Int(low=1), time_s=Real(low=0.0, closed="neither"),
          max_iterations=Int(low=1), seed=Int(low=0))
def solve_tsp_reference(X: Any, backend: str = "auto", *, rounding: str = "none", runs: int = 10,
                        time_s: float = 1.0, max_iterations: int = 2000, seed: int = 0) -> np.ndarray:
    """Near-optimal (``exact``: optimal) tours for ``X`` ``[B, n, 2]``: int64 ``[B, n]``, each starting at 0.

    Args:
        X: coordinates ``[B, n, 2]``, finite, n >= 3.
        backend: ``"auto" | "exact" | "elkai" | "fast_tsp" | "pyvrp"`` (see the module docstring).
        rounding: distances the solver minimises: ``"none"`` (Euclidean) or ``"nint_half_up"`` (TSPLIB).
        runs: LKH restarts (elkai).
        time_s: time budget per instance in seconds (fast_tsp; it stops earlier on convergence).
        max_iterations: search iterations (pyvrp).
        seed: solver seed (pyvrp).
    """
    Xn = as_instances(X)
    B, n, _ = Xn.shape
    name = resolve_tsp_backend(backend, n)
    D = distance_matrix(Xn, rounding)
    if name == "exact":
        out = []
        for lo in range(0, B, 256):  # bounded memory: 2^(n-1) (n-1) 256 floats
            out.append(held_karp(D[lo:lo + 256])[0])
        return np.concatenate(out)
    tours = np.empty((B, n), dtype=np.int64)
    for b in range(B):
        if name == "elkai":
            tours[b] = _solve_elkai(D[b], rounding, int(runs))
        elif name == "fast_tsp":
            tours[b] = _solve_fast_tsp(D[b], rounding, float(time_s))
        else:
            tours[b] = _solve_pyvrp(Xn[b], D[b], rounding, int(max_iterations), int(seed))
    return tours
