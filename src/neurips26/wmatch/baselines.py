"""What the dynamic matchers are compared against.

* :func:`exact_matching`: the static optimum OPT, by SciPy's ``linear_sum_assignment`` (Jonker-Volgenant)
  or POT's ``ot.emd`` (network simplex) with uniform weights; both give the same optimum.
* :class:`RecomputeBaseline`: the exact static solve after every update (the update-time reference).
* :class:`IncrementalHungarian`: exact and dynamic: dual potentials are kept between updates and each
  insertion costs one Dijkstra-style augmenting path, O(n^2); a deletion frees the partner, which the
  next insertion on the other side re-augments.
* :class:`GreedyOnline`: a new point is matched to its nearest unmatched opposite point (ANN oracle).
* :func:`exact_transport`: the weighted static case, POT-style (masses ``a``, ``b`` and points or a cost
  matrix ``M``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment

from neurips26.constraints import Choice, Optional, check_arguments, validate

from ._validate import (
    DIM,
    NORM_P,
    NORMALIZE_C,
    POINT_ID,
    SIDE,
    WASSERSTEIN_P,
    ArrayLike,
    check_point,
    check_points,
    coordinate_limit,
    finish_cost,
    lp_cost_matrix,
    lp_distance,
)
from .ann import make_ann

METHODS = ("lsa", "emd")


@validate(a=ArrayLike("N", dtype="numeric"), b=ArrayLike("M", dtype="numeric"),
          X=Optional(ArrayLike("N D", dtype="numeric")), Y=Optional(ArrayLike("M D", dtype="numeric")),
          M=Optional(ArrayLike("N M", dtype="numeric")), norm_p=NORM_P, wasserstein_p=WASSERSTEIN_P)
def exact_transport(a: object, b: object, X: object | None = None, Y: object | None = None, *,
                    M: object | None = None, norm_p: float = 2.0,
                    wasserstein_p: int = 1) -> tuple[float, np.ndarray]:
    r"""Exact optimal transport between weighted measures, POT's calling convention: ``(cost, plan)``.

    $\mu = \sum_i a_i \delta_{x_i}$, $\nu = \sum_j b_j \delta_{y_j}$ with equal total mass;
    ``cost`` $= (\min_{P \ge 0,\ P1 = a,\ P^\top 1 = b} \sum_{ij} P_{ij} M_{ij})^{1/w}$, the W_w distance when
    the masses sum to 1 (``ot.emd2(a, b, M) ** (1/w)``). Give either the points ``X: [n, d]``, ``Y: [m, d]``
    (then $M_{ij} = \|x_i - y_j\|_p^w$) or the cost matrix ``M: [n, m]`` itself, already raised to the power
    w as POT expects. ``plan``: ``[n, m]``. Integer masses k_i are the same as k_i copies of a point in
    :func:`exact_matching` (tested). Solver: POT's network simplex (``ot.emd``).
    """
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    for name, arr in (("a", a_arr), ("b", b_arr)):
        if (arr < 0).any() or arr.sum() <= 0:
            raise ValueError(f"exact_transport: {name} must be non-negative masses with a positive sum, got {arr!r}")
    if not math.isclose(a_arr.sum(), b_arr.sum(), rel_tol=1e-9):
        raise ValueError(f"exact_transport: a and b must have the same total mass, got {a_arr.sum()!r} and "
                         f"{b_arr.sum()!r} (normalise them, e.g. a / a.sum())")
    if (M is None) == (X is None or Y is None) or (M is not None and (X is not None or Y is not None)):
        raise ValueError("exact_transport: give either the points X and Y or the cost matrix M, not both")
    if M is None:
        X_arr, Y_arr = check_points(X, None, "X"), check_points(Y, None, "Y")
        cost = lp_cost_matrix(X_arr, Y_arr, float(norm_p), int(wasserstein_p))
    else:
        cost = np.asarray(M, dtype=np.float64)
        if (cost < 0).any():
            raise ValueError("exact_transport: M must be a non-negative cost matrix")
    import ot

    # ot.emd wants equal sums to float precision: rescale b onto a's total
    plan = ot.emd(a_arr, b_arr * (a_arr.sum() / b_arr.sum()), cost)
    return float(max((plan * cost).sum(), 0.0) ** (1.0 / int(wasserstein_p))), plan


@validate(A=ArrayLike("N D"), B=ArrayLike("M D"), norm_p=NORM_P, wasserstein_p=WASSERSTEIN_P, method=Choice(*METHODS),
          normalize=NORMALIZE_C)
def exact_matching(A: object, B: object, *, norm_p: float = 2.0, wasserstein_p: int = 1,
                   method: str = "lsa", normalize: str = "sum") -> tuple[float, np.ndarray]:
    """OPT between ``A: [n, d]`` and ``B: [m, d]``: ``(cost, pairs)``.

    ``cost`` $= (\\min_M \\sum_{(i,j) \\in M} \\|A_i - B_j\\|_p^w)^{1/w}$ over matchings of size
    min(n, m) (``normalize="sum"``), or with the sum divided by the number of pairs (``"mean"``, POT's
    ``ot.emd2`` convention for uniform weights); ``pairs``: ``[min(n, m), 2]`` row indices into A and B.
    ``method="emd"`` needs n == m.
    """
    w = wasserstein_p
    A_arr = check_points(A, None, "A")
    B_arr = check_points(B, None, "B")
    limit = coordinate_limit(A_arr.shape[1], w)
    check_points(A_arr, None, "A", limit=limit)
    check_points(B_arr, None, "B", limit=limit)
    norm_p = float(norm_p)
    if len(A_arr) == 0 or len(B_arr) == 0:
        return 0.0, np.empty((0, 2), dtype=np.int64)
    C = lp_cost_matrix(A_arr, B_arr, norm_p, w)
    if method == "lsa":
        rows, cols = linear_sum_assignment(C)
    else:  # "emd"
        if len(A_arr) != len(B_arr):
            raise ValueError(f"method='emd' needs |A| == |B|, got {len(A_arr)} and {len(B_arr)}")
        import ot

        n = len(A_arr)
        plan = ot.emd(np.full(n, 1.0 / n), np.full(n, 1.0 / n), C)
        rows, cols = np.nonzero(plan > 0.5 / n)  # an optimal vertex of the assignment polytope
    cost = finish_cost(float(C[rows, cols].sum()), len(rows), w, normalize)
    return cost, np.stack([rows, cols], axis=1).astype(np.int64)


class _PointStore:
    """Ids, sides and coordinates of live points, shared by the baselines' insert/delete API."""

    def __init__(self, dim: int, norm_p: float, wasserstein_p: int) -> None:
        # dim, norm_p, wasserstein_p: declared by every subclass's __init__ (STORE)
        self.dim, self.norm_p = int(dim), float(norm_p)
        self.wasserstein_p = wasserstein_p
        self._points: dict[int, tuple[np.ndarray, str]] = {}
        self._next_id = 0
        self._limit = coordinate_limit(dim, self.wasserstein_p)

    def _new(self, x: object, side: str) -> tuple[int, np.ndarray]:
        x_arr = check_point(x, self.dim, limit=self._limit)
        check_arguments(f"{type(self).__name__}.insert", {"side": SIDE}, {"side": side})
        pid = self._next_id
        self._next_id += 1
        self._points[pid] = (x_arr, side)
        return pid, x_arr

    def _pop(self, pid: int) -> tuple[np.ndarray, str]:
        check_arguments(f"{type(self).__name__}.delete", {"pid": POINT_ID}, {"pid": pid})
        if int(pid) not in self._points:
            raise ValueError(f"delete: unknown or already deleted point id {pid!r}")
        return self._points.pop(int(pid))

    def _side_arrays(self) -> tuple[list[int], np.ndarray, list[int], np.ndarray]:
        ids_a = [p for p, (_, s) in self._points.items() if s == "A"]
        ids_b = [p for p, (_, s) in self._points.items() if s == "B"]
        def stack(ids: list[int]) -> np.ndarray:
            return np.stack([self._points[i][0] for i in ids]) if ids else np.empty((0, self.dim))

        return ids_a, stack(ids_a), ids_b, stack(ids_b)

    def _pairs_cost(self, pairs: list[tuple[int, int]], normalize: str = "sum") -> float:
        if not pairs:
            return finish_cost(0.0, 0, self.wasserstein_p, normalize)
        A = np.stack([self._points[a][0] for a, _ in pairs])
        B = np.stack([self._points[b][0] for _, b in pairs])
        total = float((lp_distance(A, B, self.norm_p) ** self.wasserstein_p).sum())
        return finish_cost(total, len(pairs), self.wasserstein_p, normalize)


