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

from neurips26.constraints import Choice, Instance, Int, Optional, Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorC

from .merging import bipartite_merge
from .merging import gather_tokens as _gather
from .model import IMAGES, QUERY, MiniGroundingMLLM, SmartRes, attention_probs, attention_rows, decode_boxes
from .sequence import SCALE_FULL, single_view_sequence

__all__ = ["SCORINGS", "MethodOutput", "bipartite_merge", "fastv_prune", "low_confidence", "run_fastv", "run_full",
           "run_global_selector", "run_low", "run_smartres", "run_sparsevlm", "run_tome", "run_visionzip",
           "sparsevlm_prune", "tome_merge", "tome_schedule", "topk_in_order", "visionzip_compress"]


# --------------------------------------------------------------------------------------------- primitives
def _budget(where: str, budgets: dict[str, tuple[int, int]]) -> None:
    """Token budgets ``{name: (value, available)}``: each an int in ``[1, available]``."""
    check_arguments(where, {name: Int(low=1, high=top) for name, (_, top) in budgets.items()},
                    {name: value for name, (value, _) in budgets.items()})


def topk_in_order(scores: Tensor, keep: int) -> Tensor:
    """Indices ``[B, keep]`` of the ``keep`` highest ``scores [B, T]``, sorted ascending (order preserved)."""
    return scores.topk(keep, dim=1).indices.sort(dim=1).values


