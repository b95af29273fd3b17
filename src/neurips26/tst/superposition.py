"""The three pieces of the superposition phase: fold a row into bags, average their embeddings, and
score the next bag with a multi-hot cross-entropy.

Notation: a row of raw tokens $x_0 \\dots x_{s(L+1)-1}$, bag size $s$, model context $L$ positions,
vocabulary $V$, input embedding matrix $E \\in \\mathbb{R}^{V \\times D}$.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import AnyOf, Choice, Instance, Int, Tensor, check_arguments, validate

TOKEN_IDS = (torch.int64, torch.int32)  # the integer dtypes token ids may come in
_FINITE_LOGITS = {"logits": Tensor(finite=True)}


@validate(s=Int(low=1), ids=Tensor("B N", dtype=TOKEN_IDS))
def fold_bags(ids: torch.Tensor, s: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Fold raw token rows into non-overlapping contiguous bags; return (input bags, target bags).

    $b_j = (x_{js}, \\dots, x_{js+s-1})$ for $j = 0 \\dots L$; position $j$ reads bag $b_j$ and predicts
    the next bag $b_{j+1}$.

    Args:
        ids: int64 ``[B, s·(L+1)]`` raw token ids (the row length must be a multiple of ``s`` and hold
            at least two bags).
        s: bag size (tokens per bag), >= 1. ``s = 1`` is ordinary next-token data.

    Returns:
        ``inputs [B, L, s]`` (bags 0..L-1) and ``targets [B, L, s]`` (bags 1..L), views of ``ids``.
    """
    b, n = ids.shape
    if n < 2 * s:
        raise ValueError(f"ids rows of length {n} are shorter than two bags of s={s} (one input bag and "
                         f"one target bag); need a row length s*(L+1) >= {2 * s}")
    if n % s:
        raise ValueError(f"bag size s={s} must divide the row length {n} (rows are s*(L+1) tokens); "
                         f"drop the tail of {n % s} tokens instead of padding")
    bags = ids.view(b, n // s, s)  # [B, L+1, s]
    return bags[:, :-1], bags[:, 1:]


@validate(embedding=AnyOf(Instance(nn.Embedding, "nn.Embedding"), Tensor("V D", finite=False)),
          bag_ids=Tensor("B L S", dtype=TOKEN_IDS))
def superpose_embeddings(bag_ids: torch.Tensor, embedding: nn.Embedding | torch.Tensor) -> torch.Tensor:
    r"""Mean input embedding of each bag: $h^0_j = \frac{1}{s}\sum_{k<s} E[x_{js+k}]$ (no new parameters).

    Args:
        bag_ids: int64 ``[B, L, s]``.
        embedding: the model's input ``nn.Embedding`` (or its weight ``[V, D]``).

    Returns:
        ``[B, L, D]`` in the embedding's dtype; gradients flow to every token's row (each gets $1/s$).
    """
    weight = embedding.weight if isinstance(embedding, nn.Embedding) else embedding
    if bag_ids.numel() and (int(bag_ids.min()) < 0 or int(bag_ids.max()) >= weight.shape[0]):
        raise ValueError(f"bag_ids must lie in [0, vocab_size={weight.shape[0]}), got ids in "
                         f"[{int(bag_ids.min())}, {int(bag_ids.max())}]")
    # Gather [B, L, s, D] then average over the bag axis. F.embedding keeps padding_idx/sparse semantics
    # of a plain lookup; for s·L·D that fits in memory this is as fast as an EmbeddingBag(mode="mean").
    if isinstance(embedding, nn.Embedding):
        vectors = embedding(bag_ids)
    else:
        vectors = F.embedding(bag_ids, weight)
    return vectors.mean(dim=2)


@validate(reduction=Choice("mean", "sum", "none"), logits=Tensor("B L V", dtype="float", finite=False),
          targets=Tensor("B L S", dtype=TOKEN_IDS))
def multi_hot_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, *, ignore_index: int = -100,
                            reduction: str = "mean") -> torch.Tensor:
    r"""Multi-hot cross-entropy of the next bag (MCE): one log-softmax, ``s`` gathers.

    With target distribution $q_j = \frac{1}{s}\sum_k \mathbb{1}[x_{(j+1)s+k}]$ (a token repeated in a bag
    gets $2/s$),

    $$\mathcal{L}_\mathrm{MCE} = -\frac{1}{L s}\sum_j \sum_k \log\mathrm{softmax}(z_j)[x_{(j+1)s+k}]
      = \frac{1}{Ls}\sum_j\sum_k \big(\mathrm{LSE}(z_j) - z_{j,\,x_{(j+1)s+k}}\big),$$

    i.e. the mean of ``s`` ordinary cross-entropies on the same logits, and also the cross-entropy against
    $q_j$. The log-softmax (with its log-partition $\mathrm{LSE}(z_j)$) is computed once per position (the
    costly ``[B, L, V]`` pass); each of the ``s`` targets costs one gather. Calling a fused CE ``s`` times
    instead (PatchTrain's form) repeats that pass ``s`` times.

    Args:
        logits: ``[B, L, V]``, finite (any float dtype; the loss is computed in ``promote(float32, dtype)``:
            float32, or float64 for float64 logits).
        targets: int64 ``[B, L, s]``; entries equal to ``ignore_index`` are skipped.
        ignore_index: target value to skip.
        reduction: ``"mean"`` (over all non-ignored (position, k) pairs; nats/token),
            ``"sum"``, or ``"none"`` (``[B, L, s]``, zero where ignored).
    """
    vocab = logits.shape[-1]
    valid = targets != ignore_index
    if ((targets[valid] < 0) | (targets[valid] >= vocab)).any():
        raise ValueError(f"targets must lie in [0, {vocab}) or equal ignore_index={ignore_index}")
    # log softmax(z_j) = z_j - LSE(z_j): one fused pass over [B, L, V] (in float32), shared by all s targets.
    # (A separate logsumexp + gather on the logits is mathematically the same but slower on CPU.)
    if not torch.compiler.is_compiling():  # finiteness: one reduction, not while tracing for torch.compile
        check_arguments("multi_hot_cross_entropy", _FINITE_LOGITS, {"logits": logits})
    # computed in promote(float32, logits.dtype): fp32 for fp16/bf16/fp32 logits, fp64 for fp64 (gradcheck)
    log_probs = torch.log_softmax(logits.to(torch.promote_types(torch.float32, logits.dtype)), dim=-1)
    # s gathers in one call: [B, L, s] (ignored entries read index 0, then are masked out).
    picked = log_probs.gather(-1, torch.where(valid, targets, torch.zeros_like(targets)).long())
    nll = -picked * valid  # -log softmax at each target, 0 where ignored
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    count = valid.sum()
    if count == 0:
        raise ValueError("every target equals ignore_index: the mean over zero targets is undefined")
    return nll.sum() / count


def multi_hot_cross_entropy_reference(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    r"""Plain dense reference (no ignore_index): $-\frac{1}{BL}\sum_{b,j} \sum_v q_{b,j,v}\log\mathrm{softmax}
    (z_{b,j})_v$ with the multi-hot target $q$ built by scatter-add of $1/s$ (repeats accumulate)."""
    s = targets.shape[-1]
    q = torch.zeros_like(logits, dtype=torch.float32)
    q.scatter_add_(-1, targets.long(), torch.full(targets.shape, 1.0 / s, device=logits.device))
    return -(q * torch.log_softmax(logits.float(), dim=-1)).sum(-1).mean()
