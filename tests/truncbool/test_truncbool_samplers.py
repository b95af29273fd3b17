"""Oracles and exact samplers against enumeration, closed forms and brute-force loops."""

import itertools
import math

import numpy as np
import pytest

from neurips26.truncbool import (
    CallableOracle,
    IntHalfspace,
    Parity,
    RejectionLimitError,
    SubcubeUnion,
    WeightBand,
    block_completions,
    flip_feasible,
    log_mass,
    sample_truncated_product,
)


def _brute_pmf(z, member):
    """Exact μ_{z,S} by a pure-Python loop over {0,1}^n (independent of the library's enumeration)."""
    pts, w = [], []
    for x in itertools.product((0, 1), repeat=len(z)):
        if member(x):
            pts.append(x)
            w.append(math.exp(sum(zi * xi for zi, xi in zip(z, x))))
    tot = sum(w)
    return {p: wi / tot for p, wi in zip(pts, w)}, tot / math.prod(1 + math.exp(zi) for zi in z)


CASES = [
    ("band", WeightBand(2), lambda x: sum(x) <= 2, 8),
    ("parity_even", Parity(True), lambda x: sum(x) % 2 == 0, 7),
    ("parity_odd", Parity(False), lambda x: sum(x) % 2 == 1, 6),
    ("halfspace", IntHalfspace([1, 2, 3, -1, 2, 1, 3, -2], 4),
     lambda x: sum(a * v for a, v in zip([1, 2, 3, -1, 2, 1, 3, -2], x)) <= 4, 8),
]


@pytest.mark.parametrize("name, oracle, member, n", CASES, ids=[c[0] for c in CASES])
def test_dp_sampler_matches_enumeration(name, oracle, member, n):
    rng = np.random.default_rng(1)
    z = rng.uniform(-1.5, 1.5, n)
    pmf, mass = _brute_pmf(z, member)
    assert abs(log_mass(z, oracle) - math.log(mass)) < 1e-12
    m = 60_000
    X = sample_truncated_product(z, oracle, m, rng=2)
    assert X.shape == (m, n) and X.dtype == np.int8
    assert all(member(tuple(r)) for r in np.unique(X, axis=0))
    keys, cnt = np.unique(X, axis=0, return_counts=True)
    emp = {tuple(int(v) for v in k): c / m for k, c in zip(keys, cnt)}
    tv = 0.5 * sum(abs(emp.get(p, 0.0) - q) for p, q in pmf.items())
    # expected TV of an m-sample empirical law is about sqrt(|S| / (2 pi m)); allow 3x that
    assert tv < 3 * math.sqrt(len(pmf) / (2 * math.pi * m))


def test_band_mass_tiny_closed_form():
    n, k = 1024, 256
    # uniform z = 0: mu(S) = sum_{j<=k} C(n, j) / 2^n, about 1e-60
    logs = [math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) for j in range(k + 1)]
    top = max(logs)
    exact = top + math.log(sum(math.exp(v - top) for v in logs)) - n * math.log(2)
    assert exact < math.log(1e-55)
    assert abs(log_mass(np.zeros(n), WeightBand(k)) - exact) < 1e-9
    X = sample_truncated_product(np.zeros(n), WeightBand(k), 500, rng=0)
    assert X.sum(axis=1).max() <= k
    # under z = 0 the truncated weight concentrates at the top of the band
    assert X.sum(axis=1).mean() > k - 3


def test_rejection_fallback_matches_enumeration():
    cubes = ["1*0*0", "0*1**", "11111"]
    oracle = SubcubeUnion(cubes)

    def member(x):
        return any(all(c == "*" or int(c) == v for c, v in zip(cube, x)) for cube in cubes)

    z = np.array([0.5, -1.0, 0.3, 1.2, -0.4])
    pmf, mass = _brute_pmf(z, member)
    assert abs(math.exp(log_mass(z, oracle)) - mass) < 1e-12
    X = sample_truncated_product(z, oracle, 40_000, rng=3)
    keys, cnt = np.unique(X, axis=0, return_counts=True)
    emp = {tuple(int(v) for v in k): c / X.shape[0] for k, c in zip(keys, cnt)}
    assert set(emp) <= set(pmf)
    assert 0.5 * sum(abs(emp.get(p, 0.0) - q) for p, q in pmf.items()) < 0.03


