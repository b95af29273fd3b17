"""Hugging Face adapter: run a ``transformers`` causal LM on a :class:`SharedPromptBatch`.

Importing this module registers ``"dualkv"`` in transformers' ``AttentionInterface`` (the attention) and in its
``AttentionMaskInterface`` (the mask builder), so any model can be loaded or switched by name:

    import neurips26.dualkv.hf                      # registers "dualkv"
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="dualkv")   # or enable_dualkv(model)
    out = model.generate(prompt_ids, max_new_tokens=64)      # no packed batch: plain SDPA (rollouts)
    logits = packed_logits(model, batch)                     # packed batch: DualKV (policy update)
    logps = response_logprobs(logits, batch)

One model serves both: a call **with** ``dualkv_batch=<SharedPromptBatch>`` runs DualKV; a call without one
(``generate``, evaluation, a padded batch) runs transformers' own SDPA attention with the usual causal/padding
mask. The mask builder is SDPA's, except inside :func:`packed_logits` (which tells it, through a context
variable, that no ``[T, T]`` mask is needed: DualKV builds its structure from the packing).

A packed call runs as **one row** (batch size 1): put all prompt groups in one :class:`SharedPromptBatch`
(:func:`~.packing.pack_shared_prompt` takes any number of groups); a packed call with several rows is refused.

Exactness needs a strictly causal, per-token decoder (Llama/Qwen/Mistral/Gemma/GPT-OSS-style, dropout off).
Sliding-window layers, Gemma-2 soft-capping and GPT-OSS attention sinks are applied in the packed path with the
packing's logical positions; chunked attention, relative position biases and bidirectional modules are refused
by name. MoE token dropping or T-dependent auxiliary losses change with the token count (see README).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from neurips26.constraints import Instance, Int, Optional, Real, Tensor, check_arguments, validate

from .attention import dualkv_attention
from .packing import SharedPromptBatch, pack_shared_prompt

__all__ = ["ATTENTION_NAME", "register_dualkv_attention", "enable_dualkv", "packed_logits", "hf_dualkv_attention",
           "dualkv_mask", "packed_call", "packed_completion_logps"]

ATTENTION_NAME = "dualkv"

#: True while a packed DualKV forward runs (set by :func:`packed_call`): the mask builder then returns ``None``.
_PACKED: contextvars.ContextVar[bool] = contextvars.ContextVar("neurips26_dualkv_packed", default=False)


@contextlib.contextmanager
def packed_call() -> Iterator[None]:
    """Within this block, a model switched to ``"dualkv"`` builds no attention mask (for packed forwards that
    pass ``dualkv_batch=`` themselves; :func:`packed_logits` uses it)."""
    token = _PACKED.set(True)
    try:
        yield
    finally:
        _PACKED.reset(token)


_BATCH = Instance(SharedPromptBatch, "SharedPromptBatch")


def dualkv_mask(*args: Any, **kwargs: Any) -> torch.Tensor | None:
    """The ``AttentionMaskInterface`` entry: SDPA's mask (``None`` when plain causal), or ``None`` inside
    :func:`packed_call` (the packed path ignores masks; building a ``[T, T]`` one would waste memory).

    Inside a packed call a mask *structure* the packed attention cannot see is refused: chunked attention
    (``config.attention_chunk_size``, Llama-4 style) lives only in the mask, so dropping it would be silent."""
    if _PACKED.get():
        chunk = getattr(kwargs.get("config"), "attention_chunk_size", None)
        if chunk is not None:
            raise ValueError(f"DualKV: the model uses chunked attention (config.attention_chunk_size={chunk}), "
                             "which the packed path does not implement; train this model on the replicated layout")
        return None
    return sdpa_mask(*args, **kwargs)


#: Attention kwargs whose meaning the packed path cannot honour: refused by name rather than dropped.
_REFUSED = {"position_bias": "an additive relative-position bias (T5-style)",
            "attention_chunk_size": "chunked attention"}


def _sinks_argument(kwargs: dict[str, Any]) -> torch.Tensor | None:
    """The per-head softmax-sink logits, passed as ``s_aux`` (GPT-OSS and most models) or ``sinks``."""
    s_aux, sinks = kwargs.get("s_aux"), kwargs.get("sinks")
    if s_aux is not None and sinks is not None:
        raise ValueError("DualKV: got both s_aux and sinks; pass the softmax-sink logits once")
    return s_aux if s_aux is not None else sinks


def _eager_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attention_mask: torch.Tensor | None, scaling: float | None, dropout: float,
                     softcap: float | None, sinks: torch.Tensor | None) -> torch.Tensor:
    r"""Unpacked attention with soft-capping and/or sinks (SDPA has neither), as transformers' eager path does:
    $S = c\tanh(QK^\top s / c)$ + mask, softmax in fp32 over ``[S | sink]``, sink column dropped.

    ``query [B, H, q, d]``, ``key/value [B, H_kv, k, d]``; ``attention_mask`` bool (True = visible), additive
    float, or ``None`` (plain causal, the query block ending at the last key). Returns ``[B, q, H, d]``."""
    h, hk, d = query.shape[1], key.shape[1], query.shape[-1]
    key = key.repeat_interleave(h // hk, dim=1) if h != hk else key
    value = value.repeat_interleave(h // hk, dim=1) if h != hk else value
    scores = torch.matmul(query, key.transpose(2, 3)) * (d ** -0.5 if scaling is None else scaling)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    lowest = torch.finfo(scores.dtype).min  # as transformers' eager masks: fully masked rows stay finite
    if attention_mask is None:
        q_len, k_len = query.shape[2], key.shape[2]
        visible = torch.ones(q_len, k_len, dtype=torch.bool, device=query.device).tril(k_len - q_len)
        scores = scores.masked_fill(~visible, lowest)
    elif attention_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attention_mask, lowest)
    else:
        scores = scores + attention_mask
    if sinks is not None:
        sink = sinks.to(scores.dtype).view(1, h, 1, 1).expand(*scores.shape[:-1], 1)
        probs = torch.softmax(torch.cat([scores, sink], dim=-1).float(), dim=-1)[..., :-1]
    else:
        probs = torch.softmax(scores.float(), dim=-1)
    probs = torch.nn.functional.dropout(probs.to(value.dtype), p=dropout, training=module.training)
    return torch.matmul(probs, value).transpose(1, 2).contiguous()


def hf_dualkv_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                        *, dualkv_batch: SharedPromptBatch | None = None, dualkv_backend: str = "auto",
                        sliding_window: int | None = None, softcap: float | None = None,
                        **kwargs: Any) -> tuple[torch.Tensor, None]:
    """The ``AttentionInterface`` function: ``query [B, H, T, d]``, ``key/value [B, H_kv, T, d]`` ->
    ``([B, T, H, d], None)`` (the layout HF attention functions return).

    Without ``dualkv_batch``: transformers' SDPA attention (with ``attention_mask``, KV cache and all); with a
    ``softcap`` or attention sinks (which SDPA lacks) the eager formula on the same mask.
    With it: DualKV over the packing; needs ``B = 1`` and no attention dropout. ``sliding_window``,
    ``softcap`` and the sinks (``s_aux``/``sinks``) are applied per region with the packing's logical positions
    (see :mod:`.attention`); a bidirectional module (``is_causal=False``) and a ``position_bias`` are refused."""
    sinks = _sinks_argument(kwargs)
    if dualkv_batch is None:
        if softcap is not None or sinks is not None:
            return _eager_attention(module, query, key, value, attention_mask, scaling, dropout, softcap, sinks), None
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      sliding_window=sliding_window, **kwargs)
    check_arguments("hf_dualkv_attention", {"dualkv_batch": _BATCH}, {"dualkv_batch": dualkv_batch})
    if dropout:
        raise ValueError(f"DualKV is exact only without attention dropout, got dropout={dropout}; call model.eval() "
                         "or set attention_dropout=0")
    if kwargs.get("is_causal") is False or getattr(module, "is_causal", True) is False:
        raise ValueError(f"DualKV packs causal decoders only; {type(module).__name__} attends bidirectionally "
                         "(is_causal=False)")
    for name, what in _REFUSED.items():
        if kwargs.get(name) is not None:
            raise ValueError(f"DualKV: {name} ({what}) is not implemented by the packed path; got {name} for "
                             f"{type(module).__name__}. Train this model on the replicated layout")
    if query.shape[0] != 1:
        raise ValueError(f"dualkv_batch: a packed DualKV call runs as one row, got query {tuple(query.shape)} with "
                         f"batch size {query.shape[0]}; pack every prompt group into one SharedPromptBatch "
                         "(pack_shared_prompt takes any number of groups) and call with input_ids [1, T]")
    out = dualkv_attention(query[0].transpose(0, 1), key[0].transpose(0, 1), value[0].transpose(0, 1),
                           dualkv_batch, scale=scaling, backend=dualkv_backend, check_finite=False,
                           sliding_window=sliding_window, softcap=softcap, sinks=sinks)
    return out[None], None


def register_dualkv_attention(name: str = ATTENTION_NAME) -> str:
    """Register :func:`hf_dualkv_attention` and :func:`dualkv_mask` under ``name`` (done on import for
    ``"dualkv"``; call it for another name)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty str, got {name!r}")
    AttentionInterface.register(name, hf_dualkv_attention)
    AttentionMaskInterface.register(name, dualkv_mask)
    return name


