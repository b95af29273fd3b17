"""Input checks shared by the matchers: points, sides, norms, metrics."""

from __future__ import annotations

import math

import numpy as np

SIDES = ("A", "B")


def check_side(side: object) -> str:
    if side not in SIDES:
        raise ValueError(f"side must be 'A' or 'B', got {side!r}")
    return side  # type: ignore[return-value]


def coordinate_limit(dim: int, wasserstein_p: int = 1) -> float:
    """The largest |coordinate| for which every cost ``||a - b||_p^w`` and sums of up to 1e6 of them stay
    finite in float64: ``(2 |x| d)^w * 1e6 <= 1e300``."""
    return 0.5 * (1e294 ** (1.0 / wasserstein_p)) / max(int(dim), 1)


def _as_float(x: object, name: str) -> np.ndarray:
    if isinstance(x, str | bytes):
        raise TypeError(f"{name} must be numeric coordinates, got a string")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be numeric coordinates; {err}") from err
    return arr


def _check_range(arr: np.ndarray, name: str, limit: float | None) -> None:
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must have finite coordinates (found NaN or inf)")
    if limit is not None and arr.size and np.abs(arr).max() > limit:
        raise ValueError(f"{name} has a coordinate of magnitude {np.abs(arr).max():.3g}; the costs would overflow "
                         f"float64 (limit {limit:.3g} for this dim and wasserstein_p): rescale the points")


def check_point(x: object, dim: int, name: str = "x", *, limit: float | None = None) -> np.ndarray:
    """A finite float64 vector of length ``dim`` (coordinates at most ``limit`` in magnitude)."""
    arr = _as_float(x, name)
    if arr.shape != (dim,):
        raise ValueError(f"{name} must be a point of shape ({dim},), got shape {arr.shape}")
    _check_range(arr, name, limit)
    return arr


def check_points(X: object, dim: int | None, name: str = "X", *, limit: float | None = None) -> np.ndarray:
    """A finite float64 matrix ``[n, dim]`` (coordinates at most ``limit`` in magnitude)."""
    arr = _as_float(X, name)
    if arr.ndim != 2 or (dim is not None and arr.shape[1] != dim):
        want = f"[n, {dim}]" if dim is not None else "[n, d]"
        raise ValueError(f"{name} must be an array of shape {want}, got shape {arr.shape}")
    _check_range(arr, name, limit)
    return arr


def check_point_id(pid: object, name: str = "pid") -> int:
    """A point id: an int (``bool`` refused: ``True`` is not id 1)."""
    if isinstance(pid, bool | np.bool_) or not isinstance(pid, int | np.integer):
        raise TypeError(f"{name} must be an int point id, got {pid!r} ({type(pid).__name__})")
    return int(pid)


NORMALIZE = ("sum", "mean")


def check_normalize(normalize: object) -> str:
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be 'sum' or 'mean', got {normalize!r}")
    return normalize  # type: ignore[return-value]


def check_dim(dim: object) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
        raise ValueError(f"dim must be a positive int, got {dim!r}")
    return int(dim)


def check_int_arg(value: object, name: str, low: int) -> int:
    """An int (never a bool or a float) ``>= low``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def check_seed(seed: object) -> int | None:
    """A seed for ``numpy.random.default_rng``: a non-negative int (or None)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    return int(seed)


def check_eps(eps: object) -> float:
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps <= 1:
        raise ValueError(f"eps must be a number in (0, 1], got {eps!r}")
    return float(eps)


def finish_cost(total: float, n_pairs: int, wasserstein_p: int, normalize: str) -> float:
    r"""``normalize="sum"``: $(\sum d^w)^{1/w}$ (the matchers' default: the cost of the matching);
    ``"mean"``: $(\frac1k \sum d^w)^{1/w}$ over the ``k`` pairs, POT's convention: with |A| = |B| = n it
    equals ``ot.emd2(ones(n)/n, ones(n)/n, C) ** (1/w)`` for ``C = D ** w``, i.e. W_w between the uniform
    empirical measures; the two differ by the factor ``k^{1/w}`` (300x at n = 300, w = 1)."""
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be 'sum' or 'mean', got {normalize!r}")
    if n_pairs == 0:
        return 0.0
    if normalize == "mean":
        total = total / n_pairs
    return float(max(total, 0.0) ** (1.0 / wasserstein_p))


def check_norm_p(p: object) -> float:
    if not isinstance(p, int | float) or isinstance(p, bool) or not (p >= 1):
        raise ValueError(f"norm_p must be a number >= 1 (or math.inf), got {p!r}")
    return float(p)


def check_wasserstein_p(p: object) -> int:
    if not isinstance(p, int) or isinstance(p, bool) or p < 1:
        raise ValueError(f"wasserstein_p must be an integer >= 1, got {p!r}")
    return p


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
    arr = np.asarray(D, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"dist must be a square distance matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("dist must be finite (found NaN or inf)")
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
