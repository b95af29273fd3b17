r"""Transformer pieces that several papers share, written once (timm's ``layers``, labml.ai's annotations).

* :class:`RMSNorm` — $y = x / \sqrt{\overline{x^2} + \epsilon} \odot g$ (Llama).
* :class:`SwiGLU` — the gated feed-forward $W_2(\mathrm{silu}(W_1 x) \odot W_3 x)$ (Llama).
* :class:`PreNormBlock` — $x \leftarrow x + \mathrm{Attn}(\mathrm{N}(x))$;
  $x \leftarrow x + \mathrm{MLP}(\mathrm{N}(x))$, causal or not, LayerNorm or RMSNorm, GELU or SwiGLU MLP.
* :class:`AdaLNZeroBlock` — the DiT block: a conditioning vector $c$ sets a shift, scale and gate for the
  attention and for the MLP, from a zero-initialised projection, so the block starts as the identity.
* :func:`modulate` — $x (1 + s) + b$, the adaptive-norm modulation.
* :func:`patchify` / :func:`unpatchify` — images ``[B, C, H, W]`` <-> tokens ``[B, (H/p)(W/p), C p p]``.

Shapes: ``B`` batch, ``N`` tokens, ``D`` model width, ``H`` heads, ``d = D / H`` head width.

Both blocks keep their projections as direct children (``qkv``, ``proj``, ``mlp``, ``ada``, ``norm1``,
``norm2``) so that a paper's module built on them keeps the ``state_dict`` keys of its hand-written block, and
both take two seams per call: ``rotate(t) -> t`` applied to queries and keys ``[B, H, N, d]`` (a RoPE), and
``attend(q, k, v) -> [B, H, N, d]`` replacing scaled-dot-product attention (a sparse or cached attention).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..constraints import Int, Tensor, validate

__all__ = ["AdaLNZeroBlock", "PreNormBlock", "RMSNorm", "SwiGLU", "modulate", "patchify", "unpatchify"]

Rotate = Callable[[torch.Tensor], torch.Tensor]
Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


# ------------------------------------------------------------------------------------------ norms and MLPs
class RMSNorm(nn.Module):
    r"""Root-mean-square norm over the last dimension, with a learned gain $g$ (initialised to 1):

    $$y = \frac{x}{\sqrt{\frac1D \sum_i x_i^2 + \epsilon}} \odot g.$$

    ``x [..., D]`` -> ``[..., D]`` (dtype: that of ``x`` promoted with ``weight``'s). Parameter: ``weight [D]``.
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # normalise in fp32 (the mean of squares underflows/overflows in bf16/fp16), then cast back
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.to(x.dtype) * self.weight


class SwiGLU(nn.Module):
    r"""Gated feed-forward (Shazeer 2020): $\mathrm{MLP}(x) = W_2\big(\mathrm{silu}(W_1 x) \odot W_3 x\big)$.

    ``x [..., d_model]`` -> ``[..., d_model]``; hidden width ``d_ff``. Parameters (Llama's names):
    ``gate_proj`` ($W_1$), ``up_proj`` ($W_3$), ``down_proj`` ($W_2$).
    """

    def __init__(self, d_model: int, d_ff: int, *, bias: bool = False) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.up_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def _gelu_mlp(dim: int, hidden: int, approximate: str, bias: bool = True) -> nn.Sequential:
    """``Linear(dim, hidden) -> GELU -> Linear(hidden, dim)`` (keys ``0.*`` and ``2.*``)."""
    return nn.Sequential(nn.Linear(dim, hidden, bias=bias), nn.GELU(approximate=approximate),
                         nn.Linear(hidden, dim, bias=bias))


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    r"""Adaptive-norm modulation $x \odot (1 + s) + b$ (DiT).

    ``x [B, N, D]``; ``shift``, ``scale`` either ``[B, D]`` (one per sample, broadcast over the tokens) or
    ``[B, N, D]`` (one per token). Returns ``[B, N, D]``.
    """
    if shift.dim() == 2:
        shift, scale = shift[:, None], scale[:, None]
    return x * (1 + scale) + shift


# ------------------------------------------------------------------------------------------ attention
class _SelfAttention(nn.Module):
    """The fused ``qkv`` projection, multi-head attention and the output ``proj``, shared by both blocks."""

    heads: int
    causal: bool

    def _init_attention(self, dim: int, heads: int, bias: bool) -> None:
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads, got dim={dim}, heads={heads}")
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=bias)
        self.proj = nn.Linear(dim, dim, bias=bias)

    def attention(self, h: torch.Tensor, *, rotate: Rotate | None = None, attend: Attend | None = None,
                  attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        r"""$\mathrm{proj}\big(\mathrm{softmax}(q k^\top / \sqrt d + M) v\big)$ of the normalised input ``h [B, N, D]``.

        ``rotate`` is applied to $q$ and $k$ (``[B, H, N, d]``); ``attend(q, k, v)`` replaces the softmax step;
        ``attn_mask`` (bool, True = attend, or additive ``[B or 1, H or 1, N, N]``) replaces the causal mask.
        """
        b, n, d = h.shape
        # [B, N, 3 D] -> [B, N, 3, H, d] -> 3 x [B, H, N, d]
        q, k, v = self.qkv(h).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        if attend is not None:
            out = attend(q, k, v)
        elif attn_mask is not None:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        else:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        # [B, H, N, d] -> [B, N, H d]
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


# ------------------------------------------------------------------------------------------ the blocks
class PreNormBlock(_SelfAttention):
    r"""Pre-norm transformer block:

    $$x \leftarrow x + \mathrm{Attn}(\mathrm{N}_1(x)), \qquad x \leftarrow x + \mathrm{MLP}(\mathrm{N}_2(x)).$$

    Args:
        dim: model width $D$.  heads: attention heads $H$ (must divide ``dim``).
        mlp_ratio: MLP hidden width / ``dim`` (hidden = ``int(dim * mlp_ratio)``).
        causal: position $t$ attends only to positions $\le t$ (``F.scaled_dot_product_attention``'s causal mask).
        norm: ``"layer"`` (LayerNorm with affine) or ``"rms"`` (:class:`RMSNorm`).
        mlp: ``"gelu"`` (Linear-GELU-Linear, exact GELU) or ``"swiglu"`` (:class:`SwiGLU`).
        norm_eps: $\epsilon$ of the norms.  bias: biases on the attention and GELU-MLP projections.

    ``forward(x [B, N, D], *, rotate=None, attend=None, attn_mask=None) -> [B, N, D]`` (seams: module docstring).
    """

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0, *, causal: bool = False, norm: str = "layer",
                 mlp: str = "gelu", norm_eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        if norm not in ("layer", "rms"):
            raise ValueError(f"PreNormBlock: norm must be one of ('layer', 'rms'), got {norm!r}")
        if mlp not in ("gelu", "swiglu"):
            raise ValueError(f"PreNormBlock: mlp must be one of ('gelu', 'swiglu'), got {mlp!r}")
        self.causal = bool(causal)
        make_norm = (lambda: nn.LayerNorm(dim, eps=norm_eps)) if norm == "layer" else (lambda: RMSNorm(dim, norm_eps))
        self.norm1 = make_norm()
        self._init_attention(dim, heads, bias)
        self.norm2 = make_norm()
        hidden = int(dim * mlp_ratio)
        self.mlp = _gelu_mlp(dim, hidden, "none", bias) if mlp == "gelu" else SwiGLU(dim, hidden)

    def forward(self, x: torch.Tensor, *, rotate: Rotate | None = None, attend: Attend | None = None,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.attention(self.norm1(x), rotate=rotate, attend=attend, attn_mask=attn_mask)
        return x + self.mlp(self.norm2(x))


class AdaLNZeroBlock(_SelfAttention):
    r"""The adaLN-Zero transformer block of DiT (Peebles & Xie 2023), conditioned on a vector $c$:

    $$(b_1, s_1, g_1, b_2, s_2, g_2) = W\,\mathrm{SiLU}(c) + w_0,$$
    $$x \leftarrow x + g_1 \odot \mathrm{Attn}\big(\mathrm{LN}(x)(1 + s_1) + b_1\big), \qquad
      x \leftarrow x + g_2 \odot \mathrm{MLP}\big(\mathrm{LN}(x)(1 + s_2) + b_2\big),$$

    with LayerNorms without affine parameters. $W, w_0$ (``ada``) start at zero, so every gate is 0 and the
    block is the identity at initialisation ("-Zero"): a deep stack trains like a shallow one at first.

    Args:
        dim: model width $D$.  heads: attention heads (must divide ``dim``).
        mlp_ratio: MLP hidden width / ``dim`` (hidden = ``int(dim * mlp_ratio)``).
        norm_eps: $\epsilon$ of the two LayerNorms (DiT/SiT use 1e-6; PyTorch's default is 1e-5).
        gelu: ``"tanh"`` (DiT's approximate GELU) or ``"none"`` (exact).
        causal: causal self-attention (default: full).

    ``forward(x [B, N, D], c [B, D] or [B, N, D], *, rotate=None, attend=None) -> [B, N, D]``: ``c [B, D]``
    conditions all tokens of a sample alike; ``c [B, N, D]`` conditions each token (e.g. a per-frame noise level).
    Parameters: ``qkv``, ``proj``, ``mlp.0``, ``mlp.2``, ``ada`` (created in this order: the RNG draws of a
    seeded model do not depend on which paper built it).
    """

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0, *, norm_eps: float = 1e-6,
                 gelu: str = "tanh", causal: bool = False) -> None:
        super().__init__()
        if gelu not in ("tanh", "none"):
            raise ValueError(f"AdaLNZeroBlock: gelu must be one of ('tanh', 'none'), got {gelu!r}")
        self.causal = bool(causal)
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=norm_eps)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=norm_eps)
        self._init_attention(dim, heads, bias=True)
        self.mlp = _gelu_mlp(dim, int(dim * mlp_ratio), gelu)
        self.ada = nn.Linear(dim, 6 * dim)
        nn.init.zeros_(self.ada.weight)  # adaLN-Zero: all gates 0 -> identity block at initialisation
        nn.init.zeros_(self.ada.bias)

    def forward(self, x: torch.Tensor, c: torch.Tensor, *, rotate: Rotate | None = None,
                attend: Attend | None = None) -> torch.Tensor:
        shift1, scale1, gate1, shift2, scale2, gate2 = self.ada(F.silu(c)).chunk(6, dim=-1)
        if c.dim() == 2:  # one condition per sample: broadcast over the N tokens
            gate1, gate2 = gate1[:, None], gate2[:, None]
        x = x + gate1 * self.attention(modulate(self.norm1(x), shift1, scale1), rotate=rotate, attend=attend)
        return x + gate2 * self.mlp(modulate(self.norm2(x), shift2, scale2))


