r"""TSP instances, tours and their lengths: the problem side of the routing package.

An instance is ``X`` of shape ``[B, n, 2]`` (``B`` instances of ``n`` cities in the plane); a tour is a
permutation ``pi`` of ``0..n-1`` (shape ``[B, n]``), closed implicitly by returning from ``pi_{n-1}`` to
``pi_0``. Its length is

$$L(\pi) = \sum_{k=0}^{n-1} d(x_{\pi_k}, x_{\pi_{(k+1) \bmod n}}),$$

with $d$ the Euclidean distance (``rounding="none"``, the convention for random instances) or TSPLIB's
EUC_2D ``nint`` distance $\lfloor d + 0.5 \rfloor$ (``rounding="nint_half_up"``; not ``np.rint``, which rounds
half to even and does not reproduce the published optima).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..constraints import ArrayLike, Choice, Int, check_arguments, validate

ROUNDINGS = ("none", "nint_half_up")

__all__ = ["ROUNDINGS", "as_instances", "augment_x8", "check_tours", "distance_matrix", "make_tsp_instances",
           "optimality_gap", "random_tours", "tour_length"]


# ------------------------------------------------------------------------------------------ validation
_COORDS = ArrayLike(dtype="numeric")  # finite; real, of shape [B >= 1, n, 2] below
_TOURS = ArrayLike(ndim=2, dtype="integer")


def _numpy(value: Any) -> Any:
    return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value


def as_instances(X: Any, *, name: str = "X", min_nodes: int = 3) -> np.ndarray:
    """Validate coordinates and return them as a float64 numpy array ``[B, n, 2]``.

    Accepts numpy arrays, torch tensors and nested lists; a single instance ``[n, 2]`` is refused (add the
    batch axis) so that shapes stay unambiguous.
    """
    check_arguments("", {name: _COORDS}, {name: X})
    arr = np.asarray(_numpy(X))
    if arr.dtype.kind == "c" or arr.ndim != 3 or arr.shape[-1] != 2 or arr.shape[0] < 1 or arr.shape[1] < min_nodes:
        raise ValueError(f"{name} must be real coordinates of shape [B, n, 2] (batch, cities, xy) with B >= 1 and "
                         f"n >= {min_nodes}, got a {arr.dtype} array of shape {list(arr.shape)}")
    return arr.astype(np.float64, copy=False)


def check_tours(tours: Any, batch: int, n: int, *, name: str = "tours") -> np.ndarray:
    """Validate that ``tours`` is ``[batch, n]`` integer permutations of ``0..n-1``; returns int64 numpy."""
    check_arguments("", {name: _TOURS}, {name: tours})
    arr = np.asarray(_numpy(tours))
    if arr.shape != (batch, n):
        raise ValueError(f"{name} must have shape [{batch}, {n}] to match X, got {list(arr.shape)}")
    ok = (np.sort(arr, axis=1) == np.arange(n)).all(axis=1)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"{name} must be permutations of 0..{n - 1}; row {bad} is not: {arr[bad].tolist()}")
    return arr.astype(np.int64, copy=False)


# ------------------------------------------------------------------------------------------ instances
@validate(n_instances=Int(low=1), n_nodes=Int(low=3), seed=Int(low=0))
def make_tsp_instances(n_instances: int, n_nodes: int, seed: int) -> np.ndarray:
    """Uniform random TSP instances in the unit square: float32 ``[n_instances, n_nodes, 2]``.

    ``seed`` fixes the instances (numpy ``default_rng``): the same arguments always give the same array.
    """
    rng = np.random.default_rng(int(seed))
    return rng.random((int(n_instances), int(n_nodes), 2), dtype=np.float32)


@validate(rounding=Choice(*ROUNDINGS))
def distance_matrix(X: Any, rounding: str = "none") -> np.ndarray:
    """Pairwise distances ``[B, n, n]`` (float64): Euclidean, or TSPLIB nint $\\lfloor d + 0.5\\rfloor$."""
    X = as_instances(X, min_nodes=1)
    # d_ij = sqrt((x_i - x_j)^2 + (y_i - y_j)^2), as hypot: no overflow from squaring huge coordinates
    with np.errstate(over="ignore"):
        diff = X[:, :, None, :] - X[:, None, :, :]
        dist = np.hypot(diff[..., 0], diff[..., 1])
    _check_finite_lengths(dist, X)
    return np.floor(dist + 0.5) if rounding == "nint_half_up" else dist


def _check_finite_lengths(values: np.ndarray, X: np.ndarray) -> None:
    """Finite coordinates whose distances or tour lengths exceed float64 (~1.8e308) are refused, not inf."""
    if not np.isfinite(values).all():
        raise ValueError(f"X has coordinates up to {np.abs(X).max():.3g}: its distances or tour lengths overflow "
                         "float64; rescale the instance (lengths scale linearly with the coordinates)")


@validate(batch=Int(low=1), n=Int(low=1), seed=Int(low=0))
def random_tours(batch: int, n: int, seed: int) -> np.ndarray:
    """Uniformly random permutations ``[batch, n]`` (int64), the no-skill reference for gaps."""
    rng = np.random.default_rng(int(seed))
    return np.argsort(rng.random((int(batch), int(n))), axis=1).astype(np.int64)


def augment_x8(X: Any) -> np.ndarray:
    r"""The 8 symmetries of the square applied to every instance: ``[8, B, n, 2]`` (float64).

    POMO's ×8 augmentation: with $(u, v) = (x - c_x, y - c_y)$ about the centre $c$ of the instance's bounding
    box, the images are $(\pm u, \pm v)$ and $(\pm v, \pm u)$ plus $c$ (index 0 is the identity). Each is an
    isometry, so a tour (a permutation) has the same Euclidean length on every image; a policy, which is not
    invariant, proposes different tours on them and the best is kept (:func:`~neurips26.routing.multi_start_construct`).
    On the unit square these are exactly POMO's $(x, y), (y, x), (1 - x, y), \dots$
    """
    Xn = as_instances(X)
    c = 0.5 * (Xn.min(axis=1, keepdims=True) + Xn.max(axis=1, keepdims=True))  # [B, 1, 2]
    u, v = Xn[..., 0] - c[..., 0], Xn[..., 1] - c[..., 1]
    images = [(u, v), (-u, v), (u, -v), (-u, -v), (v, u), (-v, u), (v, -u), (-v, -u)]
    return np.stack([np.stack((a + c[..., 0], b + c[..., 1]), axis=-1) for a, b in images])


# ------------------------------------------------------------------------------------------ lengths
@validate(rounding=Choice(*ROUNDINGS))
def tour_length(X: Any, tours: Any, rounding: str = "none") -> Any:
    r"""Closed-tour length $\sum_k d(x_{\pi_k}, x_{\pi_{k+1 \bmod n}})$ per instance: ``[B]``.

    Returns a float64 numpy array for numpy/list input and a float tensor (dtype of ``X``, or float32) for
    torch input; tours must be permutations.
    """
    torch_in = isinstance(X, torch.Tensor) or isinstance(tours, torch.Tensor)
    Xn = as_instances(X)
    pi = check_tours(tours, Xn.shape[0], Xn.shape[1])
    pts = np.take_along_axis(Xn, pi[:, :, None], axis=1)  # [B, n, 2] in tour order
    with np.errstate(over="ignore"):  # hypot does not square-then-root, so it overflows only if the length does
        step = np.roll(pts, -1, axis=1) - pts
        seg = np.hypot(step[..., 0], step[..., 1])  # [B, n] edge lengths
        if rounding == "nint_half_up":
            seg = np.floor(seg + 0.5)
        out = seg.sum(axis=1)
    _check_finite_lengths(out, Xn)
    if torch_in:
        dtype = X.dtype if isinstance(X, torch.Tensor) and X.is_floating_point() else torch.float32
        return torch.as_tensor(out, dtype=dtype)
    return out


@validate(length=ArrayLike(), ref=ArrayLike())
def optimality_gap(length: Any, ref: Any) -> np.ndarray:
    r"""Gap in percent, $100\,(L - L^\star)/L^\star$, elementwise; ``ref`` (finite tour lengths, like ``length``)
    must be positive, of ``length``'s shape or a scalar."""
    length = np.asarray(_numpy(length), dtype=np.float64)
    ref = np.asarray(_numpy(ref), dtype=np.float64)
    if length.shape != ref.shape and ref.ndim != 0:
        raise ValueError(f"length and ref must have the same shape, got {length.shape} and {ref.shape}")
    if (ref <= 0).any():
        raise ValueError(f"ref must be positive (a reference tour length), got min {float(ref.min())}")
    return 100.0 * (length - ref) / ref
