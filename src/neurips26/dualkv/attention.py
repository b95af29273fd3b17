r"""DualKV attention over the packed layout ``[prompt | r_1 | … | r_N]`` (per group).

Per attention layer (the paper's two calls):

1. **Call 1** — causal self-attention of the prompt, once: $O_c = \mathrm{CausalAttn}(Q_c, K_c, V_c)$.
2. **Call 2** — the two-region "decoded" attention: for each response $i$,

   $O_d^{(i)} = \mathrm{softmax}\!\big(Q_d^{(i)} [K_c; K_d^{(i)}]^\top / \sqrt{d} + M\big)\,[V_c; V_d^{(i)}]$,

   where all $P$ context keys are visible and decoded key $j$ is visible to query $r$ iff $j \le r$.

$O = [O_c; O_d]$. In the backward pass autograd adds the $dK_c, dV_c$ of both calls; inside Call 2 the
prompt gradient is the sum over the $N$ responses, so the single prompt copy receives exactly the sum of the
replicated copies' gradients.

Backends: ``"torch"`` (PyTorch, any device: on CPU Call 2 is two fused flash-attention calls — context and
decoded — merged by their log-sum-exp; elsewhere, and for fp64, one joint softmax recomputed in backward) and
``"triton"`` (the fused kernel of :mod:`.kernel` for Call 2; Call 1 stays SDPA). ``"auto"`` picks Triton for
CUDA tensors when Triton is installed, else PyTorch. Tensors are ``[T, H, d]`` (packed tokens, heads, head
dim); keys and values may have fewer heads ``H_kv`` (grouped-query attention, query head ``h`` reads KV head
``h // (H / H_kv)``).

Attention variants of Mistral/Gemma/GPT-OSS-style models (``sliding_window``, ``softcap``, ``sinks``) are applied
*per region* with the logical positions of the packing, so the packed result still equals the replicated one:

* sliding window $W$: key $j$ is visible to query $i$ iff $0 \le \mathrm{pos}_i - \mathrm{pos}_j < W$ (transformers'
  convention), with $\mathrm{pos} = P + r$ for response token $r$; so response query $r$ sees context keys
  $j > P + r - W$ and its own keys $j' > r - W$;
* soft-capping (Gemma 2): $s \leftarrow c \tanh(s / c)$ on every scaled score, before the mask and the softmax;
* attention sinks (GPT-OSS): one learned logit $b_h$ per query head joins every row's softmax denominator,
  $p_j = e^{s_j} / (e^{b_h} + \sum_k e^{s_k})$, exactly once per row (in Call 1 for prompt rows, in Call 2 for
  response rows).

These run on the PyTorch path in blocks of query rows against the keys their window leaves visible (recomputed in
backward; :func:`prompt_attention_reference` / :func:`decoded_attention_reference` are the one-softmax references);
the Triton kernel refuses them by name.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import Choice, Instance, Int, Optional, Real, Tensor, check_arguments, validate
from neurips26.nn.backend import interpreter_active, resolve_backend

from .packing import SharedPromptBatch

__all__ = [
    "dualkv_attention",
    "dualkv_decoded_attention",
    "dualkv_attention_fn",
    "DualKVAttention",
    "decoded_attention_reference",
    "prompt_attention_reference",
]

#: On CPU (fp32/fp16/bf16), run Call 2 of the torch backend as two fused flash calls merged by LSE; else (fp64,
#: other devices) the joint-softmax reference with recomputation. Module-level switch for tests and benchmarks.
_USE_CPU_FLASH = hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward")
_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)  # float64: torch backend only


# ----------------------------------------------------------------------------------- validation
def _qkv(spec: str) -> Tensor:
    """``[tokens, heads, head_dim]`` in one of :data:`_DTYPES` (float64: torch backend only); finiteness is
    :func:`_check_finite`'s (optional, skipped while compiling)."""
    return Tensor(spec, dtype=_DTYPES, finite=False)


# the shapes of each entry point's q/k/v, named dimensions shared (T tokens, H query heads, H_kv key/value heads,
# D head dim; P prompt rows, R response rows)
_PACKED = {"q": _qkv("T H D"), "k": _qkv("T H_kv D"), "v": _qkv("T H_kv D")}
_PROMPT = {"q_c": _qkv("P H D"), "k_c": _qkv("P H_kv D"), "v_c": _qkv("P H_kv D")}
_DECODED = {"q_dec": _qkv("R H D"), "k_ctx": _qkv("P H_kv D"), "v_ctx": _qkv("P H_kv D"), "k_dec": _qkv("R H_kv D"),
            "v_dec": _qkv("R H_kv D")}


def _check_qkv(where: str, shapes: dict[str, Tensor], tensors: dict[str, Any]) -> tuple[int, int]:
    """The declared ``shapes`` (dimensions agreeing across the tensors), then one dtype, one device and ``H_kv``
    dividing ``H`` (grouped-query attention). Returns ``(H, H_kv)``."""
    check_arguments(where, shapes, tensors)
    names, ts = list(tensors), list(tensors.values())
    if len({t.dtype for t in ts}) > 1:
        raise TypeError(f"{', '.join(names)} must share one dtype, got {', '.join(str(t.dtype) for t in ts)}")
    if len({t.device for t in ts}) > 1:
        raise ValueError(f"{', '.join(names)} must be on one device, got {', '.join(str(t.device) for t in ts)}")
    h, hk = ts[0].shape[1], ts[1].shape[1]
    if hk < 1 or h % hk:
        raise ValueError(f"grouped-query attention needs H_kv to divide H: got H={h} query heads and "
                         f"H_kv={hk} key/value heads")
    return h, hk


