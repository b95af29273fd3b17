"""A small Llama-style decoder you can hold in your head (nanoGPT-sized), shared by several papers.

RMSNorm -> attention (RoPE, grouped-query heads) -> residual -> RMSNorm -> SwiGLU MLP -> residual,
repeated ``n_layers`` times, then a final RMSNorm and the LM head (optionally tied to the embedding).

Two seams let papers plug in without forking the model:

* ``attention_fn``: the core ``softmax(q kᵀ / √d) v`` step. Signature
  ``attention_fn(q, k, v, **attention_kwargs) -> out`` with ``q: [B, H, T, d]``,
  ``k, v: [B, H_kv, T, d]`` (not yet repeated for grouped-query attention), ``out: [B, H, T, d]``.
  The default :func:`sdpa_attention` is causal scaled-dot-product attention. ``attention_kwargs``
  given to :meth:`Llama.forward` reach it untouched (e.g. a packing description).
* ``attention_factory``: builds the whole attention block per layer, ``factory(config, layer_idx)``,
  for methods that change the projections themselves (e.g. convolutions on Q/K/V).

Like Hugging Face causal LMs, :meth:`Llama.forward` accepts ``input_ids`` *or* ``inputs_embeds`` and
optional ``position_ids``, and returns logits ``[B, T, vocab]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .layers import RMSNorm, SwiGLU  # noqa: F401  (re-exported: neurips26.nn.llama.RMSNorm)


@dataclass
class LlamaConfig:
    """Model shape. ``n_kv_heads`` < ``n_heads`` gives grouped-query attention (must divide it)."""

    vocab_size: int = 2048
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int | None = None
    d_ff: int | None = None  # SwiGLU hidden size; default ≈ 8/3 · d_model rounded up to a multiple of 32
    max_seq_len: int = 1024
    rope_theta: float = 10000.0
    norm_eps: float = 1e-6
    tie_embeddings: bool = True
    init_std: float = 0.02

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "max_seq_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"LlamaConfig.{name} must be a positive int, got {value!r}")
        if self.n_kv_heads is None:
            self.n_kv_heads = self.n_heads
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads ({self.n_heads})")
        if self.head_dim % 2:
            raise ValueError(f"head_dim = d_model / n_heads must be even for RoPE, got {self.head_dim}")
        if self.d_ff is None:
            self.d_ff = 32 * math.ceil(8 * self.d_model / 3 / 32)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def rope_cos_sin(position_ids: torch.Tensor, head_dim: int, theta: float,
                 dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Rotary tables for positions ``[B, T]`` (or ``[T]``): cos, sin of shape ``[B, 1, T, head_dim]``.

    Frequencies $\omega_i = \theta^{-2i/d}$; the angle at position $p$ is $p\,\omega_i$, used on the
    two halves of the head dimension (the "rotate half" convention of Llama/HF).
    """
    if position_ids.dim() == 1:
        position_ids = position_ids.unsqueeze(0)
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, device=position_ids.device, dtype=torch.float32)
                         / head_dim)
    angles = position_ids.to(torch.float32)[..., None] * inv_freq  # [B, T, d/2]
    angles = torch.cat([angles, angles], dim=-1)[:, None]  # [B, 1, T, d]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    r"""Rotate ``x: [B, H, T, d]``: $x \cos + \mathrm{rot}(x) \sin$ with $\mathrm{rot}(a, b) = (-b, a)$."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """``[B, H_kv, T, d]`` -> ``[B, H_kv * n_rep, T, d]`` (each kv head serves ``n_rep`` query heads)."""
    if n_rep == 1:
        return x
    b, h, t, d = x.shape
    return x[:, :, None].expand(b, h, n_rep, t, d).reshape(b, h * n_rep, t, d)


def sdpa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                   attn_mask: torch.Tensor | None = None, is_causal: bool = True,
                   **_: Any) -> torch.Tensor:
    """Default attention: causal ``F.scaled_dot_product_attention`` with grouped-query repetition.

    ``q: [B, H, T, d]``, ``k, v: [B, H_kv, S, d]``; ``attn_mask`` (bool, True = attend, or additive)
    replaces the causal mask when given.
    """
    n_rep = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    if attn_mask is not None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)


AttentionFn = Callable[..., torch.Tensor]


