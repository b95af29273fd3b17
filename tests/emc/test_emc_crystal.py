"""The closed-form crystal and ridge classifier against direct numerical optimisation."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from neurips26.emc import crystal_objective, crystallize, ridge_fit, ridge_predict, weighted_moments


def _random_spd(h: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(h, h, generator=g, dtype=torch.float64)
    return a @ a.T / h + 0.1 * torch.eye(h, dtype=torch.float64)


@pytest.mark.parametrize("h,r,seed", [(3, 1, 0), (4, 2, 1), (5, 2, 2), (6, 3, 3)])
def test_closed_form_matches_numerical_minimum_over_symmetric_crystals(h, r, seed):
    cov = _random_spd(h, seed)
    mean = torch.randn(h, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 10))
    closed = float(crystal_objective(crystallize(mean, cov, r), mean, cov))
    # Eckart-Young: the optimum over rank-r PSD covariances leaves the h - r smallest eigenvalues^2
    evals = torch.linalg.eigvalsh(cov)
    assert closed == pytest.approx(float((evals[: h - r] ** 2).sum()), rel=1e-8, abs=1e-10)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        t = torch.tensor(theta, requires_grad=True)
        c, v = t[:h], t[h:].reshape(r, h)
        value = crystal_objective(torch.cat([c + v, c - v]), mean, cov)
        value.backward()
        return float(value), t.grad.numpy()

    rng = np.random.default_rng(seed)
    best = min(minimize(objective, rng.standard_normal(h + r * h), jac=True, method="BFGS",
                        options={"gtol": 1e-10, "maxiter": 5000}).fun for _ in range(3))
    # the numerical optimiser can get no lower than the closed form, and reaches it
    assert closed <= best + 1e-7
    assert best == pytest.approx(closed, rel=1e-4, abs=1e-7)


def test_crystal_matches_mean_and_rank_r_covariance_exactly():
    cov = _random_spd(8, 5)
    mean = torch.arange(8, dtype=torch.float64)
    pts = crystallize(mean, cov, 3)
    assert pts.shape == (6, 8)
    torch.testing.assert_close(pts.mean(0), mean)
    evals, evecs = torch.linalg.eigh(cov)
    cov_r = (evecs[:, -3:] * evals[-3:]) @ evecs[:, -3:].T
    c = pts - pts.mean(0)
    torch.testing.assert_close(c.T @ c / 6, cov_r)


def test_crystallize_full_rank_reproduces_covariance_and_clamps_negative_eigenvalues():
    cov = _random_spd(4, 7)
    pts = crystallize(torch.zeros(4, dtype=torch.float64), cov, 4)
    c = pts - pts.mean(0)
    torch.testing.assert_close(c.T @ c / 8, cov)
    bad = torch.diag(torch.tensor([1.0, -1e-7, 2.0], dtype=torch.float64))
    assert torch.isfinite(crystallize(torch.zeros(3, dtype=torch.float64), bad, 3)).all()


def test_weighted_moments_match_numpy():
    rng = np.random.default_rng(0)
    z, w = rng.standard_normal((50, 4)), rng.random(50)
    mu, cov, mass = weighted_moments(torch.tensor(z), torch.tensor(w))
    np.testing.assert_allclose(mu.numpy(), np.average(z, axis=0, weights=w))
    np.testing.assert_allclose(cov.numpy(), np.cov(z.T, aweights=w, bias=True))
    assert mass == pytest.approx(w.sum())


def test_ridge_matches_numerical_minimisation_of_its_objective():
    rng = np.random.default_rng(1)
    n, h, c, lam = 30, 5, 3, 0.3
    z = rng.standard_normal((n, h)) * rng.uniform(0.5, 3, h) + rng.standard_normal(h)
    y = np.eye(c)[rng.integers(0, c, n)]
    w = rng.uniform(0.5, 2.0, n)
    params = ridge_fit(torch.tensor(z), torch.tensor(y), lam, torch.tensor(w), eps=0.0)
    # objective: (1/n) sum_i w_i ||zh_i W + b - y_i||^2 + lam ||W||^2, weights normalised to sum n
    wn = w * n / w.sum()
    m = (wn[:, None] * z).sum(0) / n
    s = np.sqrt((wn[:, None] * (z - m) ** 2).sum(0) / n)
    zh = (z - m) / s

    def obj(theta: np.ndarray) -> float:
        W, b = theta[: h * c].reshape(h, c), theta[h * c:]
        return float((wn[:, None] * (zh @ W + b - y) ** 2).sum() / n + lam * (W ** 2).sum())

    sol = minimize(obj, np.zeros(h * c + c), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(params[0].numpy(), sol[: h * c].reshape(h, c), atol=1e-5)
    np.testing.assert_allclose(params[1].numpy(), sol[h * c:], atol=1e-5)
    pred = ridge_predict(torch.tensor(z), params).numpy()
    np.testing.assert_allclose(pred, zh @ sol[: h * c].reshape(h, c) + sol[h * c:], atol=1e-5)


def test_crystal_bad_inputs():
    with pytest.raises(ValueError, match="rank"):
        crystallize(torch.zeros(3), torch.eye(3), 0)
    with pytest.raises(ValueError, match="rank"):
        crystallize(torch.zeros(3), torch.eye(3), 4)
    with pytest.raises(ValueError, match="cov"):
        crystallize(torch.zeros(3), torch.eye(4), 1)
    with pytest.raises(ValueError, match="weights"):
        weighted_moments(torch.zeros(3, 2), torch.zeros(3))
    with pytest.raises(ValueError, match="ridge"):
        ridge_fit(torch.zeros(3, 2), torch.zeros(3, 2), 0.0)