def _autocast_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cast as ``F.scaled_dot_product_attention`` does under ``torch.autocast``: when autocast is on for the
    tensors' device, fp32/fp16/bf16 inputs become the autocast dtype (fp64 is not autocast-eligible and stays).
    Outside autocast the tensors are returned unchanged (mixed dtypes are then refused by :func:`_check_qkv`)."""
    device = q.device.type
    if not torch.is_autocast_enabled(device):
        return q, k, v
    target = torch.get_autocast_dtype(device)
    return tuple(t.to(target) if t.dtype in (torch.float32, torch.float16, torch.bfloat16) else t  # type: ignore
                 for t in (q, k, v))


_FINITE = Tensor(finite=True)


def _check_finite(**tensors: torch.Tensor) -> None:
    """Refuse NaN/inf by name (one reduction per tensor; skipped while tracing for ``torch.compile``)."""
    if torch.compiler.is_compiling():
        return
    check_arguments("DualKV refuses non-finite input", dict.fromkeys(tensors, _FINITE), tensors)


_SCALE = {"scale": Optional(Real(0, closed="neither"))}  # None: 1/sqrt(head_dim)


def _check_scale(scale: Any, head_dim: int) -> float:
    check_arguments("", _SCALE, {"scale": scale})
    return 1.0 / math.sqrt(head_dim) if scale is None else float(scale)


def _resolve_backend(backend: str, q: torch.Tensor) -> str:
    """``"torch"`` or ``"triton"`` through :func:`neurips26.nn.backend.resolve_backend`: ``"auto"`` takes the
    kernel for CUDA tensors in a dtype it takes (fp32/fp16/bf16; fp64 stays on the reference) when Triton is
    installed and not in the interpreter; a forced ``"triton"`` raises saying why it cannot run."""
    return resolve_backend(backend, device=q.device, dtype=q.dtype, what="dualkv_attention",
                           interpreted=_kernel_interpreted())


def _kernel_interpreted() -> bool:
    """Whether the kernels run (or will run) in Triton's CPU interpreter: fixed when :mod:`.kernel` is first
    imported (from ``TRITON_INTERPRET``); before that, what :func:`interpreter_active` says."""
    module = sys.modules.get(f"{__package__}.kernel")
    return bool(module.INTERPRETED) if module is not None else interpreter_active()


# ------------------------------------------------------------------------------- torch reference
def _repeat_heads(x: torch.Tensor, n_rep: int, dim: int) -> torch.Tensor:
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=dim)


def _prompt_attention(q_c: torch.Tensor, k_c: torch.Tensor, v_c: torch.Tensor, scale: float) -> torch.Tensor:
    """Call 1: causal SDPA over one prompt. ``q_c [P, H, d]``, ``k_c, v_c [P, H_kv, d]`` -> ``[P, H, d]``."""
    n_rep = q_c.shape[1] // k_c.shape[1]
    q = q_c.transpose(0, 1)[None]
    k = _repeat_heads(k_c.transpose(0, 1)[None], n_rep, 1)
    v = _repeat_heads(v_c.transpose(0, 1)[None], n_rep, 1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)[0].transpose(0, 1)


_VARIANTS = {"sliding_window": Optional(Int(low=1)), "softcap": Optional(Real(low=0.0, closed="neither"))}


def _check_variants(where: str, sliding_window: Any, softcap: Any, sinks: Any, n_heads: int) -> None:
    r"""Validate the attention variants: window an int >= 1, softcap a finite number > 0, sinks a finite float
    tensor ``[H]`` (one logit per query head)."""
    check_arguments(where, _VARIANTS, {"sliding_window": sliding_window, "softcap": softcap})
    if sinks is not None:  # one logit per query head (finiteness not re-checked while tracing for torch.compile)
        sink = Optional(Tensor(str(n_heads), dtype="float", finite=not torch.compiler.is_compiling()))
        check_arguments(where, {"sinks": sink}, {"sinks": sinks})


def _softcap(s: torch.Tensor, softcap: float | None) -> torch.Tensor:
    r"""Gemma-2 logit soft-capping of scaled scores: $s \leftarrow c \tanh(s / c)$ (identity for ``None``)."""
    return s if softcap is None else torch.tanh(s / softcap) * softcap


def _softmax_with_sink(s: torch.Tensor, sink: torch.Tensor | None) -> torch.Tensor:
    r"""Row softmax of ``s [..., K]`` (``-inf`` where masked). With a sink logit ``b`` (broadcastable to
    ``[..., 1]``) the row gets one more entry that takes probability mass and carries no value:
    $p_j = e^{s_j} / (e^{b} + \sum_k e^{s_k})$; the sink column is dropped from the result."""
    if sink is None:
        return torch.softmax(s, dim=-1)
    return torch.softmax(torch.cat([s, sink.expand(*s.shape[:-1], 1)], dim=-1), dim=-1)[..., :-1]


def prompt_attention_reference(q_c: torch.Tensor, k_c: torch.Tensor, v_c: torch.Tensor, scale: float, *,
                               sliding_window: int | None = None, softcap: float | None = None,
                               sinks: torch.Tensor | None = None) -> torch.Tensor:
    r"""Call 1 in plain PyTorch with the attention variants: causal attention over one prompt.

    Shapes: ``q_c [P, H, d]``, ``k_c, v_c [P, H_kv, d]`` -> ``[P, H, d]`` in the input dtype (scores and
    softmax in fp32, fp64 for fp64 input). Key $j$ is visible to query $i$ iff $j \le i$ and $i - j <$
    ``sliding_window``; ``softcap`` caps the scaled scores; ``sinks [H]`` joins every row's softmax.
    """
    _check_qkv("prompt_attention_reference", _PROMPT, {"q_c": q_c, "k_c": k_c, "v_c": v_c})
    p, h, d = q_c.shape
    hk = k_c.shape[1]
    g = h // hk
    _check_variants("prompt_attention_reference", sliding_window, softcap, sinks, h)
    f32 = torch.float64 if q_c.dtype == torch.float64 else torch.float32
    # [H_kv, G·P, d] queries (heads of a KV group stacked) against [H_kv, P, d] keys: no K/V repetition
    q = q_c.to(f32).view(p, hk, g, d).permute(1, 2, 0, 3).reshape(hk, g * p, d)
    s = _softcap(torch.bmm(q, k_c.to(f32).transpose(0, 1).transpose(1, 2)).mul_(scale), softcap).view(hk, g, p, p)
    i = torch.arange(p, device=q_c.device)
    visible = i[None, :] <= i[:, None]  # [P(q), P(k)] causal
    if sliding_window is not None:
        visible = visible & (i[:, None] - i[None, :] < sliding_window)
    s = s.masked_fill(~visible, float("-inf"))
    probs = _softmax_with_sink(s, None if sinks is None else sinks.to(f32).view(hk, g, 1, 1))
    out = torch.bmm(probs.view(hk, g * p, p), v_c.to(f32).transpose(0, 1))  # [H_kv, G·P, d]
    return out.view(hk, g, p, d).permute(2, 0, 1, 3).reshape(p, h, d).to(q_c.dtype)


def decoded_attention_reference(q_dec: torch.Tensor, k_ctx: torch.Tensor, v_ctx: torch.Tensor,
                                k_dec: torch.Tensor, v_dec: torch.Tensor, seq_lens: list[int],
                                scale: float, *, sliding_window: int | None = None, softcap: float | None = None,
                                sinks: torch.Tensor | None = None) -> torch.Tensor:
    r"""Call 2 for one group in plain PyTorch: one joint softmax over ``[context | own decoded keys]``.

    Shapes: ``q_dec [ΣR, H, d]``, ``k_ctx, v_ctx [P, H_kv, d]``, ``k_dec, v_dec [ΣR, H_kv, d]``; returns
    ``[ΣR, H, d]`` in the input dtype (scores, softmax and sums in fp32, or fp64 for fp64 input).

    Responses are padded to ``R_max`` (padded rows are discarded, padded keys masked). The context keys are
    *broadcast*, never copied N times: $S_c = Q_d K_c^\top$ is one ``[N·R_max, P]`` product per head.
    Variants (module docstring): ``sliding_window`` counts logical positions (response token $r$ at $P + r$),
    ``softcap`` caps the scaled scores of both regions, ``sinks [H]`` joins the one joint softmax.
    """
    _check_qkv("decoded_attention_reference", _DECODED,
               {"q_dec": q_dec, "k_ctx": k_ctx, "v_ctx": v_ctx, "k_dec": k_dec, "v_dec": v_dec})
    if k_ctx.shape[0] < 1:
        raise ValueError(f"k_ctx, v_ctx must be [P >= 1, H_kv, d], got {tuple(k_ctx.shape)}")
    if isinstance(seq_lens, str | bytes | torch.Tensor) or not hasattr(seq_lens, "__len__") or len(seq_lens) == 0 \
            or any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in seq_lens) \
            or sum(seq_lens) != q_dec.shape[0]:
        raise ValueError(f"seq_lens must be a non-empty list of response lengths >= 1 summing to the {q_dec.shape[0]} "
                         f"rows of q_dec, k_dec, v_dec, got {seq_lens!r}")
    scale = _check_scale(scale, q_dec.shape[-1])
    _check_variants("decoded_attention_reference", sliding_window, softcap, sinks, q_dec.shape[1])
    n, p = len(seq_lens), k_ctx.shape[0]
    h, hk, d = q_dec.shape[1], k_ctx.shape[1], q_dec.shape[2]
    g = h // hk
    r_max = max(seq_lens)
    device = q_dec.device
    lens = torch.tensor(seq_lens, device=device)
    starts = torch.cumsum(lens, 0) - lens
    offs = torch.arange(r_max, device=device)
    valid = offs[None, :] < lens[:, None]  # [N, Rm]
    rows = torch.where(valid, starts[:, None] + offs[None, :], 0)  # [N, Rm] packed row (0 where padded)

    f32 = torch.float64 if q_dec.dtype == torch.float64 else torch.float32  # compute dtype
    # Layout [H_kv, N, G, R_max, d] (query heads grouped under their KV head), so both score products are plain
    # batched matmuls without broadcasting copies of K/V.
    qp = q_dec[rows].to(f32).view(n, r_max, hk, g, d).permute(2, 0, 3, 1, 4).contiguous()
    kd = k_dec[rows].to(f32).permute(2, 0, 1, 3).reshape(hk * n, r_max, d)  # [H_kv·N, Rm, d]
    vd = v_dec[rows].to(f32).permute(2, 0, 1, 3).reshape(hk * n, r_max, d)
    kc = k_ctx.to(f32).transpose(0, 1)  # [H_kv, P, d], shared by all N responses
    vc = v_ctx.to(f32).transpose(0, 1)

    # S_c = Q_d K_c^T / sqrt(d): one [N·G·R_max, P] product per KV head, every context key visible
    s_ctx = _softcap(torch.bmm(qp.view(hk, n * g * r_max, d), kc.transpose(1, 2)).mul_(scale), softcap)
    if sliding_window is not None:
        # response query r sits at logical position P + r: context key j is inside the window iff P + r - j < W
        ctx_pos = torch.arange(p, device=device)
        in_window = (p + offs[:, None] - ctx_pos[None, :]) < sliding_window  # [Rm, P]
        s_ctx = s_ctx.view(hk, n, g, r_max, p).masked_fill(~in_window, float("-inf"))
    s_ctx = s_ctx.view(hk, n, g * r_max, p)
    # S_d = Q_d^(i) K_d^(i)T / sqrt(d) per response; key j visible to query r iff j <= r (and j is real)
    s_dec = _softcap(torch.bmm(qp.view(hk * n, g * r_max, d), kd.transpose(1, 2)).mul_(scale), softcap)
    s_dec = s_dec.view(hk, n, g, r_max, r_max)
    causal = (offs[None, :] <= offs[:, None])[None] & valid[:, None, :]  # [N, Rm(q), Rm(k)]
    if sliding_window is not None:  # own key j inside the window iff r - j < W
        causal = causal & (offs[:, None] - offs[None, :] < sliding_window)[None]
        # a padded query row far past its response's end would see no key at all (a NaN softmax whose zero
        # gradient still poisons dV through 0·NaN): let padded rows see every key; they are discarded anyway
        causal = causal | ~valid[:, :, None]
    s_dec = s_dec.masked_fill(~causal[None, :, None], float("-inf")).view(hk, n, g * r_max, r_max)
    # one softmax over [context | own decoded keys (| sink)]; O = P_c V_c + P_d V_d
    sink = None if sinks is None else \
        sinks.to(f32).view(hk, 1, g, 1, 1).expand(hk, n, g, r_max, 1).reshape(hk, n, g * r_max, 1)
    probs = _softmax_with_sink(torch.cat([s_ctx, s_dec], dim=-1), sink)
    out = torch.bmm(probs[..., :p].reshape(hk, n * g * r_max, p), vc).view(hk, n, g, r_max, d) \
        + torch.bmm(probs[..., p:].reshape(hk * n, g * r_max, r_max), vd).view(hk, n, g, r_max, d)
    out = out.permute(1, 3, 0, 2, 4).reshape(n, r_max, h, d)  # [N, Rm, H, d], head = kv·G + g
    return out[valid].to(q_dec.dtype)


class _Recomputed(torch.autograd.Function):
    """``fn(*inputs)`` that stores only its inputs and recomputes in backward (what ``torch.utils.checkpoint``
    does, without its machinery): the ``[.., queries, keys]`` probabilities never live across forward and
    backward. ``fn`` closes over the non-tensor arguments."""

    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        return fn(*inputs)

    @staticmethod
    def backward(ctx, grad_out):
        needs = ctx.needs_input_grad[1:]
        inputs = [t.detach().requires_grad_(need) for t, need in zip(ctx.saved_tensors, needs)]
        with torch.enable_grad():
            out = ctx.fn(*inputs)
        wanted = [t for t, need in zip(inputs, needs) if need]
        grads = iter(torch.autograd.grad(out, wanted, grad_out, allow_unused=True))
        return (None, *(next(grads) if need else None for need in needs))


def _recomputed(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> torch.Tensor:
    """``fn(*inputs)``, through :class:`_Recomputed` when a gradient will be asked for."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
        return _Recomputed.apply(fn, *inputs)
    return fn(*inputs)


