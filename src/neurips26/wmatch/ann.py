"""Dynamic (approximate) nearest-neighbour indices with deletion: the oracle the matchers query.

Every backend has the same small interface::

    index.add(ids, X)          # ids: [m] ints, X: [m, d]
    index.remove(ids)
    ids, dists = index.query(x, k=1)   # k nearest live points to x: [d] (fewer if fewer live)
    index.approx_factor        # c: the returned distance is <= c * the true nearest distance
                               # (1 for exact backends; for LSH a nominal, probabilistic value)

``BruteForceANN`` is exact for any ℓ_p; ``PStableLSH`` is the p-stable locality-sensitive hash of
Datar et al. (2004) for ℓ_1/ℓ_2 with O(K·T·d) insert/delete; ``FaissANN`` wraps faiss's exact flat
index (which supports ``remove_ids``) when faiss-cpu is installed.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from neurips26.constraints import ArrayLike, Choice, Int, Real, check_arguments, validate

from ._validate import DIM, NORM_P, SEED, check_point, check_points, lp_distance

K = Int(low=1)  # how many neighbours a query asks for
IDS = ArrayLike(ndim=(0, 1), dtype="integer", finite=False)  # point ids: integers (not bools), a scalar or [m]


class _IdArrayIndex:
    """Live points in a dense array with swap-remove, plus id <-> row maps."""

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)  # declared DIM by every subclass
        self._X = np.empty((16, dim))
        self._ids = np.empty(16, dtype=np.int64)
        self._row: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, pid: int) -> bool:
        return pid in self._row

    def _add_rows(self, ids: np.ndarray, X: np.ndarray) -> None:
        _check_new_ids(ids, X, self._row)
        need = len(self._row) + len(ids)
        if need > len(self._ids):
            cap = max(need, 2 * len(self._ids))
            self._X = np.resize(self._X, (cap, self.dim))
            self._ids = np.resize(self._ids, cap)
        for pid, x in zip(ids.tolist(), X):  # _check_new_ids: every pid is new
            row = len(self._row)
            self._X[row], self._ids[row] = x, pid
            self._row[pid] = row

    def _remove_rows(self, ids: np.ndarray) -> None:
        if len(np.unique(ids)) != len(ids):
            raise ValueError("ids must be unique within one remove call")
        for pid in ids.tolist():
            if pid not in self._row:
                raise ValueError(f"id {pid} is not in the index")
        for pid in ids.tolist():
            row, last = self._row.pop(pid), len(self._row)
            if row != last:
                moved = int(self._ids[last])
                self._X[row], self._ids[row] = self._X[last], moved
                self._row[moved] = row

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        n = len(self._row)
        return self._ids[:n], self._X[:n]


def _check_new_ids(ids: np.ndarray, X: np.ndarray, live: object) -> None:
    """Everything ``add`` needs (data content: lengths, repeats, ids already ``live``), checked before any
    row is written."""
    if len(ids) != len(X):
        raise ValueError(f"ids and X must have the same length, got {len(ids)} and {len(X)}")
    if len(np.unique(ids)) != len(ids):
        raise ValueError("ids must be unique within one add call")
    dup = [pid for pid in ids.tolist() if pid in live]
    if dup:
        raise ValueError(f"ids already in the index: {dup[:5]}")


def _check_query(x: object, k: object, dim: int) -> tuple[np.ndarray, int]:
    return check_point(x, dim, "x"), int(k)  # k: declared K by every query


def _as_ids(ids: object) -> np.ndarray:
    check_arguments("", {"ids": IDS}, {"ids": ids})
    return np.atleast_1d(np.asarray(ids)).astype(np.int64)


class BruteForceANN(_IdArrayIndex):
    """Exact nearest neighbours by a linear scan, any ℓ_p norm (``approx_factor = 1``)."""

    approx_factor = 1.0

    @validate(dim=DIM, norm_p=NORM_P)
    def __init__(self, dim: int, *, norm_p: float = 2.0) -> None:
        super().__init__(dim)
        self.norm_p = float(norm_p)

    def add(self, ids: object, X: object) -> None:
        ids_arr = _as_ids(ids)
        X_arr = check_points(np.atleast_2d(X), self.dim)
        self._add_rows(ids_arr, X_arr)

    def remove(self, ids: object) -> None:
        self._remove_rows(_as_ids(ids))

    @validate(k=K)
    def query(self, x: object, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest live points to ``x: [dim]``: ``(ids [k'], distances [k'])``, k' = min(k, n)."""
        x_arr, k = _check_query(x, k, self.dim)
        ids, X = self.points()
        if len(ids) == 0:
            return np.empty(0, dtype=np.int64), np.empty(0)
        dists = lp_distance(X, x_arr, self.norm_p)
        k = min(k, len(ids))
        top = np.argpartition(dists, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
        top = top[np.argsort(dists[top], kind="stable")]
        return ids[top].copy(), dists[top]


class PStableLSH(_IdArrayIndex):
    r"""p-stable LSH (Datar, Immorlica, Indyk, Mirrokni 2004) for ℓ_1 (Cauchy) or ℓ_2 (Gaussian).

    Each of ``n_tables`` tables hashes $x$ to the tuple of ``n_hashes`` values
    $h(x) = \lfloor (a \cdot x + b) / w \rfloor$, $a$ with i.i.d. p-stable entries, $b \sim U[0, w)$.
    A query scans the union of its buckets and returns exact distances among those candidates; an
    empty union falls back to a linear scan (so a query always answers). Insert/delete cost
    O(n_tables · n_hashes · d). ``approx_factor`` is the nominal c the parameters were set for: the
    guarantee is probabilistic, and the tests measure it.
    """

    @validate(dim=DIM, norm_p=NORM_P, bucket_width=Real(low=0.0, closed="neither"),
              n_hashes=Int(low=1), n_tables=Int(low=1), approx_factor=Real(low=1.0), seed=SEED)
    def __init__(self, dim: int, *, norm_p: float = 2.0, bucket_width: float = 1.0, n_hashes: int = 4,
                 n_tables: int = 8, approx_factor: float = 2.0, seed: int = 0) -> None:
        if float(norm_p) not in (1.0, 2.0):  # a p-stable law is known in closed form for these two only
            raise ValueError(f"PStableLSH supports norm_p 1 or 2, got {norm_p!r}")
        super().__init__(dim)
        self.norm_p, self.bucket_width, self.approx_factor = float(norm_p), float(bucket_width), approx_factor
        rng = np.random.default_rng(seed)
        shape = (n_tables, n_hashes, dim)
        self._a = rng.standard_cauchy(shape) if self.norm_p == 1.0 else rng.standard_normal(shape)
        self._b = rng.uniform(0, bucket_width, size=(n_tables, n_hashes))
        self._tables: list[defaultdict[tuple, set[int]]] = [defaultdict(set) for _ in range(n_tables)]
        self._keys: dict[int, list[tuple]] = {}

    def _hash(self, X: np.ndarray) -> np.ndarray:
        """``[m, d]`` -> integer codes ``[m, n_tables, n_hashes]``."""
        return np.floor((np.einsum("thd,md->mth", self._a, X) + self._b) / self.bucket_width).astype(np.int64)

    def add(self, ids: object, X: object) -> None:
        ids_arr = _as_ids(ids)
        X_arr = check_points(np.atleast_2d(X), self.dim)
        _check_new_ids(ids_arr, X_arr, self._row)
        self._add_rows(ids_arr, X_arr)
        for pid, codes in zip(ids_arr.tolist(), self._hash(X_arr)):
            keys = [tuple(row) for row in codes.tolist()]
            self._keys[pid] = keys
            for table, key in zip(self._tables, keys):
                table[key].add(pid)

    def remove(self, ids: object) -> None:
        ids_arr = _as_ids(ids)
        self._remove_rows(ids_arr)
        for pid in ids_arr.tolist():
            for table, key in zip(self._tables, self._keys.pop(pid)):
                bucket = table[key]
                bucket.discard(pid)
                if not bucket:
                    del table[key]

    @validate(k=K)
    def query(self, x: object, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        x_arr, k = _check_query(x, k, self.dim)
        codes = self._hash(x_arr[None])[0]
        candidates: set[int] = set()
        for table, row in zip(self._tables, codes.tolist()):
            candidates |= table.get(tuple(row), set())
        ids, X = self.points()
        if not candidates:
            rows = np.arange(len(ids))
        else:
            rows = np.fromiter((self._row[c] for c in candidates), dtype=np.int64, count=len(candidates))
        if len(rows) == 0:
            return np.empty(0, dtype=np.int64), np.empty(0)
        dists = lp_distance(X[rows], x_arr, self.norm_p)
        order = np.argsort(dists, kind="stable")[:k]
        return ids[rows[order]].copy(), dists[order]


class FaissANN:
    """Exact ℓ_1/ℓ_2/ℓ_∞ search with faiss's ``IndexIDMap(IndexFlat)`` (supports ``remove_ids``).

    Needs ``faiss-cpu``; raises ``ImportError`` with the install hint when it is missing.
    """

    approx_factor = 1.0

    @validate(dim=DIM, norm_p=NORM_P)
    def __init__(self, dim: int, *, norm_p: float = 2.0) -> None:
        try:
            import faiss
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError("FaissANN needs faiss-cpu: pip install faiss-cpu") from err
        self.dim, self.norm_p = int(dim), float(norm_p)
        metrics = {1.0: faiss.METRIC_L1, 2.0: faiss.METRIC_L2, math.inf: faiss.METRIC_Linf}
        if self.norm_p not in metrics:
            raise ValueError(f"FaissANN supports norm_p 1, 2 or inf, got {norm_p!r}")
        self._index = faiss.IndexIDMap(faiss.IndexFlat(dim, metrics[self.norm_p]))
        self._live: set[int] = set()

    def __len__(self) -> int:
        return len(self._live)

    def add(self, ids: object, X: object) -> None:
        ids_arr = _as_ids(ids)
        X_arr = check_points(np.atleast_2d(X), self.dim)
        _check_new_ids(ids_arr, X_arr, self._live)
        self._index.add_with_ids(np.ascontiguousarray(X_arr, dtype=np.float32), ids_arr)
        self._live.update(ids_arr.tolist())

    def remove(self, ids: object) -> None:
        ids_arr = _as_ids(ids)
        missing = set(ids_arr.tolist()) - self._live
        if missing:
            raise ValueError(f"ids not in the index: {sorted(missing)[:5]}")
        self._index.remove_ids(ids_arr)
        self._live.difference_update(ids_arr.tolist())

    @validate(k=K)
    def query(self, x: object, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        x_arr, k = _check_query(x, k, self.dim)
        k = min(k, len(self._live))
        if k == 0:
            return np.empty(0, dtype=np.int64), np.empty(0)
        q = np.ascontiguousarray(x_arr.astype(np.float32)[None])
        dists, ids = self._index.search(q, k)
        dists = dists[0].astype(np.float64)
        if self.norm_p == 2.0:
            dists = np.sqrt(np.maximum(dists, 0.0))  # faiss returns squared ℓ_2
        return ids[0].astype(np.int64), dists


@validate(kind=Choice("bruteforce", "lsh", "faiss"))
def make_ann(kind: str, dim: int, norm_p: float, *, seed: int = 0):
    """Build an index by name: ``"bruteforce"``, ``"lsh"`` or ``"faiss"``."""
    if kind == "bruteforce":
        return BruteForceANN(dim, norm_p=norm_p)
    if kind == "lsh":
        return PStableLSH(dim, norm_p=norm_p, seed=seed)
    return FaissANN(dim, norm_p=norm_p)
