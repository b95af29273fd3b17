r"""The frozen tokenizer SLE builds on: a protocol any autoencoder can satisfy, and a small conv autoencoder.

SLE's paper uses RAE (frozen DINOv2-B encoder + a ViT decoder trained with noise augmentation, 16×16×768
latents). At our scale the tokenizer is a conv autoencoder 16×16×1 → 4×4×8, trained once with
$\mathcal L = \lVert D(E(x) + \sigma n) - x \rVert_1 + \lVert D(E(x) + \sigma n) - x \rVert_2^2$ (noise
augmentation $\sigma \sim U[0, \sigma_{\max}]$ relative to the latent's RMS, for decoder robustness), then frozen.
The same conv stacks, with FiLM class conditioning, are the Sphere Encoder baseline's encoder and decoder.
"""

from __future__ import annotations

import functools
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from neurips26.constraints import Bool, Instance, Int, Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorSpec

from .._checks import is_trusted, trusted  # noqa: F401  (re-exported for the package)

__all__ = ["ConvAutoencoder", "ConvDecoder", "ConvEncoder", "LatentTokenizer", "check_images", "check_labels",
           "latent_statistics"]


@runtime_checkable
class LatentTokenizer(Protocol):
    """What SLE needs from a tokenizer: images ``[B, C_img, H, W]`` in [-1, 1] <-> latents ``[B, *latent_shape]``."""

    latent_shape: tuple[int, int, int]

    def encode(self, x: Tensor) -> Tensor: ...

    def decode(self, z: Tensor) -> Tensor: ...


# shared declarations (issue 33): counts, the class count, flags; the architecture of the conv stacks
COUNT = Int(low=1)
CLASSES = Int(low=0)  # 0: unconditional
FLAG = Bool()
NONNEG = Real(low=0.0)  # a finite number >= 0
ARCH = {"in_channels": COUNT, "image_size": Int(low=2), "latent_channels": COUNT, "width": COUNT,
        "downsample": COUNT}
TOKENIZER = Instance(LatentTokenizer, "LatentTokenizer (encode(x), decode(z), latent_shape)")
MODULE = Instance(nn.Module, "torch.nn.Module")
_LABEL_DTYPES = (torch.int64, torch.int32, torch.int16, torch.uint8)


@functools.cache
def _batch_spec(spec: str) -> TensorSpec:
    return TensorSpec(f"B {spec}", dtype="float")


def _check_batch(where: str, name: str, x: object, spec: str, noun: str, min_batch: int) -> Tensor:
    """A finite float tensor ``[B, *spec]`` (finiteness skipped inside :func:`trusted`) with ``B >= min_batch``."""
    check_arguments(where, {name: _batch_spec(spec)}, {name: x})
    if x.shape[0] < min_batch:
        raise ValueError(f"{where + ': ' if where else ''}{name} must hold at least {min_batch} {noun}"
                         f"{'s' if min_batch > 1 else ''}, got shape {tuple(x.shape)}")
    return x


def check_images(x: object, *, channels: int | None = None, size: int | None = None, name: str = "x",
                 where: str = "", min_batch: int = 1) -> Tensor:
    """Validate a batch of images ``[B, C, H, W]`` (``B >= min_batch``): a finite float tensor (values are not
    clamped); ``channels`` and ``size`` (H = W) fixed when given."""
    spec = f"{'C' if channels is None else channels} {'H W' if size is None else f'{size} {size}'}"
    return _check_batch(where, name, x, spec, "image", min_batch)


def check_latents(z: object, latent_shape: tuple[int, ...], name: str = "z", where: str = "") -> Tensor:
    """A finite float tensor ``[B >= 1, *latent_shape]``."""
    return _check_batch(where, name, z, " ".join(map(str, latent_shape)), "latent", 1)


def check_labels(y: object, n: int, num_classes: int, *, name: str = "y", where: str = "") -> Tensor | None:
    """``None`` or integer class labels ``[n]`` in ``[0, num_classes)``; refused when the model has no classes."""
    if y is None:
        return None
    if num_classes <= 0:
        raise ValueError(f"{name} was given but the model has no classes (num_classes=0); pass {name}=None")
    check_arguments(where, {name: TensorSpec(str(n), dtype=_LABEL_DTYPES)}, {name: y})
    if n and not is_trusted() and (int(y.min()) < 0 or int(y.max()) >= num_classes):
        raise ValueError(f"{name} must lie in [0, {num_classes}), got range [{int(y.min())}, {int(y.max())}]")
    return y.long()