class _MergedFlashDecodedAttention(torch.autograd.Function):
    r"""Call 2 on CPU as two fused flash-attention calls merged by their log-sum-exp (CPU tensors only).

    Context part: all responses' queries against the shared $K_c$ in *one* call, no mask (query heads of a GQA
    group folded into the sequence axis, so $K_c$ is neither repeated per head nor per response).
    Decoded part: responses padded to ``R_max``, causal. Merge:
    $\mathrm{lse} = \log(e^{\mathrm{lse}_c} + e^{\mathrm{lse}_d})$,
    $O = e^{\mathrm{lse}_c - \mathrm{lse}} O_c + e^{\mathrm{lse}_d - \mathrm{lse}} O_d$.
    Backward: each part's flash backward run with the *merged* $O$ and lse gives that part's exact share of
    $dQ$ and its own $dK, dV$ (the FA2 split-KV identity: $P_x = e^{S_x - \mathrm{lse}}$,
    $dS_x = P_x \odot (dO V_x^	op - \mathrm{rowsum}(dO \odot O))$). Only inputs, $O$ and lse are stored.
    """

    @staticmethod
    def _layouts(q_dec, seq_lens, hk):
        n, r_max = len(seq_lens), max(seq_lens)
        lens = torch.tensor(seq_lens)
        offs = torch.arange(r_max)
        valid = offs[None, :] < lens[:, None]
        rows = torch.where(valid, (torch.cumsum(lens, 0) - lens)[:, None] + offs[None, :], 0)
        return n, r_max, valid, rows

    @staticmethod
    def forward(ctx, q_dec, k_ctx, v_ctx, k_dec, v_dec, seq_lens, scale):
        flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
        t, h, d = q_dec.shape
        hk = k_ctx.shape[1]
        g = h // hk
        n, r_max, valid, rows = _MergedFlashDecodedAttention._layouts(q_dec, seq_lens, hk)
        # context: [1, H_kv, G·ΣR, d] queries (heads of a group folded into the sequence) vs [1, H_kv, P, d]
        qc = q_dec.view(t, hk, g, d).permute(1, 2, 0, 3).reshape(1, hk, g * t, d)
        kc, vc = k_ctx.transpose(0, 1)[None], v_ctx.transpose(0, 1)[None]
        o_c, lse_c = flash(qc, kc, vc, 0.0, False, scale=scale)
        o_c = o_c.view(hk, g, t, d).permute(2, 0, 1, 3).reshape(t, h, d)
        lse_c = lse_c.view(hk, g, t).permute(2, 0, 1).reshape(t, h)
        # decoded: [N, H, R_max, d], causal (right padding is invisible to real queries)
        qp = q_dec[rows].transpose(1, 2)
        kp = k_dec[rows].repeat_interleave(g, dim=2).transpose(1, 2)
        vp = v_dec[rows].repeat_interleave(g, dim=2).transpose(1, 2)
        o_dp, lse_dp = flash(qp, kp, vp, 0.0, True, scale=scale)
        o_d, lse_d = o_dp.transpose(1, 2)[valid], lse_dp.transpose(1, 2)[valid]  # [ΣR, H, d], [ΣR, H]
        # merge the two partial softmaxes
        lse = torch.logaddexp(lse_c, lse_d)
        out = (torch.exp(lse_c - lse)[..., None] * o_c.float() + torch.exp(lse_d - lse)[..., None] * o_d.float())
        out = out.to(q_dec.dtype)
        ctx.save_for_backward(q_dec, k_ctx, v_ctx, k_dec, v_dec, out, lse, lse_dp)
        ctx.seq_lens, ctx.scale = seq_lens, scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        flash_bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward
        q_dec, k_ctx, v_ctx, k_dec, v_dec, out, lse, lse_dp = ctx.saved_tensors
        scale = ctx.scale
        t, h, d = q_dec.shape
        hk = k_ctx.shape[1]
        g = h // hk
        n, r_max, valid, rows = _MergedFlashDecodedAttention._layouts(q_dec, ctx.seq_lens, hk)
        grad_out = grad_out.contiguous().to(q_dec.dtype)

        def fold(x):  # [ΣR, H, ...] -> [1, H_kv, G·ΣR, ...]
            return x.view(t, hk, g, *x.shape[2:]).permute(1, 2, 0, *range(3, x.dim() + 1)) \
                .reshape(1, hk, g * t, *x.shape[2:])

        qc = fold(q_dec)
        kc, vc = k_ctx.transpose(0, 1)[None], v_ctx.transpose(0, 1)[None]
        dqc, dkc, dvc = flash_bwd(fold(grad_out), qc, kc, vc, fold(out), fold(lse).contiguous(), 0.0, False,
                                  scale=scale)
        dq = dqc.view(hk, g, t, d).permute(2, 0, 1, 3).reshape(t, h, d)
        # decoded part in the padded layout; padded rows get dO = 0 and keep their own (finite) lse
        qp = q_dec[rows].transpose(1, 2)
        kp = k_dec[rows].repeat_interleave(g, dim=2).transpose(1, 2)
        vp = v_dec[rows].repeat_interleave(g, dim=2).transpose(1, 2)
        dop = torch.zeros(n, r_max, h, d, dtype=q_dec.dtype)
        dop[valid] = grad_out
        op = torch.zeros(n, r_max, h, d, dtype=q_dec.dtype)
        op[valid] = out
        lsep = lse_dp.transpose(1, 2).clone()
        lsep[valid] = lse.to(lsep.dtype)
        dqp, dkp, dvp = flash_bwd(dop.transpose(1, 2), qp, kp, vp, op.transpose(1, 2),
                                  lsep.transpose(1, 2).contiguous(), 0.0, True, scale=scale)
        dq = dq + dqp.transpose(1, 2)[valid]
        # repeated KV heads: sum the G query heads' contributions back onto their KV head
        dkd = dkp.transpose(1, 2).reshape(n, r_max, hk, g, d).sum(3)[valid]
        dvd = dvp.transpose(1, 2).reshape(n, r_max, hk, g, d).sum(3)[valid]
        return (dq, dkc[0].transpose(0, 1), dvc[0].transpose(0, 1), dkd, dvd, None, None)


