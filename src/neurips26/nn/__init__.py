"""Building blocks shared by several papers: a small Llama-style decoder (tst, dualkv, dynconv), a
byte-level BPE tokenizer cached on disk, a text-corpus loader with resumable token windows, a plain LM
training loop (:mod:`.train`) and the kernel-backend resolver (:mod:`.backend`)."""

from .backend import interpreter_active, resolve_backend, triton_available
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
from .train import StepRecord, TrainResult, lr_at, lr_lambda, next_token_loss, seeded_batches, train_lm

__all__ = ["Attention", "BPETokenizer", "Block", "Llama", "LlamaConfig", "RMSNorm", "SwiGLU", "TextCorpus",
           "StepRecord", "TokenWindows", "TrainResult", "apply_rope", "default_cache_dir", "eval_windows",
           "interpreter_active", "load_text_corpus", "lr_at", "lr_lambda", "next_token_loss", "repeat_kv",
           "resolve_backend", "rope_cos_sin", "sdpa_attention", "seeded_batches", "split_text",
           "train_bpe_tokenizer", "train_lm", "triton_available"]
