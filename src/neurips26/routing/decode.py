r"""Greedy construction with any policy that has ``encode`` and ``score`` (decoder-only or POMO-style).

Batched over instances: every instance has the same number of unvisited nodes at step $t$ ($n - t$),
so the unvisited indices form a dense ``[B, n - t]`` tensor (row-major ``nonzero`` of the mask, in
increasing node order) and no Python loop runs over the batch. Step $t$ picks
$\pi_t = \arg\max_{r \in R_t} s_r$; the final node (one choice left) needs no model call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..constraints import ArrayLike, Bool, Choice, Int, check_arguments, validate
from ._checks import Policy
from .tsp import ROUNDINGS, as_instances, tour_length

__all__ = ["greedy_construct", "multi_start_construct"]


def _model_dtype_device(model: torch.nn.Module) -> tuple[torch.dtype, torch.device]:
    p = next(model.parameters(), None)
    return (p.dtype, p.device) if p is not None else (torch.float32, torch.device("cpu"))


def _rollout(model: torch.nn.Module, Xt: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """Greedy tours ``[B, n]`` (on ``Xt``'s device) for coordinates ``Xt`` ``[B, n, 2]``, row b starting at
    node ``start[b]``; the model is in eval mode for the call and restored afterwards."""
    B, n, _ = Xt.shape
    device = Xt.device
    was_training = model.training
    model.eval()
    try:
        emb = model.encode(Xt)  # [B, n, d], once per instance
        rows = torch.arange(B, device=device)
        visited = torch.zeros(B, n, dtype=torch.bool, device=device)
        tours = torch.empty(B, n, dtype=torch.int64, device=device)
        first = start
        visited[rows, first] = True
        tours[:, 0] = first
        last = first
        for t in range(1, n):
            remaining = (~visited).nonzero()[:, 1].view(B, n - t)  # [B, n - t], increasing node order
            if n - t == 1:
                nxt = remaining[:, 0]
            else:
                logits = model.score(emb, first, last, remaining)  # [B, n - t]
                nxt = remaining.gather(1, logits.argmax(dim=1, keepdim=True)).squeeze(1)
            tours[:, t] = nxt
            visited[rows, nxt] = True
            last = nxt
    finally:
        model.train(was_training)
    return tours


@torch.no_grad()
@validate(model=Policy(), start=Int(low=0), rounding=Choice(*ROUNDINGS))
def greedy_construct(model: torch.nn.Module, X: Any, start: int = 0, *,
                     rounding: str = "none") -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy tours for ``X`` ``[B, n, 2]``: (int64 tours ``[B, n]`` beginning at ``start``, lengths ``[B]``).

    ``model`` needs ``encode(X) -> [B, n, d]`` and ``score(emb, first, last, remaining) -> [B, m]``
    (:class:`TSPDecoderOnly`, :class:`POMOLightDecoder`). Lengths come from :func:`tour_length` with
    ``rounding``. The model is put in eval mode for the call and restored afterwards.
    """
    Xn = as_instances(X)
    B, n, _ = Xn.shape
    check_arguments("greedy_construct", {"start": Int(0, n - 1)}, {"start": start})  # a node of X
    dtype, device = _model_dtype_device(model)
    Xt = torch.as_tensor(Xn, dtype=dtype, device=device)
    tours = _rollout(model, Xt, torch.full((B,), int(start), dtype=torch.int64, device=device))
    lengths = tour_length(Xt.cpu(), tours.cpu(), rounding=rounding)
    return tours.cpu(), lengths


@torch.no_grad()
@validate(model=Policy(), augment=Bool(), rounding=Choice(*ROUNDINGS), max_batch=Int(low=1))
def multi_start_construct(model: torch.nn.Module, X: Any, starts: Any = None, *, augment: bool = False,
                          rounding: str = "none", max_batch: int = 8192) -> tuple[torch.Tensor, torch.Tensor]:
    """POMO-style inference: greedy tours from several start nodes (and, with ``augment``, on the 8 symmetric
    images of each instance, :func:`~neurips26.routing.augment_x8`); the shortest per instance is kept.

    Args:
        X: ``[B, n, 2]``. starts: node indices to start from (default: every node, ``n`` rollouts).
        augment: also decode each symmetric image (``8 x len(starts)`` rollouts); an image is an isometry,
            so its tours are tours of the original instance and are measured on the original coordinates.
        max_batch: rollouts decoded in one batch (all rollouts of all instances are batched together).
    Returns:
        (int64 tours ``[B, n]``, lengths ``[B]``): per instance the best rollout (ties: the first start, the
        first image), its length from :func:`tour_length` on ``X``. Equals the minimum over single
        :func:`greedy_construct` calls, which is what it computes, batched over instances.
    """
    Xn = as_instances(X)
    B, n, _ = Xn.shape
    # validated here, before any rollout, so a bad index fails before the work
    starts = range(n) if starts is None else starts
    if hasattr(starts, "__iter__") and not isinstance(starts, str | bytes):
        starts = list(starts)  # sequences, ranges, arrays, generators
    check_arguments("multi_start_construct", {"starts": ArrayLike(ndim=1, dtype="integer")}, {"starts": starts})
    if not starts or min(starts) < 0 or max(starts) >= n:
        raise ValueError(f"multi_start_construct: starts must be a non-empty sequence of node indices in "
                         f"[0, {n - 1}], got {starts!r}")
    from .tsp import augment_x8

    images = augment_x8(Xn) if augment else Xn[None]  # [I, B, n, 2]
    n_img, S = len(images), len(starts)
    # every rollout (image i, start s, instance b) is one row, image-major then start: R = I * S * B rows,
    # decoded in chunks of at most ``max_batch`` rows; ties keep the first row (first image, first start)
    rows_X = np.repeat(images[:, None], S, axis=1).reshape(n_img * S * B, n, 2)
    row_start = np.repeat(np.asarray(starts, dtype=np.int64)[None, :, None], B, axis=2).repeat(n_img, 0).reshape(-1)
    dtype, device = _model_dtype_device(model)
    chunk = max(1, int(max_batch))
    tours = torch.cat([_rollout(model, torch.as_tensor(rows_X[i:i + chunk], dtype=dtype, device=device),
                                torch.as_tensor(row_start[i:i + chunk], device=device)).cpu()
                       for i in range(0, len(rows_X), chunk)]).view(n_img * S, B, n)
    lengths = torch.stack([torch.as_tensor(tour_length(Xn, t.numpy(), rounding=rounding)) for t in tours])
    best = lengths.argmin(dim=0)  # [B], the first minimum
    cols = torch.arange(B)
    return tours[best, cols], lengths[best, cols]