STORE = {"dim": DIM, "norm_p": NORM_P, "wasserstein_p": WASSERSTEIN_P}


class RecomputeBaseline(_PointStore):
    """Exact static solve after every update (``method`` as in :func:`exact_matching`)."""

    @validate(**STORE, method=Choice(*METHODS))
    def __init__(self, dim: int, *, norm_p: float = 2.0, wasserstein_p: int = 1, method: str = "lsa") -> None:
        super().__init__(dim, norm_p, wasserstein_p)
        self.method = method
        self._cost, self._pairs = 0.0, []

    def _solve(self) -> None:
        ids_a, A, ids_b, B = self._side_arrays()
        method = self.method if len(ids_a) == len(ids_b) else "lsa"
        self._cost, pairs = exact_matching(A, B, norm_p=self.norm_p, wasserstein_p=self.wasserstein_p,
                                           method=method)
        self._pairs = [(ids_a[i], ids_b[j]) for i, j in pairs]

    def insert(self, x: object, side: str) -> int:
        pid, _ = self._new(x, side)
        self._solve()
        return pid

    def delete(self, pid: int) -> None:
        self._pop(pid)
        self._solve()

    def cost(self) -> float:
        return self._cost

    def matching(self) -> list[tuple[int, int]]:
        return list(self._pairs)

    @validate(normalize=NORMALIZE_C)
    def matching_cost(self, normalize: str = "sum") -> float:
        """Cost of the exact matching (``normalize`` as in :func:`exact_matching`)."""
        if normalize == "sum":
            return self._cost
        return self._pairs_cost(self._pairs, normalize)