def test_rejection_cap_raises():
    oracle = CallableOracle(lambda X: X.sum(axis=1) == 0, name="all_zero")
    with pytest.raises(RejectionLimitError, match="max_tries"):
        sample_truncated_product(np.full(30, 2.0), oracle, 5, rng=0, max_tries=1000)


def _generic(oracle):
    """The same set behind a plain callable: the library must use its generic (flip-and-call) path."""
    return CallableOracle(lambda X: oracle(X), name="generic")


@pytest.mark.parametrize("oracle", [WeightBand(3), Parity(True), IntHalfspace([2, -1, 3, 1, 1, -2], 2)],
                         ids=["band", "parity", "halfspace"])
def test_fast_paths_match_generic(oracle):
    rng = np.random.default_rng(4)
    X = (rng.random((300, 6)) < 0.4).astype(np.int8)
    X = X[oracle(X)]
    gen = _generic(oracle)
    for i in range(6):
        np.testing.assert_array_equal(flip_feasible(oracle, X, i), flip_feasible(gen, X, i))
        # brute force: flip, then ask
        Y = X.copy()
        Y[:, i] ^= 1
        np.testing.assert_array_equal(flip_feasible(oracle, X, i), oracle(Y))
    for blk in [(0, 1), (2, 5), (4, 3)]:
        np.testing.assert_array_equal(block_completions(oracle, X, blk), block_completions(gen, X, blk))


def test_subcube_membership_loop():
    oracle = SubcubeUnion([[1, -1, 0], [-1, 1, 1]])
    cube = np.array(list(itertools.product((0, 1), repeat=3)), dtype=np.int8)
    want = [(x[0] == 1 and x[2] == 0) or (x[1] == 1 and x[2] == 1) for x in cube.tolist()]
    np.testing.assert_array_equal(oracle(cube), want)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: sample_truncated_product(np.zeros(5), WeightBand(2, n=4), 3), ValueError, "length 5"),
    (lambda: sample_truncated_product(np.zeros((2, 2)), WeightBand(1), 3), ValueError, r"z must be an array \[N\]"),
    (lambda: sample_truncated_product([0.0, np.nan], WeightBand(1), 3), ValueError, "finite"),
    (lambda: sample_truncated_product(np.zeros(3), WeightBand(1), -1), ValueError, "m must be"),
    (lambda: sample_truncated_product(np.zeros(3), WeightBand(1), 2, rng="x"), TypeError, "rng"),
    (lambda: WeightBand(-1), ValueError, "k must be"),
    (lambda: IntHalfspace([1.5, 2], 1), ValueError, "integers"),
    (lambda: SubcubeUnion(["01", "0*1"]), ValueError, "equal length"),
    (lambda: SubcubeUnion(["0x"]), ValueError, "'0', '1', '\\*'"),
    (lambda: sample_truncated_product(np.zeros(3), IntHalfspace([1, 1, 1], -1), 2), ValueError, "empty"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_malformed_oracle_answer():
    bad_shape = CallableOracle(lambda X: np.ones((X.shape[0], 1), dtype=bool))
    with pytest.raises(ValueError, match="shape"):
        bad_shape(np.zeros((3, 2), dtype=np.int8))
    bad_dtype = CallableOracle(lambda X: np.full(X.shape[0], 0.5))
    with pytest.raises(ValueError, match="booleans"):
        bad_dtype(np.zeros((3, 2), dtype=np.int8))
