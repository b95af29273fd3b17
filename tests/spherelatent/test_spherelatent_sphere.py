"""Sphere geometry against its formulas: norm, r = 0 identity, the mean angle, radii strata, bad input."""

import math

import pytest
import torch

from neurips26.spherelatent import angle_between, sigma_max, spherical_corrupt, spherify, stratified_radii


def test_spherify_norm_is_sqrt_numel_per_sample_not_per_token():
    z = torch.randn(5, 8, 4, 4) * torch.arange(1, 6).reshape(5, 1, 1, 1)
    f = spherify(z)
    assert torch.allclose(f.flatten(1).norm(dim=1), torch.full((5,), math.sqrt(8 * 16)), rtol=1e-5)
    # global, not per token: the per-token norms are not all equal
    assert f.norm(dim=1).std() > 1e-3
    # f is the naive loop z / sqrt(mean(z^2) + eps)
    for b in range(5):
        ref = z[b] / math.sqrt(float((z[b] ** 2).mean()) + 1e-6)
        assert torch.allclose(f[b], ref, rtol=1e-5, atol=1e-6)


def test_corrupt_r0_is_spherify_and_noise_is_used_as_given():
    z = torch.randn(4, 8, 2, 2)
    assert torch.allclose(spherical_corrupt(z, 0.0), spherify(z), atol=1e-5)
    eps = torch.randn_like(z)
    r = torch.tensor([0.0, 0.25, 0.5, 1.0])
    ref = spherify(spherify(z) + r.reshape(4, 1, 1, 1) * math.tan(math.radians(85.0)) * eps)
    assert torch.allclose(spherical_corrupt(z, r, noise=eps), ref, atol=1e-6)


def test_mean_angle_at_r1_is_85_degrees_in_4096_dims():
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(64, 4096, generator=gen)
    angles = angle_between(spherify(z), spherical_corrupt(z, 1.0, generator=gen))
    assert abs(float(angles.mean()) - 85.0) < 1.0
    # and atan(r * sigma_max) at smaller radii
    small = angle_between(spherify(z), spherical_corrupt(z, 0.1, generator=gen))
    assert abs(float(small.mean()) - math.degrees(math.atan(0.1 * sigma_max()))) < 1.0


def test_sigma_max_default():
    assert sigma_max() == pytest.approx(11.430, abs=1e-3)


def test_radii_strata_without_hard_cases():
    for batch in (3, 7, 64):
        r = stratified_radii(batch, generator=torch.Generator().manual_seed(batch), hard_case_prob=0.0)
        assert r.shape == (batch,)
        s = sorted(r.tolist())
        assert s[0] == 0.0 and s[-1] == 1.0
        m = batch - 2
        inner = s[1:-1]
        for i, v in enumerate(inner):  # exactly one draw per stratum [i/M, (i+1)/M)
            assert i / m + 1e-3 / m - 1e-6 <= v < (i + 1) / m + 1e-7


def test_radii_hard_cases_range_and_rate():
    r = torch.cat([stratified_radii(100, generator=torch.Generator().manual_seed(s), hard_case_prob=0.1)
                   for s in range(40)])
    top = math.tan(math.radians(89.0)) / math.tan(math.radians(85.0))
    hard = r[r > 1.0]
    assert float(hard.max()) <= top + 1e-5
    assert 0.06 < len(hard) / len(r) < 0.14
    all_hard = stratified_radii(10, hard_case_prob=1.0)
    assert bool((all_hard >= 1.0).all())


def test_radii_seeded():
    a = stratified_radii(16, generator=torch.Generator().manual_seed(3))
    b = stratified_radii(16, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


@pytest.mark.parametrize("call, match", [
    (lambda: spherify(torch.randn(5)), r"z must be a float tensor \[B, _, \.\.\.\]"),
    (lambda: spherify(torch.tensor([[1.0, float("nan")]])), "finite"),
    (lambda: spherify([1.0, 2.0]), r"z must be a float tensor .*, got \[1\.0, 2\.0\]"),
    (lambda: spherical_corrupt(torch.randn(2, 3), -0.1), "r must be a finite number >= 0"),
    (lambda: spherical_corrupt(torch.randn(2, 3), float("inf")), "r must be a finite number >= 0"),
    (lambda: spherical_corrupt(torch.randn(2, 3), torch.tensor([0.1, float("nan")])), r"r must .*\[B\] of finite"),
    (lambda: spherical_corrupt(torch.randn(2, 3), torch.ones(3)), r"r must be .* a tensor \[B\]"),
    (lambda: spherical_corrupt(torch.randn(2, 3), 0.5, max_angle_deg=90.0), "max_angle_deg"),
    (lambda: spherical_corrupt(torch.randn(2, 3), 0.5, max_angle_deg=0), "max_angle_deg"),
    (lambda: spherical_corrupt(torch.randn(2, 3), 0.5, noise=torch.randn(2, 4)), "noise must have the shape"),
    (lambda: stratified_radii(2), "batch must be an int >= 3"),
    (lambda: stratified_radii(8, hard_case_prob=1.5), "hard_case_prob"),
    (lambda: stratified_radii(8, max_angle_deg=95.0), "max_angle_deg"),
])
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
