r"""Spherical latent geometry shared by the Sphere Encoder and SLE: the global RMS norm, spherical
corruption and the stratified training radii.

The sphere. For a latent $z \in \mathbb{R}^{B \times N}$ (any non-batch shape, flattened to $N$ numbers)

$$ f(z) = \frac{z}{\sqrt{\tfrac1N \sum_j z_j^2 + \epsilon}}, \qquad \lVert f(z) \rVert_2 = \sqrt{N}, $$

one *global* RMS norm per sample (not per token; a per-token norm changes the geometry).

Corruption. $\tilde z = f\big(f(z) + r\,\sigma_{\max}\,\varepsilon\big)$ with $\varepsilon \sim \mathcal N(0, I)$ and
$\sigma_{\max} = \tan\alpha_{\max}$. In high dimension $\varepsilon \perp f(z)$
and $\lVert\varepsilon\rVert \approx \sqrt N$,
so the angle between $f(z)$ and $\tilde z$ is about $\arctan(r\,\sigma_{\max})$: $r = 1$ moves a latent $85°$ away.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["DEFAULT_MAX_ANGLE_DEG", "angle_between", "sigma_max", "spherical_corrupt", "spherify",
           "stratified_radii"]

DEFAULT_MAX_ANGLE_DEG = 85.0


def _check_latent(name: str, z: object) -> Tensor:
    if not isinstance(z, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(z).__name__}")
    if z.ndim < 2:
        raise ValueError(f"{name} must have a batch dimension and at least one more, got shape {tuple(z.shape)}")
    if not z.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {z.dtype}")
    if not bool(torch.isfinite(z).all()):
        raise ValueError(f"{name} must be finite, got non-finite entries")
    return z


def _check_angle(max_angle_deg: object) -> float:
    ok = (not isinstance(max_angle_deg, bool) and isinstance(max_angle_deg, int | float)
          and math.isfinite(max_angle_deg) and 0.0 < max_angle_deg < 90.0)
    if not ok:
        raise ValueError(f"max_angle_deg must be a number in (0, 90) degrees, got {max_angle_deg!r}")
    return float(max_angle_deg)


def _check_generator(generator: object) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")


def sigma_max(max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG) -> float:
    r"""$\sigma_{\max} = \tan(\alpha_{\max})$; 11.43 at the default 85°."""
    return math.tan(math.radians(_check_angle(max_angle_deg)))


def spherify(z: Tensor, eps: float = 1e-6) -> Tensor:
    r"""$f(z) = z / \sqrt{\mathrm{mean}(z^2) + \epsilon}$ over all non-batch dims: ``[B, ...] -> [B, ...]``.

    Every sample ends on the sphere of radius $\sqrt{N}$, $N$ = numel per sample.
    """
    _check_latent("z", z)
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not math.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    dims = tuple(range(1, z.ndim))
    # $\mathrm{rsqrt}(\frac1N \sum_j z_j^2 + \epsilon)$, one scalar per sample: [B, 1, ..., 1]
    return z * torch.rsqrt(z.pow(2).mean(dim=dims, keepdim=True) + eps)


def _radii_tensor(r: Tensor | float, z: Tensor) -> Tensor:
    """``r`` as a [B, 1, ..., 1] tensor broadcastable against ``z``."""
    if isinstance(r, Tensor):
        if r.ndim == 0:
            r = r.reshape(1).expand(z.shape[0])
        if r.ndim != 1 or r.shape[0] != z.shape[0]:
            raise ValueError(f"r must be a float or a tensor of shape [{z.shape[0]}] (one radius per sample), "
                             f"got shape {tuple(r.shape)}")
        radii = r.to(dtype=z.dtype, device=z.device)
    elif not isinstance(r, bool) and isinstance(r, int | float):
        radii = torch.full((z.shape[0],), float(r), dtype=z.dtype, device=z.device)
    else:
        raise TypeError(f"r must be a float or a tensor, got {type(r).__name__}")
    if not bool(torch.isfinite(radii).all()) or bool((radii < 0).any()):
        raise ValueError(f"r must be finite and >= 0, got {r if not isinstance(r, Tensor) else r.tolist()}")
    return radii.reshape(-1, *([1] * (z.ndim - 1)))


def spherical_corrupt(z: Tensor, r: Tensor | float, max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG,
                      noise: Tensor | None = None, *, generator: torch.Generator | None = None) -> Tensor:
    r"""$\tilde z = f\big(f(z) + r\,\tan(\alpha_{\max})\,\varepsilon\big)$: ``[B, ...] -> [B, ...]``.

    Args:
        z: latents ``[B, ...]`` (need not be on the sphere; they are projected first).
        r: radius in $[0, \infty)$, a float or one per sample ``[B]``; $r = 0$ gives $f(z)$.
        max_angle_deg: $\alpha_{\max}$ in degrees, in (0, 90).
        noise: the *unscaled* $\varepsilon \sim \mathcal N(0, I)$, same shape as ``z``; drawn when ``None``.
        generator: used when ``noise`` is drawn.
    """
    _check_latent("z", z)
    sigma = sigma_max(max_angle_deg)
    radii = _radii_tensor(r, z)
    _check_generator(generator)
    if noise is None:
        noise = torch.randn(z.shape, generator=generator, dtype=z.dtype, device=z.device)
    else:
        _check_latent("noise", noise)
        if noise.shape != z.shape:
            raise ValueError(f"noise must have the shape of z {tuple(z.shape)}, got {tuple(noise.shape)}")
    # $f(f(z) + r \sigma_{\max} \varepsilon)$
    return spherify(spherify(z) + radii * sigma * noise)


def stratified_radii(batch: int, *, generator: torch.Generator | None = None, hard_case_prob: float = 0.1,
                     max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG) -> Tensor:
    r"""Training radii ``[B]``: one per stratum, plus one $r = 0$ and one $r = 1$, shuffled.

    With $M = B - 2$: $r_i = (i + u_i)/M$, $u_i \sim U[10^{-3}, 1)$, for $i < M$; then $r = 1$ and $r = 0$.
    "Hard cases": each entry, with probability ``hard_case_prob``, is redrawn uniformly in
    $[1, \tan(\min(\alpha_{\max} + 5°, 89°)) / \sigma_{\max}]$ (angles beyond $\alpha_{\max}$). That the redraw
    may hit any entry, the 0 and the 1 included, is our reading (inferred).
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 3:
        raise ValueError(f"batch must be an int >= 3 for stratified radii (one 0, one 1, >= 1 stratum), got {batch!r}")
    ok = (not isinstance(hard_case_prob, bool) and isinstance(hard_case_prob, int | float)
          and math.isfinite(hard_case_prob) and 0.0 <= hard_case_prob <= 1.0)
    if not ok:
        raise ValueError(f"hard_case_prob must be a probability in [0, 1], got {hard_case_prob!r}")
    alpha = _check_angle(max_angle_deg)
    _check_generator(generator)
    m = batch - 2
    # $u_i \sim U[10^{-3}, 1)$, $r_i = (i + u_i) / M$
    u = 1e-3 + (1.0 - 1e-3) * torch.rand(m, generator=generator, dtype=torch.float64)
    strata = (torch.arange(m, dtype=torch.float64) + u) / m
    radii = torch.cat([strata, torch.tensor([1.0, 0.0], dtype=torch.float64)])
    radii = radii[torch.randperm(batch, generator=generator)]
    hard = torch.rand(batch, generator=generator, dtype=torch.float64) < hard_case_prob
    if hard_case_prob > 0:
        top = math.tan(math.radians(min(alpha + 5.0, 89.0))) / math.tan(math.radians(alpha))
        redraw = 1.0 + (top - 1.0) * torch.rand(batch, generator=generator, dtype=torch.float64)
        radii = torch.where(hard, redraw, radii)
    return radii.float()


def angle_between(a: Tensor, b: Tensor) -> Tensor:
    """Angle in degrees between matching samples of ``a`` and ``b`` (``[B, ...]`` each) -> ``[B]``."""
    _check_latent("a", a)
    _check_latent("b", b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    cos = torch.nn.functional.cosine_similarity(a.flatten(1).double(), b.flatten(1).double(), dim=1)
    return torch.rad2deg(torch.arccos(cos.clamp(-1.0, 1.0)))