@validate(x=TensorC("B N D", dtype="float"), r=Int(low=0), size=Optional(TensorC("B N", dtype="float")))
def tome_merge(x: Tensor, r: int, size: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """ToMe merge of ``r`` tokens of ``x [B, N, d]`` (its own features as the similarity metric).
    Returns ``(merged [B, N-r, d], size [B, N-r])``."""
    check_arguments("tome_merge", {"r": Int(low=0, high=(x.shape[1] + 1) // 2)}, {"r": r})
    if size is None:
        size = x.new_ones(x.shape[:2])
    out, new_size, _ = bipartite_merge(x, x, size, r)
    return out, new_size


def tome_schedule(n_tokens: int, target: int, n_blocks: int) -> list[int]:
    """Tokens to merge after each ViT block to go from ``n_tokens`` to ``target`` (front-loaded, each step at
    most half the tokens)."""
    _budget("tome_schedule", {"target": (target, n_tokens)})
    todo, n, rs = n_tokens - target, n_tokens, []
    for i in range(n_blocks):
        r = min(-(-todo // (n_blocks - i)), (n + 1) // 2)
        rs.append(r)
        todo, n = todo - r, n - r
    if todo:
        raise ValueError(f"tome_schedule: cannot reach {target} tokens from {n_tokens} in {n_blocks} ToMe steps")
    return rs


@validate(hidden=TensorC("B T D", dtype="float"), attn_from_query=TensorC("B T", dtype="float"), keep=Int(low=1))
def fastv_prune(hidden: Tensor, attn_from_query: Tensor, keep: int) -> Tensor:
    """FastV: keep the ``keep`` visual tokens of ``hidden [B, T, d]`` with the highest attention
    ``attn_from_query [B, T]`` from the last text token, in their original order → ``[B, keep, d]``."""
    _budget("fastv_prune", {"keep": (keep, hidden.shape[1])})
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


@validate(visual=TensorC("B T D", dtype="float"), text=TensorC("B Q E", dtype="float"),
          attn=TensorC("B Q T", dtype="float"), keep=Int(low=1), recycle=Int(low=0))
def sparsevlm_prune(visual: Tensor, text: Tensor, attn: Tensor, keep: int, recycle: int = 0) -> Tensor:
    """SparseVLM: the text tokens rate the visual tokens, ``score_t = mean_q attn[:, q, t]``; keep the
    ``keep`` best (order preserved) and recycle the pruned ones into ``recycle`` merged tokens (centres: the
    best-rated pruned tokens). ``visual [B, T, d]``, ``text [B, Q, d]``, ``attn [B, Q, T]`` →
    ``[B, keep + recycle, d]``."""
    t = visual.shape[1]
    check_arguments("sparsevlm_prune", {"keep": Int(low=1, high=t), "recycle": Int(low=0, high=t - keep)},
                    {"keep": keep, "recycle": recycle})
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


@validate(tokens=TensorC("B T D", dtype="float"), cls_attn=TensorC("B T", dtype="float"), n_dominant=Int(low=1),
          n_contextual=Int(low=0))
def visionzip_compress(tokens: Tensor, cls_attn: Tensor, n_dominant: int, n_contextual: int) -> Tensor:
    """VisionZip: the ``n_dominant`` tokens with the most attention mass ``cls_attn [B, T]`` (raster order),
    then ``n_contextual`` tokens merging the rest by similarity to evenly spaced centres among them.
    ``tokens [B, T, d]`` → ``[B, n_dominant + n_contextual, d]``."""
    t = tokens.shape[1]
    check_arguments("visionzip_compress",
                    {"n_dominant": Int(low=1, high=t), "n_contextual": Int(low=0, high=t - n_dominant)},
                    {"n_dominant": n_dominant, "n_contextual": n_contextual})
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


# ------------------------------------------------------------------------------------ methods on the model
_MODEL = Instance(MiniGroundingMLLM, "MiniGroundingMLLM")


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


@validate(smartres=Instance(SmartRes, "SmartRes"))
def run_smartres(smartres: SmartRes, images: Tensor, query: Tensor) -> MethodOutput:
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


@validate(model=_MODEL, images=IMAGES, query=QUERY, keep=Int(low=1), layer=Int(low=0), scoring=Choice(*SCORINGS))
def run_fastv(model: MiniGroundingMLLM, images: Tensor, query: Tensor, keep: int = 96, layer: int = 1,
              scoring: str = "rows") -> MethodOutput:
    """FastV at LM block ``layer`` (all tokens before it); ``scoring``: ``"rows"`` (the last text token's
    attention row only) or ``"full"`` (the whole matrix recomputed; the reference)."""
    check_arguments("run_fastv", {"keep": Int(low=1, high=model.config.full_grid ** 2),
                                  "layer": Int(low=0, high=model.config.lm_blocks - 1)}, {"keep": keep, "layer": layer})
    seq = model.encode_full(images)
    boxes = decode_boxes(*model.lm(seq, query, reduce=(layer, _lm_hook("fastv", keep, scoring=scoring))))
    b, t = seq.tokens.shape[:2]
    return MethodOutput(boxes, seq.n_vit_tokens, b * keep, b * t if layer > 0 else b * keep)


@validate(model=_MODEL, images=IMAGES, query=QUERY, keep=Int(low=1), recycle=Int(low=0), layer=Int(low=0),
          scoring=Choice(*SCORINGS))
def run_sparsevlm(model: MiniGroundingMLLM, images: Tensor, query: Tensor, keep: int = 88, recycle: int = 8,
                  layer: int = 1, scoring: str = "rows") -> MethodOutput:
    """SparseVLM at LM block ``layer``: the text tokens' attention rows rate the visual tokens; keep ``keep``,
    recycle the pruned ones into ``recycle`` merged tokens. ``scoring`` as in :func:`run_fastv`."""
    check_arguments("run_sparsevlm", {"keep + recycle": Int(low=1, high=model.config.full_grid ** 2),
                                      "layer": Int(low=0, high=model.config.lm_blocks - 1)},
                    {"keep + recycle": keep + recycle, "layer": layer})
    seq = model.encode_full(images)
    boxes = decode_boxes(*model.lm(seq, query, reduce=(layer, _lm_hook("sparsevlm", keep, recycle, scoring))))
    b, t = seq.tokens.shape[:2]
    return MethodOutput(boxes, seq.n_vit_tokens, b * (keep + recycle), b * t if layer > 0 else b * (keep + recycle))


@validate(model=_MODEL, images=IMAGES, query=QUERY, n_dominant=Int(low=1), n_contextual=Int(low=0))
def run_visionzip(model: MiniGroundingMLLM, images: Tensor, query: Tensor, n_dominant: int = 80,
                  n_contextual: int = 16) -> MethodOutput:
    """VisionZip after the ViT: attention mass received in the last ViT block (recomputed), mean over heads
    and queries."""
    _budget("run_visionzip", {"n_dominant + n_contextual": (n_dominant + n_contextual, model.config.full_grid ** 2)})
    x, meta = model.full_inputs(images)
    b, t = x.shape[:2]
    tokens, _, _, attn = model.vit(x, return_last_attn=True)
    mass = attn.mean(dim=(1, 2))                                                      # [B, T]
    dom, ctx = _visionzip_index(mass, n_dominant, n_contextual)
    meta_b = meta.expand(b, -1, -1)
    toks = torch.cat([_gather(tokens, dom), ctx(tokens)], 1)
    m2 = torch.cat([_gather(meta_b, dom), ctx(meta_b)], 1)
    seq = single_view_sequence(toks, m2, SCALE_FULL, n_vit=b * t)
    return MethodOutput(model.ground(seq, query), b * t, toks.shape[0] * toks.shape[1], toks.shape[1] * b)


@validate(model=_MODEL, images=IMAGES, query=QUERY)
def run_tome(model: MiniGroundingMLLM, images: Tensor, query: Tensor, target: int = 96,
             metric: str = "keys") -> MethodOutput:
    """ToMe inside the ViT down to ``target`` tokens (positions and footprints merged alongside); ``metric``:
    match on the keys (the paper) or on the token features."""
    rs = tome_schedule(model.config.full_grid ** 2, target, model.config.vit_blocks)
    x, meta = model.full_inputs(images)
    b, t = x.shape[:2]
    tokens, meta2, _, _ = model.vit(x, tome_r=rs, extra=meta.expand(b, -1, -1).clone(), tome_metric=metric)
    seq = single_view_sequence(tokens, meta2, SCALE_FULL, n_vit=b * t)
    return MethodOutput(model.ground(seq, query), b * t, b * target, b * target)


def low_confidence(model: MiniGroundingMLLM, images: Tensor, query: Tensor) -> Tensor:
    """The global selector's score: max softmax objectness of the low view ``[B]`` (low = unsure)."""
    obj, _, _, _ = model.lm(model.low_sequence(images), query)
    return obj.softmax(1).amax(1)


@validate(model=_MODEL, images=IMAGES, query=QUERY, threshold=Real())
def run_global_selector(model: MiniGroundingMLLM, images: Tensor, query: Tensor, threshold: float) -> MethodOutput:
    """One resolution per image: full resolution where the low-view confidence is below ``threshold`` (a finite
    number; confidences lie in (0, 1], so ``threshold > 1`` sends every image to full resolution)."""
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