class Attention(nn.Module):
    """Multi-head attention with RoPE and grouped-query heads; the core step is ``attention_fn``."""

    def __init__(self, config: LlamaConfig, attention_fn: AttentionFn | None = None) -> None:
        super().__init__()
        self.config = config
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.q_proj = nn.Linear(config.d_model, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.d_model, self.n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.d_model, self.n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, config.d_model, bias=False)
        self.attention_fn = attention_fn or sdpa_attention

    def split_heads(self, x: torch.Tensor, n_heads: int) -> torch.Tensor:
        """``[B, T, n_heads * d]`` -> ``[B, n_heads, T, d]``."""
        b, t, _ = x.shape
        return x.view(b, t, n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                **attention_kwargs: Any) -> torch.Tensor:
        """``x: [B, T, d_model]`` -> ``[B, T, d_model]``."""
        q = apply_rope(self.split_heads(self.q_proj(x), self.n_heads), cos, sin)
        k = apply_rope(self.split_heads(self.k_proj(x), self.n_kv_heads), cos, sin)
        v = self.split_heads(self.v_proj(x), self.n_kv_heads)
        out = self.attention_fn(q, k, v, **attention_kwargs)  # [B, H, T, d]
        b, _, t, _ = out.shape
        return self.o_proj(out.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim))


class Block(nn.Module):
    """One decoder layer: ``x + attn(attn_norm(x))``, then ``x + mlp(mlp_norm(x))`` (RMSNorm, SwiGLU from
    :mod:`.layers`; the attention block is the layer's own, for RoPE and grouped-query heads)."""

    def __init__(self, config: LlamaConfig, attention: nn.Module) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = attention
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.mlp = SwiGLU(config.d_model, config.d_ff)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                **attention_kwargs: Any) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin, **attention_kwargs)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    """The decoder. ``forward(input_ids | inputs_embeds, position_ids=None, **attention_kwargs)``.

    Args:
        config: model shape.
        attention_fn: the core attention step for every layer (default causal SDPA).
        attention_factory: ``factory(config, layer_idx) -> nn.Module`` building each layer's attention
            block (same ``forward(x, cos, sin, **kw)`` contract as :class:`Attention`); overrides
            ``attention_fn``.
    """

    def __init__(self, config: LlamaConfig, *, attention_fn: AttentionFn | None = None,
                 attention_factory: Callable[[LlamaConfig, int], nn.Module] | None = None) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model)
        factory = attention_factory or (lambda cfg, _: Attention(cfg, attention_fn))
        self.layers = nn.ModuleList(Block(config, factory(config, i)) for i in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        if config.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def num_parameters(self, *, exclude_embeddings: bool = False) -> int:
        """Unique parameters (tied weights counted once)."""
        params = {id(p): p for p in self.parameters()}
        if exclude_embeddings:
            params.pop(id(self.embed_tokens.weight), None)
            params.pop(id(self.lm_head.weight), None)
        return sum(p.numel() for p in params.values())

    def hidden_states(self, input_ids: torch.Tensor | None = None, *,
                      inputs_embeds: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                      **attention_kwargs: Any) -> torch.Tensor:
        """Final normalised hidden states ``[B, T, d_model]`` (before the LM head)."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids [B, T] and inputs_embeds [B, T, d_model]")
        if input_ids is not None:
            if input_ids.dim() != 2 or input_ids.dtype not in (torch.int64, torch.int32):
                raise ValueError(f"input_ids must be an integer tensor [B, T], got {input_ids.dtype} "
                                 f"{tuple(input_ids.shape)}")
            x = self.embed_tokens(input_ids)
        else:
            if inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != self.config.d_model:
                raise ValueError(f"inputs_embeds must be [B, T, {self.config.d_model}], got "
                                 f"{tuple(inputs_embeds.shape)}")
            x = inputs_embeds
        b, t, _ = x.shape
        if position_ids is None:
            position_ids = torch.arange(t, device=x.device).unsqueeze(0).expand(b, t)
        elif position_ids.shape[-1] != t:
            raise ValueError(f"position_ids must end in the sequence length {t}, got {tuple(position_ids.shape)}")
        cos, sin = rope_cos_sin(position_ids, self.config.head_dim, self.config.rope_theta, x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin, **attention_kwargs)
        return self.norm(x)

    def forward(self, input_ids: torch.Tensor | None = None, *, inputs_embeds: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, **attention_kwargs: Any) -> torch.Tensor:
        """Logits ``[B, T, vocab_size]``."""
        return self.lm_head(self.hidden_states(input_ids, inputs_embeds=inputs_embeds,
                                               position_ids=position_ids, **attention_kwargs))
