"""Building blocks shared by several papers: a small Llama-style decoder (tst, dualkv, dynconv), a
byte-level BPE tokenizer cached on disk, and a text-corpus loader with resumable token windows."""

from .corpus import TextCorpus, TokenWindows, eval_windows, load_text_corpus, split_text
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
from .tokenizer import BPETokenizer, default_cache_dir, train_bpe_tokenizer

__all__ = ["Attention", "BPETokenizer", "Block", "Llama", "LlamaConfig", "RMSNorm", "SwiGLU", "TextCorpus",
           "TokenWindows", "apply_rope", "default_cache_dir", "eval_windows", "load_text_corpus",
           "repeat_kv", "rope_cos_sin", "sdpa_attention", "split_text", "train_bpe_tokenizer"]
