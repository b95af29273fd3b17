"""Internal helpers shared by the claim check and the benchmark: synthetic rollouts, the three policy-update
arms on :class:`neurips26.nn.Llama`, and activation-memory accounting without parameters. Timing goes through
:func:`neurips26.claims.measure.timeit`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .attention import dualkv_attention_fn
from .baselines import prefix_grouper_attention_fn, replicated_attention_fn
from .packing import (
    pack_replicated,
    pack_shared_prompt,
    replicated_response_logprobs,
    response_logprobs,
    token_mean_policy_loss,
)

ARMS = ("replicated", "dualkv", "prefix_grouper")


def synthetic_groups(seed: int, *, n_groups: int, n_responses: int | Sequence[int], prompt_len: int | Sequence[int],
                     resp_low: int, resp_high: int, vocab: int) -> list[tuple[torch.Tensor, list[torch.Tensor]]]:
    """Random token ids: ``n_groups`` prompts, each with ``N`` responses of lengths ``U{resp_low..resp_high}``."""
    g = torch.Generator().manual_seed(seed)
    ns = [n_responses] * n_groups if isinstance(n_responses, int) else list(n_responses)
    ps = [prompt_len] * n_groups if isinstance(prompt_len, int) else list(prompt_len)
    groups = []
    for n, p in zip(ns, ps):
        lens = torch.randint(resp_low, resp_high + 1, (n,), generator=g).tolist()
        groups.append((torch.randint(0, vocab, (p,), generator=g),
                       [torch.randint(0, vocab, (r,), generator=g) for r in lens]))
    return groups


def _set_attention(model: torch.nn.Module, fn: Callable) -> None:
    for layer in model.layers:
        layer.attn.attention_fn = fn


class PolicyUpdate:
    """One micro-batch of a DAPO-style policy update (forward, token-mean loss, backward) in three layouts.

    Args:
        model: a :class:`neurips26.nn.Llama` (its ``attention_fn`` is swapped per arm).
        groups: prompt groups as for :func:`pack_shared_prompt`.
        advantages: ``[S]`` one per response.
        backend: DualKV backend (``"torch"`` on CPU).
    """

    def __init__(self, model, groups, advantages: torch.Tensor, *, backend: str = "torch") -> None:
        self.model, self.groups, self.advantages, self.backend = model, groups, advantages, backend
        device = next(model.parameters()).device
        self.batch = pack_shared_prompt(groups).to(device)
        ids, pos, cu = pack_replicated(groups)
        self.rep_ids, self.rep_pos, self.rep_cu = ids.to(device), pos.to(device), cu
        self.prompt_per_seq = [p.numel() for p, rs in groups for _ in rs]
        self.device = device

    def logprobs(self, arm: str) -> list[torch.Tensor]:
        b, m = self.batch, self.model
        if arm == "replicated":
            _set_attention(m, replicated_attention_fn)
            logits = m(self.rep_ids[None], position_ids=self.rep_pos[None], cu_seqlens=self.rep_cu)
            return replicated_response_logprobs(logits, self.rep_cu, self.rep_ids, self.prompt_per_seq)
        if arm == "dualkv":
            _set_attention(m, dualkv_attention_fn)
            logits = m(b.input_ids[None], position_ids=b.position_ids[None], batch=b, backend=self.backend)
        elif arm == "prefix_grouper":
            _set_attention(m, prefix_grouper_attention_fn)
            logits = m(b.input_ids[None], position_ids=b.position_ids[None], batch=b)
        else:
            raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
        return response_logprobs(logits, b)

    def step(self, arm: str) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        """Forward + loss + backward; returns the detached log-probs and the parameter gradients."""
        self.model.zero_grad(set_to_none=True)
        lps = self.logprobs(arm)
        token_mean_policy_loss(lps, self.advantages.to(self.device)).backward()
        grads = {n: p.grad for n, p in self.model.named_parameters() if p.grad is not None}
        return [t.detach() for t in lps], grads

    def saved_activation_bytes(self, arm: str) -> int:
        """Bytes of distinct tensors autograd saves for backward in one forward, *parameters excluded*.

        :func:`neurips26.claims.measure.saved_tensor_bytes` counts every saved storage, weights included (the
        linears save them for the input gradient); C4 compares activations only, so this one skips them."""
        params = {p.data_ptr() for p in self.model.parameters()}
        seen: dict[int, int] = {}

        def pack(t: torch.Tensor):
            ptr = t.untyped_storage().data_ptr()
            if ptr not in params:
                seen[ptr] = max(seen.get(ptr, 0), t.untyped_storage().nbytes())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            lps = self.logprobs(arm)
            loss = token_mean_policy_loss(lps, self.advantages.to(self.device))
        del loss, lps
        return sum(seen.values())


def max_rel_grad_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """max over parameters of ``max|a - b| / max|b|`` (0/0 counts as 0)."""
    worst = 0.0
    for name, ref in b.items():
        denom = ref.abs().max().item()
        err = (a[name] - ref).abs().max().item()
        worst = max(worst, err / denom if denom > 0 else (0.0 if err == 0 else float("inf")))
    return worst