def _dualkv_torch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, batch: SharedPromptBatch,
                  scale: float, sliding_window: int | None = None, softcap: float | None = None,
                  sinks: torch.Tensor | None = None) -> torch.Tensor:
    variants = sliding_window is not None or softcap is not None or sinks is not None
    extra = () if sinks is None else (sinks,)
    pieces: list[torch.Tensor] = []
    for off, p, slices in zip(batch.group_offsets, batch.prompt_lens, batch.response_slices):
        ctx = slice(off, off + p)
        dec = slice(slices[0].start, slices[-1].stop)
        lens = [s.stop - s.start for s in slices]
        args = (q[dec], k[ctx], v[ctx], k[dec], v[dec])
        if variants:  # blocks of query rows against their visible keys, recomputed in backward
            pieces.extend(_variant_group(q, k, v, off, p, slices, scale, sliding_window, softcap, extra))
            continue
        pieces.append(_prompt_attention(q[ctx], k[ctx], v[ctx], scale))
        if q.device.type == "cpu" and q.dtype != torch.float64 and _USE_CPU_FLASH:
            pieces.append(_MergedFlashDecodedAttention.apply(*args, lens, scale))
        else:
            # Like FlashAttention, keep only the inputs for backward and recompute the probabilities there:
            # the [N, H, R_max, P + R_max] score tensor is never stored across forward and backward.
            pieces.append(_recomputed(functools.partial(decoded_attention_reference, seq_lens=lens, scale=scale),
                                      *args))
    return torch.cat(pieces, dim=0)


