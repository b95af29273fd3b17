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
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.constraints import Real, validate

from .sle import SAMPLE, FrozenTokenizerGenerator, drop_labels, guided, to_unit_interval
from .sphere import ANGLE, DEFAULT_MAX_ANGLE_DEG, PROBABILITY, spherical_corrupt, spherify, stratified_radii
from .tokenizer import (
    ARCH,
    CLASSES,
    FLAG,
    MODULE,
    NONNEG,
    TOKENIZER,
    ConvDecoder,
    ConvEncoder,
    LatentTokenizer,
    check_images,
    check_labels,
    check_latents,
    trusted,
)

__all__ = ["LatentConsistencyModel", "LatentFlowMatching", "SphereEncoder", "matched_generators", "se_width_for"]


class SphereEncoder(nn.Module):
    """The Sphere Encoder with conv encoder/decoder (FiLM class conditioning), looping through pixels.

    Args:
        in_channels, image_size, latent_channels, width, downsample: the conv design (as :class:`ConvAutoencoder`).
        num_classes: 0 or the number of classes (both E and D are conditioned).
        max_angle_deg, hard_case_prob: as SLE.
        rec_weight, pix_con_weight, lat_con_weight: $w_{rec} = 25$, $w_{pix} = 1$, $w_{lat} = 0.1$ (SE's AF config).
        class_dropout: probability of the null class in training (for CFG).
        position: learned position maps in E and D (default). SE's networks are ViTs, which have position
            embeddings; without them our conv decoder cannot place a class's strokes when its latent is noise,
            and conditional samples stay at chance class accuracy (the defect of the first claim check).
    """

    @validate(**ARCH, num_classes=CLASSES, max_angle_deg=ANGLE, hard_case_prob=PROBABILITY, rec_weight=NONNEG,
              pix_con_weight=NONNEG, lat_con_weight=NONNEG, class_dropout=PROBABILITY, position=FLAG)
    def __init__(self, *, in_channels: int = 1, image_size: int = 16, latent_channels: int = 8, width: int = 64,
                 downsample: int = 2, num_classes: int = 0, max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG,
                 hard_case_prob: float = 0.1, rec_weight: float = 25.0, pix_con_weight: float = 1.0,
                 lat_con_weight: float = 0.1, class_dropout: float = 0.1, position: bool = True) -> None:
        super().__init__()
        kw = dict(in_channels=in_channels, image_size=image_size, latent_channels=latent_channels, width=width,
                  downsample=downsample, num_classes=num_classes, position=position)
        self.encoder, self.decoder = ConvEncoder(**kw), ConvDecoder(**kw)
        self.max_angle_deg, self.hard_case_prob = float(max_angle_deg), float(hard_case_prob)
        self.rec_weight = float(rec_weight)
        self.pix_con_weight = float(pix_con_weight)
        self.lat_con_weight = float(lat_con_weight)
        self.class_dropout = float(class_dropout)
        self.num_classes, self.in_channels, self.image_size = num_classes, in_channels, image_size
        side = image_size // 2 ** downsample
        self.latent_shape = (latent_channels, side, side)
        self.config = dict(kw, max_angle_deg=self.max_angle_deg, hard_case_prob=self.hard_case_prob,
                           rec_weight=self.rec_weight, pix_con_weight=self.pix_con_weight,
                           lat_con_weight=self.lat_con_weight, class_dropout=self.class_dropout)

    def encode(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """Images [-1, 1] -> $f(E(x, y))$ on the sphere."""
        check_images(x, channels=self.in_channels, size=self.image_size, where="SphereEncoder.encode")
        return spherify(self.encoder(x, y))

    def decode(self, z: Tensor, y: Tensor | None = None) -> Tensor:
        """Spherical latents -> images (about [-1, 1])."""
        check_latents(z, self.latent_shape, where="SphereEncoder.decode")
        return self.decoder(z, y)

    def loss(self, x: Tensor, y: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
        """SE's training loss on ``x [B, C, H, W]`` in [-1, 1] (B >= 3); returns (loss, logs)."""
        check_images(x, channels=self.in_channels, size=self.image_size, where="SphereEncoder.loss",
                     min_batch=3)  # stratified radii: one 0, one 1 and at least one stratum
        y = check_labels(y, x.shape[0], self.num_classes, where="SphereEncoder.loss")
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
        check_images(x, channels=self.in_channels, size=self.image_size, where="SphereEncoder.reconstruct")
        y = check_labels(y, x.shape[0], self.num_classes, where="SphereEncoder.reconstruct")
        return self.decode(self.encode(x, y), y)

    @torch.no_grad()
    @validate(**SAMPLE)
    def sample(self, n: int, steps: int = 4, y: Tensor | None = None, cfg: float = 1.0, noise_scale: float = 1.0,
               cache_noise: bool = True, generator: torch.Generator | None = None,
               return_latents: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """``n`` images in [0, 1] after ``steps`` pixel-loop steps ($T$ decodes, $T - 1$ encodes)."""
        y = check_labels(y, n, self.num_classes, where=f"{type(self).__name__}.sample")
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

    @validate(tokenizer=TOKENIZER, velocity=MODULE, num_classes=CLASSES, class_dropout=PROBABILITY)
    def __init__(self, tokenizer: LatentTokenizer, velocity: nn.Module, *,
                 latent_stats: tuple[Tensor, Tensor] | None = None, num_classes: int = 0,
                 class_dropout: float = 0.1) -> None:
        super().__init__()
        class_dropout = float(class_dropout)
        self._attach_tokenizer(tokenizer, latent_stats)
        self.velocity, self.num_classes, self.class_dropout = velocity, num_classes, class_dropout
        self.config = dict(num_classes=num_classes, class_dropout=class_dropout)

    def _loss(self, x: Tensor, y: Tensor | None) -> tuple[Tensor, dict[str, float]]:
        """$\\lVert v_\\theta(z_t, t, y) - (\\varepsilon - z) \\rVert^2$, $t \\sim U[0, 1]$; returns (loss, logs)."""
        z = self.standardised_latents(x)
        t = torch.rand(z.shape[0], device=z.device)
        eps = torch.randn_like(z)
        # $z_t = (1 - t) z + t \varepsilon$, target velocity $\varepsilon - z$
        z_t = (1 - t[:, None, None, None]) * z + t[:, None, None, None] * eps
        v = self.velocity(z_t, drop_labels(y, self.num_classes, self.class_dropout), t=t)
        loss = F.mse_loss(v, eps - z)
        return loss, {"loss": float(loss.detach())}

    @torch.no_grad()
    @validate(**SAMPLE)
    def sample(self, n: int, steps: int = 4, y: Tensor | None = None, cfg: float = 1.0, noise_scale: float = 1.0,
               cache_noise: bool = True, generator: torch.Generator | None = None,
               return_latents: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """Euler from $t = 1$ to 0 in ``steps`` steps ($z \\leftarrow z - \\Delta t\\, v$), one decode; [0, 1] images.

        ``noise_scale`` scales the start noise (temperature); ``cache_noise`` has no effect (deterministic ODE).
        """
        y = check_labels(y, n, self.num_classes, where=f"{type(self).__name__}.sample")
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


class LatentConsistencyModel(FrozenTokenizerGenerator):
    r"""Few-step peer: a consistency model trained from scratch (consistency training, iCT-style) in the same frozen
    latent, on the rectified-flow path $z_t = (1 - t) z + t\varepsilon$.

    The consistency function is parameterised so that the boundary condition holds exactly:
    $f_\theta(z_t, t, y) = z_t - t\,F_\theta(z_t, t, y)$, so $f_\theta(z, 0) = z$ (and with $F = \varepsilon - z$,
    $f = z$ on the whole path). Training pairs two points of the same path,

    $$ \mathcal L = d\big(f_\theta(z_t, t),\ \mathrm{sg}\,f_\theta(z_{t - \Delta}, t - \Delta)\big), \qquad
       d(a, b) = \sqrt{\lVert a - b\rVert^2 / N + c^2} - c, $$

    a pseudo-Huber distance (iCT) with $c$ = ``huber_c``, $t \sim U[\Delta, 1]$, the online network as its own
    stop-gradient target (iCT: no EMA teacher), and the gap annealed geometrically from $\Delta_0$ to $\Delta_1$
    over training, $\Delta_k = \Delta_0 (\Delta_1 / \Delta_0)^{p_k}$, $p_k$ the fraction of training done
    (:meth:`set_progress`; :func:`fit`'s ``on_step`` sets it). Sampling ("multistep consistency"): $\hat z =
    f(\varepsilon, 1)$, then for $t_s = 1 - (s-1)/T$, $s = 2..T$: $\hat z = f((1 - t_s)\hat z + t_s\varepsilon_s, t_s)$;
    one decode. Cost $T\cdot F + D$, like SLE. iCT's lognormal times and its discrete curriculum are replaced by
    these continuous choices (ours).

    Args:
        tokenizer: any :class:`LatentTokenizer` (frozen).
        net: ``net(z, y, t=t)``, a :class:`LatentTransformer` with ``time_input=True``.
        latent_stats, num_classes, class_dropout: as SLE.
        delta_start, delta_end: $\Delta_0 > \Delta_1 > 0$ of the gap schedule (0.2 and 0.01).
        huber_c: $c$ of the pseudo-Huber distance (0.03).
    """

    @validate(tokenizer=TOKENIZER, net=MODULE, num_classes=CLASSES, class_dropout=PROBABILITY,
              delta_start=PROBABILITY, delta_end=PROBABILITY, huber_c=Real(0.0, closed="neither"))
    def __init__(self, tokenizer: LatentTokenizer, net: nn.Module, *, latent_stats: tuple[Tensor, Tensor] | None = None,
                 num_classes: int = 0, class_dropout: float = 0.1, delta_start: float = 0.2, delta_end: float = 0.01,
                 huber_c: float = 0.03) -> None:
        super().__init__()
        class_dropout = float(class_dropout)
        d0, d1 = float(delta_start), float(delta_end)
        if not 0 < d1 <= d0:
            raise ValueError(f"need 0 < delta_end <= delta_start, got delta_start={delta_start!r}, "
                             f"delta_end={delta_end!r}")
        self._attach_tokenizer(tokenizer, latent_stats)
        self.net, self.num_classes, self.class_dropout = net, num_classes, class_dropout
        self.delta_start, self.delta_end, self.huber_c = d0, d1, float(huber_c)
        self.config = dict(num_classes=num_classes, class_dropout=class_dropout, delta_start=d0, delta_end=d1,
                           huber_c=self.huber_c)
        self.progress = 0.0

    @validate(fraction=PROBABILITY)
    def set_progress(self, fraction: float) -> None:
        """Fraction of training done, in [0, 1]: sets the gap $\\Delta$ of the next steps."""
        self.progress = float(fraction)

    @property
    def delta(self) -> float:
        r"""The current gap $\Delta_0 (\Delta_1 / \Delta_0)^{p}$."""
        return self.delta_start * (self.delta_end / self.delta_start) ** self.progress

    def consistency(self, z_t: Tensor, t: Tensor, y: Tensor | None) -> Tensor:
        r"""$f_\theta(z_t, t, y) = z_t - t\,F_\theta(z_t, t, y)$ on standardised latents ``[B, *latent_shape]``."""
        return z_t - t[:, None, None, None] * self.net(z_t, y, t=t)

    def _loss(self, x: Tensor, y: Tensor | None) -> tuple[Tensor, dict[str, float]]:
        """Consistency-training loss on images ``x`` in [-1, 1]; returns (loss, logs)."""
        z = self.standardised_latents(x)
        delta = self.delta
        t = delta + (1.0 - delta) * torch.rand(z.shape[0], device=z.device)
        s = (t - delta).clamp(min=0.0)
        eps = torch.randn_like(z)
        y_in = drop_labels(y, self.num_classes, self.class_dropout)

        def path(time: Tensor) -> Tensor:  # $z_t = (1 - t) z + t \varepsilon$, one ε for both ends
            return (1 - time[:, None, None, None]) * z + time[:, None, None, None] * eps

        with torch.no_grad():
            target = self.consistency(path(s), s, y_in)
        diff = (self.consistency(path(t), t, y_in) - target).flatten(1)
        # pseudo-Huber $\sqrt{\lVert a - b\rVert^2 / N + c^2} - c$ per sample
        loss = (torch.sqrt(diff.pow(2).mean(1) + self.huber_c ** 2) - self.huber_c).mean()
        return loss, {"loss": float(loss.detach()), "delta": delta}

    @torch.no_grad()
    @validate(**SAMPLE)
    def sample(self, n: int, steps: int = 4, y: Tensor | None = None, cfg: float = 1.0, noise_scale: float = 1.0,
               cache_noise: bool = False, generator: torch.Generator | None = None,
               return_latents: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """``n`` images in [0, 1] by multistep consistency sampling (``steps`` network calls, one decode).

        ``noise_scale`` scales every noise draw; ``cache_noise`` reuses the first ε at every re-noising.
        """
        y = check_labels(y, n, self.num_classes, where=f"{type(self).__name__}.sample")
        with trusted():
            device = self.latent_mean.device
            if y is not None:
                y = y.to(device)
            shape = (n, *self.latent_shape)
            eps = float(noise_scale) * torch.randn(shape, generator=generator, device=device)
            ones = torch.ones(n, device=device)
            net = lambda zz, yy, t: self.consistency(zz, t, yy)  # noqa: E731
            z_hat = guided(_Wrap(net), eps, y, float(cfg), self.num_classes, t=ones)
            for k in range(1, steps):
                t = 1.0 - k / steps
                if not cache_noise:
                    eps = float(noise_scale) * torch.randn(shape, generator=generator, device=device)
                z_in = (1 - t) * z_hat + t * eps
                z_hat = guided(_Wrap(net), z_in, y, float(cfg), self.num_classes, t=t * ones)
            images = to_unit_interval(self.tokenizer.decode(z_hat * self.latent_std + self.latent_mean))
        return (images, z_hat) if return_latents else images


class _Wrap:
    """``fn(z, y, t)`` called as ``net(z, y, t=t)`` (what :func:`guided` calls)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, z: Tensor, y: Tensor | None, *, t: Tensor) -> Tensor:
        return self.fn(z, y, t)


def se_width_for(parameters: int, *, image_size: int = 16, downsample: int = 2, num_classes: int = 10) -> int:
    """The :class:`SphereEncoder` conv width whose parameter count is closest to ``parameters`` (e.g. those of
    SLE's tokenizer + denoiser: the parameter-matched baseline)."""
    def count(w: int) -> int:
        se = SphereEncoder(image_size=image_size, downsample=downsample, width=w, num_classes=num_classes)
        return sum(p.numel() for p in se.parameters())

    lo, hi = 2, 512  # the count grows with the width: bisect, then take the closer neighbour
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if count(mid) <= parameters else (lo, mid)
    return min((lo, hi), key=lambda w: abs(count(w) - parameters))


def matched_generators(*, tokenizer_width: int, dim: int, depth: int, image_size: int = 16, downsample: int = 2,
                       num_classes: int = 10, seed: int = 0) -> dict[str, nn.Module]:
    """Untrained, ``eval()`` generators of the claim check's design at one architecture (seeded): ``"sle"``
    (conv tokenizer + :class:`LatentTransformer` of width ``dim`` and ``depth`` blocks, MLP ratio 2), ``"se"``
    (parameter-matched :class:`SphereEncoder`), ``"fm"`` and ``"cm"`` (the same transformer with a time input, on
    the same tokenizer). The claim check's speed claim and the benchmark time these."""
    from .denoiser import LatentTransformer
    from .sle import SphereLatentEncoder
    from .tokenizer import ConvAutoencoder

    torch.manual_seed(seed)
    tok = ConvAutoencoder(image_size=image_size, downsample=downsample, width=tokenizer_width)

    def net(time_input: bool) -> LatentTransformer:
        return LatentTransformer(tok.latent_shape, dim=dim, depth=depth, heads=4 if dim >= 64 else 2,
                                 mlp_ratio=2.0, num_classes=num_classes, time_input=time_input)

    g = net(False)
    params = sum(p.numel() for m in (tok, g) for p in m.parameters())
    width = se_width_for(params, image_size=image_size, downsample=downsample, num_classes=num_classes)
    out = {"sle": SphereLatentEncoder(tok, g, num_classes=num_classes),
           "se": SphereEncoder(image_size=image_size, downsample=downsample, width=width, num_classes=num_classes),
           "fm": LatentFlowMatching(tok, net(True), num_classes=num_classes),
           "cm": LatentConsistencyModel(tok, net(True), num_classes=num_classes)}
    return {k: m.eval() for k, m in out.items()}