class IncrementalHungarian(_PointStore):
    r"""Exact dynamic min-cost matching by successive shortest augmenting paths with kept potentials.

    Rows are A points, columns B points, $c_{ab} = \|a - b\|_p^w$. Invariants: potentials are feasible,
    $u_a + v_b \le c_{ab}$, and tight ($=$) on matched pairs. A new row gets
    $u_a = \min_b (c_{ab} - v_b)$ (feasible), a new column $v_b = \min_a (c_{ab} - u_a)$; then each free
    row is augmented along a shortest path (Dijkstra on reduced costs, O(n^2) dense) to a free column
    while both exist. When |A| = |B| the matching is perfect and, by complementary slackness with a
    feasible tight dual, optimal.
    """

    @validate(**STORE)
    def __init__(self, dim: int, *, norm_p: float = 2.0, wasserstein_p: int = 1) -> None:
        super().__init__(dim, norm_p, wasserstein_p)
        self._rows: list[int] = []  # A ids by row slot
        self._cols: list[int] = []  # B ids by column slot
        self._row_of: dict[int, int] = {}
        self._col_of: dict[int, int] = {}
        self._u: list[float] = []
        self._v: list[float] = []
        self._match_row: list[int] = []  # row slot -> column slot or -1
        self._match_col: list[int] = []  # column slot -> row slot or -1
        self.augmentations = 0

    # --- slots: deleted rows/columns become holes (id -1) that are skipped
    def _cost_to(self, pid: int, others: list[int]) -> np.ndarray:
        """``c(pid, q)`` for every id ``q`` in ``others`` (same side order as given)."""
        X = np.stack([self._points[q][0] for q in others])
        return lp_cost_matrix(self._points[pid][0][None], X, self.norm_p, self.wasserstein_p)[0]

    def insert(self, x: object, side: str) -> int:
        pid, _ = self._new(x, side)
        self._insert_slot(pid, side)
        return pid

    def _insert_slot(self, pid: int, side: str) -> None:
        if side == "A":
            self._rows.append(pid)
            self._row_of[pid] = len(self._rows) - 1
            self._match_row.append(-1)
            live = [c for c, b in enumerate(self._cols) if b >= 0]
            # u_a = min_b (c_ab − v_b) keeps u + v <= c feasible
            self._u.append(float((self._cost_to(pid, [self._cols[c] for c in live])
                                  - np.asarray(self._v)[live]).min()) if live else 0.0)
        else:
            self._cols.append(pid)
            self._col_of[pid] = len(self._cols) - 1
            self._match_col.append(-1)
            live = [r for r, a in enumerate(self._rows) if a >= 0]
            self._v.append(float((self._cost_to(pid, [self._rows[r] for r in live])
                                  - np.asarray(self._u)[live]).min()) if live else 0.0)
        self._augment_all()

    def delete(self, pid: int) -> None:
        _, side = self._pop(pid)
        if side == "A":
            r = self._row_of.pop(int(pid))
            c = self._match_row[r]
            if c >= 0:
                self._match_col[c] = -1
            self._rows[r], self._match_row[r] = -1, -1
        else:
            c = self._col_of.pop(int(pid))
            r = self._match_col[c]
            if r >= 0:
                self._match_row[r] = -1
            self._cols[c], self._match_col[c] = -1, -1
        self._augment_all()
        if len(self._rows) > 2 * max(len(self._row_of), 8) or len(self._cols) > 2 * max(len(self._col_of), 8):
            self._compact()

    def _compact(self) -> None:
        """Drop holes left by deletions (keeps the O(n^2) scans proportional to the live count)."""
        keep_r = [r for r, a in enumerate(self._rows) if a >= 0]
        keep_c = [c for c, b in enumerate(self._cols) if b >= 0]
        new_r = {r: i for i, r in enumerate(keep_r)}
        new_c = {c: i for i, c in enumerate(keep_c)}
        self._match_row = [new_c.get(self._match_row[r], -1) if self._match_row[r] >= 0 else -1 for r in keep_r]
        self._match_col = [new_r.get(self._match_col[c], -1) if self._match_col[c] >= 0 else -1 for c in keep_c]
        self._rows, self._cols = [self._rows[r] for r in keep_r], [self._cols[c] for c in keep_c]
        self._u, self._v = [self._u[r] for r in keep_r], [self._v[c] for c in keep_c]
        self._row_of = {a: i for i, a in enumerate(self._rows)}
        self._col_of = {b: i for i, b in enumerate(self._cols)}

    def _augment_all(self) -> None:
        free_rows = [r for r, a in enumerate(self._rows) if a >= 0 and self._match_row[r] < 0]
        has_free_col = any(b >= 0 and self._match_col[c] < 0 for c, b in enumerate(self._cols))
        for r in free_rows:
            if not has_free_col:
                break
            has_free_col = self._augment(r)

    def _augment(self, start: int) -> bool:
        """Shortest augmenting path from free row ``start`` to any free column; update potentials.
        Returns whether another free column remains."""
        cols = np.array([c for c, b in enumerate(self._cols) if b >= 0])
        col_ids = [self._cols[c] for c in cols]
        u = np.asarray(self._u)
        v = np.asarray(self._v)[cols]
        k = len(cols)
        dist = np.full(k, np.inf)  # tentative reduced distance to each column
        prev_row = np.full(k, -1)  # row from which each column was reached
        done = np.zeros(k, dtype=bool)
        visited_rows = {start: 0.0}  # row slot -> its distance label
        r, d_r = start, 0.0
        while True:
            reduced = self._cost_to(self._rows[r], col_ids) - u[r] - v  # >= 0 by feasibility
            cand = d_r + reduced
            better = (~done) & (cand < dist)
            dist[better], prev_row[better] = cand[better], r
            j = int(np.where(done, np.inf, dist).argmin())
            done[j] = True
            matched_row = self._match_col[cols[j]]
            if matched_row < 0:
                break
            r, d_r = matched_row, float(dist[j])
            visited_rows[r] = d_r
        d_end = float(dist[j])
        # potentials: u_r += d_end − d_r for visited rows, v_c −= d_end − dist_c for finished columns
        for row, d_row in visited_rows.items():
            self._u[row] += d_end - d_row
        for jj in np.nonzero(done)[0]:
            self._v[cols[jj]] -= d_end - float(dist[jj])
        # flip the path
        while True:
            row = int(prev_row[j])
            col = int(cols[j])
            nxt = self._match_row[row]
            self._match_row[row], self._match_col[col] = col, row
            if row == start:
                break
            j = int(np.nonzero(cols == nxt)[0][0])
        self.augmentations += 1
        return any(b >= 0 and self._match_col[c] < 0 for c, b in enumerate(self._cols))

    def matching(self) -> list[tuple[int, int]]:
        return [(self._rows[r], self._cols[c]) for r, c in enumerate(self._match_row) if c >= 0 and self._rows[r] >= 0]

    @validate(normalize=NORMALIZE_C)
    def matching_cost(self, normalize: str = "sum") -> float:
        """Cost of :meth:`matching` (``normalize`` as in :func:`exact_matching`)."""
        return self._pairs_cost(self.matching(), normalize)

    cost = matching_cost


