"""Check, on your own model and data, that the packed DualKV path gives the replicated path's log-probs.

DualKV is exact only for strictly causal, per-token models (no dropout, no token dropping; sliding windows,
soft-capping and sinks are handled in the packed path, chunked attention is refused). Before switching a training
run over — and again when prompt/response lengths grow — run

    report = verify_equivalence(lambda b: packed_logits(model, b), lambda ids: model(ids[None]).logits[0], groups)
    assert report.ok, report

which scores every response both ways and compares the per-token log-probs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from neurips26.constraints import Callable as CallableArg
from neurips26.constraints import Real, validate

from .packing import Group, pack_shared_prompt, response_logprobs

__all__ = ["EquivalenceReport", "verify_equivalence"]


@dataclass(frozen=True)
class EquivalenceReport:
    """Outcome of :func:`verify_equivalence`.

    Attributes:
        ok: every per-token log-prob differs by at most ``atol``.
        max_abs_diff: the largest difference (nats). per_response: the largest difference per response.
        atol: the tolerance used. num_tokens_packed / num_tokens_replicated: layout sizes (their ratio is ρ).
    """

    ok: bool
    max_abs_diff: float
    per_response: list[float]
    atol: float
    num_tokens_packed: int
    num_tokens_replicated: int


@torch.no_grad()
@validate(packed_logits=CallableArg(), sequence_logits=CallableArg(), atol=Real(0, closed="neither"))
def verify_equivalence(packed_logits: Callable[..., torch.Tensor],
                       sequence_logits: Callable[[torch.Tensor], torch.Tensor], groups: Sequence[Group], *,
                       atol: float = 1e-4) -> EquivalenceReport:
    """Compare DualKV log-probs with the standard per-sequence forward.

    Args:
        packed_logits: ``f(batch: SharedPromptBatch) -> logits [T, V]`` (or ``[1, T, V]``) on the packed layout.
        sequence_logits: ``g(ids [L]) -> logits [L, V]`` (or ``[1, L, V]``) of one ``[prompt | response]``
            sequence through the unmodified model.
        groups: prompt groups as for :func:`pack_shared_prompt`.
        atol: tolerance in nats (1e-4 suits fp32; use ~5e-2 for bf16 models).
    """
    batch = pack_shared_prompt(groups)
    packed = response_logprobs(packed_logits(batch), batch)
    diffs = []
    s = 0
    for prompt, responses in groups:
        for r in responses:
            ids = torch.cat([prompt.long(), r.long()])
            logits = sequence_logits(ids)
            logits = logits[0] if logits.dim() == 3 else logits
            p = prompt.numel()
            ref = torch.log_softmax(logits[p - 1:-1].float(), -1).gather(1, r.long().to(logits.device)[:, None])[:, 0]
            diffs.append((packed[s].to(ref.device) - ref).abs().max().item())
            s += 1
    worst = max(diffs)
    return EquivalenceReport(ok=worst <= atol, max_abs_diff=worst, per_response=diffs, atol=atol,
                             num_tokens_packed=batch.num_tokens, num_tokens_replicated=batch.num_replicated_tokens)
