"""Reference solvers: Held-Karp vs brute force; LKH / fast-tsp / PyVRP vs the optimum; TSPLIB optima."""

import importlib.util
import itertools

import numpy as np
import pytest

from neurips26.data import DatasetNotFoundError
from neurips26.routing import (
    distance_matrix,
    make_tsp_instances,
    resolve_tsp_backend,
    solve_tsp_reference,
    tour_length,
)


def _brute_force(D):
    n = len(D)
    best = np.inf
    for perm in itertools.permutations(range(1, n)):
        t = (0, *perm)
        best = min(best, sum(D[t[k], t[(k + 1) % n]] for k in range(n)))
    return best


@pytest.mark.parametrize("n", [3, 4, 5, 7, 8])
def test_exact_equals_brute_force(n):
    X = make_tsp_instances(6, n, seed=n)
    tours = solve_tsp_reference(X, "exact")
    assert (tours[:, 0] == 0).all()
    D = distance_matrix(X)
    np.testing.assert_allclose(tour_length(X, tours), [_brute_force(D[b]) for b in range(6)], rtol=1e-12)


def test_exact_nint_equals_brute_force():
    X = make_tsp_instances(4, 7, seed=11) * 50
    tours = solve_tsp_reference(X, "exact", rounding="nint_half_up")
    D = distance_matrix(X, "nint_half_up")
    np.testing.assert_array_equal(tour_length(X, tours, "nint_half_up"), [_brute_force(D[b]) for b in range(4)])


@pytest.mark.parametrize("backend", ["elkai", "fast_tsp", "pyvrp"])
def test_backend_matches_exact(backend):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} not installed")
    X = make_tsp_instances(5, 10, seed=2)
    opt = tour_length(X, solve_tsp_reference(X, "exact"))
    got = tour_length(X, solve_tsp_reference(X, backend, max_iterations=300))
    np.testing.assert_allclose(got, opt, rtol=1e-6)


def _tsplib(name):
    from neurips26.data import load_tsplib_small

    try:
        inst = {i["name"]: i for i in load_tsplib_small()}[name]
    except DatasetNotFoundError:
        pytest.skip("tsplib_small data not present")
    return np.asarray(inst["coords"], dtype=float)[None], inst["optimal_cost"]


@pytest.mark.parametrize("backend", ["elkai", "fast_tsp"])
@pytest.mark.parametrize("name", ["eil51", "berlin52"])
def test_tsplib_optimum(backend, name):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} not installed")
    X, opt = _tsplib(name)
    tour = solve_tsp_reference(X, backend, rounding="nint_half_up", time_s=3.0)
    assert tour_length(X, tour, rounding="nint_half_up")[0] == opt


def test_exact_refuses_large_n():
    with pytest.raises(ValueError, match="n <= 12"):
        solve_tsp_reference(make_tsp_instances(1, 13, seed=0), "exact")


def test_unknown_and_missing_backend(monkeypatch):
    with pytest.raises(ValueError, match="backend must be one of"):
        solve_tsp_reference(make_tsp_instances(1, 5, seed=0), "concorde")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "elkai" else real(name, *a))
    with pytest.raises(ImportError, match=r"neurips26\[lkh\]"):
        resolve_tsp_backend("elkai", 20)
