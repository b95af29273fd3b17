"""Hugging Face adapter: run a ``transformers`` causal LM on a :class:`SharedPromptBatch`.

``transformers`` lets a model's attention be swapped by name through ``AttentionInterface``. We register a
function under ``"dualkv"`` that reads the packing from a keyword argument and calls
:func:`~.attention.dualkv_attention`. Because ``"dualkv"`` has no entry in the mask interface, the model
builds no ``[T, T]`` mask at all.

    from neurips26.dualkv.hf import enable_dualkv, packed_logits
    enable_dualkv(model)                       # model.config._attn_implementation = "dualkv"
    logits = packed_logits(model, batch)       # [T, vocab] over the packed layout
    logps = response_logprobs(logits, batch)

Exactness needs a strictly causal, per-token decoder (Llama/Qwen/Mistral-style, dropout off). Sliding-window
layers, MoE token dropping or T-dependent auxiliary losses change with the token count (see README).
"""

from __future__ import annotations

from typing import Any

import torch

from .attention import dualkv_attention
from .packing import SharedPromptBatch

__all__ = ["ATTENTION_NAME", "register_dualkv_attention", "enable_dualkv", "packed_logits", "hf_dualkv_attention"]

ATTENTION_NAME = "dualkv"


def hf_dualkv_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                        *, dualkv_batch: SharedPromptBatch | None = None, dualkv_backend: str = "auto",
                        **_: Any) -> tuple[torch.Tensor, None]:
    """The ``AttentionInterface`` function: ``query [1, H, T, d]``, ``key/value [1, H_kv, T, d]`` ->
    ``([1, T, H, d], None)`` (the layout HF attention functions return)."""
    if dualkv_batch is None:
        raise ValueError("the 'dualkv' attention needs the packing: call the model with "
                         "dualkv_batch=<SharedPromptBatch> (see neurips26.dualkv.hf.packed_logits)")
    if dropout:
        raise ValueError(f"DualKV is exact only without attention dropout, got dropout={dropout}; call model.eval() "
                         "or set attention_dropout=0")
    if query.shape[0] != 1:
        raise ValueError(f"a packed DualKV batch runs as batch size 1, got query {tuple(query.shape)}")
    out = dualkv_attention(query[0].transpose(0, 1), key[0].transpose(0, 1), value[0].transpose(0, 1),
                           dualkv_batch, scale=scaling, backend=dualkv_backend)
    return out[None], None


def register_dualkv_attention(name: str = ATTENTION_NAME) -> str:
    """Register :func:`hf_dualkv_attention` in ``transformers.AttentionInterface`` under ``name``."""
    from transformers import AttentionInterface

    AttentionInterface.register(name, hf_dualkv_attention)
    return name


def enable_dualkv(model: torch.nn.Module, name: str = ATTENTION_NAME) -> torch.nn.Module:
    """Register the function and switch ``model`` to it (``model.config._attn_implementation = name``)."""
    register_dualkv_attention(name)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:  # older transformers
        model.config._attn_implementation = name
    return model


def packed_logits(model: torch.nn.Module, batch: SharedPromptBatch, *, backend: str = "auto",
                  **model_kwargs: Any) -> torch.Tensor:
    """Logits ``[T, vocab]`` of an HF causal LM (switched with :func:`enable_dualkv`) on the packed layout."""
    if not isinstance(batch, SharedPromptBatch):
        raise TypeError(f"batch must be a SharedPromptBatch, got {type(batch).__name__}")
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != ATTENTION_NAME:
        raise ValueError(f"model uses attention {impl!r}; call enable_dualkv(model) first")
    device = next(model.parameters()).device
    out = model(input_ids=batch.input_ids[None].to(device), position_ids=batch.position_ids[None].to(device),
                use_cache=False, dualkv_batch=batch, dualkv_backend=backend, **model_kwargs)
    return out.logits[0]