#: Query rows per recomputed block on the variants path: the live scores are ``[H, block, visible keys]``, so memory
#: stays O(block · (P + R)) per head (O(block · W) with a window) instead of O(N · R · (P + R)).
_VARIANT_BLOCK = 256


def _block_attention(q_blk: torch.Tensor, q_pos: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                     k_pos: torch.Tensor, scale: float, window: int | None, softcap: float | None,
                     sinks: torch.Tensor | None) -> torch.Tensor:
    r"""Query rows of *one* replicated sequence against keys of that sequence, by logical position.

    ``q_blk [b, H, d]`` at positions ``q_pos [b]``; ``keys, values [m, H_kv, d]`` at ``k_pos [m]``. Key $j$ is
    visible to query $i$ iff $0 \le \mathrm{pos}_i - \mathrm{pos}_j$ $(< W)$; scores $s = c\tanh(q k^\top
    \cdot\mathrm{scale} / c)$; softmax over the visible keys and the head's sink. Every query's own key is among
    the keys, so no row is empty. Returns ``[b, H, d]`` in the input dtype (fp32 math, fp64 for fp64)."""
    b, h, d = q_blk.shape
    m, hk = keys.shape[0], keys.shape[1]
    g = h // hk
    f32 = torch.float64 if q_blk.dtype == torch.float64 else torch.float32
    qh = q_blk.to(f32).view(b, hk, g, d).permute(1, 2, 0, 3).reshape(hk, g * b, d)  # heads of a KV group stacked
    s = _softcap(torch.bmm(qh, keys.to(f32).permute(1, 2, 0)).mul_(scale), softcap).view(hk, g, b, m)
    lag = q_pos[:, None] - k_pos[None, :]  # [b, m] position difference
    visible = lag >= 0 if window is None else (lag >= 0) & (lag < window)
    probs = _softmax_with_sink(s.masked_fill(~visible, float("-inf")),
                               None if sinks is None else sinks.to(f32).view(hk, g, 1, 1))
    out = torch.bmm(probs.view(hk, g * b, m), values.to(f32).transpose(0, 1))  # [H_kv, G·b, d]
    return out.view(hk, g, b, d).permute(2, 0, 1, 3).reshape(b, h, d).to(q_blk.dtype)


