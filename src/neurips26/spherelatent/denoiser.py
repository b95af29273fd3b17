r"""SiT-style transformer over latent tokens, class-conditioned through adaLN-Zero, with no timestep input.

A latent ``[B, C, h, w]`` becomes ``h·w`` tokens of width C, projected to ``dim`` with a learned position
embedding. Each block is

$$ u = x + g_1 \odot \mathrm{Attn}\big(\mathrm{LN}(x)(1 + s_1) + b_1\big), \qquad
   x' = u + g_2 \odot \mathrm{MLP}\big(\mathrm{LN}(u)(1 + s_2) + b_2\big), $$

with $(s_1, b_1, g_1, s_2, b_2, g_2) = W\,\mathrm{SiLU}(c)$ and $W$ zero-initialised (adaLN-Zero, DiT/SiT), where
$c$ is the class embedding (class ``num_classes`` = "no class", used for classifier-free guidance).
SLE's denoiser takes no timestep, mirroring the Sphere Encoder's decoder (inferred: SLE's code is not
public). With ``time_input=True`` a sinusoidal embedding of $t \in [0, 1]$ is added to $c$: the velocity
net of the latent flow-matching baseline is the same transformer with that switch on.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.constraints import Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorSpec

from ..nn.layers import AdaLNZeroBlock, modulate
from .tokenizer import CLASSES, COUNT, FLAG, check_labels, check_latents, is_trusted

__all__ = ["LatentTransformer"]


_WHERE = "LatentTransformer.forward"


def _null_only(y: object, b: int) -> Tensor:
    """Without classes the only label is the null class 0 (what :func:`guided` passes)."""
    check_arguments(_WHERE, {"y": TensorSpec(str(b), dtype="integer")}, {"y": y})
    if not is_trusted() and bool((y != 0).any()):
        raise ValueError("y must be the null class 0 (or None): this LatentTransformer has no classes")
    return y.long()


class LatentTransformer(nn.Module):
    """Denoiser $G_\\theta(\\tilde z, y) \\to \\hat z$ (or a velocity net with ``time_input=True``).

    Args:
        latent_shape: ``(C, h, w)`` of the latents; tokens = h·w of width C.
        dim: transformer width (128).
        depth: number of blocks (4).
        heads: attention heads (4); ``dim`` must be divisible by it.
        mlp_ratio: MLP hidden width / dim (4).
        num_classes: 0 for unconditional; else labels in [0, num_classes) and ``num_classes`` = no class.
        time_input: add an embedding of ``t`` (flow matching); SLE uses False.
    """

    @validate(dim=COUNT, depth=COUNT, heads=COUNT, mlp_ratio=Real(0.0, closed="neither"), num_classes=CLASSES,
              time_input=FLAG)
    def __init__(self, latent_shape: tuple[int, int, int], *, dim: int = 128, depth: int = 4, heads: int = 4,
                 mlp_ratio: float = 4.0, num_classes: int = 0, time_input: bool = False) -> None:
        super().__init__()
        if not (isinstance(latent_shape, tuple | list) and len(latent_shape) == 3
                and all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in latent_shape)):
            raise ValueError(f"latent_shape must be three positive ints (C, h, w), got {latent_shape!r}")
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads, got dim={dim}, heads={heads}")
        self.latent_shape = tuple(latent_shape)
        self.num_classes, self.time_input, self.dim = num_classes, bool(time_input), dim
        self.config = dict(latent_shape=list(latent_shape), dim=dim, depth=depth, heads=heads,
                           mlp_ratio=float(mlp_ratio), num_classes=num_classes, time_input=bool(time_input))
        c, h, w = self.latent_shape
        self.embed = nn.Linear(c, dim)
        self.pos = nn.Parameter(torch.randn(1, h * w, dim) * 0.02)
        self.class_embed = nn.Embedding(num_classes + 1, dim)
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim)) if time_input else None
        # the DiT/SiT block (LayerNorm eps 1e-6, tanh-GELU), shared through neurips26.nn.layers
        self.blocks = nn.ModuleList(AdaLNZeroBlock(dim, heads, mlp_ratio, norm_eps=1e-6, gelu="tanh")
                                    for _ in range(depth))
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.final_ada = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, c)
        nn.init.zeros_(self.final_ada.weight)
        nn.init.zeros_(self.final_ada.bias)

    def _time_embedding(self, t: Tensor) -> Tensor:
        # $[\cos(1000 t \omega_k), \sin(1000 t \omega_k)]$, $\omega_k = 10^{-4 k / (d/2)}$
        half = self.dim // 2
        freqs = torch.exp(-math.log(10_000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
        angles = 1000.0 * t.float()[:, None] * freqs[None]
        emb = torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)
        if emb.shape[1] < self.dim:
            emb = F.pad(emb, (0, self.dim - emb.shape[1]))
        return self.time_mlp(emb.to(self.pos.dtype))

    def forward(self, z: Tensor, y: Tensor | None = None, t: Tensor | None = None) -> Tensor:
        """``z [B, C, h, w]``, ``y [B]`` long or ``None`` (no class), ``t [B]`` in [0, 1] iff ``time_input``."""
        check_latents(z, self.latent_shape, where=_WHERE)
        b = z.shape[0]
        if y is None:
            y = torch.full((b,), self.num_classes, dtype=torch.long, device=z.device)
        else:  # labels in [0, num_classes], num_classes being the null class
            y = check_labels(y, b, self.num_classes + 1, where=_WHERE) if self.num_classes > 0 else _null_only(y, b)
        c = self.class_embed(y)
        if self.time_input:  # t [B] in [0, 1] (time_input=True)
            check_arguments(_WHERE, {"t": TensorSpec(str(b), dtype="float")}, {"t": t})
            if not is_trusted() and not bool(((t >= 0) & (t <= 1)).all()):
                raise ValueError("t must lie in [0, 1] (NaN refused)")
            c = c + self._time_embedding(t)
        elif t is not None:
            raise ValueError("t was given but this LatentTransformer has no time input (time_input=False)")
        # [B, C, h, w] -> [B, h*w, C] -> [B, h*w, dim]
        x = self.embed(z.flatten(2).transpose(1, 2)) + self.pos
        for block in self.blocks:
            x = block(x, c)
        shift, scale = self.final_ada(F.silu(c)).chunk(2, dim=-1)
        x = self.out(modulate(self.norm(x), shift, scale))
        # [B, h*w, C] -> [B, C, h, w]
        return x.transpose(1, 2).reshape(b, *self.latent_shape)
