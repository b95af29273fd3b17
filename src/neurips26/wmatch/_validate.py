"""Input checks shared by the matchers: the declared constraints of their arguments, and the checks that depend
on a matcher's state (the dimension of its points, the coordinate limit of its costs) or on data content
(a metric matrix)."""

from __future__ import annotations

import functools
import math

import numpy as np

from neurips26.constraints import ArrayLike, Choice, Int, Optional, Real, check_arguments

SIDES = ("A", "B")
NORMALIZE = ("sum", "mean")

# the declared constraints of the matchers' public API (neurips26.constraints: "<func>: <arg> must be ...")
SIDE = Choice(*SIDES)
NORMALIZE_C = Choice(*NORMALIZE)
DIM = Int(low=1)
POINT_ID = Int()  # an int id (a bool is not id 1, a float is not an id)
SEED = Optional(Int(low=0))  # a seed for numpy.random.default_rng
NORM_P = Real(low=1.0, allow_inf=True)  # the l_p norm of the ground space: p >= 1 or math.inf
WASSERSTEIN_P = Int(low=1)
EPS = Real(low=0.0, high=1.0, closed="right")


@functools.lru_cache(maxsize=64)
def _shaped(spec: str) -> ArrayLike:
    return ArrayLike(spec)


def coordinate_limit(dim: int, wasserstein_p: int = 1) -> float:
    """The largest |coordinate| for which every cost ``||a - b||_p^w`` and sums of up to 1e6 of them stay
    finite in float64: ``(2 |x| d)^w * 1e6 <= 1e300``."""
    return 0.5 * (1e294 ** (1.0 / wasserstein_p)) / max(int(dim), 1)


def _check_range(arr: np.ndarray, name: str, limit: float | None) -> None:
    if limit is not None and arr.size and np.abs(arr).max() > limit:
        raise ValueError(f"{name} has a coordinate of magnitude {np.abs(arr).max():.3g}; the costs would overflow "
                         f"float64 (limit {limit:.3g} for this dim and wasserstein_p): rescale the points")


def check_point(x: object, dim: int, name: str = "x", *, limit: float | None = None) -> np.ndarray:
    """A finite float64 vector of length ``dim`` (coordinates at most ``limit`` in magnitude)."""
    check_arguments("", {name: _shaped(str(int(dim)))}, {name: x})
    arr = np.asarray(x, dtype=np.float64)
    _check_range(arr, name, limit)
    return arr


def check_points(X: object, dim: int | None, name: str = "X", *, limit: float | None = None) -> np.ndarray:
    """A finite float64 matrix ``[n, dim]`` (coordinates at most ``limit`` in magnitude)."""
    check_arguments("", {name: _shaped("n d" if dim is None else f"n {int(dim)}")}, {name: X})
    arr = np.asarray(X, dtype=np.float64)
    _check_range(arr, name, limit)
    return arr


def finish_cost(total: float, n_pairs: int, wasserstein_p: int, normalize: str) -> float:
    r"""``normalize="sum"``: $(\sum d^w)^{1/w}$ (the matchers' default: the cost of the matching);
    ``"mean"``: $(\frac1k \sum d^w)^{1/w}$ over the ``k`` pairs, POT's convention: with |A| = |B| = n it
    equals ``ot.emd2(ones(n)/n, ones(n)/n, C) ** (1/w)`` for ``C = D ** w``, i.e. W_w between the uniform
    empirical measures; the two differ by the factor ``k^{1/w}`` (300x at n = 300, w = 1)."""
    if n_pairs == 0:  # normalize: declared by every caller (NORMALIZE_C)
        return 0.0
    if normalize == "mean":
        total = total / n_pairs
    return float(max(total, 0.0) ** (1.0 / wasserstein_p))


def lp_distance(X: np.ndarray, y: np.ndarray, p: float) -> np.ndarray:
    """ℓ_p distances between the rows of ``X: [n, d]`` and ``y``: one point ``[d]`` (broadcast) or
    paired rows ``[n, d]``; shape ``[n]``."""
    diff = np.abs(X - y)
    if math.isinf(p):
        return diff.max(axis=-1)
    if p == 2.0:
        return np.sqrt((diff * diff).sum(axis=-1))
    if p == 1.0:
        return diff.sum(axis=-1)
    return (diff**p).sum(axis=-1) ** (1.0 / p)


def lp_cost_matrix(A: np.ndarray, B: np.ndarray, norm_p: float, wasserstein_p: int) -> np.ndarray:
    """``C[i, j] = ‖A_i − B_j‖_{norm_p}^{wasserstein_p}``, shape ``[len(A), len(B)]``."""
    from scipy.spatial.distance import cdist

    if math.isinf(norm_p):
        D = cdist(A, B, metric="chebyshev")
    else:
        D = cdist(A, B, metric="minkowski", p=norm_p)
    return D**wasserstein_p


def check_metric_matrix(D: object, *, check_triangle: bool = False, tol: float = 1e-9) -> np.ndarray:
    """A finite, non-negative, symmetric square matrix with zero diagonal (optionally the triangle
    inequality, O(N^3))."""
    check_arguments("", {"dist": ArrayLike("N N")}, {"dist": D})
    arr = np.asarray(D, dtype=np.float64)
    if (arr < 0).any():
        raise ValueError(f"dist must be non-negative, found the entry {arr.min()}")
    if not np.allclose(arr, arr.T, atol=tol, rtol=0):
        i, j = np.unravel_index(np.abs(arr - arr.T).argmax(), arr.shape)
        raise ValueError(f"dist must be symmetric, got dist[{i},{j}]={arr[i, j]} != dist[{j},{i}]={arr[j, i]}")
    if np.abs(np.diag(arr)).max(initial=0) > tol:
        raise ValueError(f"dist must have a zero diagonal, found {np.abs(np.diag(arr)).max()}")
    if check_triangle:
        n = arr.shape[0]
        for k in range(n):
            if (arr > arr[:, [k]] + arr[[k], :] + tol).any():
                raise ValueError(f"dist violates the triangle inequality through point {k}")
    return arr
