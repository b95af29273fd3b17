r"""HF-style ``.hidden_states`` for the library's own models, and depth truncation ("pre-scaled" backbones).

:class:`HiddenStates` wraps a :class:`neurips26.nn.Llama`, a :class:`neurips26.nn.minilm.BertEncoder` or a
``MiniLM`` and returns, like Hugging Face models called with ``output_hidden_states=True``, an object with
``.hidden_states``: a tuple of ``L + 1`` tensors ``[B, T, d]``, entry 0 the embeddings and entry ``l`` the
output of block ``l``. They are read by forward hooks on the blocks (the models themselves return logits or
the last layer only). As in Hugging Face's Llama, the last entry of a full Llama is after the final RMSNorm;
a truncated Llama (``depth < n_layers``) has no final norm (its last block's raw output), which is why the
server normalises features per backbone type.

Device cost (counted, not measured) per sample of ``T`` tokens through blocks with $P$ weights, $L$ layers
of width $d$ (multiply-add = 2 FLOPs; the embedding lookup is free):

$$F_{\text{fwd}} = 2 P T + 4 L T^2 d, \qquad F_{\text{LoRA step}} \approx 2 F_{\text{fwd}}$$

(the LoRA backward needs the activation gradients, $\approx F_{\text{fwd}}$, but no gradients of the
frozen weights; the rank-$r$ adapters add a negligible amount). ``tests/mobillm`` checks
$F_{\text{fwd}}$ against ``torch.utils.flop_counter``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from neurips26.constraints import Choice, Int, Optional, validate

__all__ = ["BackboneOutput", "HiddenStates", "backbone_flops", "block_parameters"]


@dataclass
class BackboneOutput:
    """``hidden_states``: tuple of ``L + 1`` tensors ``[B, T, d]``; ``last_hidden_state`` = the last one."""

    hidden_states: tuple[torch.Tensor, ...]

    @property
    def last_hidden_state(self) -> torch.Tensor:
        return self.hidden_states[-1]


def _kind(model: nn.Module) -> str:
    from neurips26.nn import Llama
    from neurips26.nn.minilm import BertEncoder, MiniLM

    if isinstance(model, Llama):
        return "llama"
    if isinstance(model, BertEncoder):
        return "bert"
    if isinstance(model, MiniLM):
        return "minilm"
    raise TypeError(f"backbone must be a neurips26.nn Llama, BertEncoder or MiniLM, got {type(model).__name__}")


def _shallow_truncate(model: nn.Module, depth: int, drop_norm: bool) -> nn.Module:
    """A copy of ``model`` that shares every weight but keeps only ``layers[:depth]``."""
    clone = copy.copy(model)
    clone._modules = dict(model._modules)  # new child table, same child modules (no weights copied)
    clone.layers = nn.ModuleList(list(model.layers)[:depth])
    if drop_norm:
        clone.norm = nn.Identity()
    return clone


class HiddenStates(nn.Module):
    """A backbone that answers ``output_hidden_states=True`` like a Hugging Face model.

    Args:
        model: a ``neurips26.nn.Llama`` (causal; right padding needs no mask since later pads cannot reach
            earlier tokens), a ``BertEncoder`` or a ``MiniLM`` (bidirectional, masked).
        depth: keep only the first ``depth`` blocks (a "pre-scaled" backbone sharing the weights); default all.
    """

    def __init__(self, model: nn.Module, *, depth: int | None = None) -> None:
        super().__init__()
        kind = _kind(model)
        inner = model.encoder if kind == "minilm" else model
        n = len(inner.layers)
        Optional(Int(low=1, high=n)).check(depth, "depth", f"HiddenStates (the model has {n} blocks)")
        depth = None if depth is None else int(depth)
        self.kind = "bert" if kind == "minilm" else kind
        self.full_depth = n
        self.depth = n if depth is None else depth
        self.model = inner if self.depth == n else _shallow_truncate(inner, self.depth, drop_norm=self.kind == "llama")

    @property
    def n_layers(self) -> int:
        return self.depth

    @property
    def d_model(self) -> int:
        cfg = self.model.config
        return int(cfg.d_model if self.kind == "llama" else cfg.hidden_size)

    @validate(output_hidden_states=Choice(True))  # this wrapper exists to return them
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *,
                output_hidden_states: bool = True) -> BackboneOutput:
        """``input_ids [B, T]``, ``attention_mask [B, T]`` -> :class:`BackboneOutput` (``L + 1`` states)."""
        captured: list[torch.Tensor] = []
        first = self.model.embed_tokens if self.kind == "llama" else self.model.embed_norm
        handles = [first.register_forward_hook(lambda _m, _i, out: captured.append(out))]
        handles += [blk.register_forward_hook(lambda _m, _i, out: captured.append(out)) for blk in self.model.layers]
        try:
            if self.kind == "llama":
                last = self.model.hidden_states(input_ids)  # after the final norm (Identity when truncated)
            else:
                last = self.model(input_ids, attention_mask)
        finally:
            for h in handles:
                h.remove()
        states = captured[: self.depth + 1]
        states[-1] = last
        return BackboneOutput(hidden_states=tuple(states))

    def flops_per_sample(self, tokens: int) -> float:
        """Forward FLOPs for one sample of ``tokens`` tokens (formula in the module docstring)."""
        return backbone_flops(block_parameters(self), self.depth, self.d_model, tokens)


def block_parameters(backbone: nn.Module) -> int:
    """Weights of the linear maps in the blocks (what a forward multiplies by; embeddings, norms, biases left out)."""
    layers = backbone.model.layers if isinstance(backbone, HiddenStates) else backbone.layers
    return int(sum(m.weight.numel() for m in layers.modules() if isinstance(m, nn.Linear)))


def backbone_flops(block_params: int, n_layers: int, d_model: int, tokens: int) -> float:
    r"""$2 P T + 4 L T^2 d$: the matrix products of ``n_layers`` blocks and of attention (scores and mix)."""
    return 2.0 * block_params * tokens + 4.0 * n_layers * tokens * tokens * d_model
