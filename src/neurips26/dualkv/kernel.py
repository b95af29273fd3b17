r"""Triton kernels for Call 2 of DualKV (the two-region decoded attention), forward and backward.

Forward — one program per (query block, response ``s``, query head ``h``), FlashAttention-2 online softmax:
iterate the $\lceil P/B_N\rceil$ context tiles (all visible; bounds mask on the last partial tile), then the
decoded tiles of response ``s`` up to the diagonal (causal + bounds mask). Running max $m$, normaliser
$\ell$ and accumulator in fp32; saves $\mathrm{LSE} = m + \log \ell$ per (head, query row).

Backward — one program per (key block, response ``s``, KV head), looping over the query heads of its
GQA group and over the response's query blocks:
$P = \exp(S - \mathrm{LSE})$, $dV \mathrel{+}= P^\top dO$, $dP = dO\,V^\top$,
$dS = P \odot (dP - \delta)$ with $\delta = \mathrm{rowsum}(dO \odot O)$, $dK \mathrel{+}= dS^\top Q$,
$dQ \mathrel{+}= dS\,K$ (fp32 atomic add, FA2 pattern). Context key blocks are shared by the $N$ responses of
a group: they **atomically add** their $dK_c, dV_c$ into an fp32 scratch (N programs race on the same rows);
decoded key blocks belong to one response and store directly. One cast to the input dtype at the end.

Differences from the paper's CUDA kernel (said plainly): the context and decoded key blocks of the backward
run as two launches of one kernel (``IS_CTX`` constexpr) instead of one grid; the decoded tiles of the
forward run in increasing order; no autotuning (one fixed block config). Under ``TRITON_INTERPRET=1``
programs run sequentially, so the N-way atomic race is only exercised on a GPU.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton import knobs

from neurips26.constraints import Tensor, check_arguments

__all__ = ["decoded_attention_packed", "decoded_attention_split", "INTERPRETED"]

#: True when this module was imported with ``TRITON_INTERPRET=1`` (kernels run in the numpy interpreter).
INTERPRETED: bool = bool(knobs.runtime.interpret)

_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453


@triton.jit
def _ld(ptr, mask, UPCAST: tl.constexpr):
    """Masked tile load; ``UPCAST`` turns bf16 into fp32 (the numpy interpreter cannot multiply bf16)."""
    x = tl.load(ptr, mask=mask, other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    return x


@triton.jit
def _fwd_kernel(Q, KC, VC, KD, VD, O, LSE,
                Q_START, DEC_START, CTX_START, SEQ_LEN, CTX_LEN,
                stride_qt, stride_qh, stride_kct, stride_kch, stride_vct, stride_vch,
                stride_kdt, stride_kdh, stride_vdt, stride_vdh, stride_ot, stride_oh, stride_lh,
                scale,
                GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    pid_m = tl.program_id(0)
    s = tl.program_id(1)
    h = tl.program_id(2)
    R = tl.load(SEQ_LEN + s)
    start_m = pid_m * BLOCK_M
    if start_m < R:
        P = tl.load(CTX_LEN + s)
        q0 = tl.load(Q_START + s)
        d0 = tl.load(DEC_START + s)
        c0 = tl.load(CTX_START + s)
        hk = h // GROUP
        offs_m = start_m + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, BLOCK_D)
        m_ok = offs_m < R
        d_ok = offs_d < HEAD_DIM
        q = _ld(Q + (q0 + offs_m)[:, None] * stride_qt + h * stride_qh + offs_d[None, :],
                m_ok[:, None] & d_ok[None, :], UPCAST)
        # work in base 2: exp(x) = exp2(x log2 e)
        qk_scale = scale * 1.4426950408889634
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
        # ---- region 1: the shared context, every key visible (only the bounds mask)
        for start_n in range(0, P, BLOCK_N):
            cols = start_n + offs_n
            n_ok = cols < P
            kv_mask = n_ok[:, None] & d_ok[None, :]
            k = _ld(KC + (c0 + cols)[:, None] * stride_kct + hk * stride_kch + offs_d[None, :],
                    kv_mask, UPCAST)
            sc = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
            sc = tl.where(n_ok[None, :], sc, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(sc, 1))
            p = tl.exp2(sc - m_new[:, None])
            alpha = tl.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = _ld(VC + (c0 + cols)[:, None] * stride_vct + hk * stride_vch + offs_d[None, :],
                    kv_mask, UPCAST)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
            m_i = m_new
        # ---- region 2: this response's own keys, causal (key j visible to query r iff j <= r)
        end_n = tl.minimum(start_m + BLOCK_M, R)
        for start_n in range(0, end_n, BLOCK_N):
            cols = start_n + offs_n
            n_ok = cols < R
            kv_mask = n_ok[:, None] & d_ok[None, :]
            k = _ld(KD + (d0 + cols)[:, None] * stride_kdt + hk * stride_kdh + offs_d[None, :],
                    kv_mask, UPCAST)
            sc = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
            sc = tl.where(n_ok[None, :] & (cols[None, :] <= offs_m[:, None]), sc, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(sc, 1))
            p = tl.exp2(sc - m_new[:, None])
            alpha = tl.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = _ld(VD + (d0 + cols)[:, None] * stride_vdt + hk * stride_vdh + offs_d[None, :],
                    kv_mask, UPCAST)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
            m_i = m_new
        l_safe = tl.where(m_ok, l_i, 1.0)
        out = acc / l_safe[:, None]
        tl.store(O + (q0 + offs_m)[:, None] * stride_ot + h * stride_oh + offs_d[None, :],
                 out.to(O.dtype.element_ty), mask=m_ok[:, None] & d_ok[None, :])
        # natural-log LSE = (m + log2 l) ln 2
        lse = (m_i + tl.log2(l_safe)) * 0.6931471805599453
        tl.store(LSE + h * stride_lh + q0 + offs_m, lse, mask=m_ok)


@triton.jit
def _bwd_kernel(Q, K, V, DO, LSE, DELTA, DQ, DK, DV,
                Q_START, KEY_START, SEQ_LEN, KEY_LEN,
                stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_dot, stride_doh,
                stride_lh, stride_dqt, stride_dqh, stride_dkt, stride_dkh,
                scale,
                IS_CTX: tl.constexpr, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """One key block (context block if IS_CTX else decoded block) of response s, KV head hk."""
    pid_n = tl.program_id(0)
    s = tl.program_id(1)
    hk = tl.program_id(2)
    key_len = tl.load(KEY_LEN + s)  # P for context blocks, R for decoded blocks
    start_n = pid_n * BLOCK_N
    if start_n < key_len:
        R = tl.load(SEQ_LEN + s)
        q0 = tl.load(Q_START + s)
        k0 = tl.load(KEY_START + s)
        offs_n = start_n + tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, BLOCK_D)
        n_ok = offs_n < key_len
        d_ok = offs_d < HEAD_DIM
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = _ld(K + (k0 + offs_n)[:, None] * stride_kt + hk * stride_kh + offs_d[None, :],
                kv_mask, UPCAST)
        v = _ld(V + (k0 + offs_n)[:, None] * stride_vt + hk * stride_vh + offs_d[None, :],
                kv_mask, UPCAST)
        dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
        dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
        # context keys are read by every query of the response; decoded key j only by queries r >= j
        if IS_CTX:
            lo = 0
        else:
            lo = (start_n // BLOCK_M) * BLOCK_M
        for g in range(GROUP):
            h = hk * GROUP + g
            for start_m in range(lo, R, BLOCK_M):
                offs_m = start_m + tl.arange(0, BLOCK_M)
                m_ok = offs_m < R
                qm = m_ok[:, None] & d_ok[None, :]
                q = _ld(Q + (q0 + offs_m)[:, None] * stride_qt + h * stride_qh + offs_d[None, :],
                        qm, UPCAST)
                do = _ld(DO + (q0 + offs_m)[:, None] * stride_dot + h * stride_doh + offs_d[None, :],
                         qm, UPCAST)
                lse = tl.load(LSE + h * stride_lh + q0 + offs_m, mask=m_ok, other=0.0)
                delta = tl.load(DELTA + h * stride_lh + q0 + offs_m, mask=m_ok, other=0.0)
                # P = exp(S - LSE), S = Q K^T * scale
                sc = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
                keep = m_ok[:, None] & n_ok[None, :]
                if not IS_CTX:
                    keep = keep & (offs_n[None, :] <= offs_m[:, None])
                p = tl.where(keep, tl.exp(sc - lse[:, None]), 0.0)
                # dV += P^T dO
                dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PRECISION)
                # dS = P * (dO V^T - delta)
                dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
                ds = p * (dp - delta[:, None])
                # dK += dS^T Q ; dQ += dS K * scale (fp32 atomics: several key blocks write the same rows)
                dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION)
                dq = tl.dot(ds.to(k.dtype), k, input_precision=PRECISION) * scale
                tl.atomic_add(DQ + (q0 + offs_m)[:, None] * stride_dqt + h * stride_dqh + offs_d[None, :],
                              dq, mask=qm)
        dk = dk * scale
        dk_ptr = DK + (k0 + offs_n)[:, None] * stride_dkt + hk * stride_dkh + offs_d[None, :]
        dv_ptr = DV + (k0 + offs_n)[:, None] * stride_dkt + hk * stride_dkh + offs_d[None, :]
        if IS_CTX:
            # N responses share these rows: accumulate in fp32 with atomics
            tl.atomic_add(dk_ptr, dk, mask=kv_mask)
            tl.atomic_add(dv_ptr, dv, mask=kv_mask)
        else:
            tl.store(dk_ptr, dk, mask=kv_mask)
            tl.store(dv_ptr, dv, mask=kv_mask)


# ------------------------------------------------------------------------------------------ launch
_BLOCK_M = 16
_BLOCK_N = 16


def _blocks(head_dim: int, device: torch.device) -> tuple[int, int, int]:
    block_d = max(16, triton.next_power_of_2(head_dim))
    if device.type == "cuda" and not INTERPRETED:
        bm = 64 if block_d <= 128 else 32
        bn = 64 if block_d <= 64 else 32
        return bm, bn, block_d
    return _BLOCK_M, _BLOCK_N, block_d


def _precision(dtype: torch.dtype) -> str | None:
    # fp32 inputs: exact ("ieee") products, not TF32; half types: the backend default
    return "ieee" if dtype == torch.float32 else None


def _upcast(dtype: torch.dtype) -> bool:
    return INTERPRETED and dtype == torch.bfloat16


_KERNEL_TENSOR = Tensor(dtype=(torch.float32, torch.float16, torch.bfloat16), finite=False)


def _check_kernel_tensors(**tensors: torch.Tensor) -> None:
    dtype = None
    check_arguments("triton backend", dict.fromkeys(tensors, _KERNEL_TENSOR), tensors)
    for name, t in tensors.items():
        if dtype is None:
            dtype = t.dtype
        elif t.dtype != dtype:
            raise TypeError(f"triton backend: all inputs must share one dtype, {name} is {t.dtype}, expected {dtype}")
        if t.stride(-1) != 1:
            raise ValueError(f"triton backend: {name} must have a contiguous last dimension (stride 1), got "
                             f"strides {t.stride()}; call .contiguous() first")
        if t.device.type != "cuda" and not INTERPRETED:
            raise RuntimeError(f"triton backend: {name} is on {t.device}; the kernel needs CUDA tensors, or "
                               "TRITON_INTERPRET=1 set before neurips26.dualkv.kernel is first imported")
        if t.shape[-1] > 256:
            raise ValueError(f"triton backend supports head_dim <= 256, got {t.shape[-1]}")


def _forward(q, kc, vc, kd, vd, table, scale, max_seq_len):
    t_q, h, d = q.shape
    hk = kc.shape[1]
    bm, bn, bd = _blocks(d, q.device)
    o = torch.zeros_like(q)
    lse = torch.zeros(h, t_q, dtype=torch.float32, device=q.device)
    n_seq = table["seq_len"].numel()
    grid = (triton.cdiv(max_seq_len, bm), n_seq, h)
    _fwd_kernel[grid](q, kc, vc, kd, vd, o, lse,
                      table["q_start"], table["dec_start"], table["ctx_start"], table["seq_len"], table["ctx_len"],
                      q.stride(0), q.stride(1), kc.stride(0), kc.stride(1), vc.stride(0), vc.stride(1),
                      kd.stride(0), kd.stride(1), vd.stride(0), vd.stride(1), o.stride(0), o.stride(1),
                      lse.stride(0), scale,
                      GROUP=h // hk, HEAD_DIM=d, BLOCK_D=bd, BLOCK_M=bm, BLOCK_N=bn,
                      PRECISION=_precision(q.dtype), UPCAST=_upcast(q.dtype))
    return o, lse


def _backward(do, q, kc, vc, kd, vd, o, lse, table, scale, max_seq_len, max_ctx_len, dkc, dvc, dkd, dvd):
    """Fills fp32 buffers ``dkc, dvc`` (context, atomics) and ``dkd, dvd`` (decoded, stores); returns dq fp32."""
    t_q, h, d = q.shape
    hk = kc.shape[1]
    bm, bn, bd = _blocks(d, q.device)
    do = do.contiguous() if do.stride(-1) != 1 else do
    # delta_r = rowsum(dO ⊙ O), fp32 [H, T_q]
    delta = (do.float() * o.float()).sum(-1).transpose(0, 1).contiguous()
    dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    n_seq = table["seq_len"].numel()
    common = dict(GROUP=h // hk, HEAD_DIM=d, BLOCK_D=bd, BLOCK_M=bm, BLOCK_N=bn, PRECISION=_precision(q.dtype),
                  UPCAST=_upcast(q.dtype))
    for is_ctx, k, v, dk, dv, key_start, key_len, max_len in (
            (True, kc, vc, dkc, dvc, table["ctx_start"], table["ctx_len"], max_ctx_len),
            (False, kd, vd, dkd, dvd, table["dec_start"], table["seq_len"], max_seq_len)):
        assert dk.stride() == dv.stride()
        grid = (triton.cdiv(max_len, bn), n_seq, hk)
        _bwd_kernel[grid](q, k, v, do, lse, delta, dq, dk, dv,
                          table["q_start"], key_start, table["seq_len"], key_len,
                          q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
                          do.stride(0), do.stride(1), lse.stride(0), dq.stride(0), dq.stride(1),
                          dk.stride(0), dk.stride(1), scale, IS_CTX=is_ctx, **common)
    return dq


class _PackedDecodedAttention(torch.autograd.Function):
    """Call 2 on the packed layout: context and decoded keys live in the same ``k, v [T, H_kv, d]``."""

    @staticmethod
    def forward(ctx, q, k, v, table, scale, max_seq_len, max_ctx_len):
        o, lse = _forward(q, k, v, k, v, table, scale, max_seq_len)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.table, ctx.scale, ctx.max_seq_len, ctx.max_ctx_len = table, scale, max_seq_len, max_ctx_len
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        # one fp32 scratch for dK (and dV): prompt rows get atomics, response rows direct stores (disjoint)
        dk = torch.zeros(k.shape, dtype=torch.float32, device=k.device)
        dv = torch.zeros(v.shape, dtype=torch.float32, device=v.device)
        dq = _backward(do, q, k, v, k, v, o, lse, ctx.table, ctx.scale, ctx.max_seq_len, ctx.max_ctx_len,
                       dk, dv, dk, dv)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None, None, None


class _SplitDecodedAttention(torch.autograd.Function):
    """Call 2 with separate context and decoded tensors (one group)."""

    @staticmethod
    def forward(ctx, q, kc, vc, kd, vd, table, scale, max_seq_len, max_ctx_len):
        o, lse = _forward(q, kc, vc, kd, vd, table, scale, max_seq_len)
        ctx.save_for_backward(q, kc, vc, kd, vd, o, lse)
        ctx.table, ctx.scale, ctx.max_seq_len, ctx.max_ctx_len = table, scale, max_seq_len, max_ctx_len
        return o

    @staticmethod
    def backward(ctx, do):
        q, kc, vc, kd, vd, o, lse = ctx.saved_tensors
        f32 = dict(dtype=torch.float32, device=q.device)
        dkc, dvc = torch.zeros(kc.shape, **f32), torch.zeros(kc.shape, **f32)
        dkd, dvd = torch.zeros(kd.shape, **f32), torch.zeros(kd.shape, **f32)
        dq = _backward(do, q, kc, vc, kd, vd, o, lse, ctx.table, ctx.scale, ctx.max_seq_len, ctx.max_ctx_len,
                       dkc, dvc, dkd, dvd)
        return (dq.to(q.dtype), dkc.to(kc.dtype), dvc.to(vc.dtype), dkd.to(kd.dtype), dvd.to(vd.dtype),
                None, None, None, None)


def decoded_attention_packed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, table: dict[str, torch.Tensor],
                             *, scale: float, max_seq_len: int, max_ctx_len: int) -> torch.Tensor:
    """Call 2 over every response of a packed batch in one launch.

    ``q [T, H, d]``, ``k, v [T, H_kv, d]`` over the packed layout; ``table`` from
    :meth:`SharedPromptBatch.sequence_table` (int32 ``q_start, ctx_start, seq_len, ctx_len``). Returns
    ``[T, H, d]`` with response rows filled and prompt rows zero.
    """
    _check_kernel_tensors(q=q, k=k, v=v)
    table = dict(table, dec_start=table["q_start"])
    return _PackedDecodedAttention.apply(q, k, v, table, scale, max_seq_len, max_ctx_len)


def decoded_attention_split(q_dec: torch.Tensor, k_ctx: torch.Tensor, v_ctx: torch.Tensor, k_dec: torch.Tensor,
                            v_dec: torch.Tensor, cu_seqlens: list[int], context_len: int, *,
                            scale: float) -> torch.Tensor:
    """Call 2 for one group with separate tensors (see :func:`~.attention.dualkv_decoded_attention`)."""
    _check_kernel_tensors(q_dec=q_dec, k_ctx=k_ctx, v_ctx=v_ctx, k_dec=k_dec, v_dec=v_dec)
    dev = q_dec.device
    starts = cu_seqlens[:-1]
    lens = [b - a for a, b in zip(cu_seqlens[:-1], cu_seqlens[1:])]
    i32 = dict(dtype=torch.int32, device=dev)
    table = {"q_start": torch.tensor(starts, **i32), "dec_start": torch.tensor(starts, **i32),
             "ctx_start": torch.zeros(len(lens), **i32), "seq_len": torch.tensor(lens, **i32),
             "ctx_len": torch.full((len(lens),), context_len, **i32)}
    return _SplitDecodedAttention.apply(q_dec, k_ctx, v_ctx, k_dec, v_dec, table, scale, max(lens), context_len)