def _variant_block(q_blk: torch.Tensor, k_a: torch.Tensor, v_a: torch.Tensor, k_b: torch.Tensor, v_b: torch.Tensor,
                   *sink: torch.Tensor, q_start: int, q_base: int, a_range: tuple[int, int],
                   b_range: tuple[int, int], b_base: int, scale: float, window: int | None,
                   softcap: float | None) -> torch.Tensor:
    """One block: queries at positions ``q_base + q_start + i`` against ``k_a[a_range]`` (positions = indices:
    the prompt) and ``k_b[b_range]`` (positions ``b_base + index``: a response's own keys). Slicing happens in
    here so that the recompute node saves the group's K/V views, not a copy per block."""
    device = q_blk.device
    (a0, a1), (b0, b1) = a_range, b_range
    keys, values = torch.cat([k_a[a0:a1], k_b[b0:b1]]), torch.cat([v_a[a0:a1], v_b[b0:b1]])
    k_pos = torch.cat([torch.arange(a0, a1, device=device), b_base + torch.arange(b0, b1, device=device)])
    q_pos = q_base + q_start + torch.arange(q_blk.shape[0], device=device)
    return _block_attention(q_blk, q_pos, keys, values, k_pos, scale, window, softcap, sink[0] if sink else None)


def _variant_group(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, off: int, p: int, slices: list[slice],
                   scale: float, window: int | None, softcap: float | None,
                   extra: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    r"""Both calls of one prompt group with the variants, in blocks of :data:`_VARIANT_BLOCK` query rows.

    A block of prompt rows $[a, b)$ reads prompt keys $[\max(0, a - W + 1), b)$ (Call 1). A block of rows
    $[a, b)$ of response $i$ (positions $P + a \ldots P + b - 1$) reads prompt keys $[\max(0, P + a - W + 1), P)$
    and its own keys $[\max(0, a - W + 1), b)$ (Call 2): the window cuts both regions in logical positions, and
    keys outside it are never multiplied. Returns the output rows in packed order."""
    step = _VARIANT_BLOCK

    def first(pos: int) -> int:  # the first key position visible from query position `pos`
        return 0 if window is None else max(0, pos - window + 1)

    kc, vc = k[off:off + p], v[off:off + p]
    kw = dict(scale=scale, window=window, softcap=softcap)
    pieces = []
    for a in range(0, p, step):
        b = min(p, a + step)
        fn = functools.partial(_variant_block, q_start=a, q_base=0, a_range=(first(a), b), b_range=(0, 0),
                               b_base=p, **kw)
        pieces.append(_recomputed(fn, q[off + a:off + b], kc, vc, kc[:0], vc[:0], *extra))
    for sl in slices:
        kd, vd = k[sl], v[sl]
        for a in range(0, sl.stop - sl.start, step):
            b = min(sl.stop - sl.start, a + step)
            fn = functools.partial(_variant_block, q_start=a, q_base=p, a_range=(min(p, first(p + a)), p),
                                   b_range=(first(a), b), b_base=p, **kw)
            pieces.append(_recomputed(fn, q[sl.start + a:sl.start + b], kc, vc, kd, vd, *extra))
    return pieces


def _dualkv_triton(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, batch: SharedPromptBatch,
                   scale: float) -> torch.Tensor:
    from .kernel import decoded_attention_packed

    table = batch.sequence_table(q.device)
    # Call 2 over the whole batch in one launch; rows of prompts in `o_dec` stay zero.
    o_dec = decoded_attention_packed(q, k, v, table, scale=scale, max_seq_len=max(batch.response_lens),
                                     max_ctx_len=max(batch.prompt_lens))
    pieces = []
    for off, p, slices in zip(batch.group_offsets, batch.prompt_lens, batch.response_slices):
        ctx = slice(off, off + p)
        pieces.append(_prompt_attention(q[ctx], k[ctx], v[ctx], scale))
        pieces.append(o_dec[slices[0].start:slices[-1].stop])
    return torch.cat(pieces, dim=0)


# ----------------------------------------------------------------------------------- public API
@validate(batch=Instance(SharedPromptBatch, "SharedPromptBatch (from pack_shared_prompt)"))
def dualkv_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, batch: SharedPromptBatch, *,
                     scale: float | None = None, backend: str = "auto", check_finite: bool = True,
                     sliding_window: int | None = None, softcap: float | None = None,
                     sinks: torch.Tensor | None = None) -> torch.Tensor:
    """Exact causal attention over a :class:`SharedPromptBatch`, prompt processed once.

    Args:
        q: ``[T, H, d]`` queries of the packed layout (RoPE applied with ``batch.position_ids``).
        k, v: ``[T, H_kv, d]`` keys/values (``H_kv`` divides ``H``); same dtype (fp32/fp16/bf16) and device.
        batch: the packing (``T = batch.num_tokens``).
        scale: softmax scale (finite, > 0), default ``1/sqrt(d)``.
        backend: ``"auto"`` | ``"torch"`` | ``"triton"`` (Call 2 as the fused kernel; needs CUDA or
            ``TRITON_INTERPRET=1``; tensors must have a contiguous last dimension).
        check_finite: refuse NaN/inf in ``q, k, v`` (``ValueError``). The model seams (:func:`dualkv_attention_fn`,
            the Hugging Face adapter) pass ``False``: activations are not re-scanned in every layer.
        sliding_window: ``W`` (int >= 1): key ``j`` visible to query ``i`` iff ``0 <= pos_i - pos_j < W`` in logical
            positions (Mistral/Gemma/Qwen sliding layers). softcap: ``c > 0``, scores become ``c·tanh(s/c)``
            (Gemma 2). sinks: ``[H]`` one softmax-sink logit per query head (GPT-OSS; its gradient flows).
            Any of them runs Call 1 and Call 2 on the PyTorch reference (``"auto"`` picks it; a forced
            ``"triton"`` is refused naming the argument).

    Under ``torch.autocast`` the inputs are cast to the autocast dtype first, as SDPA does (so fp32 ``q, k``
    after RoPE and a bf16 ``v`` from a projection are accepted); outside autocast they must share one dtype.

    Returns:
        ``[T, H, d]`` in the input dtype: row ``t`` equals what causal attention gives that token in its
        replicated sequence ``[prompt | response_i]``.
    """
    if all(isinstance(t, torch.Tensor) for t in (q, k, v)):
        q, k, v = _autocast_qkv(q, k, v)
    _check_qkv("dualkv_attention", _PACKED, {"q": q, "k": k, "v": v})
    t = batch.num_tokens
    if q.shape[0] != t:
        raise ValueError(f"q, k, v must have T={t} tokens (batch.num_tokens), got {q.shape[0]}")
    scale = _check_scale(scale, q.shape[-1])
    _check_variants("dualkv_attention", sliding_window, softcap, sinks, q.shape[1])
    variants = {"sliding_window": sliding_window, "softcap": softcap, "sinks": sinks}
    used = [name for name, value in variants.items() if value is not None]
    if used and backend == "triton":
        raise ValueError(f"dualkv_attention: backend='triton' does not implement {', '.join(used)}; use "
                         "backend='torch' or 'auto' (the PyTorch reference applies them)")
    chosen = "torch" if used else _resolve_backend(backend, q)
    if check_finite:
        _check_finite(q=q, k=k, v=v)
    # inputs are cast already; the fp32 accumulations inside must not be re-cast by autocast
    with torch.autocast(q.device.type, enabled=False):
        if chosen == "triton":
            return _dualkv_triton(q, k, v, batch, scale)
        return _dualkv_torch(q, k, v, batch, scale, sliding_window, softcap, sinks)


