"""What DualKV is compared with.

* **Replicated prompts** (the paper's FA2 baseline): every response carries its own prompt copy,
  ``N (P + R_i)`` tokens through the whole model; attention is causal per sequence. Ours: a varlen loop of
  causal SDPA over the sequences of :func:`~.packing.pack_replicated` (one SDPA per sequence, the
  ``cu_seqlens`` contract of FA2 varlen); on GPU SDPA's flash backend stands in for FA2.
* **Prefix-Grouper style** (johncaged/PrefixGrouper, re-implemented from its description, not its code):
  the model also runs on the shared layout, but the suffix attention *materialises* the prefix K/V N times:
  prefix self-attention, then SDPA over ``[expand_N(K_c); pad(K_d)]`` with a padding/causal mask.
* **FlexAttention** with a ``BlockMask`` on the packed layout (GPU peer, optional): the exact DualKV mask as a
  ``mask_mod``; compiled on CUDA. Eager on CPU works but is slow and only for tests.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from neurips26.constraints import Instance, Int, validate

from .packing import SharedPromptBatch

__all__ = [
    "replicated_attention",
    "replicated_attention_fn",
    "prefix_grouper_attention",
    "prefix_grouper_attention_fn",
    "dualkv_mask_mod",
    "build_flex_block_mask",
    "flex_dualkv_attention",
]


def _repeat(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """``[B, H_kv, T, d]`` -> ``[B, H_kv * n_rep, T, d]``."""
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


def replicated_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, *,
                         scale: float | None = None) -> torch.Tensor:
    """Varlen causal attention over back-to-back sequences (FA2-varlen stand-in).

    ``q [T, H, d]``, ``k, v [T, H_kv, d]``, ``cu_seqlens [S+1]`` -> ``[T, H, d]``; sequence ``s`` spans rows
    ``cu_seqlens[s]:cu_seqlens[s+1]`` and attends causally within itself only.
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    n_rep = q.shape[1] // k.shape[1]
    cu = [int(c) for c in cu_seqlens.tolist()]
    outs = []
    for a, b in zip(cu[:-1], cu[1:]):
        qs = q[a:b].transpose(0, 1)[None]
        ks = _repeat(k[a:b].transpose(0, 1)[None], n_rep)
        vs = _repeat(v[a:b].transpose(0, 1)[None], n_rep)
        outs.append(F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=scale)[0].transpose(0, 1))
    return torch.cat(outs, dim=0)


def replicated_attention_fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, cu_seqlens: torch.Tensor,
                            **_: Any) -> torch.Tensor:
    """:class:`neurips26.nn.Llama` seam for the replicated layout: ``q [1, H, T, d]`` -> ``[1, H, T, d]``."""
    out = replicated_attention(q[0].transpose(0, 1), k[0].transpose(0, 1), v[0].transpose(0, 1), cu_seqlens)
    return out.transpose(0, 1)[None]