def enable_dualkv(model: torch.nn.Module, name: str = ATTENTION_NAME) -> torch.nn.Module:
    """Register the function and switch ``model`` to it (``model.config._attn_implementation = name``)."""
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"model must be a transformers PreTrainedModel, got {type(model).__name__}")
    register_dualkv_attention(name)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:  # older transformers
        model.config._attn_implementation = name
    return model


@validate(batch=_BATCH, logits_to_keep=Optional(Tensor("K", dtype=(torch.int64, torch.int32))))
def packed_logits(model: torch.nn.Module, batch: SharedPromptBatch, *, backend: str = "auto",
                  logits_to_keep: torch.Tensor | None = None, **model_kwargs: Any) -> torch.Tensor:
    """Logits ``[T, vocab]`` of an HF causal LM (switched to ``"dualkv"``) on the packed layout.

    ``logits_to_keep``: optional 1-D int64 row indices; only those rows go through the LM head (``[K, vocab]``
    is returned), e.g. ``batch.logprob_index()[0]``, the rows that predict response tokens."""
    config = getattr(getattr(model, "module", model), "config", None)  # DDP keeps the model in .module
    impl = getattr(config, "_attn_implementation", None)
    if impl != ATTENTION_NAME:
        raise ValueError(f"model uses attention {impl!r}; call enable_dualkv(model) first")
    vocab = getattr(config, "vocab_size", None)
    ids = batch.input_ids
    if vocab is not None and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise ValueError(f"batch: token ids must lie in [0, vocab_size={vocab}), got ids in "
                         f"[{int(ids.min())}, {int(ids.max())}]")
    if logits_to_keep is not None:  # row indices
        if logits_to_keep.numel() and (int(logits_to_keep.min()) < 0
                                       or int(logits_to_keep.max()) >= batch.num_tokens):
            raise ValueError(f"logits_to_keep: row indices must lie in [0, T={batch.num_tokens})")
        model_kwargs["logits_to_keep"] = logits_to_keep
    device = next(model.parameters()).device
    with packed_call():
        out = model(input_ids=ids[None].to(device), position_ids=batch.position_ids[None].to(device),
                    use_cache=False, dualkv_batch=batch, dualkv_backend=backend, **model_kwargs)
    return out.logits[0]