class MetricIncrementalHungarian(IncrementalHungarian):
    """:class:`IncrementalHungarian` on a finite metric: points are ids of ``dist`` (an ``[N, N]`` metric
    matrix), costs ``dist[a, b] ** wasserstein_p``; ``insert(pid, side)`` takes the id."""

    @validate(wasserstein_p=WASSERSTEIN_P)
    def __init__(self, dist: object, *, wasserstein_p: int = 1) -> None:
        from ._validate import check_metric_matrix

        super().__init__(1, wasserstein_p=wasserstein_p)
        self._D = check_metric_matrix(dist)

    def _cost_to(self, pid: int, others: list[int]) -> np.ndarray:
        return self._D[pid, np.asarray(others, dtype=np.int64)] ** self.wasserstein_p

    @validate(pid=POINT_ID, side=SIDE)
    def insert(self, pid: int, side: str) -> int:  # type: ignore[override]
        if not 0 <= int(pid) < len(self._D):  # the metric's size: not a declarable constraint
            raise ValueError(f"point id must be an int in [0, {len(self._D)}), got {pid!r}")
        if int(pid) in self._points:
            raise ValueError(f"insert: point {pid} is already live")
        self._points[int(pid)] = (np.zeros(1), side)
        self._insert_slot(int(pid), side)
        return int(pid)

    @validate(normalize=NORMALIZE_C)
    def matching_cost(self, normalize: str = "sum") -> float:
        """Cost of :meth:`matching` (``normalize`` as in :func:`exact_matching`)."""
        pairs = self.matching()
        total = sum(float(self._D[a, b]) ** self.wasserstein_p for a, b in pairs)
        return finish_cost(total, len(pairs), self.wasserstein_p, normalize)

    cost = matching_cost


