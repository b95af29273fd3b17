"""The ViT-B/L-shaped block that the speed claim (C3) and the benchmark time, dense and with DyRA.

``ViTBlock`` is a plain pre-norm block (LayerNorm, fused qkv, SDPA, GELU MLP) as in timm's ViT; it lives
here, not in ``check.py``, so the check and ``benchmarks/dyra_bench.py`` time the same module.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from .correction import DyRALinear
from .structured import StructuredLinear
from .swap import flops_per_token, replace_linears

__all__ = ["ViTBlock", "dyra_vit_block", "vit_block_flops"]


class ViTBlock(nn.Module):
    """Pre-norm transformer block: x + proj(attn(LN(x))), then + fc2(GELU(fc1(LN(x)))); x (B, T, d)."""

    def __init__(self, d: int, ff: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, d)
        x = x + self.proj(a)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def dyra_vit_block(block: ViTBlock, group: str, k: int = 32, *, oversample: int = 8) -> ViTBlock:
    """The block with every linear replaced by SVD(rank ratio 0.25) + DyRA(k), E in fp32."""
    out = copy.deepcopy(block)
    replace_linears(out, lambda name, lin: DyRALinear(
        lin, StructuredLinear.from_linear(lin, "svd", 0.25, svd_method="lowrank"), rank=k, oversample=oversample,
        group=group, residual_dtype=torch.float32))
    return out


def vit_block_flops(block: nn.Module, B: int, T: int) -> float:
    """FLOPs of one forward: the four linears (DyRA at group size T·B or T) + attention (4 T² d per image)."""
    d = block.ln1.normalized_shape[0]
    lin = 0.0
    for name in ("qkv", "proj", "fc1", "fc2"):
        mod = getattr(block, name)
        n_tok = (B * T if mod.group == "batch" else T) if isinstance(mod, DyRALinear) else None
        lin += flops_per_token(mod, n_tok) * B * T
    return lin + B * 4.0 * T * T * d
