r"""DASA attention (C): queries of dynamic regions attend to ``[compressed cache ; whole chunk]`` with the
count bias; queries of static regions take the cheap path.

$$o = \mathrm{softmax}\!\Big(\frac{q K^\top}{\sqrt d} + \log n\Big) V, \qquad
K = [K_{\text{cache}} ; K_{\text{chunk}}],\; \log n = [\log n_{\text{cache}} ; 0].$$

Static regions (inferred): ``"full"`` = as dynamic; ``"local"`` = latest keyframe entries + the chunk;
``"skip"`` = the chunk only. :func:`dasa_attention` gathers each sequence's query sets and calls
``F.scaled_dot_product_attention`` on exactly the keys they see (the fast path: cost $N_q \cdot N_k$);
:func:`dasa_attention_reference` is the same maths as one dense masked softmax, for tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..constraints import Instance, Int, Optional, Tensor, check_arguments
from .dynamics import DASAConfig, token_region_index

_QKV = {"q": Tensor("B H N d"), "k_chunk": Tensor("B H N d"), "v_chunk": Tensor("B H N d"),
        "region_mask": Optional(Tensor("B R", dtype="bool")), "cfg": Instance(DASAConfig)}


def _check(where, q, k_chunk, v_chunk, cache, layer, region_mask, cfg):
    """The arguments of the DASA attention functions (``layer`` must index the cache's layers, when there is one)."""
    check_arguments(where, _QKV, {"q": q, "k_chunk": k_chunk, "v_chunk": v_chunk, "region_mask": region_mask,
                                  "cfg": cfg})
    if cache is not None:
        Int(low=0, high=len(cache._stores) - 1).check(layer, "layer", where)


def _cache_parts(cache, layer, q, cfg):
    """``(k, v [B,H,M,d], bias [B,M], kf [B,M] bool)`` of the cache, or ``None`` when it is empty."""
    if cache is None or cache._stores[layer] is None:
        return None
    kc, vc, _, logc = cache.get(layer)
    if kc.shape[0] != q.shape[0] or kc.shape[1] != q.shape[1] or kc.shape[3] != q.shape[3]:
        raise ValueError(f"the cache holds [B, H, *, d] = {tuple(kc.shape[:2])}, {kc.shape[3]}; q has "
                         f"{tuple(q.shape[:2])}, {q.shape[3]}")
    if logc is None:
        logc = torch.zeros(kc.shape[0], kc.shape[2], device=kc.device)
    elif not cfg.count_bias:
        logc = torch.where(torch.isfinite(logc), torch.zeros_like(logc), logc)
    return kc, vc, logc, cache.keyframe_mask(layer).to(kc.device)


def _query_dynamic(region_mask, cache, n, device, region_size):
    """``bool [B, N]``: does each chunk query lie in a dynamic region? (chunk tokens frame-major raster)."""
    grid = cache.grid_hw
    p = grid[0] * grid[1]
    if n % p:
        raise ValueError(f"the chunk has {n} tokens, not whole frames of {p}")
    ridx = token_region_index(grid, region_size)
    r = int(ridx.max()) + 1
    if region_mask.shape[1] != r:
        raise ValueError(f"region_mask must have R = {r} regions ({grid} grid in {tuple(region_size)} tiles), "
                         f"got {region_mask.shape[1]}")
    return region_mask[:, ridx.to(region_mask.device).repeat(n // p)].to(device)


def _static_keys(cfg, kf, valid):
    """Cache entries a static query sees: ``bool [B, M]``."""
    if cfg.static_policy == "local":
        return kf & valid
    return torch.zeros_like(valid)        # "skip": the chunk only


def dasa_attention(q: torch.Tensor, k_chunk: torch.Tensor, v_chunk: torch.Tensor, cache, layer: int,
                   region_mask: torch.Tensor | None, cfg: DASAConfig, *, stats: dict | None = None) -> torch.Tensor:
    """DASA attention of a chunk, ``q, k_chunk, v_chunk: [B, H, N, d]`` -> ``[B, H, N, d]``.

    Args:
        cache: a cache policy (``None`` or empty: attention within the chunk only).
        layer: which layer of the cache to read.
        region_mask: ``bool [B, R]`` dynamic regions of the cache's grid tiled by ``cfg.region_size``;
            ``None``: every query is dynamic.
        cfg: DASA settings (``static_policy``, ``count_bias``, ``region_size``).
        stats: if given, ``stats["pairs"]`` accumulates the attended (query, key) pairs per head.
    """
    _check("dasa_attention", q, k_chunk, v_chunk, cache, layer, region_mask, cfg)
    b, h, n, d = q.shape
    parts = _cache_parts(cache, layer, q, cfg)
    if parts is None:
        if stats is not None:
            stats["pairs"] = stats.get("pairs", 0) + b * n * n
        return F.scaled_dot_product_attention(q, k_chunk, v_chunk)
    kc, vc, bias, kf = parts
    valid = torch.isfinite(bias)
    dyn = (torch.ones(b, n, dtype=torch.bool, device=q.device) if region_mask is None or cfg.static_policy == "full"
           else _query_dynamic(region_mask, cache, n, q.device, cfg.for_grid(cache.grid_hw).region_size))
    if not (~dyn).any():
        # every query dynamic: one batched call over [cache ; chunk], padding masked by its -inf bias
        keys, vals = torch.cat([kc, k_chunk], dim=2), torch.cat([vc, v_chunk], dim=2)
        add = torch.cat([bias, torch.zeros(b, n, device=q.device)], dim=1).to(q.dtype)[:, None, None]
        if stats is not None:
            stats["pairs"] = stats.get("pairs", 0) + n * int(valid.sum() + b * n)
        return F.scaled_dot_product_attention(q, keys, vals, attn_mask=add)
    out = torch.empty_like(q)
    pairs = 0
    for i in range(b):
        for qsel, ksel in ((dyn[i], valid[i]), (~dyn[i], _static_keys(cfg, kf[i], valid[i]))):
            qi = qsel.nonzero().squeeze(1)
            if qi.numel() == 0:
                continue
            ki = ksel.nonzero().squeeze(1)
            keys = torch.cat([kc[i][:, ki], k_chunk[i]], dim=1)[None]        # [1, H, Mk + N, d]
            vals = torch.cat([vc[i][:, ki], v_chunk[i]], dim=1)[None]
            add = torch.cat([bias[i, ki], torch.zeros(n, device=q.device)])  # log n on cache, 0 on chunk
            o = F.scaled_dot_product_attention(q[i][:, qi][None], keys, vals,
                                               attn_mask=add.to(q.dtype)[None, None, None])
            out[i][:, qi] = o[0]
            pairs += qi.numel() * keys.shape[2]
    if stats is not None:
        stats["pairs"] = stats.get("pairs", 0) + pairs
    return out


def dasa_attention_reference(q: torch.Tensor, k_chunk: torch.Tensor, v_chunk: torch.Tensor, cache, layer: int,
                             region_mask: torch.Tensor | None, cfg: DASAConfig) -> torch.Tensor:
    """The same as :func:`dasa_attention`, written as one explicit masked softmax over ``[cache ; chunk]``."""
    _check("dasa_attention_reference", q, k_chunk, v_chunk, cache, layer, region_mask, cfg)
    b, h, n, d = q.shape
    parts = _cache_parts(cache, layer, q, cfg)
    if parts is None:
        kc = q.new_zeros(b, h, 0, d)
        vc, bias, kf = kc, q.new_zeros(b, 0), torch.zeros(b, 0, dtype=torch.bool)
    else:
        kc, vc, bias, kf = parts
    m = kc.shape[2]
    valid = torch.isfinite(bias)
    if parts is None or region_mask is None or cfg.static_policy == "full":
        dyn = torch.ones(b, n, dtype=torch.bool)
    else:
            dyn = _query_dynamic(region_mask, cache, n, q.device, cfg.for_grid(cache.grid_hw).region_size)
    seen_static = _static_keys(cfg, kf, valid)
    # allowed[b, i, j]: query i sees cache entry j (dynamic: every valid one; static: the policy's set)
    allowed = torch.where(dyn[:, :, None], valid[:, None, :], seen_static[:, None, :])        # [B, N, M]
    logits_c = torch.einsum("bhnd,bhmd->bhnm", q, kc) / math.sqrt(d) + torch.where(
        valid, bias, torch.zeros_like(bias))[:, None, None]
    logits_c = logits_c.masked_fill(~allowed[:, None], -math.inf)
    logits_x = torch.einsum("bhnd,bhmd->bhnm", q, k_chunk) / math.sqrt(d)
    w = torch.softmax(torch.cat([logits_c, logits_x], dim=-1), dim=-1)
    return torch.einsum("bhnm,bhmd->bhnd", w[..., :m], vc) + torch.einsum("bhnm,bhmd->bhnd", w[..., m:], v_chunk)


# ---- block-sparse path: one flex_attention call with a BlockMask ----------------------------------------
@dataclass
class FlexPlan:
    """What one chunk's DASA attention needs besides q, k, v, built once per (cache state, region mask): the
    query order ``q_order [B, N]`` (dynamic queries first), the cache order ``k_order [B, M]`` (entries a static
    query sees first, then the other valid ones, padding last), the additive bias ``add [B, M + N]`` ($\\log n$ on
    the cache, 0 on the chunk), the allowed pairs ``allowed [B, N, M + N]`` in that order, the ``BlockMask`` and
    the attended pair count. Reusable for the denoising steps of a chunk (the cache does not change between them).
    """

    q_order: torch.Tensor
    k_order: torch.Tensor
    add: torch.Tensor
    allowed: torch.Tensor
    block_mask: object
    pairs: int


def plan_flex(cache, layer: int, region_mask: torch.Tensor | None, cfg: DASAConfig, n: int, *,
              device: torch.device | str = "cpu", block_size: tuple[int, int] = (32, 64)) -> FlexPlan | None:
    """Build the :class:`FlexPlan` of a chunk of ``n`` queries (``None`` when the cache is empty).

    Sorting the queries (dynamic first) and the cache (static-visible entries first) makes the allowed pairs
    contiguous, so whole ``block_size = (query, key)`` tiles of a static query block against the rest of the
    cache are empty and the kernel skips them.
    """
    from torch.nn.attention.flex_attention import create_block_mask

    if cache is None or cache._stores[layer] is None:
        return None
    kc, _, _, logc = cache.get(layer)
    b, m = kc.shape[0], kc.shape[2]
    bias = torch.zeros(b, m, device=kc.device) if logc is None else logc.to(kc.device)
    if not cfg.count_bias:
        bias = torch.where(torch.isfinite(bias), torch.zeros_like(bias), bias)
    valid = torch.isfinite(bias)
    kf = cache.keyframe_mask(layer).to(kc.device)
    dyn = (torch.ones(b, n, dtype=torch.bool, device=kc.device)
           if region_mask is None or cfg.static_policy == "full"
           else _query_dynamic(region_mask, cache, n, kc.device, cfg.for_grid(cache.grid_hw).region_size))
    seen_static = _static_keys(cfg, kf, valid)
    # stable sorts: dynamic queries first; cache: static-visible (0), other valid (1), padding (2)
    q_order = torch.sort((~dyn).to(torch.int8), dim=1, stable=True).indices
    rank = torch.where(seen_static, 0, torch.where(valid, 1, 2)).to(torch.int8)
    k_order = torch.sort(rank, dim=1, stable=True).indices
    dyn_s = dyn.gather(1, q_order)
    valid_s, static_s = valid.gather(1, k_order), seen_static.gather(1, k_order)
    allowed_c = torch.where(dyn_s[:, :, None], valid_s[:, None, :], static_s[:, None, :])       # [B, N, M]
    allowed = torch.cat([allowed_c, torch.ones(b, n, n, dtype=torch.bool, device=kc.device)], dim=2)
    add = torch.cat([torch.where(valid_s, bias.gather(1, k_order), torch.zeros_like(bias)),
                     torch.zeros(b, n, device=kc.device)], dim=1)

    def mask_mod(bi, h, qi, kv):
        return allowed[bi, qi, kv]

    bm = create_block_mask(mask_mod, b, None, n, m + n, device=str(device), BLOCK_SIZE=block_size)
    return FlexPlan(q_order, k_order, add, allowed, bm, int(allowed.sum()))


def dasa_attention_flex(q: torch.Tensor, k_chunk: torch.Tensor, v_chunk: torch.Tensor, cache, layer: int,
                        region_mask: torch.Tensor | None, cfg: DASAConfig, *, stats: dict | None = None,
                        plan: FlexPlan | None = None, kernel=None, block_size: tuple[int, int] = (32, 64)
                        ) -> torch.Tensor:
    """:func:`dasa_attention` as one ``torch.nn.attention.flex_attention`` call with a ``BlockMask`` (forward,
    for inference): same inputs, same output up to float rounding.

    Args:
        plan: a :func:`plan_flex` result to reuse (the denoising steps of one chunk share it).
        kernel: the attention function, default ``flex_attention`` itself (eager: on CPU it computes every
            score and masks them; pass ``torch.compile(flex_attention)`` for the fused block-sparse kernel,
            which skips empty tiles).
    """
    from torch.nn.attention.flex_attention import flex_attention

    _check("dasa_attention_flex", q, k_chunk, v_chunk, cache, layer, region_mask, cfg)
    b, h, n, d = q.shape
    if plan is None:
        plan = plan_flex(cache, layer, region_mask, cfg, n, device=q.device, block_size=block_size)
    if plan is None:
        if stats is not None:
            stats["pairs"] = stats.get("pairs", 0) + b * n * n
        return F.scaled_dot_product_attention(q, k_chunk, v_chunk)
    if plan.q_order.shape != (b, n):
        raise ValueError(f"plan was built for {tuple(plan.q_order.shape)} queries, q has {(b, n)}")
    kc, vc, _, _ = cache.get(layer)
    idx_k = plan.k_order[:, None, :, None].expand(b, h, plan.k_order.shape[1], d)
    keys = torch.cat([kc.gather(2, idx_k), k_chunk], dim=2)
    vals = torch.cat([vc.gather(2, idx_k), v_chunk], dim=2)
    idx_q = plan.q_order[:, None, :, None].expand(b, h, n, d)
    add = plan.add.to(q.dtype)

    def score_mod(score, bi, hi, qi, kv):
        return score + add[bi, kv]

    fn = flex_attention if kernel is None else kernel
    o = fn(q.gather(2, idx_q), keys, vals, score_mod=score_mod, block_mask=plan.block_mask)
    if stats is not None:
        stats["pairs"] = stats.get("pairs", 0) + plan.pairs
    return torch.empty_like(q).scatter_(2, idx_q, o)
