r"""veRL-style adapter: the actor's ``_forward_micro_batch`` on a DualKV-packed forward.

veRL's FSDP actor (``verl.workers.actor.dp_actor.DataParallelPPOActor``) scores every micro-batch with
``_forward_micro_batch(micro_batch, temperature, calculate_entropy) -> (entropy, log_probs)``: ``micro_batch``
holds ``input_ids, attention_mask, position_ids [B, P_pad + R]`` (prompt left-padded, response right-padded) and
``responses [B, R]``; the result is ``[B, R]`` each,

$\log \pi(y_t) = \log\mathrm{softmax}(z_{t-1} / \tau)[y_t]$, read from ``logits[:, -R-1:-1]``.

:func:`forward_micro_batch` returns the same two tensors from one packed forward: rows with equal real prompt
tokens become one prompt group ``[P | R_1 | … | R_N]`` (:func:`~.hf.packed_completion_logps`), so each prompt
runs once per micro-batch instead of once per response. Padded response positions are 0 (veRL masks them with
``response_mask`` before any loss). :func:`dualkv_forward_micro_batch` wraps it in the method's signature:

    import types
    from neurips26.dualkv.verl import dualkv_forward_micro_batch
    actor._forward_micro_batch = types.MethodType(dualkv_forward_micro_batch(), actor)   # after building the actor

What veRL must do for the gain to exist (the paper's pipeline notes): all N responses of a prompt in one
micro-batch — ``trainer.balance_batch=False``, no shuffle of the mini-batch iterator, micro-batch size a multiple
of ``rollout.n``; dynamic batch size (``use_dynamic_bsz``) regroups by length and scatters groups. veRL itself is
not a dependency and this module does not import it: tested against the formula above on the unpacked model,
not inside a veRL run (veRL's ``use_remove_padding``/Ulysses paths are not covered).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from neurips26.constraints import Bool, Choice, Real, validate

from .hf import enable_dualkv, packed_completion_logps

__all__ = ["forward_micro_batch", "dualkv_forward_micro_batch"]

_KEYS = ("input_ids", "attention_mask", "responses")


def _unpacked(model: torch.nn.Module, micro_batch: Mapping[str, torch.Tensor], temperature: float,
              calculate_entropy: bool) -> tuple[torch.Tensor | None, torch.Tensor]:
    """veRL's own formula on the padded batch (used when a micro-batch cannot be packed)."""
    r = micro_batch["responses"].shape[1]
    kwargs = {"position_ids": micro_batch["position_ids"]} if "position_ids" in micro_batch else {}
    out = model(input_ids=micro_batch["input_ids"], attention_mask=micro_batch["attention_mask"], use_cache=False,
                **kwargs)
    z = out.logits[:, -r - 1:-1].float() / temperature
    lse = torch.logsumexp(z, dim=-1)
    logp = z.gather(-1, micro_batch["responses"][..., None])[..., 0] - lse
    ent = lse - (torch.softmax(z, dim=-1) * z).sum(-1) if calculate_entropy else None
    return ent, logp


@validate(temperature=Real(low=0.0, closed="neither"), calculate_entropy=Bool(), backend=Choice("auto", "torch",
                                                                                                  "triton"))
def forward_micro_batch(model: torch.nn.Module, micro_batch: Mapping[str, torch.Tensor], temperature: float = 1.0,
                        calculate_entropy: bool = False, *,
                        backend: str = "auto") -> tuple[torch.Tensor | None, torch.Tensor]:
    r"""``(entropy [B, R] | None, log_probs [B, R])`` of veRL's actor, from one DualKV-packed forward.

    Args:
        model: a Hugging Face causal LM (or its FSDP/PEFT wrapper); switched to ``"dualkv"`` if it is not.
        micro_batch: ``input_ids``, ``attention_mask`` ``[B, L]`` (1 on real tokens) and ``responses [B, R]``
            (``input_ids[:, -R:]``); ``position_ids`` is not needed (packing restarts positions itself).
        temperature: logits are divided by it ($\tau > 0$). calculate_entropy: also return
            $H = \mathrm{logsumexp}(z) - \sum_v p_v z_v$ per response token.
        backend: DualKV backend.

    fp32 results; 0 at padded response positions. A micro-batch whose response mask is not a prefix (or that
    has no real response token) runs veRL's unpacked formula instead.
    """
    if not isinstance(micro_batch, Mapping) or any(k not in micro_batch for k in _KEYS):
        raise ValueError(f"micro_batch must be a mapping with keys {_KEYS} (veRL's micro-batch), got "
                         f"{sorted(micro_batch) if isinstance(micro_batch, Mapping) else type(micro_batch).__name__}")
    ids, mask, responses = (micro_batch[k] for k in _KEYS)
    if not isinstance(responses, torch.Tensor) or responses.dim() != 2 or not isinstance(ids, torch.Tensor) \
            or ids.dim() != 2 or responses.shape[0] != ids.shape[0] or responses.shape[1] >= ids.shape[1]:
        raise ValueError(f"micro_batch: responses must be [B, R] with R < L of input_ids [B, L], got "
                         f"{tuple(getattr(responses, 'shape', ()))} and {tuple(getattr(ids, 'shape', ()))}")
    r = responses.shape[1]
    if not torch.equal(ids[:, -r:], responses):
        raise ValueError("micro_batch: responses must equal input_ids[:, -R:] (veRL's layout: prompt then response)")
    base = getattr(model, "module", model)
    base = base.get_base_model() if hasattr(base, "get_base_model") else base
    if getattr(getattr(base, "config", None), "_attn_implementation", None) != "dualkv":
        enable_dualkv(base)
    got = packed_completion_logps(model, ids, mask, r, temperature=float(temperature),
                                  compute_entropy=calculate_entropy, backend=backend)
    if got is None:
        return _unpacked(model, micro_batch, float(temperature), calculate_entropy)
    logps, entropies = got
    return entropies, logps


@validate(backend=Choice("auto", "torch", "triton"))
def dualkv_forward_micro_batch(*, backend: str = "auto") -> Callable[..., tuple[torch.Tensor | None, torch.Tensor]]:
    """A replacement for ``DataParallelPPOActor._forward_micro_batch`` (bind it with ``types.MethodType``): it
    scores ``self.actor_module`` with :func:`forward_micro_batch`."""

    def _forward_micro_batch(self: Any, micro_batch: Mapping[str, torch.Tensor], temperature: float,
                             calculate_entropy: bool = False, **_: Any):
        return forward_micro_batch(self.actor_module, micro_batch, temperature, calculate_entropy, backend=backend)

    return _forward_micro_batch
