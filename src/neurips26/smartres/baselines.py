"""Token-reduction baselines and reference views, all on the same :class:`~.model.MiniGroundingMLLM`.

Re-implemented from the papers' descriptions (their code targets LLaVA / Qwen; these are mini versions):

* **FastV** — before LM block K, drop the visual tokens with the lowest attention from the last text token.
* **ToMe** — bipartite soft matching inside the ViT: after each block merge the r most similar (A, B) key
  pairs, size-weighted; attention adds $\\log(\\text{size})$ to the logits (proportional attention).
* **SparseVLM** — the text tokens rate the visual tokens (mean attention); keep the best, recycle the pruned
  ones into a few merged tokens (inferred: fixed ratio, not rank-adaptive).
* **VisionZip** — dominant tokens by attention mass in the last ViT block, the rest merged by similarity into
  a few contextual tokens.
* a **global resolution selector** (CARES/ResAdapt-like, inferred): one resolution per image, full when the
  low-view grounding confidence is below a threshold calibrated to a token budget.
* **low-resolution only** and **full resolution**.

Score-based methods recompute the attention they read, as they must with SDPA / FlashAttention kernels that
do not return it: FastV and SparseVLM only the text-token rows (O(R·T), as their papers read them), VisionZip
the whole last-ViT-block matrix (it needs the attention mass each token *receives*, a column sum).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import check_float, check_int, check_tensor
from .model import MiniGroundingMLLM, SmartRes, _sequence, attention_probs, attention_rows, check_query, decode_boxes
from .sequence import SCALE_FULL


# --------------------------------------------------------------------------------------------- primitives
def _check_keep(keep: int, available: int, name: str = "keep") -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValueError(f"{name} must be a positive int, got {keep!r}")
    if keep > available:
        raise ValueError(f"{name}={keep} is above the {available} tokens available")
    return keep


def topk_in_order(scores: Tensor, keep: int) -> Tensor:
    """Indices ``[B, keep]`` of the ``keep`` highest ``scores [B, T]``, sorted ascending (order preserved)."""
    return scores.topk(keep, dim=1).indices.sort(dim=1).values


def _gather(x: Tensor, idx: Tensor) -> Tensor:
    return x.gather(1, idx[..., None].expand(-1, -1, x.shape[-1]))


def bipartite_merge(metric: Tensor, x: Tensor, size: Tensor, r: int,
                    extra: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
    r"""One ToMe step on ``x [B, N, d]`` with token sizes ``size [B, N]``.

    Split tokens alternately into A (even) and B (odd); each A token's best match in B by cosine similarity
    of ``metric [B, N, c]``; the r A tokens with the most similar matches are merged into their B partners
    by the size-weighted mean $x_b \leftarrow (s_b x_b + \sum s_a x_a)/(s_b + \sum s_a)$. ``extra [B, N, e]``
    is merged the same way. Returns ``(x [B, N-r, d], size [B, N-r], extra)``; $\sum s\,x$ and $\sum s$
    are preserved.
    """
    check_tensor("x", x, ndim=3)
    check_tensor("metric", metric, ndim=3)
    b, n, d = x.shape
    if metric.shape[:2] != x.shape[:2]:
        raise ValueError(f"metric must have shape [{b}, {n}, c], got {tuple(metric.shape)}")
    check_tensor("size", size, ndim=2)
    if size.shape != x.shape[:2] or not bool((size > 0).all()):
        raise ValueError(f"size must be positive with shape {tuple(x.shape[:2])}, got {tuple(size.shape)}")
    if extra is not None:
        check_tensor("extra", extra, ndim=3)
        if extra.shape[:2] != x.shape[:2]:
            raise ValueError(f"extra must have shape [{b}, {n}, e], got {tuple(extra.shape)}")
    check_int("r", r, 0)
    n_a = (n + 1) // 2
    r = min(r, n_a)
    if r <= 0:
        return x, size, extra
    m = F.normalize(metric, dim=-1)
    sim = m[:, 0::2] @ m[:, 1::2].transpose(1, 2)                                   # [B, N_a, N_b]
    best, best_idx = sim.max(-1)                                                      # [B, N_a]
    order = best.argsort(dim=1, descending=True)
    src, unm = order[:, :r], order[:, r:].sort(dim=1).values                          # merged / kept A tokens
    dst = best_idx.gather(1, src)                                                     # their B partners

    def merge(t: Tensor) -> Tensor:                                                   # t: [B, N, e], size-weighted
        t = t * size[..., None]
        ta, tb = t[:, 0::2], t[:, 1::2].clone()
        tb.scatter_add_(1, dst[..., None].expand(-1, -1, t.shape[-1]), _gather(ta, src))
        return torch.cat([_gather(ta, unm), tb], dim=1)

    new_size = merge(size.new_ones(b, n, 1))[..., 0]
    out = merge(x) / new_size[..., None]
    new_extra = None if extra is None else merge(extra) / new_size[..., None]
    # the size after merging: Σ s over members (merge() multiplied ones by size)
    return out, new_size, new_extra


def tome_merge(x: Tensor, r: int, size: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """ToMe merge of ``r`` tokens of ``x [B, N, d]`` (its own features as the similarity metric).
    Returns ``(merged [B, N-r, d], size [B, N-r])``."""
    check_tensor("x", x, ndim=3)
    n = x.shape[1]
    check_int("r", r, 0, (n + 1) // 2)
    if size is None:
        size = x.new_ones(x.shape[:2])
    out, new_size, _ = bipartite_merge(x, x, size, r)
    return out, new_size


def tome_schedule(n_tokens: int, target: int, n_blocks: int) -> list[int]:
    """Tokens to merge after each ViT block to go from ``n_tokens`` to ``target`` (front-loaded, each step at
    most half the tokens)."""
    _check_keep(target, n_tokens, "target")
    todo, n, rs = n_tokens - target, n_tokens, []
    for i in range(n_blocks):
        r = min(-(-todo // (n_blocks - i)), (n + 1) // 2)
        rs.append(r)
        todo, n = todo - r, n - r
    if todo:
        raise ValueError(f"cannot reach {target} tokens from {n_tokens} in {n_blocks} ToMe steps")
    return rs


def fastv_prune(hidden: Tensor, attn_from_query: Tensor, keep: int) -> Tensor:
    """FastV: keep the ``keep`` visual tokens of ``hidden [B, T, d]`` with the highest attention
    ``attn_from_query [B, T]`` from the last text token, in their original order → ``[B, keep, d]``."""
    check_tensor("hidden", hidden, ndim=3)
    check_tensor("attn_from_query", attn_from_query, ndim=2)
    if attn_from_query.shape != hidden.shape[:2]:
        raise ValueError(f"attn_from_query must have shape {tuple(hidden.shape[:2])}, got "
                         f"{tuple(attn_from_query.shape)}")
    _check_keep(keep, hidden.shape[1])
    return _gather(hidden, topk_in_order(attn_from_query, keep))


def _merge_into_centres(x: Tensor, candidates: Tensor, centres: Tensor) -> Tensor:
    """Mean of the ``candidates [B, T]`` tokens of ``x [B, T, d]`` assigned (cosine similarity) to the nearest
    of ``centres [B, c]`` (indices of candidate tokens) → ``[B, c, d]``."""
    xn = F.normalize(x, dim=-1)
    sim = xn @ _gather(xn, centres).transpose(1, 2)                                  # [B, T, c]
    assign = F.one_hot(sim.argmax(-1), centres.shape[1]).to(x.dtype) * candidates[..., None]
    ar = torch.arange(centres.shape[1])
    assign[torch.arange(x.shape[0])[:, None], centres, ar[None, :].expand_as(centres)] = 1.0  # centre in own group
    return (assign.transpose(1, 2) @ x) / assign.sum(1)[..., None].clamp(min=1.0)


def sparsevlm_prune(visual: Tensor, text: Tensor, attn: Tensor, keep: int, recycle: int = 0) -> Tensor:
    """SparseVLM: the text tokens rate the visual tokens, ``score_t = mean_q attn[:, q, t]``; keep the
    ``keep`` best (order preserved) and recycle the pruned ones into ``recycle`` merged tokens (centres: the
    best-rated pruned tokens). ``visual [B, T, d]``, ``text [B, Q, d]``, ``attn [B, Q, T]`` →
    ``[B, keep + recycle, d]``."""
    check_tensor("visual", visual, ndim=3)
    check_tensor("text", text, ndim=3)
    check_tensor("attn", attn, ndim=3)
    b, t, _ = visual.shape
    if attn.shape != (b, text.shape[1], t):
        raise ValueError(f"attn must have shape {(b, text.shape[1], t)}, got {tuple(attn.shape)}")
    _check_keep(keep, t)
    if isinstance(recycle, bool) or not isinstance(recycle, int) or not 0 <= recycle <= t - keep:
        raise ValueError(f"recycle must be an int in [0, {t - keep}], got {recycle!r}")
    kept, recycled = _sparsevlm_index(attn.mean(1), keep, recycle)
    out = _gather(visual, kept)
    if recycle:
        out = torch.cat([out, recycled(visual)], dim=1)
    return out


def _sparsevlm_index(score: Tensor, keep: int, recycle: int):
    kept = topk_in_order(score, keep)
    pruned = torch.ones_like(score, dtype=torch.bool).scatter(1, kept, False)
    centres = score.masked_fill(~pruned, float("-inf")).topk(recycle, dim=1).indices if recycle else None

    def recycled(x: Tensor) -> Tensor:
        return _merge_into_centres(x, pruned.to(x.dtype), centres)
    return kept, recycled


def visionzip_compress(tokens: Tensor, cls_attn: Tensor, n_dominant: int, n_contextual: int) -> Tensor:
    """VisionZip: the ``n_dominant`` tokens with the most attention mass ``cls_attn [B, T]`` (raster order),
    then ``n_contextual`` tokens merging the rest by similarity to evenly spaced centres among them.
    ``tokens [B, T, d]`` → ``[B, n_dominant + n_contextual, d]``."""
    check_tensor("tokens", tokens, ndim=3)
    check_tensor("cls_attn", cls_attn, ndim=2)
    if cls_attn.shape != tokens.shape[:2]:
        raise ValueError(f"cls_attn must have shape {tuple(tokens.shape[:2])}, got {tuple(cls_attn.shape)}")
    t = tokens.shape[1]
    _check_keep(n_dominant, t, "n_dominant")
    if isinstance(n_contextual, bool) or not isinstance(n_contextual, int) or not 0 <= n_contextual <= t - n_dominant:
        raise ValueError(f"n_contextual must be an int in [0, {t - n_dominant}], got {n_contextual!r}")
    dom, ctx = _visionzip_index(cls_attn, n_dominant, n_contextual)
    return torch.cat([_gather(tokens, dom), ctx(tokens)], dim=1)


def _visionzip_index(attn_mass: Tensor, n_dominant: int, n_contextual: int):
    b, t = attn_mass.shape
    dom = topk_in_order(attn_mass, n_dominant)
    rest = torch.ones_like(attn_mass, dtype=torch.bool).scatter(1, dom, False)
    rest_idx = rest.nonzero()[:, 1].reshape(b, t - n_dominant)                        # raster order
    pick = torch.linspace(0, t - n_dominant - 1, n_contextual).round().long() if n_contextual else None

    def contextual(x: Tensor) -> Tensor:
        if not n_contextual:
            return x[:, :0]
        return _merge_into_centres(x, rest.to(x.dtype), rest_idx[:, pick])
    return dom, contextual


def _check_scoring(scoring: object) -> None:
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")


# ------------------------------------------------------------------------------------ methods on the model
@dataclass
class MethodOutput:
    """Boxes ``[B, 4]`` and token counts: ``vit_tokens`` encoded and ``llm_tokens`` reaching the LM head
    (totals over the batch); ``llm_tokens_max`` is the widest visual sequence in any LM layer (FastV's early
    layers see all tokens)."""

    boxes: Tensor
    vit_tokens: int
    llm_tokens: int
    llm_tokens_max: int


def run_full(model: MiniGroundingMLLM, images: Tensor, query: Tensor) -> MethodOutput:
    seq = model.encode_full(images)
    n = int(seq.valid.sum())
    return MethodOutput(model.ground(seq, query), seq.n_vit_tokens, n, n)


def run_low(model: MiniGroundingMLLM, images: Tensor, query: Tensor) -> MethodOutput:
    seq = model.low_sequence(images)
    n = int(seq.valid.sum())
    return MethodOutput(model.ground(seq, query), seq.n_vit_tokens, n, n)


def run_smartres(smartres: SmartRes, images: Tensor, query: Tensor) -> MethodOutput:
    if not isinstance(smartres, SmartRes):
        raise TypeError(f"smartres must be a SmartRes, got {type(smartres).__name__}")
    model = smartres.encoder
    seq = smartres.encode(images, model.lm.query_embedding(query))
    n = int(seq.valid.sum())
    return MethodOutput(model.ground(seq, query), seq.n_vit_tokens, n, n)


SCORINGS = ("rows", "full")


def _lm_hook(kind: str, keep: int, recycle: int = 0, scoring: str = "rows"):
    """A FusionLM ``reduce`` callback: score the visual tokens by this block's attention from the text tokens
    (FastV: the last text token; SparseVLM: every text token, averaged), then prune.

    ``scoring="rows"`` computes only the text-token rows of the attention (:func:`~.model.attention_rows`, as
    FastV and SparseVLM do); ``"full"`` recomputes the whole ``[T, T]`` matrix and slices it (the reference:
    the same numbers, more work)."""
    def fn(blk, q, v, meta, valid):
        h = torch.cat([q, v], dim=1)
        n_q = q.shape[1]
        rows = slice(n_q - 1, n_q) if kind == "fastv" else slice(0, n_q)             # last text token / all
        if scoring == "rows":
            probs = attention_rows(blk, h, rows)                                      # [B, H, R, Q+T]
        else:
            probs = attention_probs(blk, h)[:, :, rows]                               # [B, H, Q+T, Q+T] sliced
        score = probs.mean(1)[:, :, n_q:].masked_fill(~valid[:, None, :], float("-inf"))  # [B, R, T]
        if kind == "fastv":
            idx = topk_in_order(score[:, 0], keep)
            return _gather(v, idx), _gather(meta, idx), valid.gather(1, idx)
        kept, recycled = _sparsevlm_index(score.mean(1), keep, recycle)
        v2, meta2 = _gather(v, kept), _gather(meta, kept)
        if recycle:
            v2, meta2 = torch.cat([v2, recycled(v)], 1), torch.cat([meta2, recycled(meta)], 1)
        return v2, meta2, torch.ones(v2.shape[:2], dtype=torch.bool)
    return fn


def run_fastv(model: MiniGroundingMLLM, images: Tensor, query: Tensor, keep: int = 96, layer: int = 1,
              scoring: str = "rows") -> MethodOutput:
    """FastV at LM block ``layer`` (all tokens before it); ``scoring``: ``"rows"`` (the last text token's
    attention row only) or ``"full"`` (the whole matrix recomputed; the reference)."""
    _check_scoring(scoring)
    check_query(query, model._check_images(images).shape[0])
    seq = model.encode_full(images)
    _check_keep(keep, seq.tokens.shape[1])
    check_int("layer", layer, 0, model.config.lm_blocks - 1)
    boxes = decode_boxes(*model.lm(seq, query, reduce=(layer, _lm_hook("fastv", keep, scoring=scoring))))
    b, t = seq.tokens.shape[:2]
    return MethodOutput(boxes, seq.n_vit_tokens, b * keep, b * t if layer > 0 else b * keep)


def run_sparsevlm(model: MiniGroundingMLLM, images: Tensor, query: Tensor, keep: int = 88, recycle: int = 8,
                  layer: int = 1, scoring: str = "rows") -> MethodOutput:
    """SparseVLM at LM block ``layer``: the text tokens' attention rows rate the visual tokens; keep ``keep``,
    recycle the pruned ones into ``recycle`` merged tokens. ``scoring`` as in :func:`run_fastv`."""
    _check_scoring(scoring)
    check_int("keep", keep, 1)
    check_int("recycle", recycle, 0)
    check_query(query, model._check_images(images).shape[0])
    seq = model.encode_full(images)
    _check_keep(keep + recycle, seq.tokens.shape[1], "keep + recycle")
    check_int("layer", layer, 0, model.config.lm_blocks - 1)
    boxes = decode_boxes(*model.lm(seq, query, reduce=(layer, _lm_hook("sparsevlm", keep, recycle, scoring))))
    b, t = seq.tokens.shape[:2]
    return MethodOutput(boxes, seq.n_vit_tokens, b * (keep + recycle), b * t if layer > 0 else b * (keep + recycle))


def run_visionzip(model: MiniGroundingMLLM, images: Tensor, query: Tensor, n_dominant: int = 80,
                  n_contextual: int = 16) -> MethodOutput:
    """VisionZip after the ViT: attention mass received in the last ViT block (recomputed), mean over heads
    and queries."""
    check_int("n_dominant", n_dominant, 1)
    check_int("n_contextual", n_contextual, 0)
    check_query(query, model._check_images(images).shape[0])
    x, meta = model.full_inputs(images)
    b, t = x.shape[:2]
    _check_keep(n_dominant + n_contextual, t, "n_dominant + n_contextual")
    tokens, _, _, attn = model.vit(x, return_last_attn=True)
    mass = attn.mean(dim=(1, 2))                                                      # [B, T]
    dom, ctx = _visionzip_index(mass, n_dominant, n_contextual)
    meta_b = meta.expand(b, -1, -1)
    toks = torch.cat([_gather(tokens, dom), ctx(tokens)], 1)
    m2 = torch.cat([_gather(meta_b, dom), ctx(meta_b)], 1)
    seq = _sequence(toks, m2, SCALE_FULL, n_vit=b * t)
    return MethodOutput(model.ground(seq, query), b * t, toks.shape[0] * toks.shape[1], toks.shape[1] * b)


def run_tome(model: MiniGroundingMLLM, images: Tensor, query: Tensor, target: int = 96,
             metric: str = "keys") -> MethodOutput:
    """ToMe inside the ViT down to ``target`` tokens (positions and footprints merged alongside); ``metric``:
    match on the keys (the paper) or on the token features."""
    check_query(query, model._check_images(images).shape[0])
    x, meta = model.full_inputs(images)
    b, t = x.shape[:2]
    rs = tome_schedule(t, target, model.config.vit_blocks)
    tokens, meta2, _, _ = model.vit(x, tome_r=rs, extra=meta.expand(b, -1, -1).clone(), tome_metric=metric)
    seq = _sequence(tokens, meta2, SCALE_FULL, n_vit=b * t)
    return MethodOutput(model.ground(seq, query), b * t, b * target, b * target)


def low_confidence(model: MiniGroundingMLLM, images: Tensor, query: Tensor) -> Tensor:
    """The global selector's score: max softmax objectness of the low view ``[B]`` (low = unsure)."""
    obj, _, _, _ = model.lm(model.low_sequence(images), query)
    return obj.softmax(1).amax(1)


def run_global_selector(model: MiniGroundingMLLM, images: Tensor, query: Tensor, threshold: float) -> MethodOutput:
    """One resolution per image: full resolution where the low-view confidence is below ``threshold`` (a finite
    number; confidences lie in (0, 1], so ``threshold > 1`` sends every image to full resolution)."""
    check_float("threshold", threshold)
    check_query(query, model._check_images(images).shape[0])
    low_seq = model.low_sequence(images)
    obj, off, pos, fp = model.lm(low_seq, query)
    boxes = decode_boxes(obj, off, pos, fp)
    go_full = obj.softmax(1).amax(1) < threshold
    vit, llm = low_seq.n_vit_tokens, int(low_seq.valid.sum())
    if bool(go_full.any()):
        out = run_full(model, images[go_full], query[go_full])
        boxes = boxes.clone()
        boxes[go_full] = out.boxes
        vit, llm = vit + out.vit_tokens, llm + out.llm_tokens - int(go_full.sum()) * low_seq.tokens.shape[1]
    return MethodOutput(boxes, vit, llm, llm)