# ------------------------------------------------------------------------------------------ patches
@validate(x=Tensor("B C H W", finite=False), p=Int(low=1))
def patchify(x: torch.Tensor, p: int) -> torch.Tensor:
    r"""Cut images into non-overlapping ``p x p`` patches, in raster order (row by row).

    ``x [B, C, H, W]`` -> tokens ``[B, (H/p)(W/p), C p p]``; token $i w' + j$ ($w' = W/p$) holds
    ``x[:, :, i p:(i+1) p, j p:(j+1) p]`` flattened channel-major (index $c p^2 + u p + v$). ``p`` must divide
    ``H`` and ``W``. A pure re-indexing: values (NaN included) are moved, never changed.
    """
    b, c, h, w = x.shape
    if h % p or w % p:
        raise ValueError(f"patchify: p must divide the image height and width {h} x {w}, got {p}")
    gh, gw = h // p, w // p
    # [B, C, gh, p, gw, p] -> [B, gh, gw, C, p, p]
    x = x.reshape(b, c, gh, p, gw, p).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(b, gh * gw, c * p * p)


@validate(tokens=Tensor("B N K", finite=False), p=Int(low=1), h=Int(low=1), w=Int(low=1))
def unpatchify(tokens: torch.Tensor, p: int, h: int, w: int) -> torch.Tensor:
    """Inverse of :func:`patchify`: tokens ``[B, (h/p)(w/p), C p p]`` -> images ``[B, C, h, w]``
    (``h``, ``w``: the image height and width in pixels, both multiples of ``p``; ``C`` = width / p²)."""
    b, n, k = tokens.shape
    if h % p or w % p:
        raise ValueError(f"unpatchify: p must divide the image height and width {h} x {w}, got {p}")
    gh, gw = h // p, w // p
    if n != gh * gw or k % (p * p):
        raise ValueError(f"unpatchify: tokens must be [B, {gh * gw}, C*{p * p}] for {h} x {w} images in "
                         f"{p} x {p} patches, got shape {list(tokens.shape)}")
    c = k // (p * p)
    # [B, gh, gw, C, p, p] -> [B, C, gh, p, gw, p]
    x = tokens.reshape(b, gh, gw, c, p, p).permute(0, 3, 1, 4, 2, 5)
    return x.reshape(b, c, h, w)

