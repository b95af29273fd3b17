r"""Design A: a fully dynamic approximate W_p matching in $\mathbb{R}^d$ under any ℓ_p norm.

The structure (our reconstruction; the paper's own data structure is not public, see README):

* A randomly shifted, hashed grid hierarchy. Level $\ell = 0..L$ has cells of side $W / g^\ell$
  ($g$ = branching); a cell's key is $\lfloor (x - o) g^\ell / W \rfloor$ as an integer tuple, and only
  non-empty cells are stored, so memory is $O(nL)$ for any $d$.
* Each cell keeps the excess $e = \#A - \#B$ of its subtree. A *node problem* at an inner cell moves
  units between its children: children with $e_i > 0$ supply $e_i$ units, children with $e_j < 0$
  demand $-e_j$; $\min(\sum \text{supply}, \sum \text{demand})$ units are transported at cost
  $\|c_i - c_j\|_p^{\,w}$ between cell centres ($w$ = Wasserstein order), and the surplus
  $|\sum_i e_i|$ rises to the parent. A leaf matches its own points exactly.
* An update changes $e$ on the $L + 1$ ancestors of one point, so it re-solves $L$ node problems and one
  leaf: $O(L \cdot T_\text{node})$ work. The node solver is exact (``ot.emd``) for small problems and
  greedy over a nearest-neighbour oracle (ANN) for large ones, the reduction the paper's bound names.
* :meth:`matching` materialises real pairs bottom-up: a leaf pairs its own points exactly; at each cell
  the surplus points of its children meet, and the min(Σ supply, Σ demand) units that cross are realised by
  an exact assignment on the points' true costs (``pairing="local"``; ``"flow"`` follows the centre flows
  instead). :meth:`matching_cost` is the true cost of those pairs. :meth:`cost` is the centre-based
  estimate maintained per update (not the cost of any real matching; it can err either way).

The ε knob sets the size of the local problems, in every dimension (inferred from the paper's
$n^\varepsilon$ update term): a leaf may hold up to $m = \lceil n^\varepsilon \rceil$ points
(``leaf_size``), which it matches exactly, and a cell has about $n^\varepsilon$ children: in low dimension
every coordinate is cut into $g = 2^{\max(1, \mathrm{round}(\varepsilon \log_2 n / d))}$ slabs per level;
when $\varepsilon \log_2 n < d$ only $b = \mathrm{round}(\varepsilon \log_2 n)$ coordinates are halved per
level, in a random cyclic order (a randomly shifted k-d hierarchy), so that high dimension does not give every
point its own child of the root.
Larger ε: bigger exact leaves, a better ratio, dearer updates ($O(m^3)$ per leaf solve).

The number of levels comes from the data, not from n alone: $L$ is the smallest depth at which every leaf
holds at most $m$ points. A far outlier multiplies the bounding width $W$ by its distance, and $L$ grows by
$\log_g$ of that factor (the spread), so the leaves near the bulk keep their size and an update stays
$O(L \cdot T_\text{node} + m^3)$ instead of solving one huge leaf. Only points at the same coordinates up to
$W \cdot 2^{-50}$ cannot be separated (then a leaf may exceed $m$). An insertion that overfills a leaf past
$2m$, doubles n, or leaves the bounds triggers a rebuild; the bounds grow by doubling, so a stream with
spread Δ causes $O(\log \Delta)$ bound rebuilds.
We measure the ratio; we do not claim the paper's constants for this design.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment

from neurips26.constraints import Choice, Int, Optional, validate

from ._validate import (
    DIM,
    EPS,
    NORM_P,
    NORMALIZE_C,
    POINT_ID,
    SEED,
    SIDE,
    WASSERSTEIN_P,
    check_point,
    check_points,
    coordinate_limit,
    finish_cost,
    lp_cost_matrix,
    lp_distance,
)
from .ann import make_ann

Key = tuple[int, ...]


@dataclass
class _Cell:
    """One non-empty grid cell. ``flows``: (supply child, demand child, units) of its node problem."""

    n: int = 0
    e: int = 0
    children: set = field(default_factory=set)
    a_ids: set = field(default_factory=set)  # leaves only
    b_ids: set = field(default_factory=set)  # leaves only
    cost: float = 0.0
    flows: list = field(default_factory=list)


class DynamicWassersteinMatcher:
    """Maintain an approximate min-cost matching between point sets A and B under inserts and deletes.

    Args:
        dim: dimension d of the points.
        norm_p: the ℓ_p ground norm (``>= 1``, ``math.inf`` allowed).
        wasserstein_p: order w of the cost $\\sum d(a, b)^w$; costs are reported as $(\\sum d^w)^{1/w}$.
        eps: trade-off knob in (0, 1]: leaves of up to ⌈n^ε⌉ points solved exactly (and, for small d, the
            branching); larger = better ratio, dearer updates (see the module docstring).
        branching: grid branching g (overrides ``eps`` for the branching).
        levels: number of levels below the root (default: the smallest depth with every leaf holding at
            most ``leaf_size`` points, chosen at each rebuild, at most ``50 / log2(g)``).
        leaf_size: largest leaf before the depth grows (default ⌈n^ε⌉, at least 2, at each rebuild).
        pairing: how :meth:`matching` picks the real points that cross a cell: ``"local"`` (default) an
            exact assignment between the surplus points that meet at the cell; ``"flow"`` any surplus point
            of child i with any of child j for each unit of the centre-based flow f_ij.
        ann: nearest-neighbour backend of the greedy node solver: ``"bruteforce"``, ``"lsh"``, ``"faiss"``.
        node_solver: ``"auto"`` (exact up to ``exact_node_limit`` children, else greedy), ``"exact"``,
            ``"greedy"``.
        exact_node_limit: largest node problem (supply + demand children) solved exactly in ``"auto"``.
        bounds: ``(lo, hi)`` arrays of shape ``[d]`` the points will stay in (else learned, with rebuilds).
        seed: seed of the random grid shift.
    """

    @validate(dim=DIM, norm_p=NORM_P, wasserstein_p=WASSERSTEIN_P, eps=EPS, branching=Optional(Int(low=2)),
              levels=Optional(Int(low=1, high=32)), ann=Choice("bruteforce", "lsh", "faiss"),
              node_solver=Choice("auto", "exact", "greedy"), exact_node_limit=Int(low=1),
              leaf_size=Optional(Int(low=1)), pairing=Choice("local", "flow"), seed=SEED)
    def __init__(self, dim: int, *, norm_p: float = 2.0, wasserstein_p: int = 1, eps: float = 0.5,
                 branching: int | None = None, levels: int | None = None, ann: str = "bruteforce",
                 node_solver: str = "auto", exact_node_limit: int = 64, leaf_size: int | None = None,
                 pairing: str = "local",
                 bounds: tuple[object, object] | None = None, seed: int = 0) -> None:
        if bounds is not None and (isinstance(bounds, str | bytes) or not hasattr(bounds, "__len__")
                                   or len(bounds) != 2):
            raise ValueError(f"bounds must be a pair (lo, hi) of points, got {bounds!r}")
        self.dim, self.eps, self.seed = dim, float(eps), seed
        self.norm_p = float(norm_p)
        self.wasserstein_p = wasserstein_p
        self._limit = coordinate_limit(dim, self.wasserstein_p)
        self.branching_arg, self.levels_arg, self.leaf_size_arg = branching, levels, leaf_size
        self.ann, self.node_solver, self.exact_node_limit = ann, node_solver, exact_node_limit
        self.pairing = pairing
        self._rng = np.random.default_rng(seed)
        self._points: dict[int, tuple[np.ndarray, int]] = {}  # id -> (x, +1 for A / -1 for B)
        self._next_id = 0
        self._bounds = None
        if bounds is not None:
            lo = check_point(bounds[0], dim, "bounds[0]", limit=self._limit / 4)
            hi = check_point(bounds[1], dim, "bounds[1]", limit=self._limit / 4)
            if not np.all(hi > lo):
                raise ValueError("bounds must satisfy lo < hi in every coordinate")
            self._bounds = (lo, hi)
        self._levels: list[dict[Key, _Cell]] = []
        self._total = 0.0
        self._built_n = 0
        self._updates_since_build = 0
        self._matching_cache: list[tuple[int, int]] | None = None
        # counted work (tests bound it without a clock): leaf_work = Σ |A_leaf|·|B_leaf| over leaf solves,
        # node_work = Σ (supply + demand children) over node solves
        self.stats = {"rebuilds": 0, "node_solves": 0, "exact_solves": 0, "greedy_solves": 0, "leaf_solves": 0,
                      "leaf_work": 0, "node_work": 0}

    # ------------------------------------------------------------------ geometry
    def _configure(self, n_ref: int) -> None:
        r"""Choose the splitting, the leaf size m and the depth L for the live points; draw a new random shift.

        A cell should have about $n^\varepsilon$ children, i.e. $b = \max(1, \mathrm{round}(\varepsilon \log_2 n))$
        bits per level. When $b \ge d$ every coordinate is cut at every level into
        $g = 2^{\max(1, \mathrm{round}(\varepsilon \log_2 n / d))}$ slabs (the plain grid). When $b < d$
        (high dimension) only $b$ coordinates are halved per level, in a random cyclic order, so a cell has at
        most $2^b$ children instead of $2^d$ (the plain grid at d = 32 gave every point its own child of the
        root: O(n) per update).
        """
        n_ref = max(n_ref, 16)
        bits = max(1, round(self.eps * math.log2(n_ref)))
        if self.branching_arg is not None or bits >= self.dim:
            self.g = self.branching_arg or 2 ** max(1, round(self.eps * math.log2(n_ref) / self.dim))
            self.split_dims = self.dim
            per_level = np.full(self.dim, math.log2(self.g))  # bits of refinement per coordinate per level
            self.max_levels = max(1, int(50 / math.log2(self.g)))
        else:
            self.g, self.split_dims = 2, bits
            self.max_levels = math.ceil(50 * self.dim / bits)
        # m = ⌈n^ε⌉: the local problems of the paper's n^ε term, here the exactly solved leaves
        self.leaf_size = self.leaf_size_arg or max(2, math.ceil(n_ref**self.eps))
        lo, hi = self._bounds
        self.width = 2.0 * float((hi - lo).max())
        shift = self._rng.uniform(0, self.width / 2, size=self.dim)
        self.origin = lo - shift  # x - origin ∈ [shift, shift + (hi-lo)] ⊂ [0, width)
        # refinement[l, c] = bits by which coordinate c has been cut above level l; side = W / 2^refinement
        levels = np.arange(self.max_levels + 1)
        if self.split_dims == self.dim:
            refinement = levels[:, None] * per_level[None, :]
        else:
            order = self._rng.permutation(self.dim)  # the cyclic order of the cut coordinates
            cuts = np.zeros((self.max_levels + 1, self.dim))
            for level in range(1, self.max_levels + 1):
                cuts[level] = cuts[level - 1]
                cuts[level, order[np.arange((level - 1) * bits, level * bits) % self.dim]] += 1
            refinement = cuts
        self._all_sides = self.width / 2.0**refinement  # [max_levels + 1, d]
        self.L = self.levels_arg if self.levels_arg is not None else self._depth_for_leaf_size()
        self.L = min(self.L, self.max_levels)
        self.sides = self._all_sides[: self.L + 1]  # [L + 1, d] cell sides per level and coordinate

    def _max_leaf_count(self, X: np.ndarray, level: int) -> int:
        """Largest number of the points ``X: [n, d]`` sharing one cell of ``level``."""
        codes = np.floor((X - self.origin) / self._all_sides[level]).astype(np.int64)
        return int(np.unique(codes, axis=0, return_counts=True)[1].max())

    def _depth_for_leaf_size(self) -> int:
        """Smallest L in [1, max_levels] with every leaf holding <= leaf_size points (binary search: the
        grids are nested, so the largest leaf count is non-increasing in L). O(n d log(max_levels))."""
        if len(self._points) <= self.leaf_size:
            return 1
        X = np.stack([x for x, _ in self._points.values()])
        lo, hi = 1, self.max_levels
        if self._max_leaf_count(X, hi) > self.leaf_size:
            return hi  # coincident points: no depth separates them
        while lo < hi:
            mid = (lo + hi) // 2
            if self._max_leaf_count(X, mid) <= self.leaf_size:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _keys(self, x: np.ndarray) -> list[Key]:
        """The cell keys of ``x`` at levels 0..L (level 0 is the single root cell)."""
        codes = np.floor((x - self.origin)[None, :] / self.sides).astype(np.int64)
        return [tuple(row) for row in codes.tolist()]

    def _centre(self, level: int, key: Key) -> np.ndarray:
        return self.origin + (np.asarray(key, dtype=np.float64) + 0.5) * self.sides[level]

    def _in_bounds(self, x: np.ndarray) -> bool:
        if self._bounds is None:
            return False
        lo, hi = self._bounds
        return bool(np.all(x >= lo) and np.all(x <= hi))

    # ------------------------------------------------------------------ public API
    @validate(side=SIDE)
    def insert(self, x: object, side: str) -> int:
        """Insert a point of side ``"A"`` or ``"B"``; returns its id. Amortised O(L · T_node)."""
        x_arr = check_point(x, self.dim, limit=self._limit)
        sign = 1 if side == "A" else -1
        pid = self._next_id
        self._next_id += 1
        self._points[pid] = (x_arr, sign)
        self._matching_cache = None
        if not self._levels or not self._in_bounds(x_arr) or len(self._points) > 2 * max(self._built_n, 16):
            # first point, a point outside the grid, or n doubled since the last build: rebuild
            # (amortised: n doubles between two such rebuilds, the bounds double)
            if self._bounds is None or not self._in_bounds(x_arr):
                self._grow_bounds(x_arr)
            self._rebuild()
        else:
            leaf = self._apply(x_arr, sign, pid, +1)
            if (self.levels_arg is None and leaf.n > 2 * self.leaf_size and self.L < self.max_levels
                    and self._updates_since_build >= leaf.n):
                # a leaf filled up to 2m: deepen (the last build had every leaf <= m, so >= m inserts
                # into this leaf, and >= leaf.n updates in all, paid for it)
                self._rebuild()
        return pid

    @validate(side=SIDE)
    def insert_many(self, X: object, side: str) -> list[int]:
        """Insert the rows of ``X: [m, dim]`` with one side; one bulk rebuild (O((n + m) L) node solves)."""
        X_arr = check_points(X, self.dim, limit=self._limit)
        sign = 1 if side == "A" else -1
        ids = list(range(self._next_id, self._next_id + len(X_arr)))
        self._next_id += len(X_arr)
        for pid, x in zip(ids, X_arr):
            self._points[pid] = (x, sign)
        self._matching_cache = None
        if len(X_arr):
            for x in (X_arr.min(0), X_arr.max(0)):
                if self._bounds is None or not self._in_bounds(x):
                    self._grow_bounds(x)
            self._rebuild()
        return ids

    @validate(pid=POINT_ID)
    def delete(self, pid: int) -> None:
        """Delete a live point by id (``ValueError`` for an unknown or already deleted id)."""
        pid = int(pid)
        if pid not in self._points:
            raise ValueError(f"delete: unknown or already deleted point id {pid!r}")
        x, sign = self._points.pop(pid)
        self._matching_cache = None
        self._apply(x, sign, int(pid), -1)

    def __len__(self) -> int:
        return len(self._points)

    @property
    def n_a(self) -> int:
        return sum(1 for _, s in self._points.values() if s > 0)

    @property
    def n_b(self) -> int:
        return len(self._points) - self.n_a

    @validate(normalize=NORMALIZE_C)
    def cost(self, normalize: str = "sum") -> float:
        """The maintained estimate $(\\sum \\text{node and leaf costs})^{1/w}$ (centre-based, O(1)); not the cost
        of a real matching (use :meth:`matching_cost` for that). ``normalize="mean"`` divides the sum by the
        number of pairs min(|A|, |B|) first, POT's convention, as in :meth:`matching_cost`."""
        n_a = sum(1 for _, s in self._points.values() if s > 0)
        return finish_cost(self._total, min(n_a, len(self._points) - n_a), self.wasserstein_p, normalize)

    def matching(self) -> list[tuple[int, int]]:
        """Materialised pairs ``(a_id, b_id)``: min(|A|, |B|) of them, every live point at most once.
        O(nL); cached until the next update."""
        if self._matching_cache is None:
            self._matching_cache = self._materialise()
        return list(self._matching_cache)

    @validate(normalize=NORMALIZE_C)
    def matching_cost(self, normalize: str = "sum") -> float:
        """The true cost of :meth:`matching`: ``normalize="sum"`` $(\\sum_{(a,b)} \\|a - b\\|_p^w)^{1/w}$;
        ``"mean"`` $(\\frac1k \\sum \\|a - b\\|_p^w)^{1/w}$ over the k pairs, POT's convention
        (``ot.emd2`` with uniform weights, when |A| = |B|)."""
        pairs = self.matching()
        if not pairs:
            return finish_cost(0.0, 0, self.wasserstein_p, normalize)
        A = np.stack([self._points[a][0] for a, _ in pairs])
        B = np.stack([self._points[b][0] for _, b in pairs])
        d = lp_distance(A, B, self.norm_p)
        return finish_cost(float((d**self.wasserstein_p).sum()), len(pairs), self.wasserstein_p, normalize)

    @validate(pid=POINT_ID)
    def partner(self, pid: int) -> int | None:
        """The point matched to ``pid`` in :meth:`matching` (``None`` if unmatched)."""
        if int(pid) not in self._points:
            raise ValueError(f"partner: unknown or deleted point id {pid!r}")
        for a, b in self.matching():
            if a == pid:
                return b
            if b == pid:
                return a
        return None

    def points(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(ids_A, X_A, ids_B, X_B)`` of the live points."""
        out = []
        for sign in (1, -1):
            ids = [pid for pid, (_, s) in self._points.items() if s == sign]
            X = np.stack([self._points[i][0] for i in ids]) if ids else np.empty((0, self.dim))
            out += [np.asarray(ids, dtype=np.int64), X]
        return tuple(out)  # type: ignore[return-value]

    # ------------------------------------------------------------------ maintenance
    def _grow_bounds(self, x: np.ndarray) -> None:
        if self._bounds is None:
            lo, hi = x - 1.0, x + 1.0
        else:
            lo, hi = np.minimum(self._bounds[0], x), np.maximum(self._bounds[1], x)
            centre, half = (lo + hi) / 2, (hi - lo).max()  # double the box around the new extent
            lo, hi = np.minimum(lo, centre - half), np.maximum(hi, centre + half)
        self._bounds = (lo, hi)

    def _rebuild(self) -> None:
        """Rebuild every cell from the live points (new shift, levels for the current n)."""
        self.stats["rebuilds"] += 1
        self._configure(len(self._points))
        self._build_cells()

    def _build_cells(self) -> None:
        """All cells and their node problems from scratch, on the current grid (O(nL) + solves)."""
        self._levels = [dict() for _ in range(self.L + 1)]
        self._total = 0.0
        for pid, (x, sign) in self._points.items():
            keys = self._keys(x)
            for level, key in enumerate(keys):
                cell = self._levels[level].get(key)
                if cell is None:
                    cell = self._levels[level][key] = _Cell()
                cell.n += 1
                cell.e += sign
                if level < self.L:
                    cell.children.add(keys[level + 1])
            leaf = self._levels[self.L][keys[-1]]
            (leaf.a_ids if sign > 0 else leaf.b_ids).add(pid)
        for leaf in self._levels[self.L].values():
            self._solve_leaf(leaf)
        for level in range(self.L - 1, -1, -1):
            for cell in self._levels[level].values():
                self._solve_node(level, cell)
        self._built_n = len(self._points)
        self._updates_since_build = 0

    def _apply(self, x: np.ndarray, sign: int, pid: int, delta: int) -> _Cell:
        """Add (``delta=+1``) or remove (``-1``) one point and re-solve the L+1 cells on its path; returns
        the point's leaf."""
        self._updates_since_build += 1
        keys = self._keys(x)
        for level, key in enumerate(keys):
            cell = self._levels[level].get(key)
            if cell is None:
                cell = self._levels[level][key] = _Cell()
            cell.n += delta
            cell.e += sign * delta
            if level < self.L and delta > 0:
                cell.children.add(keys[level + 1])
        leaf = self._levels[self.L][keys[-1]]
        ids = leaf.a_ids if sign > 0 else leaf.b_ids
        ids.add(pid) if delta > 0 else ids.discard(pid)
        self._solve_leaf(leaf)
        for level in range(self.L - 1, -1, -1):
            cell = self._levels[level][keys[level]]
            child_key = keys[level + 1]
            if self._levels[level + 1][child_key].n == 0:  # drop emptied child cells
                del self._levels[level + 1][child_key]
                cell.children.discard(child_key)
            self._solve_node(level, cell)
        if self._levels[0][keys[0]].n == 0:
            del self._levels[0][keys[0]]
        return leaf

    def _solve_leaf(self, leaf: _Cell) -> None:
        """Exact assignment between the A and B points inside one leaf."""
        self.stats["leaf_solves"] += 1
        old = leaf.cost
        leaf.cost, leaf.flows = 0.0, []
        if leaf.a_ids and leaf.b_ids:
            a_ids, b_ids = sorted(leaf.a_ids), sorted(leaf.b_ids)
            C = lp_cost_matrix(np.stack([self._points[i][0] for i in a_ids]),
                               np.stack([self._points[i][0] for i in b_ids]), self.norm_p, self.wasserstein_p)
            rows, cols = linear_sum_assignment(C)
            self.stats["leaf_work"] += C.size
            leaf.cost = float(C[rows, cols].sum())
            leaf.flows = [(a_ids[r], b_ids[c], 1) for r, c in zip(rows, cols)]  # point pairs
        self._total += leaf.cost - old

    def _solve_node(self, level: int, cell: _Cell) -> None:
        """Re-solve the transport between the children of ``cell`` (children live at ``level + 1``)."""
        old = cell.cost
        children = self._levels[level + 1]
        supply = [(k, children[k].e) for k in cell.children if children[k].e > 0]
        demand = [(k, -children[k].e) for k in cell.children if children[k].e < 0]
        cell.cost, cell.flows = 0.0, []
        if supply and demand:
            self.stats["node_solves"] += 1
            supply.sort()
            demand.sort()
            S = np.stack([self._centre(level + 1, k) for k, _ in supply])
            D = np.stack([self._centre(level + 1, k) for k, _ in demand])
            s_amt = np.array([a for _, a in supply], dtype=np.float64)
            d_amt = np.array([a for _, a in demand], dtype=np.float64)
            size = len(supply) + len(demand)
            self.stats["node_work"] += size
            use_exact = self.node_solver == "exact" or (self.node_solver == "auto" and size <= self.exact_node_limit)
            if len(supply) == 1 or len(demand) == 1 or use_exact:
                flow = _transport_exact(lp_cost_matrix(S, D, self.norm_p, self.wasserstein_p), s_amt, d_amt)
                rows, cols = np.nonzero(flow)
                units = flow[rows, cols]
                self.stats["exact_solves"] += 1
            else:
                rows, cols, units = self._transport_greedy(S, D, s_amt, d_amt, level + 1)
                self.stats["greedy_solves"] += 1
            # cost = Σ_{ij} f_ij ‖c_i − c_j‖_p^w over the (few) non-zero flows
            dist = lp_distance(S[rows], D[cols], self.norm_p)
            cell.cost = float((units * dist**self.wasserstein_p).sum())
            cell.flows = [(supply[i][0], demand[j][0], int(u)) for i, j, u in zip(rows, cols, units)]
        self._total += cell.cost - old

    def _transport_greedy(self, S: np.ndarray, D: np.ndarray, s_amt: np.ndarray, d_amt: np.ndarray,
                          child_level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each supply child, in order, sends its units to its nearest demand children with capacity
        left, found through the ANN oracle (the ε^{-1/2}-ANN reduction of the paper, greedy form)."""
        index = make_ann(self.ann, self.dim, self.norm_p, seed=self.seed)
        if self.ann == "lsh":
            index.bucket_width = 4.0 * float(self.sides[child_level].max())
        index.add(np.arange(len(D)), D)
        remaining = d_amt.copy()
        rows, cols, units = [], [], []
        for i in range(len(S)):
            need = s_amt[i]
            while need > 0 and len(index):
                (j,), _ = index.query(S[i], k=1)
                send = min(need, remaining[j])
                rows.append(i), cols.append(j), units.append(send)
                need -= send
                remaining[j] -= send
                if remaining[j] == 0:
                    index.remove([j])
        return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(units)

    def _materialise(self) -> list[tuple[int, int]]:
        """Bottom-up: leaves pair their own points; each node pairs surplus points along its flows."""
        pairs: list[tuple[int, int]] = []
        if not self._levels:
            return pairs
        surplus: dict[Key, list[int]] = {}
        for key, leaf in self._levels[self.L].items():
            matched_a = {a for a, _, _ in leaf.flows}
            matched_b = {b for _, b, _ in leaf.flows}
            pairs += [(a, b) for a, b, _ in leaf.flows]
            rest = sorted(leaf.a_ids - matched_a) + sorted(leaf.b_ids - matched_b)
            surplus[key] = rest
        for level in range(self.L - 1, -1, -1):
            upper: dict[Key, list[int]] = {}
            for key, cell in self._levels[level].items():
                pool = {child: surplus.pop(child) for child in cell.children}
                if self.pairing == "flow":
                    for i, j, units in cell.flows:
                        for _ in range(units):
                            pairs.append((pool[i].pop(), pool[j].pop()))
                    upper[key] = [pid for child in sorted(pool) for pid in pool[child]]
                else:
                    made, rest = self._pair_surplus([pid for child in sorted(pool) for pid in pool[child]])
                    pairs += made
                    upper[key] = rest
            surplus = upper
        return pairs

    def _pair_surplus(self, ids: list[int]) -> tuple[list[tuple[int, int]], list[int]]:
        r"""``pairing="local"``: the children's surplus points meet at their parent; the parent's node
        problem fixes how many units cross (min(Σ supply, Σ demand)), and the real points that cross are
        chosen by an exact rectangular assignment on their true costs $\|a - b\|_p^w$, not by the centres.
        Returns (pairs, the points left over, all of one side)."""
        a_ids = [i for i in ids if self._points[i][1] > 0]
        b_ids = [i for i in ids if self._points[i][1] < 0]
        if not a_ids or not b_ids:
            return [], ids
        C = lp_cost_matrix(np.stack([self._points[i][0] for i in a_ids]),
                           np.stack([self._points[i][0] for i in b_ids]), self.norm_p, self.wasserstein_p)
        rows, cols = linear_sum_assignment(C)
        used_a, used_b = set(rows.tolist()), set(cols.tolist())
        rest = [a for r, a in enumerate(a_ids) if r not in used_a] + [b for c, b in enumerate(b_ids) if c not in used_b]
        return [(a_ids[r], b_ids[c]) for r, c in zip(rows, cols)], rest


def _transport_exact(C: np.ndarray, supply: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Min-cost transport of min(Σ supply, Σ demand) integer units; the excess stays (zero-cost dummy).

    Single-source or single-sink problems are solved greedily by cost (optimal there); others by
    ``ot.emd`` (network simplex), whose vertex solutions are integral for integral amounts.
    """
    flow = np.zeros_like(C)
    if len(supply) == 1 or len(demand) == 1:
        if len(supply) == 1:
            left = supply[0]
            for j in np.argsort(C[0], kind="stable"):
                send = min(left, demand[j])
                flow[0, j] = send
                left -= send
                if left == 0:
                    break
        else:
            left = demand[0]
            for i in np.argsort(C[:, 0], kind="stable"):
                send = min(left, supply[i])
                flow[i, 0] = send
                left -= send
                if left == 0:
                    break
        return flow
    import ot

    gap = supply.sum() - demand.sum()
    a, b, M = supply, demand, C
    if gap > 0:  # dummy demand absorbs the excess supply at zero cost
        b, M = np.append(demand, gap), np.hstack([C, np.zeros((len(supply), 1))])
    elif gap < 0:
        a, M = np.append(supply, -gap), np.vstack([C, np.zeros((1, len(demand)))])
    plan = ot.emd(a, b, M)
    return np.rint(plan[: len(supply), : len(demand)])
