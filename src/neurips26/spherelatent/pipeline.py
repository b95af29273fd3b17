r"""A diffusers-shaped front end: a pipeline object, ``save_pretrained`` / ``from_pretrained``, and a tokenizer
adapter for a diffusers ``AutoencoderKL``.

    pipe = SphereLatentPipeline(trained_sle)                       # any generator of this package
    out = pipe(class_labels=[3, 1, 4], num_inference_steps=4, generator=torch.Generator().manual_seed(0))
    out.images                                                     # [3, C, H, W] in [0, 1]
    pipe.save_pretrained("sle-digits")                             # config.json + model.safetensors
    pipe = SphereLatentPipeline.from_pretrained("sle-digits")

The folder holds ``config.json`` (the pipeline's class, the generator's class and constructor arguments, those of
its tokenizer and network) and ``model.safetensors`` (the generator's ``state_dict``: weights, the latent
statistics and the frozen tokenizer). Loading rebuilds each module from its config and loads the weights strictly,
so a folder from another architecture fails loudly. Weights are written with ``safetensors`` (the ``hf`` extra).

:class:`DiffusersVAETokenizer` wraps a diffusers ``AutoencoderKL`` as a :class:`LatentTokenizer` (latent = the
posterior mean times the VAE's ``scaling_factor``), so SLE can sit on a standard VAE; it needs the ``diffusers``
package, which no neurips26 extra installs yet (a clear ``ImportError`` says so).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from neurips26.constraints import AnyOf, ArrayLike, Bool, Choice, Instance, Int, Optional, check_arguments, validate

from .baselines import LatentConsistencyModel, LatentFlowMatching, SphereEncoder
from .denoiser import LatentTransformer
from .sle import SphereLatentEncoder
from .tokenizer import COUNT, ConvAutoencoder, check_images, check_latents

__all__ = ["DiffusersVAETokenizer", "ImagePipelineOutput", "SphereLatentPipeline"]

CONFIG_NAME, WEIGHTS_NAME = "config.json", "model.safetensors"
_GENERATORS = {c.__name__: c for c in (SphereLatentEncoder, LatentFlowMatching, LatentConsistencyModel,
                                       SphereEncoder)}
_NET_ARG = {"SphereLatentEncoder": "denoiser", "LatentFlowMatching": "velocity", "LatentConsistencyModel": "net"}
_DIFFUSERS_HINT = "needs the `diffusers` package: pip install 'neurips26[diffusers]' (or pip install diffusers)"
#: an int, or a non-empty 1-D list / array / tensor of ints (``None``: unconditional, then ``batch_size``)
_CLASS_LABELS = Optional(AnyOf(Int(), ArrayLike(ndim=1, dtype="integer")))


def _safetensors() -> Any:
    try:
        import safetensors.torch as st
    except ImportError as err:  # pragma: no cover - safetensors ships with the hf extra
        raise ImportError("save_pretrained/from_pretrained need `safetensors` (pip install 'neurips26[hf]')") from err
    return st


@dataclass
class ImagePipelineOutput:
    """What a pipeline call returns (diffusers' shape): ``images`` ``[B, C, H, W]`` in [0, 1] (``"pt"``) or
    ``[B, H, W, C]`` float numpy (``"np"``)."""

    images: Tensor | np.ndarray


class SphereLatentPipeline:
    """Class-conditional image generation with a trained generator, called like a diffusers pipeline.

    Args:
        model: a trained :class:`SphereLatentEncoder` (or :class:`LatentFlowMatching`,
            :class:`LatentConsistencyModel`, :class:`SphereEncoder`); used in ``eval()``.
        default_steps: ``num_inference_steps`` when the call gives none (4).
    """

    @validate(default_steps=COUNT)
    def __init__(self, model: nn.Module, *, default_steps: int = 4) -> None:
        # exactly one of the generator classes (not a subclass: save/load rebuilds the class by its name)
        if type(model).__name__ not in _GENERATORS or not isinstance(model, tuple(_GENERATORS.values())):
            raise TypeError(f"model must be one of {sorted(_GENERATORS)}, got {type(model).__name__}")
        self.model, self.default_steps = model.eval(), default_steps

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _labels(self, class_labels: Any, batch_size: int | None) -> tuple[Tensor | None, int]:
        """``class_labels`` (declared :data:`_CLASS_LABELS`) as a long tensor on the model's device, and the
        batch size."""
        if class_labels is None:
            check_arguments("SphereLatentPipeline.__call__ (without class_labels)", {"batch_size": COUNT},
                            {"batch_size": batch_size})
            return None, batch_size
        labels = class_labels if isinstance(class_labels, Tensor) else torch.as_tensor(class_labels)
        labels = labels.reshape(1) if labels.ndim == 0 else labels  # one int
        if labels.numel() < 1:
            raise ValueError(f"class_labels must be a non-empty 1-D list or tensor of ints, got {class_labels!r}")
        if batch_size is not None and batch_size != labels.numel():
            raise ValueError(f"batch_size={batch_size!r} disagrees with the {labels.numel()} class_labels")
        return labels.long().to(self.device), labels.numel()

    @torch.no_grad()
    @validate(class_labels=_CLASS_LABELS, num_inference_steps=Optional(COUNT), batch_size=Optional(COUNT),
              output_type=Choice("pt", "np"), return_dict=Bool())
    def __call__(self, class_labels: int | list[int] | Tensor | None = None, num_inference_steps: int | None = None,
                 generator: torch.Generator | None = None, *, batch_size: int | None = None,
                 guidance_scale: float = 1.0, output_type: str = "pt",
                 return_dict: bool = True) -> ImagePipelineOutput | tuple[Tensor | np.ndarray]:
        """Generate one image per class label.

        Args:
            class_labels: an int, a list of ints or an integer tensor ``[B]`` (in ``[0, num_classes)``); ``None``
                for unconditional samples (then ``batch_size``).
            num_inference_steps: sampling steps T (default ``default_steps``).
            generator: a ``torch.Generator``: the same generator state gives the same images.
            guidance_scale: classifier-free guidance weight (1 = conditional only).
            output_type: ``"pt"`` (tensor ``[B, C, H, W]``) or ``"np"`` (array ``[B, H, W, C]``), values in [0, 1].
            return_dict: an :class:`ImagePipelineOutput` (default) or the tuple ``(images,)``.
        """
        steps = self.default_steps if num_inference_steps is None else num_inference_steps
        labels, n = self._labels(class_labels, batch_size)
        images = self.model.sample(n, steps=steps, y=labels, cfg=guidance_scale, generator=generator)
        if output_type == "np":
            images = images.permute(0, 2, 3, 1).cpu().float().numpy()
        return ImagePipelineOutput(images) if return_dict else (images,)

    # ------------------------------------------------------------------ save / load
    def config(self) -> dict[str, Any]:
        """The JSON config that :meth:`from_pretrained` rebuilds the pipeline from."""
        model = self.model
        entry: dict[str, Any] = {"class": type(model).__name__, "config": dict(model.config)}
        if type(model).__name__ in _NET_ARG:
            tok, net = model.tokenizer, getattr(model, _NET_ARG[type(model).__name__])
            if not isinstance(net, LatentTransformer):
                raise TypeError(f"save_pretrained supports a LatentTransformer network, got {type(net).__name__}")
            entry["tokenizer"] = _tokenizer_config(tok)
            entry["network"] = {"class": "LatentTransformer", "config": dict(net.config)}
        return {"_class_name": type(self).__name__, "default_steps": self.default_steps, "model": entry}

    def save_pretrained(self, save_directory: str | os.PathLike) -> None:
        """Write ``config.json`` and ``model.safetensors`` into ``save_directory`` (created if missing)."""
        st = _safetensors()
        config = self.config()
        os.makedirs(save_directory, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        st.save_file(state, os.path.join(save_directory, WEIGHTS_NAME), metadata={"format": "pt"})
        with open(os.path.join(save_directory, CONFIG_NAME), "w", encoding="utf-8") as fh:
            json.dump(config, fh, indent=2, sort_keys=True)

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike, *,
                        device: str | torch.device = "cpu") -> SphereLatentPipeline:
        """Rebuild a pipeline saved by :meth:`save_pretrained` (weights loaded strictly)."""
        st = _safetensors()
        cfg_path, w_path = os.path.join(directory, CONFIG_NAME), os.path.join(directory, WEIGHTS_NAME)
        for path in (cfg_path, w_path):
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{path} not found: from_pretrained needs a folder written by save_pretrained")
        with open(cfg_path, encoding="utf-8") as fh:
            config = json.load(fh)
        if config.get("_class_name") != cls.__name__:
            raise ValueError(f"{cfg_path} describes {config.get('_class_name')!r}, not a {cls.__name__}")
        model = _build(config["model"])
        model.load_state_dict(st.load_file(w_path), strict=True)
        return cls(model.to(device), default_steps=int(config["default_steps"]))


def _tokenizer_config(tok: Any) -> dict[str, Any]:
    if isinstance(tok, ConvAutoencoder):
        return {"class": "ConvAutoencoder", "config": dict(tok.config)}
    if isinstance(tok, DiffusersVAETokenizer):
        return {"class": "DiffusersVAETokenizer", "config": {"vae": dict(tok.vae.config), "image_size": tok.image_size}}
    raise TypeError(f"save_pretrained supports a ConvAutoencoder or DiffusersVAETokenizer tokenizer, got "
                    f"{type(tok).__name__}")


def _build(entry: dict[str, Any]) -> nn.Module:
    name = entry.get("class")
    if name not in _GENERATORS:
        raise ValueError(f"unknown generator class {name!r} in config (known: {sorted(_GENERATORS)})")
    kw = dict(entry["config"])
    if name == "SphereEncoder":
        return SphereEncoder(**kw)
    tok_entry = entry["tokenizer"]
    if tok_entry["class"] == "ConvAutoencoder":
        tok: Any = ConvAutoencoder(**tok_entry["config"])
    elif tok_entry["class"] == "DiffusersVAETokenizer":
        vae = tok_entry["config"]
        tok = DiffusersVAETokenizer.from_config(vae["vae"], image_size=vae["image_size"])
    else:
        raise ValueError(f"unknown tokenizer class {tok_entry['class']!r} in config")
    net_kw = dict(entry["network"]["config"])
    net_kw["latent_shape"] = tuple(net_kw["latent_shape"])
    net = LatentTransformer(**net_kw)
    c = tok.latent_shape[0]
    stats = (torch.zeros(c), torch.ones(c))  # placeholders: the saved statistics come with the weights
    return _GENERATORS[name](tok, net, latent_stats=stats, **kw)


# ------------------------------------------------------------------ diffusers AutoencoderKL adapter
def _diffusers_vae_class() -> Any:
    try:
        from diffusers import AutoencoderKL
    except ImportError as err:
        raise ImportError(f"DiffusersVAETokenizer {_DIFFUSERS_HINT}") from err
    return AutoencoderKL


class DiffusersVAETokenizer(nn.Module):
    r"""A diffusers ``AutoencoderKL`` as a :class:`LatentTokenizer`: $E(x) = s\,\mu_\phi(x)$ (the posterior mean
    times ``scaling_factor`` $s$), $D(z) = \mathrm{dec}_\phi(z / s)$. Images ``[B, C, H, W]`` in [-1, 1] (diffusers'
    convention); latents ``[B, latent_channels, H / f, W / f]``, $f = 2^{(\text{len(block\_out\_channels)} - 1)}$.

    Args:
        vae: an ``AutoencoderKL`` (frozen by the generator that holds it).
        image_size: H = W of the images (fixes ``latent_shape``).
    """

    @validate(image_size=COUNT)
    def __init__(self, vae: nn.Module, *, image_size: int) -> None:
        vae_class = _diffusers_vae_class()
        check_arguments("DiffusersVAETokenizer.__init__", {"vae": Instance(vae_class, "diffusers AutoencoderKL")},
                        {"vae": vae})
        factor = 2 ** (len(vae.config.block_out_channels) - 1)
        if image_size % factor:
            raise ValueError(f"image_size must be divisible by the VAE's downsampling factor {factor}, "
                             f"got {image_size}")
        super().__init__()
        self.vae, self.image_size = vae, image_size
        self.in_channels = int(vae.config.in_channels)
        self.scaling = float(getattr(vae.config, "scaling_factor", 1.0) or 1.0)
        side = image_size // factor
        self.latent_shape: tuple[int, int, int] = (int(vae.config.latent_channels), side, side)

    @classmethod
    def from_config(cls, config: dict[str, Any], *, image_size: int) -> DiffusersVAETokenizer:
        """Build an (untrained) ``AutoencoderKL`` from its config dict (``AutoencoderKL.from_config``) and wrap it."""
        vae_class = _diffusers_vae_class()
        return cls(vae_class.from_config(config), image_size=image_size)

    def encode(self, x: Tensor) -> Tensor:
        """Images ``[B, C, H, W]`` in [-1, 1] -> ``s * mean`` of the posterior ``[B, *latent_shape]``."""
        check_images(x, channels=self.in_channels, size=self.image_size, where="DiffusersVAETokenizer.encode")
        return self.vae.encode(x).latent_dist.mean * self.scaling

    def decode(self, z: Tensor) -> Tensor:
        """Latents ``[B, *latent_shape]`` -> images ``[B, C, H, W]`` (about [-1, 1])."""
        check_latents(z, self.latent_shape, where="DiffusersVAETokenizer.decode")
        return self.vae.decode(z / self.scaling).sample