@validate(context_len=Int(low=1), cu_seqlens=Tensor("N1", dtype="integer"))
def dualkv_decoded_attention(q_dec: torch.Tensor, k_ctx: torch.Tensor, v_ctx: torch.Tensor,
                             k_dec: torch.Tensor, v_dec: torch.Tensor, cu_seqlens: torch.Tensor,
                             context_len: int, *, scale: float | None = None,
                             backend: str = "auto") -> torch.Tensor:
    """Call 2 only, for one prompt group (the official kernel's ``flash_attn_dualkv_varlen_func``).

    Args:
        q_dec: ``[ΣR, H, d]`` queries of the N responses back to back.
        k_ctx, v_ctx: ``[P, H_kv, d]`` the shared prompt keys/values (``P = context_len``).
        k_dec, v_dec: ``[ΣR, H_kv, d]`` the responses' own keys/values.
        cu_seqlens: ``[N+1]`` int cumulative response lengths starting at 0 (``cu_seqlens[-1] = ΣR``).
        context_len: ``P`` (>= 1).
        scale: softmax scale, default ``1/sqrt(d)``. backend: ``"auto" | "torch" | "triton"``.

    Returns:
        ``[ΣR, H, d]``: response ``i``'s queries attend to all ``P`` context keys and causally to its own keys.
    """
    tensors = (q_dec, k_ctx, v_ctx, k_dec, v_dec)
    if all(isinstance(t, torch.Tensor) for t in tensors) and torch.is_autocast_enabled(q_dec.device.type):
        q_dec, k_ctx, v_ctx = _autocast_qkv(q_dec, k_ctx, v_ctx)
        k_dec, v_dec, _ = _autocast_qkv(k_dec, v_dec, v_dec)
    _check_qkv("dualkv_decoded_attention", _DECODED,
               {"q_dec": q_dec, "k_ctx": k_ctx, "v_ctx": v_ctx, "k_dec": k_dec, "v_dec": v_dec})
    if k_ctx.shape[0] != context_len:
        raise ValueError(f"k_ctx/v_ctx must have context_len={context_len} rows, got {k_ctx.shape[0]}")
    cu = [int(c) for c in cu_seqlens.tolist()]
    lens = [b - a for a, b in zip(cu[:-1], cu[1:])]
    if not lens or cu[0] != 0 or min(lens) < 1 or cu[-1] != q_dec.shape[0]:
        raise ValueError(f"cu_seqlens must be [N+1] offsets that start at 0, strictly increase (every response >= 1 "
                         f"token) and end at the {q_dec.shape[0]} rows of q_dec, k_dec, v_dec, got {cu}")
    scale = _check_scale(scale, q_dec.shape[-1])
    chosen = _resolve_backend(backend, q_dec)
    _check_finite(q_dec=q_dec, k_ctx=k_ctx, v_ctx=v_ctx, k_dec=k_dec, v_dec=v_dec)
    with torch.autocast(q_dec.device.type, enabled=False):
        if chosen == "triton":
            from .kernel import decoded_attention_split

            return decoded_attention_split(q_dec, k_ctx, v_ctx, k_dec, v_dec, cu, context_len, scale=scale)
        return decoded_attention_reference(q_dec, k_ctx, v_ctx, k_dec, v_dec, lens, scale)


