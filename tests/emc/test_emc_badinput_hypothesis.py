"""emc properties over drawn shapes and values (issue 16, shared strategies in tests/_strategies.py)."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from _strategies import FAST, bad_numbers, finite_arrays, with_one_nonfinite
from neurips26.emc import crystal_objective, crystallize, ridge_fit, weighted_moments

POINTS = finite_arrays(st.tuples(st.integers(2, 8), st.integers(1, 4)), low=-10, high=10)


@FAST
@given(z=POINTS, data=st.data())
def test_weighted_moments_match_numpy(z, data):
    w = data.draw(finite_arrays(st.just(z.shape[0]), low=0.1, high=5.0))
    mu, cov, mass = weighted_moments(torch.from_numpy(z), torch.from_numpy(w))
    np.testing.assert_allclose(mu.numpy(), np.average(z, axis=0, weights=w), atol=1e-9)
    np.testing.assert_allclose(cov.numpy(), np.cov(z.T, aweights=w, bias=True).reshape(cov.shape), atol=1e-8)
    assert mass == pytest.approx(w.sum())


@FAST
@given(z=POINTS, rank=st.integers(1, 4))
def test_crystal_keeps_the_mean_and_the_best_rank_r_covariance(z, rank):
    zt = torch.from_numpy(z)
    mu, cov, _ = weighted_moments(zt)
    r = min(rank, z.shape[1])
    pts = crystallize(mu, cov, r)
    lam = torch.linalg.eigvalsh(cov).flip(0).clamp_min(0)
    # L* = sum of the squared dropped eigenvalues (Eckart-Young), reached by the closed form
    assert float(crystal_objective(pts, mu, cov)) == pytest.approx(float((lam[r:] ** 2).sum()), abs=1e-8)


@FAST
@given(drawn=with_one_nonfinite(POINTS))
def test_ridge_fit_refuses_a_nonfinite_feature_anywhere(drawn):
    z, _, _ = drawn
    with pytest.raises(ValueError, match="z"):
        ridge_fit(torch.from_numpy(z), torch.zeros(z.shape[0], 2, dtype=torch.float64), 0.3)


@FAST
@given(bad=bad_numbers())
def test_ridge_fit_refuses_every_bad_penalty(bad):
    with pytest.raises((ValueError, TypeError), match="ridge"):
        ridge_fit(torch.randn(4, 2), torch.randn(4, 2), bad)