class GreedyOnline(_PointStore):
    """A new point is matched to its nearest unmatched opposite point; a deletion frees the partner,
    which is re-matched greedily. No approximation guarantee; a cheap reference."""

    @validate(**STORE, ann=Choice("bruteforce", "lsh", "faiss"))
    def __init__(self, dim: int, *, norm_p: float = 2.0, wasserstein_p: int = 1, ann: str = "bruteforce") -> None:
        super().__init__(dim, norm_p, wasserstein_p)
        self._free = {"A": make_ann(ann, dim, self.norm_p), "B": make_ann(ann, dim, self.norm_p)}
        self._partner: dict[int, int] = {}

    def _place(self, pid: int) -> None:
        x, side = self._points[pid]
        other = "B" if side == "A" else "A"
        ids, _ = self._free[other].query(x, k=1)
        if len(ids):
            q = int(ids[0])
            self._free[other].remove([q])
            self._partner[pid], self._partner[q] = q, pid
        else:
            self._free[side].add([pid], x[None])

    def insert(self, x: object, side: str) -> int:
        pid, _ = self._new(x, side)
        self._place(pid)
        return pid

    def delete(self, pid: int) -> None:
        _, side = self._pop(pid)
        q = self._partner.pop(int(pid), None)
        if q is None:
            self._free[side].remove([int(pid)])
        else:
            del self._partner[q]
            self._place(q)

    def matching(self) -> list[tuple[int, int]]:
        return [(a, b) for a, b in self._partner.items() if self._points[a][1] == "A"]

    @validate(normalize=NORMALIZE_C)
    def matching_cost(self, normalize: str = "sum") -> float:
        """Cost of :meth:`matching` (``normalize`` as in :func:`exact_matching`)."""
        return self._pairs_cost(self.matching(), normalize)

    cost = matching_cost