# ----------------------------------------------------------------------------- model integration
def dualkv_attention_fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, batch: SharedPromptBatch,
                        backend: str = "auto", **_: Any) -> torch.Tensor:
    """The ``attention_fn`` seam of :class:`neurips26.nn.Llama` for packed batches.

    ``q [1, H, T, d]``, ``k, v [1, H_kv, T, d]`` -> ``[1, H, T, d]``. Use it as
    ``Llama(config, attention_fn=dualkv_attention_fn)`` and call
    ``model(batch.input_ids[None], position_ids=batch.position_ids[None], batch=batch)``.
    """
    check_arguments("dualkv_attention_fn", _SEAM, {"q": q, "k": k, "v": v})  # a packed batch runs as B=1
    out = dualkv_attention(q[0].transpose(0, 1), k[0].transpose(0, 1), v[0].transpose(0, 1), batch,
                           backend=backend, check_finite=False)
    return out.transpose(0, 1)[None]


_SEAM = {"q": Tensor("1 H T D", finite=False), "k": Tensor("1 H_kv T D", finite=False),
         "v": Tensor("1 H_kv T D", finite=False)}


class DualKVAttention(nn.Module):
    """A drop-in attention block (projections, RoPE, DualKV core, output projection) for packed batches.

    Args:
        d_model: model width. n_heads: query heads. n_kv_heads: key/value heads (divides ``n_heads``).
        rope_theta: RoPE base. backend: passed to :func:`dualkv_attention`.

    ``forward(x, batch)`` with ``x [T, d_model]`` (or ``[1, T, d_model]``) returns the same shape.
    """

    @validate(d_model=Int(low=1), n_heads=Int(low=1), n_kv_heads=Optional(Int(low=1)),
              rope_theta=Real(0, closed="neither"), backend=Choice("auto", "torch", "triton"))
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, rope_theta: float = 10000.0,
                 *, backend: str = "auto") -> None:
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if d_model % n_heads or n_heads % n_kv_heads or (d_model // n_heads) % 2:
            raise ValueError(f"need d_model divisible by n_heads, n_kv_heads dividing n_heads and an even head "
                             f"dim; got d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}")
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.rope_theta, self.backend = rope_theta, backend
        self.q_proj = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, d_model, bias=False)

    @validate(x=Tensor(dtype="float", finite=False, ndim=(2, 3)),
              batch=Instance(SharedPromptBatch, "SharedPromptBatch"))
    def forward(self, x: torch.Tensor, batch: SharedPromptBatch) -> torch.Tensor:
        from neurips26.nn.llama import apply_rope, rope_cos_sin

        width, t = self.q_proj.in_features, batch.num_tokens
        if x.shape[-1] != width or x.shape[-2] != t or (x.dim() == 3 and x.shape[0] != 1):
            raise ValueError(f"x must be [T={t}, {width}] or [1, T, {width}] (T = batch.num_tokens), got "
                             f"{tuple(x.shape)}")
        squeeze = x.dim() == 3
        x = x[0] if squeeze else x
        cos, sin = rope_cos_sin(batch.position_ids.to(x.device), self.head_dim, self.rope_theta, x.dtype)
        cos, sin = cos[0, 0][:, None], sin[0, 0][:, None]  # [T, 1, d] to broadcast over heads
        q = apply_rope(self.q_proj(x).view(t, self.n_heads, self.head_dim), cos, sin)
        k = apply_rope(self.k_proj(x).view(t, self.n_kv_heads, self.head_dim), cos, sin)
        v = self.v_proj(x).view(t, self.n_kv_heads, self.head_dim)
        out = self.o_proj(dualkv_attention(q, k, v, batch, backend=self.backend).reshape(t, -1))
        return out[None] if squeeze else out
