r"""Baselines with SLE's ``loss()`` / ``sample()`` signature: the Sphere Encoder (pixel loop) and latent flow matching.

**Sphere Encoder** (Yue et al., arXiv 2602.15030; re-derived from the paper's description, no code copied).
An encoder $E$ and decoder $D$ trained jointly; $z = f(E(x))$ lies on the sphere. With radii $r$, $u \sim U[0,1)$
and one $\varepsilon$: $\tilde z_b = f(z + r\sigma\varepsilon)$, $\tilde z_s = f(z + \tfrac12 r u\sigma\varepsilon)$,
$\hat x_b = D(\tilde z_b)$, $\hat x_s = D(\tilde z_s)$ and

$$ \mathcal L = w_{\text{rec}} \lVert \hat x_s - x \rVert_1
             + w_{\text{pix}} \lVert \hat x_b - \mathrm{sg}\,\hat x_s\rVert_1
             + w_{\text{lat}} \big(1 - \cos(E(\hat x_b), \mathrm{sg}\,E(x))\big) $$

(LPIPS terms dropped: no offline weights). Sampling: $x_1 = D(f(e))$, then for $s = 2..T$:
$x_s = D\big(f(f(E(x_{s-1})) + r_s\sigma\varepsilon')\big)$ with a cached $\varepsilon'$:
$T$ decodes and $T - 1$ encodes.
CFG ("combo"): lerp with weight $\sqrt{\text{cfg}}$ in both $E$ and $D$.

**Latent flow matching** (rectified flow) in the same frozen, standardised latent:
$z_t = (1 - t) z + t\varepsilon$, $\mathcal L = \lVert v_\theta(z_t, t, y) - (\varepsilon - z)\rVert^2$,
sampled by Euler
from $t = 1$ to $0$ in $T$ steps, then one decode.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .sle import (
    FrozenTokenizerGenerator,
    check_probability,
    check_sample_args,
    drop_labels,
    guided,
    to_unit_interval,
)
from .sphere import DEFAULT_MAX_ANGLE_DEG, sigma_max, spherical_corrupt, spherify, stratified_radii
from .tokenizer import ConvDecoder, ConvEncoder, LatentTokenizer, check_images, check_labels, check_latents, trusted

__all__ = ["LatentFlowMatching", "SphereEncoder"]


def _nonneg(name: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    return float(v)


class SphereEncoder(nn.Module):
    """The Sphere Encoder with conv encoder/decoder (FiLM class conditioning), looping through pixels.

    Args:
        in_channels, image_size, latent_channels, width, downsample: the conv design (as :class:`ConvAutoencoder`).
        num_classes: 0 or the number of classes (both E and D are conditioned).
        max_angle_deg, hard_case_prob: as SLE.
        rec_weight, pix_con_weight, lat_con_weight: $w_{rec} = 25$, $w_{pix} = 1$, $w_{lat} = 0.1$ (SE's AF config).
        class_dropout: probability of the null class in training (for CFG).
    """

    def __init__(self, *, in_channels: int = 1, image_size: int = 16, latent_channels: int = 8, width: int = 64,
                 downsample: int = 2, num_classes: int = 0, max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG,
                 hard_case_prob: float = 0.1, rec_weight: float = 25.0, pix_con_weight: float = 1.0,
                 lat_con_weight: float = 0.1, class_dropout: float = 0.1) -> None:
        super().__init__()
        kw = dict(in_channels=in_channels, image_size=image_size, latent_channels=latent_channels, width=width,
                  downsample=downsample, num_classes=num_classes)
        self.encoder, self.decoder = ConvEncoder(**kw), ConvDecoder(**kw)
        sigma_max(max_angle_deg)
        self.max_angle_deg, self.hard_case_prob = float(max_angle_deg), check_probability("hard_case_prob",
                                                                                            hard_case_prob)
        self.rec_weight = _nonneg("rec_weight", rec_weight)
        self.pix_con_weight = _nonneg("pix_con_weight", pix_con_weight)
        self.lat_con_weight = _nonneg("lat_con_weight", lat_con_weight)
        self.class_dropout = check_probability("class_dropout", class_dropout)
        self.num_classes, self.in_channels, self.image_size = num_classes, in_channels, image_size
        side = image_size // 2 ** downsample
        self.latent_shape = (latent_channels, side, side)

    def encode(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """Images [-1, 1] -> $f(E(x, y))$ on the sphere."""
        check_images(x, channels=self.in_channels, size=self.image_size)
        return spherify(self.encoder(x, y))

    def decode(self, z: Tensor, y: Tensor | None = None) -> Tensor:
        """Spherical latents -> images (about [-1, 1])."""
        check_latents(z, self.latent_shape)
        return self.decoder(z, y)

    def loss(self, x: Tensor, y: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
        """SE's training loss on ``x [B, C, H, W]`` in [-1, 1] (B >= 3); returns (loss, logs)."""
        check_images(x, channels=self.in_channels, size=self.image_size)
        if x.shape[0] < 3:
            raise ValueError(f"x must hold at least 3 images (stratified radii), got batch {x.shape[0]}")
        y = check_labels(y, x.shape[0], self.num_classes)
        with trusted():
            return self._loss(x, y)

    def _loss(self, x: Tensor, y: Tensor | None) -> tuple[Tensor, dict[str, float]]:
        y = drop_labels(y, self.num_classes, self.class_dropout)
        b = x.shape[0]
        z = self.encode(x, y)
        r = stratified_radii(b, hard_case_prob=self.hard_case_prob, max_angle_deg=self.max_angle_deg).to(x.device)
        u = torch.rand(b, device=x.device)
        noise = torch.randn_like(z)
        x_big = self.decode(spherical_corrupt(z, r, self.max_angle_deg, noise), y)
        x_small = self.decode(spherical_corrupt(z, r * u * 0.5, self.max_angle_deg, noise), y)
        # $w_{rec}\lVert \hat x_s - x\rVert_1$
        rec = F.l1_loss(x_small, x)
        # $w_{pix}\lVert \hat x_b - \mathrm{sg}\,\hat x_s\rVert_1$ (stop-gradient on the small one)
        pix_con = F.l1_loss(x_big, x_small.detach())
        # $w_{lat}(1 - \cos(E(\hat x_b), \mathrm{sg}\,E(x)))$
        lat_con = 1 - F.cosine_similarity(self.encoder(x_big, y).flatten(1), z.detach().flatten(1), dim=1).mean()
        loss = self.rec_weight * rec + self.pix_con_weight * pix_con + self.lat_con_weight * lat_con
        return loss, {"loss": float(loss.detach()), "rec": float(rec.detach()), "pix_con": float(pix_con.detach()),
                      "lat_con": float(lat_con.detach())}

    @torch.no_grad()
    def reconstruct(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """$D(f(E(x)))$ at $r = 0$, images in [-1, 1] (SE's own reconstruction, for the objective-conflict test)."""
        check_images(x, channels=self.in_channels, size=self.image_size)
        y = check_labels(y, x.shape[0], self.num_classes)
        return self.decode(self.encode(x, y), y)

    @torch.no_grad()
    def sample(self, n: int, steps: int = 4, y: Tensor | None = None, cfg: float = 1.0, noise_scale: float = 1.0,
               cache_noise: bool = True, generator: torch.Generator | None = None,
               return_latents: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """``n`` images in [0, 1] after ``steps`` pixel-loop steps ($T$ decodes, $T - 1$ encodes)."""
        check_sample_args(n, steps, cfg, noise_scale, generator, cache_noise, return_latents)
        y = check_labels(y, n, self.num_classes)
        with trusted():
            return self._sample(n, steps, y, cfg, noise_scale, cache_noise, generator, return_latents)

    def _sample(self, n: int, steps: int, y: Tensor | None, cfg: float, noise_scale: float, cache_noise: bool,
                generator: torch.Generator | None, return_latents: bool) -> Tensor | tuple[Tensor, Tensor]:
        device = next(self.parameters()).device
        if y is not None:
            y = y.to(device)
        shape = (n, *self.latent_shape)
        w = math.sqrt(float(cfg))  # cfg^{1/2} in both E and D
        z = spherify(torch.randn(shape, generator=generator, device=device))
        eps = torch.randn(shape, generator=generator, device=device)
        x = guided(self.decoder, z, y, w, self.num_classes)
        for _ in range(2, steps + 1):
            if not cache_noise:
                eps = torch.randn(shape, generator=generator, device=device)
            z = spherify(guided(self.encoder, x, y, w, self.num_classes))
            z = spherical_corrupt(z, float(noise_scale), self.max_angle_deg, eps)
            x = guided(self.decoder, z, y, w, self.num_classes)
        images = to_unit_interval(x)
        return (images, z) if return_latents else images


class LatentFlowMatching(FrozenTokenizerGenerator):
    """Rectified flow in a frozen tokenizer's standardised latent, Euler sampler.

    Args:
        tokenizer: any :class:`LatentTokenizer` (frozen).
        velocity: a module ``velocity(z, y, t=t)`` (a :class:`LatentTransformer` with ``time_input=True``).
        latent_stats: per-channel ``(mean [C], std [C])``; None: no standardisation.
        num_classes, class_dropout: as SLE.
    """

    def __init__(self, tokenizer: LatentTokenizer, velocity: nn.Module, *,
                 latent_stats: tuple[Tensor, Tensor] | None = None, num_classes: int = 0,
                 class_dropout: float = 0.1) -> None:
        super().__init__()
        if not isinstance(tokenizer, LatentTokenizer):
            raise TypeError(f"tokenizer must be a LatentTokenizer, got {type(tokenizer).__name__}")
        if not isinstance(velocity, nn.Module):
            raise TypeError(f"velocity must be a torch.nn.Module, got {type(velocity).__name__}")
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 0:
            raise ValueError(f"num_classes must be an int >= 0, got {num_classes!r}")
        class_dropout = check_probability("class_dropout", class_dropout)
        self._attach_tokenizer(tokenizer, latent_stats)
        self.velocity, self.num_classes, self.class_dropout = velocity, num_classes, class_dropout

    def loss(self, x: Tensor, y: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
        """$\\lVert v_\\theta(z_t, t, y) - (\\varepsilon - z) \\rVert^2$, $t \\sim U[0, 1]$; returns (loss, logs)."""
        check_images(x)
        y = check_labels(y, x.shape[0], self.num_classes)
        with trusted():
            return self._loss(x, y)

    def _loss(self, x: Tensor, y: Tensor | None) -> tuple[Tensor, dict[str, float]]:
        with torch.no_grad():
            z = (self.tokenizer.encode(x) - self.latent_mean) / self.latent_std
        t = torch.rand(z.shape[0], device=z.device)
        eps = torch.randn_like(z)
        # $z_t = (1 - t) z + t \varepsilon$, target velocity $\varepsilon - z$
        z_t = (1 - t[:, None, None, None]) * z + t[:, None, None, None] * eps
        v = self.velocity(z_t, drop_labels(y, self.num_classes, self.class_dropout), t=t)
        loss = F.mse_loss(v, eps - z)
        return loss, {"loss": float(loss.detach())}

    @torch.no_grad()
    def sample(self, n: int, steps: int = 4, y: Tensor | None = None, cfg: float = 1.0, noise_scale: float = 1.0,
               cache_noise: bool = True, generator: torch.Generator | None = None,
               return_latents: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """Euler from $t = 1$ to 0 in ``steps`` steps ($z \\leftarrow z - \\Delta t\\, v$), one decode; [0, 1] images.

        ``noise_scale`` scales the start noise (temperature); ``cache_noise`` has no effect (deterministic ODE).
        """
        check_sample_args(n, steps, cfg, noise_scale, generator, cache_noise, return_latents)
        y = check_labels(y, n, self.num_classes)
        with trusted():
            return self._sample(n, steps, y, cfg, noise_scale, generator, return_latents)

    def _sample(self, n: int, steps: int, y: Tensor | None, cfg: float, noise_scale: float,
                generator: torch.Generator | None, return_latents: bool) -> Tensor | tuple[Tensor, Tensor]:
        device = self.latent_mean.device
        if y is not None:
            y = y.to(device)
        z = float(noise_scale) * torch.randn((n, *self.latent_shape), generator=generator, device=device)
        dt = 1.0 / steps
        for k in range(steps):
            t = torch.full((n,), 1.0 - k * dt, device=device)
            z = z - dt * guided(self.velocity, z, y, float(cfg), self.num_classes, t=t)
        images = to_unit_interval(self.tokenizer.decode(z * self.latent_std + self.latent_mean))
        return (images, z) if return_latents else images
