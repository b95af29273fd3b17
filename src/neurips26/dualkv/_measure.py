"""Internal helpers shared by the claim check and the benchmark: synthetic rollouts, the three policy-update
arms on :class:`neurips26.nn.Llama`, and activation-memory accounting without parameters. Timing goes through
:func:`neurips26.claims.measure.timeit`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from neurips26.claims import measure
from neurips26.constraints import Choice, validate

from .attention import dualkv_attention, dualkv_attention_fn
from .baselines import (
    build_flex_block_mask,
    flex_dualkv_attention,
    prefix_grouper_attention,
    prefix_grouper_attention_fn,
    replicated_attention_fn,
)
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

    @validate(arm=Choice(*ARMS))
    def logprobs(self, arm: str) -> list[torch.Tensor]:
        b, m = self.batch, self.model
        if arm == "replicated":
            _set_attention(m, replicated_attention_fn)
            logits = m(self.rep_ids[None], position_ids=self.rep_pos[None], cu_seqlens=self.rep_cu)
            return replicated_response_logprobs(logits, self.rep_cu, self.rep_ids, self.prompt_per_seq)
        if arm == "dualkv":
            _set_attention(m, dualkv_attention_fn)
            logits = m(b.input_ids[None], position_ids=b.position_ids[None], batch=b, backend=self.backend)
        else:  # "prefix_grouper"
            _set_attention(m, prefix_grouper_attention_fn)
            logits = m(b.input_ids[None], position_ids=b.position_ids[None], batch=b)
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


# ---------------------------------------------------------------------------------------------- GPU kernel timing
def kernel_bench(n: int, p: int, r: int, *, device: torch.device, h: int = 32, hk: int = 8, d: int = 128,
                  dtype=torch.bfloat16, reps: int = 5, warmup: int = 2, backend: str = "triton",
                  log=print) -> dict:
    """Attention-only fwd+bwd at one kernel shape, DualKV (``backend``; the Triton kernel on GPU) timed in
    interleaved pairs against SDPA (flash on CUDA) on the replicated batch and against the Prefix-Grouper
    reference; compiled FlexAttention on the same packing timed alone (a reported metric). Peak memory on CUDA.
    ``ratio_*`` lists hold one (peer time / DualKV time) per pair."""
    import contextlib

    from torch.nn.attention import SDPBackend, sdpa_kernel

    cuda = device.type == "cuda"
    clock = "cuda" if cuda else "process"
    groups = [(torch.zeros(p, dtype=torch.long), [torch.zeros(r, dtype=torch.long) for _ in range(n)])]
    b = pack_shared_prompt(groups).to(device)
    t = b.num_tokens
    gen = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(t, hh, d, device=device, generator=gen).to(dtype).requires_grad_() for hh in (h, hk, hk))
    go = torch.randn(t, h, d, device=device, generator=gen).to(dtype)
    res: dict = {"N": n, "P": p, "R": r, "rho": b.token_reduction}

    def dualkv_step() -> None:
        out = dualkv_attention(q, k, v, b, backend=backend)
        torch.autograd.grad(out, (q, k, v), go)

    # replicated batch [N, H, P+R, d], K/V repeated to H heads outside the timing (FA2 reads GQA natively)
    idx = torch.cat([torch.cat([torch.arange(p), torch.arange(s.start, s.stop)]) for s in b.response_slices[0]])
    idx = idx.to(device)
    with torch.no_grad():
        rep = {"q": q.detach()[idx].view(n, p + r, h, d).transpose(1, 2).contiguous()}
        for name, x in (("k", k), ("v", v)):
            rep[name] = x.detach()[idx].view(n, p + r, hk, d).transpose(1, 2).repeat_interleave(h // hk, 1)
        rep = {key: x.contiguous().requires_grad_() for key, x in rep.items()}
        rep["go"] = torch.randn_like(rep["q"])

    def replicated_step() -> None:
        kernel_ctx = sdpa_kernel([SDPBackend.FLASH_ATTENTION]) if cuda else contextlib.nullcontext()
        with kernel_ctx:
            out = torch.nn.functional.scaled_dot_product_attention(rep["q"], rep["k"], rep["v"], is_causal=True)
        torch.autograd.grad(out, (rep["q"], rep["k"], rep["v"]), rep["go"])

    def pg_step() -> None:
        out = prefix_grouper_attention(q, k, v, b)
        torch.autograd.grad(out, (q, k, v), go)

    def peak(name: str, fn) -> None:
        if not cuda:
            return
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        try:
            fn()
            torch.cuda.synchronize()
            res[f"peak_{name}_gb"] = (torch.cuda.max_memory_allocated() - base) / 2**30
        except torch.OutOfMemoryError:
            res[f"{name}_oom"] = True

    for name, fn in (("replicated_sdpa", replicated_step), ("prefix_grouper", pg_step)):
        try:
            pair = measure.timeit_pair(dualkv_step, fn, repeats=reps, warmup=warmup, threads=None, clock=clock)
            res[f"ratio_{name}"] = list(pair.ratios)
            res[f"timing_{name}"] = pair.record()
        except torch.OutOfMemoryError:
            res[f"{name}_oom"] = True
        log(f"(N={n}, P={p}) {name} / DualKV: {res.get(f'ratio_{name}')}")
    rep.clear()
    for name, fn in (("dualkv", dualkv_step), ("prefix_grouper", pg_step)):
        peak(name, fn)
    try:
        mask = build_flex_block_mask(b, device, block_size=128 if cuda else 16)

        def flex_step() -> None:
            out = flex_dualkv_attention(q, k, v, mask, compiled=cuda)
            torch.autograd.grad(out, (q, k, v), go)

        res["time_flex_ms"] = 1e3 * measure.timeit(flex_step, warmup=warmup, repeats=reps, clock=clock).median
        res["time_dualkv_ms"] = 1e3 * measure.timeit(dualkv_step, warmup=1, repeats=reps, clock=clock).median
    except (NotImplementedError, RuntimeError) as err:  # e.g. FlexAttention has no CPU backward
        res["flex_unsupported"] = str(err).split("\n")[0][:200]
    return res
