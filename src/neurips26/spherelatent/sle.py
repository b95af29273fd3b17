r"""Sphere Latent Encoder (SLE): few-step sphere denoising in a frozen tokenizer's latent space.

Training (all in latent space; the exact losses are inferred from "latent reconstruction + consistency",
mirroring the Sphere Encoder's pixel pair). With $z = f(\mathrm{std}(E(x)))$ from the frozen tokenizer,
radii $r$ from :func:`stratified_radii`, $u \sim U[0, 1)$ and one $\varepsilon$:

$$ \tilde z_{\text{big}} = f(z + r\sigma_{\max}\varepsilon),
   \quad \tilde z_{\text{small}} = f(z + \tfrac12 r u \sigma_{\max}\varepsilon), $$
$$ \mathcal L = \underbrace{\lVert f(G(\tilde z_{\text{small}})) - z\rVert^2}_{\mathcal L_{\text{rec}}}
   + \lambda \underbrace{\lVert f(G(\tilde z_{\text{big}}))
   - \mathrm{sg}\,f(G(\tilde z_{\text{small}}))\rVert^2}_{\mathcal L_{\text{con}}} $$

(means over elements). Sampling: $\hat z_1 = G(f(e))$;
$\hat z_s = G\big(f(f(\hat z_{s-1}) + r_s\sigma_{\max}\varepsilon')\big)$
for $s = 2..T$ with one cached $\varepsilon'$; then a single decode $x = D(\mathrm{unstd}(f(\hat z_T)))$.
Cost $T\cdot G + D$, no encoder call. Classifier-free guidance is one latent lerp per step (inferred).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.constraints import Tensor as TensorSpec
from neurips26.constraints import check_arguments, validate

from .sphere import ANGLE, DEFAULT_MAX_ANGLE_DEG, GENERATOR, PROBABILITY, spherical_corrupt, spherify, stratified_radii
from .tokenizer import (
    CLASSES,
    COUNT,
    FLAG,
    MODULE,
    NONNEG,
    TOKENIZER,
    LatentTokenizer,
    check_images,
    check_labels,
    check_latents,
    trusted,
)

__all__ = ["SAMPLE", "SphereLatentEncoder", "to_unit_interval"]


#: the ``sample()`` arguments every sampler of this package shares (``y`` depends on the model: check_labels)
SAMPLE = {"n": COUNT, "steps": COUNT, "cfg": NONNEG, "noise_scale": NONNEG, "cache_noise": FLAG,
          "generator": GENERATOR, "return_latents": FLAG}


def check_latent_stats(latent_stats: object, c: int, where: str = "") -> tuple[Tensor, Tensor]:
    """``None`` (no standardisation) or ``(mean [c], std [c])``: finite float tensors with std > 0."""
    if latent_stats is None:
        return torch.zeros(c), torch.ones(c)
    if not isinstance(latent_stats, tuple | list) or len(latent_stats) != 2:
        raise TypeError(f"latent_stats must be a pair (mean [{c}], std [{c}]) of float tensors (from "
                        f"latent_statistics), got {type(latent_stats).__name__}")
    mean, std = latent_stats
    stat = TensorSpec(str(c), dtype="float")
    check_arguments(where, {"latent_stats[0] (mean)": stat, "latent_stats[1] (std)": stat},
                    {"latent_stats[0] (mean)": mean, "latent_stats[1] (std)": std})
    if bool((std <= 0).any()):
        raise ValueError(f"{where + ': ' if where else ''}latent_stats[1] (std) must be > 0, got min "
                         f"{float(std.min())!r}")
    return mean, std


def to_unit_interval(x: Tensor) -> Tensor:
    """Images in [-1, 1] (clamped) -> [0, 1]."""
    return (x.clamp(-1.0, 1.0) + 1.0) / 2.0


def guided(net: nn.Module, z: Tensor, y: Tensor | None, weight: float, null: int, **kw: Tensor) -> Tensor:
    r"""$\mathrm{out}_\varnothing + w\,(\mathrm{out}_y - \mathrm{out}_\varnothing)$; one conditional pass
    when $w = 1$ or without labels."""
    if y is None or weight == 1.0:
        return net(z, y, **kw)
    uncond = net(z, torch.full_like(y, null), **kw)
    return uncond + weight * (net(z, y, **kw) - uncond)


def drop_labels(y: Tensor | None, num_classes: int, p: float) -> Tensor | None:
    """Replace each label by the null class ``num_classes`` with probability ``p`` (trains CFG's unconditional)."""
    if y is None or p <= 0:
        return y
    drop = torch.rand(y.shape, device=y.device) < p
    return torch.where(drop, torch.full_like(y, num_classes), y)


class FrozenTokenizerGenerator(nn.Module):
    """Base of the generators over a frozen tokenizer's standardised latent (SLE, latent flow matching).

    :meth:`_attach_tokenizer` holds the tokenizer (``eval()``, no gradients) and the per-channel latent
    statistics as buffers ``latent_mean``, ``latent_std`` ``[1, C, 1, 1]``; :meth:`train` switches only the
    generator's own networks, the tokenizer stays in ``eval()``.
    """

    def _attach_tokenizer(self, tokenizer: LatentTokenizer, latent_stats: tuple[Tensor, Tensor] | None) -> None:
        latent_shape = tuple(tokenizer.latent_shape)
        c = latent_shape[0]
        # before the tokenizer is frozen: a failure changes nothing
        mean, std = check_latent_stats(latent_stats, c, f"{type(self).__name__}.__init__")
        self.tokenizer, self.latent_shape = tokenizer, latent_shape
        if isinstance(tokenizer, nn.Module):
            tokenizer.eval().requires_grad_(False)
        self.register_buffer("latent_mean", mean.detach().float().reshape(1, c, 1, 1).clone())
        self.register_buffer("latent_std", std.detach().float().reshape(1, c, 1, 1).clone())

    #: smallest batch :meth:`loss` accepts (SLE's stratified radii need 3 images)
    min_batch: int = 1

    def standardised_latents(self, x: Tensor) -> Tensor:
        """Images ``[B, C, H, W]`` -> the tokenizer's latents, standardised per channel, no graph into the tokenizer."""
        with torch.no_grad():
            return (self.tokenizer.encode(x) - self.latent_mean) / self.latent_std

    def loss(self, x: Tensor, y: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
        """Training loss on images ``x [B, C, H, W]`` in [-1, 1] and labels ``y [B]`` (or None); returns (loss, logs).

        Validates once here; each generator's ``_loss`` holds its objective.
        """
        where = f"{type(self).__name__}.loss"
        check_images(x, where=where, min_batch=self.min_batch)
        y = check_labels(y, x.shape[0], self.num_classes, where=where)
        with trusted():
            return self._loss(x, y)

    def _loss(self, x: Tensor, y: Tensor | None) -> tuple[Tensor, dict[str, float]]:
        raise NotImplementedError

    def train(self, mode: bool = True):
        """Train mode for the generator's networks only: the tokenizer always stays in ``eval()``."""
        super().train(mode)
        if isinstance(self.tokenizer, nn.Module):
            self.tokenizer.eval()
        return self


class SphereLatentEncoder(FrozenTokenizerGenerator):
    """SLE: a frozen tokenizer + a trained latent denoiser on the sphere.

    Args:
        tokenizer: any :class:`LatentTokenizer` (frozen here: ``eval()``, ``requires_grad_(False)``).
        denoiser: any module ``denoiser(z, y=None) -> z_hat`` on ``[B, *latent_shape]``
            (e.g. :class:`LatentTransformer`).
        max_angle_deg: $\\alpha_{\\max}$ (85°).
        hard_case_prob: probability of a "hard" radius beyond $\\alpha_{\\max}$ (0.1).
        con_weight: $\\lambda$ of the consistency loss (1).
        latent_stats: per-channel ``(mean [C], std [C])`` of the tokenizer's latents (see
            :func:`latent_statistics`); ``None``: no standardisation.
        num_classes: 0 (unconditional) or the number of classes of ``y``.
        class_dropout: probability of training a sample with the null class (for CFG; 0.1, inferred).
    """

    min_batch = 3  # stratified radii: at least one clean, one hard and one random radius per batch

    @validate(tokenizer=TOKENIZER, denoiser=MODULE, max_angle_deg=ANGLE, hard_case_prob=PROBABILITY,
              con_weight=NONNEG, num_classes=CLASSES, class_dropout=PROBABILITY)
    def __init__(self, tokenizer: LatentTokenizer, denoiser: nn.Module, *, max_angle_deg: float = DEFAULT_MAX_ANGLE_DEG,
                 hard_case_prob: float = 0.1, con_weight: float = 1.0,
                 latent_stats: tuple[Tensor, Tensor] | None = None,
                 num_classes: int = 0, class_dropout: float = 0.1) -> None:
        super().__init__()
        self._attach_tokenizer(tokenizer, latent_stats)
        self.denoiser = denoiser
        self.max_angle_deg, self.hard_case_prob = float(max_angle_deg), float(hard_case_prob)
        self.con_weight, self.num_classes, self.class_dropout = float(con_weight), num_classes, float(class_dropout)
        self.config = dict(max_angle_deg=self.max_angle_deg, hard_case_prob=self.hard_case_prob,
                           con_weight=self.con_weight, num_classes=num_classes, class_dropout=self.class_dropout)

    # ---------------------------------------------------------------------------- latent space
    @torch.no_grad()
    def encode(self, x: Tensor) -> Tensor:
        """Images [-1, 1] -> $f(\\mathrm{std}(E(x)))$ ``[B, *latent_shape]`` on the sphere (frozen, no gradient)."""
        check_images(x, where="SphereLatentEncoder.encode")
        return spherify((self.tokenizer.encode(x) - self.latent_mean) / self.latent_std)

    @torch.no_grad()
    def decode(self, z: Tensor) -> Tensor:
        """Spherical latents -> images in [-1, 1]: $D(f(z) \\cdot \\mathrm{std} + \\mathrm{mean})$."""
        check_latents(z, self.latent_shape, where="SphereLatentEncoder.decode")
        return self.tokenizer.decode(spherify(z) * self.latent_std + self.latent_mean)

    # ---------------------------------------------------------------------------- training
    def _loss(self, x: Tensor, y: Tensor | None) -> tuple[Tensor, dict[str, float]]:
        z = self.encode(x)  # [B, C, h, w], no graph into the tokenizer
        b = z.shape[0]
        r = stratified_radii(b, hard_case_prob=self.hard_case_prob, max_angle_deg=self.max_angle_deg).to(z.device)
        u = torch.rand(b, device=z.device)
        noise = torch.randn_like(z)
        z_big = spherical_corrupt(z, r, self.max_angle_deg, noise)
        # the small corruption uses the same ε at radius r·u/2 (inferred from SE's pair)
        z_small = spherical_corrupt(z, r * u * 0.5, self.max_angle_deg, noise)
        y_in = drop_labels(y, self.num_classes, self.class_dropout)
        pred_small = spherify(self.denoiser(z_small, y_in))
        pred_big = spherify(self.denoiser(z_big, y_in))
        # $\mathcal L_{rec} = \lVert f(G(\tilde z_s)) - f(z) \rVert^2$
        rec = F.mse_loss(pred_small, z)
        # $\mathcal L_{con} = \lVert f(G(\tilde z_b)) - \mathrm{sg} f(G(\tilde z_s)) \rVert^2$
        con = F.mse_loss(pred_big, pred_small.detach())
        loss = rec + self.con_weight * con
        return loss, {"loss": float(loss.detach()), "rec": float(rec.detach()), "con": float(con.detach())}

    # ---------------------------------------------------------------------------- sampling
    @torch.no_grad()
    @validate(**SAMPLE)
    def sample(self, n: int, steps: int = 4, y: Tensor | None = None, cfg: float = 1.0, noise_scale: float = 1.0,
               cache_noise: bool = True, generator: torch.Generator | None = None,
               return_latents: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """``n`` images ``[n, C, H, W]`` in [0, 1] after ``steps`` latent denoising steps and one decode.

        Args:
            y: labels ``[n]`` or ``None`` (null class). cfg: guidance weight (1 = conditional only).
            noise_scale: the re-noising radius $r_s$ of steps 2..T (1 = SE's default).
            cache_noise: reuse one $\\varepsilon'$ at every step (SE's default) or draw a fresh one.
            generator: seeds the start point and $\\varepsilon'$. return_latents: also return $\\hat z_T$.
        """
        y = check_labels(y, n, self.num_classes, where="SphereLatentEncoder.sample")
        with trusted():
            return self._sample(n, steps, y, cfg, noise_scale, cache_noise, generator, return_latents)

    def _sample(self, n: int, steps: int, y: Tensor | None, cfg: float, noise_scale: float, cache_noise: bool,
                generator: torch.Generator | None, return_latents: bool) -> Tensor | tuple[Tensor, Tensor]:
        device = self.latent_mean.device
        if y is not None:
            y = y.to(device)
        shape = (n, *self.latent_shape)
        start = torch.randn(shape, generator=generator, device=device)
        eps = torch.randn(shape, generator=generator, device=device)
        # $\hat z_1 = G(f(e))$
        z_hat = guided(self.denoiser, spherify(start), y, float(cfg), self.num_classes)
        for _ in range(2, steps + 1):
            if not cache_noise:
                eps = torch.randn(shape, generator=generator, device=device)
            # $\hat z_s = G(f(f(\hat z_{s-1}) + r_s \sigma_{\max} \varepsilon'))$
            z_in = spherical_corrupt(z_hat, float(noise_scale), self.max_angle_deg, eps)
            z_hat = guided(self.denoiser, z_in, y, float(cfg), self.num_classes)
        images = to_unit_interval(self.decode(z_hat))
        return (images, spherify(z_hat)) if return_latents else images
