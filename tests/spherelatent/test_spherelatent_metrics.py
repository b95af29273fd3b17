"""Fréchet distance vs the Gaussian closed form and torchmetrics; precision/recall vs brute force; FLOPs."""

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.spherelatent import (
    ClassifierFID,
    DigitsClassifier,
    FeatureView,
    count_flops,
    frechet_distance,
    knn_precision_recall,
)


def _exact_moments(n, mu, scales, rng):
    """Samples whose sample mean is exactly mu and unbiased sample covariance exactly diag(scales^2)."""
    x = rng.standard_normal((n, len(mu)))
    x -= x.mean(0)
    chol = np.linalg.cholesky(np.cov(x, rowvar=False))
    white = x @ np.linalg.inv(chol).T  # sample covariance exactly I
    return white * scales + mu


def test_frechet_matches_gaussian_closed_form():
    rng = np.random.default_rng(0)
    d = 6
    mu_a, mu_b = rng.normal(size=d), rng.normal(size=d)
    s_a, s_b = rng.uniform(0.5, 2, d), rng.uniform(0.5, 2, d)
    a, b = _exact_moments(400, mu_a, s_a, rng), _exact_moments(300, mu_b, s_b, rng)
    # diagonal covariances commute: d^2 = |mu_a - mu_b|^2 + sum (s_a - s_b)^2
    closed = float(((mu_a - mu_b) ** 2).sum() + ((s_a - s_b) ** 2).sum())
    assert frechet_distance(a, b) == pytest.approx(closed, rel=1e-8, abs=1e-9)
    assert frechet_distance(torch.from_numpy(a).float(), torch.from_numpy(b).float()) == pytest.approx(closed, rel=1e-4)


def test_frechet_self_is_zero_and_rank_deficient_does_not_crash():
    x = torch.randn(50, 8)
    assert frechet_distance(x, x) == pytest.approx(0.0, abs=1e-6)
    few = torch.randn(5, 32)  # N < d: singular covariances
    value = frechet_distance(few, torch.randn(6, 32))
    assert np.isfinite(value) and value >= 0


def test_classifier_fid_matches_torchmetrics():
    from torchmetrics.image.fid import FrechetInceptionDistance

    torch.manual_seed(0)
    net = FeatureView(DigitsClassifier(image_size=16)).double()
    real, fake = torch.rand(120, 1, 16, 16, dtype=torch.float64), torch.rand(100, 1, 16, 16, dtype=torch.float64) ** 2
    ours = ClassifierFID(net, batch_size=37)
    ours.update(real, real=True)
    ours.update(fake[:50], real=False)
    ours.update(fake[50:], real=False)
    tm = FrechetInceptionDistance(feature=net, normalize=True)
    tm.update(real, real=True)
    tm.update(fake, real=False)
    assert ours.compute() == pytest.approx(float(tm.compute()), rel=1e-6)
    ours.reset()
    with pytest.raises(RuntimeError, match="update"):
        ours.compute()


def test_classifier_fid_same_images_near_zero():
    net = FeatureView(DigitsClassifier(image_size=16))
    x = torch.rand(200, 1, 16, 16)
    m = ClassifierFID(net)
    m.update(x, real=True)
    m.update(x, real=False)
    assert m.compute() == pytest.approx(0.0, abs=1e-4)


def test_knn_precision_recall_brute_force():
    rng = np.random.default_rng(1)
    real, fake = rng.normal(size=(40, 3)), rng.normal(loc=0.7, size=(30, 3))
    k = 3

    def radius(x, i):
        return sorted(np.linalg.norm(x - x[i], axis=1))[k]

    prec = np.mean([any(np.linalg.norm(f - real[j]) <= radius(real, j) for j in range(40)) for f in fake])
    rec = np.mean([any(np.linalg.norm(r - fake[j]) <= radius(fake, j) for j in range(30)) for r in real])
    p, r = knn_precision_recall(real, fake, k=k)
    assert p == pytest.approx(prec) and r == pytest.approx(rec)


def test_count_flops_linear():
    lin = nn.Linear(10, 20, bias=False)
    assert count_flops(lambda: lin(torch.randn(7, 10))) == 2 * 7 * 10 * 20


@pytest.mark.parametrize("call, match", [
    (lambda: frechet_distance(torch.randn(10, 3), torch.randn(10, 4)), r"d = 3 \(from feats_a\)"),
    (lambda: frechet_distance(torch.randn(1, 3), torch.randn(10, 3)), "at least 2 rows"),
    (lambda: frechet_distance(torch.randn(10), torch.randn(10, 3)), r"feats_a must be an array \[N_a, d\]"),
    (lambda: frechet_distance(torch.full((4, 2), float("nan")), torch.randn(4, 2)), "finite"),
    (lambda: ClassifierFID(3), "callable"),
    (lambda: knn_precision_recall(torch.randn(5, 2), torch.randn(5, 2), k=5), "k must be"),
])
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_compute_before_both_sides():
    m = ClassifierFID(FeatureView(DigitsClassifier()))
    m.update(torch.rand(4, 1, 16, 16), real=True)
    with pytest.raises(RuntimeError, match="generated"):
        m.compute()
    with pytest.raises(TypeError, match="real must be a bool"):
        m.update(torch.rand(4, 1, 16, 16), real=1)