def prefix_grouper_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, batch: SharedPromptBatch, *,
                             scale: float | None = None) -> torch.Tensor:
    """Prefix-Grouper-style attention on the shared layout (expanded prefix K/V, padded suffixes).

    ``q [T, H, d]``, ``k, v [T, H_kv, d]`` -> ``[T, H, d]``. Per group: causal SDPA on the prefix, then one
    SDPA for all N suffixes with keys ``[K_c repeated N times ; K_d padded to R_max]`` (``N·P`` prefix rows are
    materialised, which is what DualKV avoids) and a mask (prefix visible, suffix causal, padding hidden).
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    n_rep = q.shape[1] // k.shape[1]
    pieces = []
    for off, p, slices in zip(batch.group_offsets, batch.prompt_lens, batch.response_slices):
        ctx = slice(off, off + p)
        qc, kc, vc = (t[ctx].transpose(0, 1)[None] for t in (q, k, v))
        pieces.append(F.scaled_dot_product_attention(qc, _repeat(kc, n_rep), _repeat(vc, n_rep), is_causal=True,
                                                     scale=scale)[0].transpose(0, 1))
        n = len(slices)
        lens = torch.tensor([s.stop - s.start for s in slices], device=q.device)
        r_max = int(lens.max())
        offs = torch.arange(r_max, device=q.device)
        valid = offs[None] < lens[:, None]  # [N, Rm]
        rows = torch.where(valid, slices[0].start + (torch.cumsum(lens, 0) - lens)[:, None] + offs[None], 0)
        qd = q[rows].permute(0, 2, 1, 3)  # [N, H, Rm, d]
        kd, vd = k[rows].permute(0, 2, 1, 3), v[rows].permute(0, 2, 1, 3)  # [N, H_kv, Rm, d]
        # the expanded prefix: N materialised copies of K_c, V_c
        k_all = torch.cat([kc.expand(n, -1, -1, -1), kd], dim=2)
        v_all = torch.cat([vc.expand(n, -1, -1, -1), vd], dim=2)
        causal = (offs[None, :] <= offs[:, None])[None] & valid[:, None, :]  # [N, Rm, Rm]
        mask = torch.cat([torch.ones(n, r_max, p, dtype=torch.bool, device=q.device), causal], dim=2)
        out = F.scaled_dot_product_attention(qd, _repeat(k_all, n_rep), _repeat(v_all, n_rep),
                                             attn_mask=mask[:, None], scale=scale)  # [N, H, Rm, d]
        pieces.append(out.permute(0, 2, 1, 3)[valid])
    return torch.cat(pieces, dim=0)


def prefix_grouper_attention_fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, batch: SharedPromptBatch,
                                **_: Any) -> torch.Tensor:
    """:class:`neurips26.nn.Llama` seam for the Prefix-Grouper-style baseline (``[1, H, T, d]``)."""
    out = prefix_grouper_attention(q[0].transpose(0, 1), k[0].transpose(0, 1), v[0].transpose(0, 1), batch)
    return out.transpose(0, 1)[None]


# ------------------------------------------------------------------------------- FlexAttention peer
def _token_tables(batch: SharedPromptBatch, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    """``group_id [T]`` and ``seq_id [T]`` (-1 on prompt rows, else a global response index)."""
    t = batch.num_tokens
    group_id = torch.empty(t, dtype=torch.int32)
    seq_id = torch.full((t,), -1, dtype=torch.int32)
    s = 0
    for g, (a, b) in enumerate(zip(batch.group_offsets[:-1], batch.group_offsets[1:])):
        group_id[a:b] = g
        for sl in batch.response_slices[g]:
            seq_id[sl] = s
            s += 1
    return group_id.to(device), seq_id.to(device)


def dualkv_mask_mod(batch: SharedPromptBatch, device: torch.device | str):
    """The DualKV visibility rule as a FlexAttention ``mask_mod(b, h, q_idx, kv_idx) -> bool``.

    Key ``j`` is visible to query ``i`` iff both are in one group, ``j <= i`` in the packed order, and ``j`` is
    a prompt row or belongs to the same response as ``i``.
    """
    group_id, seq_id = _token_tables(batch, device)

    def mask_mod(b, h, q_idx, kv_idx):
        same_group = group_id[q_idx] == group_id[kv_idx]
        visible = (seq_id[kv_idx] == -1) | (seq_id[kv_idx] == seq_id[q_idx])
        return same_group & visible & (kv_idx <= q_idx)

    return mask_mod


@validate(batch=Instance(SharedPromptBatch, "SharedPromptBatch"), block_size=Int(low=1))
def build_flex_block_mask(batch: SharedPromptBatch, device: torch.device | str, *, block_size: int = 128):
    """A FlexAttention ``BlockMask`` for the packed layout (pass ``device`` explicitly; torch defaults to cuda)."""
    from torch.nn.attention.flex_attention import create_block_mask

    t = batch.num_tokens
    return create_block_mask(dualkv_mask_mod(batch, device), B=None, H=None, Q_LEN=t, KV_LEN=t, device=device,
                             BLOCK_SIZE=block_size)


def flex_dualkv_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask, *,
                          scale: float | None = None, compiled: bool | None = None) -> torch.Tensor:
    """FlexAttention over the packed layout: ``q [T, H, d]``, ``k, v [T, H_kv, d]`` -> ``[T, H, d]``.

    ``compiled`` (default: on CUDA) wraps ``flex_attention`` in ``torch.compile``; eager otherwise.
    """
    from torch.nn.attention.flex_attention import flex_attention

    fn = flex_attention
    if compiled if compiled is not None else q.is_cuda:
        fn = _compiled_flex()
    out = fn(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], block_mask=block_mask,
             scale=scale, enable_gqa=q.shape[1] != k.shape[1])
    return out[0].transpose(0, 1)


_COMPILED = None


def _compiled_flex():
    global _COMPILED
    if _COMPILED is None:
        from torch.nn.attention.flex_attention import flex_attention

        _COMPILED = torch.compile(flex_attention)
    return _COMPILED
