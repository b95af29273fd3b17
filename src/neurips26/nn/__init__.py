"""Building blocks shared by several papers: a small Llama-style decoder (tst, dualkv, dynconv)."""

from .llama import (
    Attention,
    Block,
    Llama,
    LlamaConfig,
    RMSNorm,
    SwiGLU,
    apply_rope,
    repeat_kv,
    rope_cos_sin,
    sdpa_attention,
)

__all__ = ["Attention", "Block", "Llama", "LlamaConfig", "RMSNorm", "SwiGLU", "apply_rope", "repeat_kv",
           "rope_cos_sin", "sdpa_attention"]