class _FiLM(nn.Module):
    r"""$h \leftarrow h \odot (1 + \gamma_y) + \beta_y$ per channel, from a class embedding
    (null class = num_classes)."""

    def __init__(self, num_classes: int, channels: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(num_classes + 1, 2 * channels)
        nn.init.zeros_(self.embed.weight)

    def forward(self, h: Tensor, y: Tensor) -> Tensor:
        gamma, beta = self.embed(y)[:, :, None, None].chunk(2, dim=1)
        return h * (1 + gamma) + beta


class _ConvStack(nn.Module):
    r"""Convs with GELU and optional FiLM after each hidden layer, and an optional learned position map.

    ``position=(h, w)`` adds a learned bias $P \in \mathbb{R}^{C_0 \times h \times w}$ (zero-initialised) to the
    first hidden layer, and with ``class_position`` (the decoder, at the latent's small resolution) also a
    per-class map $P_y$: $h_1 \leftarrow h_1 + P + P_y$. A conv net with a spatially uniform FiLM is
    translation-equivariant up to its padding, so from a latent of pure noise it cannot put a class's strokes
    anywhere in particular: the Sphere Encoder's decoder then generates class-agnostic blobs (class accuracy at
    chance). SE's ViT has position embeddings; these maps give our conv SE that information, and the class a
    place to draw.
    """

    def __init__(self, layers: list[nn.Module], hidden: list[int], num_classes: int,
                 position: tuple[int, int] | None = None, class_position: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.num_classes = num_classes
        self.films = nn.ModuleList(_FiLM(num_classes, c) for c in hidden) if num_classes > 0 else None
        self.act = nn.GELU()
        self.position = nn.Parameter(torch.zeros(1, hidden[0], *position)) if position is not None else None
        # per-class maps (decoder only: small at the latent's resolution): $P_y$, zero-initialised
        self.class_position = (nn.Embedding(num_classes + 1, hidden[0] * position[0] * position[1])
                               if position is not None and class_position and num_classes > 0 else None)
        if self.class_position is not None:
            nn.init.zeros_(self.class_position.weight)

    def forward(self, h: Tensor, y: Tensor | None = None) -> Tensor:
        where = f"{type(self).__name__}.forward"
        # the first layer keeps the spatial size (conv3x3, padding 1): the input must match the position map
        side = None if self.position is None else self.position.shape[-1]
        check_images(h, channels=self.layers[0].in_channels, size=side,
                     name="x" if isinstance(self, ConvEncoder) else "z", where=where)
        # labels in [0, num_classes], the null class num_classes allowed; refused when there are no classes
        y = check_labels(y, h.shape[0], self.num_classes + 1 if self.films is not None else 0, where=where)
        if self.films is not None and y is None:
            y = torch.full((h.shape[0],), self.num_classes, dtype=torch.long, device=h.device)  # null class
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i == 0 and self.position is not None:
                h = h + self.position
                if self.class_position is not None:
                    h = h + self.class_position(y).reshape(h.shape[0], *self.position.shape[1:])
            if i < len(self.layers) - 1:
                h = self.act(h)
                if self.films is not None:
                    h = self.films[i](h, y)
        return h


def _check_arch(image_size: int, downsample: int) -> None:
    """What the declaration :data:`ARCH` cannot say: the stride-2 stages must divide the image size."""
    if image_size % (2 ** downsample):
        raise ValueError(f"image_size must be divisible by 2**downsample = {2 ** downsample}, got {image_size}")


class ConvEncoder(_ConvStack):
    """``[B, C, H, W] -> [B, latent_channels, H / 2^k, W / 2^k]``: conv3x3, k stride-2 conv4x4, conv1x1."""

    @validate(**ARCH, num_classes=CLASSES, position=FLAG)
    def __init__(self, *, in_channels: int = 1, image_size: int = 16, latent_channels: int = 8, width: int = 28,
                 downsample: int = 2, num_classes: int = 0, position: bool = False) -> None:
        _check_arch(image_size, downsample)
        chans = [width] + [2 * width] * downsample
        layers: list[nn.Module] = [nn.Conv2d(in_channels, width, 3, padding=1)]
        layers += [nn.Conv2d(chans[i], chans[i + 1], 4, stride=2, padding=1) for i in range(downsample)]
        layers.append(nn.Conv2d(chans[-1], latent_channels, 1))
        super().__init__(layers, chans, num_classes, (image_size, image_size) if position else None)


class ConvDecoder(_ConvStack):
    """``[B, latent_channels, h, w] -> [B, C, 2^k h, 2^k w]``: conv3x3, k transposed conv4x4, conv3x3."""

    @validate(**ARCH, num_classes=CLASSES, position=FLAG)
    def __init__(self, *, in_channels: int = 1, image_size: int = 16, latent_channels: int = 8, width: int = 28,
                 downsample: int = 2, num_classes: int = 0, position: bool = False) -> None:
        _check_arch(image_size, downsample)
        chans = [2 * width] * downsample + [width]
        layers: list[nn.Module] = [nn.Conv2d(latent_channels, chans[0], 3, padding=1)]
        layers += [nn.ConvTranspose2d(chans[i], chans[i + 1], 4, stride=2, padding=1) for i in range(downsample)]
        layers.append(nn.Conv2d(chans[-1], in_channels, 3, padding=1))
        side = image_size // 2 ** downsample
        super().__init__(layers, chans, num_classes, (side, side) if position else None, class_position=True)


class ConvAutoencoder(nn.Module):
    """A small conv autoencoder satisfying :class:`LatentTokenizer` (the SLE tokenizer at our scale).

    Args:
        in_channels: image channels (1 for digits).
        image_size: H = W of the images (16).
        latent_channels: C of the latent (8).
        width: base conv width (28 gives ≈ 0.16M parameters at 16×16 → 4×4×8).
        downsample: number of stride-2 stages (2: 16×16 → 4×4).
    """

    @validate(**ARCH)
    def __init__(self, *, in_channels: int = 1, image_size: int = 16, latent_channels: int = 8, width: int = 28,
                 downsample: int = 2) -> None:
        super().__init__()
        kw = dict(in_channels=in_channels, image_size=image_size, latent_channels=latent_channels, width=width,
                  downsample=downsample)
        self.encoder = ConvEncoder(**kw)
        self.decoder = ConvDecoder(**kw)
        self.in_channels, self.image_size = in_channels, image_size
        side = image_size // 2 ** downsample
        self.latent_shape: tuple[int, int, int] = (latent_channels, side, side)
        self.config = dict(kw)  # the constructor's arguments (save_pretrained / from_pretrained)

    def encode(self, x: Tensor) -> Tensor:
        """Images ``[B, C, H, W]`` in [-1, 1] -> latents ``[B, *latent_shape]``."""
        check_images(x, channels=self.in_channels, size=self.image_size, where="ConvAutoencoder.encode")
        return self.encoder(x)

    def decode(self, z: Tensor) -> Tensor:
        """Latents ``[B, *latent_shape]`` -> images ``[B, C, H, W]`` (about [-1, 1]; not clamped)."""
        check_latents(z, self.latent_shape, where="ConvAutoencoder.decode")
        return self.decoder(z)

    def forward(self, x: Tensor) -> Tensor:
        return self.decode(self.encode(x))

    @validate(latent_noise=NONNEG)
    def reconstruction_loss(self, x: Tensor, latent_noise: float = 0.1) -> Tensor:
        r"""$\lVert \hat x - x\rVert_1 + \lVert \hat x - x\rVert_2^2$ (means),
        $\hat x = D(E(x) + \sigma\,\mathrm{rms}(z)\,n)$,
        $\sigma \sim U[0, \text{latent\_noise}]$ per sample (noise augmentation, as RAE trains its decoder)."""
        check_images(x, channels=self.in_channels, size=self.image_size, where="ConvAutoencoder.reconstruction_loss")
        with trusted():
            return self._reconstruction_loss(x, latent_noise)

    def _reconstruction_loss(self, x: Tensor, latent_noise: float) -> Tensor:
        z = self.encode(x)
        if latent_noise > 0:
            rms = z.detach().pow(2).mean(dim=(1, 2, 3), keepdim=True).sqrt()
            sigma = latent_noise * torch.rand(z.shape[0], 1, 1, 1, device=z.device, dtype=z.dtype)
            z = z + sigma * rms * torch.randn_like(z)
        x_hat = self.decode(z)
        return (x_hat - x).abs().mean() + (x_hat - x).pow(2).mean()


@torch.no_grad()
@validate(tokenizer=TOKENIZER, batch_size=COUNT, eps=NONNEG)
def latent_statistics(tokenizer: LatentTokenizer, x: Tensor, *, batch_size: int = 512,
                      eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    """Per-channel mean and std ``([C], [C])`` of ``tokenizer.encode(x)`` over a dataset (cache them once)."""
    check_images(x, where="latent_statistics")
    z = torch.cat([tokenizer.encode(x[i:i + batch_size]) for i in range(0, x.shape[0], batch_size)])
    dims = (0, 2, 3)
    return z.mean(dim=dims), z.std(dim=dims) + eps