def _is_prefix(mask: torch.Tensor) -> bool:
    """Every row of a 0/1 mask ``[B, C]`` is ones then zeros."""
    return bool((mask[:, 1:] <= mask[:, :-1]).all()) if mask.shape[1] > 1 else True


@validate(input_ids=Tensor("B L", finite=False), attention_mask=Tensor("B L", finite=False),
          temperature=Real(0, closed="neither"))
def packed_completion_logps(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                            logits_to_keep: int, *, temperature: float = 1.0, compute_entropy: bool = False,
                            backend: str = "auto") -> tuple[torch.Tensor, torch.Tensor | None] | None:
    r"""Per-token completion log-probs (and entropies) of a padded rollout batch from one packed DualKV forward.

    The layout TRL's ``GRPOTrainer`` and veRL's actor score (one row per completion, prompt left-padded,
    completion right-padded); :mod:`.trl` and :mod:`.verl` call it.

    Args:
        model: HF causal LM switched to ``"dualkv"`` (:func:`~.hf.enable_dualkv`).
        input_ids: ``[B, P_pad + C]`` left-padded prompts then right-padded completions.
        attention_mask: ``[B, P_pad + C]``, 1 on real tokens; the completion part must be a prefix per row.
        logits_to_keep: ``C``, the completion width.
        temperature: logits are divided by it (TRL's ``temperature``). compute_entropy: also return
            $H = \mathrm{logsumexp}(z) - \sum_v p_v z_v$ per completion token.

    Returns:
        ``(logps [B, C], entropies [B, C] | None)`` in fp32, zeros at padded positions; ``None`` when the chunk
        cannot be packed (a completion mask that is not a prefix, or no real completion token at all).
    """
    # the completion width: at least one completion and one prompt column
    check_arguments("packed_completion_logps", {"logits_to_keep": Int(low=1, high=input_ids.shape[1] - 1)},
                    {"logits_to_keep": logits_to_keep})
    c = int(logits_to_keep)
    prompt_ids, completion_ids = input_ids[:, :-c], input_ids[:, -c:]
    prompt_mask, completion_mask = attention_mask[:, :-c].bool(), attention_mask[:, -c:].bool()
    if not _is_prefix(completion_mask.int()):
        return None
    lengths = completion_mask.sum(1)
    rows = [b for b in range(input_ids.shape[0]) if lengths[b] > 0 and prompt_mask[b].any()]
    if not rows:
        return None
    # group rows by their real prompt tokens (GRPO keeps the N completions of a prompt together)
    order: dict[tuple[int, ...], list[int]] = {}
    for b in rows:
        order.setdefault(tuple(prompt_ids[b][prompt_mask[b]].tolist()), []).append(b)
    groups, flat_rows = [], []
    for members in order.values():
        b0 = members[0]
        groups.append((prompt_ids[b0][prompt_mask[b0]].cpu(),
                       [completion_ids[b][:int(lengths[b])].cpu() for b in members]))
        flat_rows.extend(members)
    batch = pack_shared_prompt(groups)
    pred, targets = batch.logprob_index()
    device = input_ids.device
    z = packed_logits(model, batch, backend=backend, logits_to_keep=pred.to(device)).float() / temperature
    lse = torch.logsumexp(z, dim=-1)
    logp = z.gather(1, targets.to(device)[:, None])[:, 0] - lse  # [ΣR]
    ent = lse - (torch.softmax(z, dim=-1) * z).sum(-1) if compute_entropy else None
    # scatter the flat response tokens back to TRL's [B, C] layout (completion r of row b: columns 0..R-1)
    out_rows = torch.cat([torch.full((int(lengths[b]),), b, dtype=torch.long) for b in flat_rows]).to(device)
    out_cols = torch.cat([torch.arange(int(lengths[b])) for b in flat_rows]).to(device)
    logps = logp.new_zeros(input_ids.shape[0], c).index_put((out_rows, out_cols), logp)
    entropies = None if ent is None else ent.new_zeros(input_ids.shape[0], c).index_put((out_rows, out_cols), ent)
    return logps, entropies


register_dualkv_attention()
