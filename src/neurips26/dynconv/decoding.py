r"""KV-cached decoding for models with short convs, and convs on a Hugging Face model that survive ``generate``.

A short conv at position $t$ reads $x_{t-W+1..t}$; a decoder that feeds one new token per call must therefore
carry each conv's last $W-1$ inputs beside the attention's keys and values. :func:`conv_cache` gives every
conv of a model a :class:`~.modules.ConvCache` (each call continues the previous one), :func:`generate`
decodes a :class:`neurips26.nn.Llama` built with :func:`~.modules.conv_attention_factory` (or
:func:`~.every_linear.every_linear_llama`) with both caches, and :func:`add_convs_to_hf` puts convs on the
q/k/v projections of a Hugging Face Llama-style model through forward hooks that carry the conv state
through ``model.generate`` (greedy, sampling and beam search, whose cache reorders it re-applies), and
refuse what they cannot do right (left-padded batches, a KV cache the convs have not seen).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from neurips26.constraints import Bool, Choice, Instance, Int, Tensor, validate
from neurips26.nn import Llama

from .modules import ConvAugmentedAttention, ConvCache, DynamicShortConv, KVCache, StaticShortConv

_CONVS = (DynamicShortConv, StaticShortConv)


@contextmanager
@validate(model=Instance(nn.Module, "torch.nn.Module"))
def conv_cache(model: nn.Module) -> Iterator[ConvCache]:
    """Within the block, every short conv of ``model`` continues its previous call (decoding); on exit the
    convs are stateless again. Yields the shared :class:`ConvCache` (``reset()`` starts new sequences)."""
    convs = [m for m in model.modules() if isinstance(m, _CONVS)]
    if any(m.conv_cache is not None for m in convs):
        raise RuntimeError("a conv of this model already holds a decode cache (nested conv_cache or "
                           "add_convs_to_hf); remove it first")
    cache = ConvCache()
    for m in convs:
        m.conv_cache = cache
    try:
        yield cache
    finally:
        for m in convs:
            m.conv_cache = None


def _check_decodable(model: Llama) -> None:
    plain = [i for i, layer in enumerate(model.layers) if not isinstance(layer.attn, ConvAugmentedAttention)]
    if plain:
        raise TypeError(f"generate needs ConvAugmentedAttention in every layer (it keeps the KV cache); layers "
                        f"{plain} have {type(model.layers[plain[0]].attn).__name__}. Build the model with "
                        "attention_factory=conv_attention_factory(...) or every_linear_llama(...)")


@torch.no_grad()
@validate(model=Instance(Llama, "neurips26.nn.Llama"), input_ids=Tensor("B T", dtype=torch.int64),
          max_new_tokens=Int(low=1), use_cache=Bool())
def generate(model: Llama, input_ids: torch.Tensor, max_new_tokens: int, *, use_cache: bool = True) -> torch.Tensor:
    """Greedy decoding: ``input_ids [B, T]`` -> ``[B, T + max_new_tokens]``.

    ``use_cache=True`` prefills once, then feeds one token per step with the KV cache and the conv states
    (:func:`conv_cache`); ``use_cache=False`` re-runs the whole sequence at every step (the reference the
    tests compare against). The model is put in eval mode for the call and its mode restored after.
    """
    _check_decodable(model)
    if input_ids.shape[1] < 1:
        raise ValueError(f"generate: input_ids must hold at least one token (T >= 1), got shape "
                         f"{list(input_ids.shape)}")
    was_training = model.training
    model.eval()
    try:
        ids = input_ids
        if not use_cache:
            for _ in range(max_new_tokens):
                ids = torch.cat([ids, model(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
            return ids
        b, t = ids.shape
        kv = KVCache()
        with conv_cache(model):
            logits = model(ids, position_ids=torch.arange(t, device=ids.device).expand(b, t), kv_cache=kv)
            for step in range(max_new_tokens):
                nxt = logits[:, -1].argmax(-1, keepdim=True)  # [B, 1]
                ids = torch.cat([ids, nxt], dim=1)
                if step + 1 < max_new_tokens:
                    pos = torch.full((b, 1), t + step, device=ids.device, dtype=torch.long)
                    logits = model(nxt, position_ids=pos, kv_cache=kv)
        return ids
    finally:
        model.train(was_training)


class HFConvs(nn.ModuleList):
    """The convs :func:`add_convs_to_hf` put on a Hugging Face model (give them to the optimizer with the
    model's parameters); ``remove()`` takes the hooks off again."""

    def __init__(self, convs: list[nn.Module]) -> None:
        super().__init__(convs)
        self.cache = ConvCache()
        self._handles: list[Any] = []
        self._pending = 0

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for m in self:
            m.conv_cache = None


def _new_tokens(args: tuple, kwargs: dict) -> int:
    for key in ("input_ids", "inputs_embeds"):
        if kwargs.get(key) is not None:
            return int(kwargs[key].shape[1])
    if args and isinstance(args[0], torch.Tensor):
        return int(args[0].shape[1])
    raise ValueError("add_convs_to_hf: the model was called without input_ids / inputs_embeds")


def _before_call(convs: HFConvs, args: tuple, kwargs: dict) -> None:
    """Decide, before each call of the HF model, whether it starts a sequence or continues the cached one."""
    mask = kwargs.get("attention_mask")
    if isinstance(mask, torch.Tensor) and mask.dim() == 2 and not bool(mask.bool().all()):
        raise ValueError("add_convs_to_hf: the attention_mask has padding (zeros); the short convs would mix pad "
                         "positions into real tokens. Decode unpadded batches (equal-length prompts, or one "
                         "prompt at a time)")
    # the KV cache is `cache` in transformers 5, `past_key_values` before
    past_kv = next((kwargs[k] for k in ("cache", "past_key_values") if kwargs.get(k) is not None), None)
    past = 0
    if past_kv is not None and hasattr(past_kv, "get_seq_length"):
        past = int(past_kv.get_seq_length())
    positions = kwargs.get("position_ids", kwargs.get("cache_position"))
    if past == 0 and isinstance(positions, torch.Tensor) and positions.numel() and int(positions.min()) > 0:
        raise RuntimeError(f"add_convs_to_hf: this call starts at position {int(positions.min())} but no KV cache "
                           "the convs understand was passed; their state for the earlier positions is unknown")
    if past == 0:
        convs.cache.reset()  # a new sequence (a full forward, or the prefill of generate)
        if past_kv is not None and hasattr(past_kv, "reorder_cache") and not getattr(past_kv, "_dynconv", False):
            original = past_kv.reorder_cache

            def reorder_cache(beam_idx: torch.Tensor, _orig: Any = original) -> Any:
                convs.cache.reorder(beam_idx)  # beam search: the conv states follow their beams
                return _orig(beam_idx)

            past_kv.reorder_cache = reorder_cache
            past_kv._dynconv = True
    elif past != convs.cache.tokens:
        raise RuntimeError(f"add_convs_to_hf: the KV cache holds {past} positions but the convs' state covers "
                           f"{convs.cache.tokens}; the conv state of a cache built elsewhere is unknown. Start "
                           "from an empty cache (or call without past_key_values)")
    convs._pending = _new_tokens(args, kwargs)


def _conv_hook(conv: nn.Module, *, dynamic: bool) -> Any:
    """A forward hook replacing a projection's output ``h`` by ``conv(h)`` (dynamic: conditioned on its input)."""
    def hook(module: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
        return conv(out, cond=args[0]) if dynamic else conv(out)
    return hook


@validate(hf_model=Instance(nn.Module, "torch.nn.Module"), conv=Choice("dynamic", "static"),
          kernel_size=Int(low=1), rank=Int(low=1))
def add_convs_to_hf(hf_model: nn.Module, *, conv: str = "dynamic", kernel_size: int = 4, rank: int = 15) -> HFConvs:
    """Short convs on the q, k, v projections of every layer of a Hugging Face Llama/Qwen-style causal LM
    (``model.model.layers[i].self_attn.{q,k,v}_proj``), through forward hooks; returns them as
    :class:`HFConvs` (train them with the model).

    Full-sequence forwards (training, scoring) and ``hf_model.generate`` with its KV cache both give the
    convs the right inputs: a pre-hook on ``hf_model`` reads the cache length, starts a new conv state at
    an empty cache, continues it otherwise, and refuses a padded ``attention_mask`` or a cache whose length
    does not match the positions the convs have seen.
    """
    layers = getattr(getattr(hf_model, "model", None), "layers", None)
    if layers is None:
        raise TypeError(f"hf_model must be a Hugging Face causal LM with .model.layers (Llama, Qwen, ...), got "
                        f"{type(hf_model).__name__}")
    hidden = int(hf_model.config.hidden_size)
    found: list[tuple[nn.Module, nn.Module]] = []
    for layer in layers:
        for name in ("q_proj", "k_proj", "v_proj"):
            proj = getattr(layer.self_attn, name)
            if conv == "dynamic":
                m: nn.Module = DynamicShortConv(proj.out_features, kernel_size, rank, cond_dim=hidden, static=True,
                                                residual=True)
            else:
                m = StaticShortConv(proj.out_features, kernel_size, residual=True)
            found.append((proj, m))
    param = next(hf_model.parameters())
    convs = HFConvs([m.to(device=param.device) for _, m in found])
    for m in convs:
        m.conv_cache = convs.cache
    for proj, m in zip([p for p, _ in found], convs):
        convs._handles.append(proj.register_forward_hook(_conv_hook(m, dynamic=conv == "dynamic")))

    def pre(module: nn.Module, args: tuple, kwargs: dict) -> None:
        _before_call(convs, args, kwargs)

    def post(module: nn.Module, args: tuple, kwargs: dict, out: Any) -> None:
        convs.cache.tokens += convs._pending

    convs._handles.append(hf_model.register_forward_pre_hook(pre, with_kwargs=True))
    convs._handles.append(hf_model.register_forward_hook(post, with_kwargs=True))
    return convs
