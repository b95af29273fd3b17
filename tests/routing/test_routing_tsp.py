"""Instances, tour lengths (vs a plain loop), TSPLIB nint rounding, gaps and bad input."""

import math

import numpy as np
import pytest
import torch

from neurips26.routing import make_tsp_instances, optimality_gap, random_tours, tour_length


def _loop_length(pts, tour, nint=False):
    total = 0.0
    for k in range(len(tour)):
        a, b = pts[tour[k]], pts[tour[(k + 1) % len(tour)]]
        d = math.hypot(a[0] - b[0], a[1] - b[1])
        total += math.floor(d + 0.5) if nint else d
    return total


def test_instances_seeded_shape_range():
    X = make_tsp_instances(5, 7, seed=3)
    assert X.shape == (5, 7, 2) and X.dtype == np.float32
    assert (X >= 0).all() and (X <= 1).all()
    np.testing.assert_array_equal(X, make_tsp_instances(5, 7, seed=3))
    assert not np.array_equal(X, make_tsp_instances(5, 7, seed=4))


@pytest.mark.parametrize("rounding", ["none", "nint_half_up"])
def test_tour_length_matches_loop(rounding):
    X = make_tsp_instances(6, 9, seed=0) * 100
    tours = random_tours(6, 9, seed=1)
    got = tour_length(X, tours, rounding=rounding)
    ref = [_loop_length(X[b].astype(float), tours[b], rounding == "nint_half_up") for b in range(6)]
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_tour_length_torch_in_torch_out():
    X = torch.as_tensor(make_tsp_instances(2, 5, seed=0))
    tours = torch.as_tensor(random_tours(2, 5, seed=0))
    out = tour_length(X, tours)
    assert isinstance(out, torch.Tensor) and out.shape == (2,)


def test_nint_rounds_half_up_not_to_even():
    # a distance of exactly 2.5 is 3 in TSPLIB (floor(d + 0.5)); np.rint would give 2
    X = np.array([[[0.0, 0.0], [2.5, 0.0], [2.5, 0.0]]])
    assert tour_length(X, np.array([[0, 1, 2]]), rounding="nint_half_up")[0] == 6.0
    assert np.rint(2.5) == 2.0


def test_gap():
    np.testing.assert_allclose(optimality_gap([11.0, 10.0], [10.0, 10.0]), [10.0, 0.0])
    with pytest.raises(ValueError, match="ref must be positive"):
        optimality_gap([1.0], [0.0])


@pytest.mark.parametrize("X, match", [
    (np.zeros((4, 2)), r"shape \[B, n, 2\]"),
    (np.zeros((1, 4, 3)), r"shape \[B, n, 2\]"),
    (np.zeros((1, 2, 2)), "n >= 3"),
    (np.full((1, 4, 2), np.nan), "finite"),
])
def test_bad_instances(X, match):
    with pytest.raises(ValueError, match=match):
        tour_length(X, np.zeros((1, X.shape[1] if X.ndim == 3 else 4), dtype=np.int64))


def test_bad_tours():
    X = make_tsp_instances(1, 4, seed=0)
    with pytest.raises(ValueError, match="permutations"):
        tour_length(X, np.array([[0, 1, 1, 2]]))
    with pytest.raises(ValueError, match=r"shape \[1, 4\]"):
        tour_length(X, np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="integer array"):  # a wrong dtype is a value error of the declaration
        tour_length(X, np.array([[0.0, 1, 2, 3]]))
    with pytest.raises(ValueError, match="rounding"):
        tour_length(X, np.array([[0, 1, 2, 3]]), rounding="rint")


def test_bad_generator_args():
    with pytest.raises(ValueError, match="n_nodes"):
        make_tsp_instances(2, 2, seed=0)
    with pytest.raises(ValueError, match="seed"):
        make_tsp_instances(2, 5, seed=-1)
