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

from neurips26.constraints import AnyOf, Instance, Int, Optional, Real, validate
from neurips26.constraints import Tensor as TensorSpec

__all__ = ["DEFAULT_MAX_ANGLE_DEG", "angle_between", "sigma_max", "spherical_corrupt", "spherify",
           "stratified_radii"]

DEFAULT_MAX_ANGLE_DEG = 85.0


# shared declarations (issue 33)
#: latents ``[B, ...]``: a batch dimension and at least one more, float, finite
LATENT = TensorSpec("B _ ...", dtype="float")
#: $\alpha_{\max}$ in degrees
ANGLE = Real(0.0, 90.0, closed="neither")
PROBABILITY = Real(0.0, 1.0)
GENERATOR = Optional(Instance(torch.Generator, "torch.Generator"))
#: one radius for all samples, or one per sample ``[B]`` (B bound by ``z``); finite, >= 0
RADIUS = AnyOf(Real(low=0.0), TensorSpec("B"))


@validate(max_angle_deg=ANGLE)
def sigma_max(max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG) -> float:
    r"""$\sigma_{\max} = \tan(\alpha_{\max})$; 11.43 at the default 85°."""
    return math.tan(math.radians(float(max_angle_deg)))


@validate(z=LATENT, eps=Real(low=0.0))
def spherify(z: Tensor, eps: float = 1e-6) -> Tensor:
    r"""$f(z) = z / \sqrt{\mathrm{mean}(z^2) + \epsilon}$ over all non-batch dims: ``[B, ...] -> [B, ...]``.

    Every sample ends on the sphere of radius $\sqrt{N}$, $N$ = numel per sample.
    """
    dims = tuple(range(1, z.ndim))
    # $\mathrm{rsqrt}(\frac1N \sum_j z_j^2 + \epsilon)$, one scalar per sample: [B, 1, ..., 1]
    return z * torch.rsqrt(z.pow(2).mean(dim=dims, keepdim=True) + eps)


def _radii_tensor(r: Tensor | float, z: Tensor) -> Tensor:
    """``r`` (declared :data:`RADIUS`) as a [B, 1, ..., 1] tensor broadcastable against ``z``; the values are
    checked in ``z``'s dtype (a radius that overflows it is refused)."""
    if isinstance(r, Tensor):
        radii = (r.reshape(1).expand(z.shape[0]) if r.ndim == 0 else r).to(dtype=z.dtype, device=z.device)
    else:
        radii = torch.full((z.shape[0],), float(r), dtype=z.dtype, device=z.device)
    if not bool(torch.isfinite(radii).all()) or bool((radii < 0).any()):
        raise ValueError(f"r must be finite and >= 0, got {r if not isinstance(r, Tensor) else r.tolist()}")
    return radii.reshape(-1, *([1] * (z.ndim - 1)))


@validate(z=LATENT, r=RADIUS, max_angle_deg=ANGLE, noise=Optional(LATENT), generator=GENERATOR)
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
    if noise is not None and noise.shape != z.shape:
        raise ValueError(f"noise must have the shape of z {tuple(z.shape)}, got {tuple(noise.shape)}")
    sigma = sigma_max(max_angle_deg)
    radii = _radii_tensor(r, z)
    if noise is None:
        noise = torch.randn(z.shape, generator=generator, dtype=z.dtype, device=z.device)
    # $f(f(z) + r \sigma_{\max} \varepsilon)$
    return spherify(spherify(z) + radii * sigma * noise)


@validate(batch=Int(low=3), generator=GENERATOR, hard_case_prob=PROBABILITY, max_angle_deg=ANGLE)
def stratified_radii(batch: int, *, generator: torch.Generator | None = None, hard_case_prob: float = 0.1,
                     max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG) -> Tensor:
    r"""Training radii ``[B]``: one per stratum, plus one $r = 0$ and one $r = 1$, shuffled.

    With $M = B - 2$: $r_i = (i + u_i)/M$, $u_i \sim U[10^{-3}, 1)$, for $i < M$; then $r = 1$ and $r = 0$.
    "Hard cases": each entry, with probability ``hard_case_prob``, is redrawn uniformly in
    $[1, \tan(\min(\alpha_{\max} + 5°, 89°)) / \sigma_{\max}]$ (angles beyond $\alpha_{\max}$). That the redraw
    may hit any entry, the 0 and the 1 included, is our reading (inferred).
    """
    alpha = float(max_angle_deg)
    m = batch - 2  # batch >= 3: one 0, one 1 and at least one stratum
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


@validate(a=LATENT, b=LATENT)
def angle_between(a: Tensor, b: Tensor) -> Tensor:
    """Angle in degrees between matching samples of ``a`` and ``b`` (``[B, ...]`` each) -> ``[B]``."""
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    cos = torch.nn.functional.cosine_similarity(a.flatten(1).double(), b.flatten(1).double(), dim=1)
    return torch.rad2deg(torch.arccos(cos.clamp(-1.0, 1.0)))
