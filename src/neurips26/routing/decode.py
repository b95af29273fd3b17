r"""Greedy construction with any policy that has ``encode`` and ``score`` (decoder-only or POMO-style).

Batched over instances: every instance has the same number of unvisited nodes at step $t$ ($n - t$),
so the unvisited indices form a dense ``[B, n - t]`` tensor (row-major ``nonzero`` of the mask, in
increasing node order) and no Python loop runs over the batch. Step $t$ picks
$\pi_t = \arg\max_{r \in R_t} s_r$; the final node (one choice left) needs no model call.
"""

from __future__ import annotations

from typing import Any

import torch

from .tsp import _check_rounding, as_instances, tour_length

__all__ = ["greedy_construct"]


def _model_dtype_device(model: torch.nn.Module) -> tuple[torch.dtype, torch.device]:
    p = next(model.parameters(), None)
    return (p.dtype, p.device) if p is not None else (torch.float32, torch.device("cpu"))


@torch.no_grad()
def greedy_construct(model: torch.nn.Module, X: Any, start: int = 0, *,
                     rounding: str = "none") -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy tours for ``X`` ``[B, n, 2]``: (int64 tours ``[B, n]`` beginning at ``start``, lengths ``[B]``).

    ``model`` needs ``encode(X) -> [B, n, d]`` and ``score(emb, first, last, remaining) -> [B, m]``
    (:class:`TSPDecoderOnly`, :class:`POMOLightDecoder`). Lengths come from :func:`tour_length` with
    ``rounding``. The model is put in eval mode for the call and restored afterwards.
    """
    if not (hasattr(model, "encode") and hasattr(model, "score")):
        raise TypeError(f"model must have encode() and score() (a routing policy), got {type(model).__name__}")
    Xn = as_instances(X)
    B, n, _ = Xn.shape
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < n:
        raise ValueError(f"start must be an integer node index in [0, {n - 1}], got {start!r}")
    _check_rounding(rounding)
    dtype, device = _model_dtype_device(model)
    Xt = torch.as_tensor(Xn, dtype=dtype, device=device)
    was_training = model.training
    model.eval()
    try:
        emb = model.encode(Xt)  # [B, n, d], once per instance
        rows = torch.arange(B, device=device)
        visited = torch.zeros(B, n, dtype=torch.bool, device=device)
        tours = torch.empty(B, n, dtype=torch.int64, device=device)
        first = torch.full((B,), start, dtype=torch.int64, device=device)
        visited[:, start] = True
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
    lengths = tour_length(Xt.cpu(), tours.cpu(), rounding=rounding)
    return tours.cpu(), lengths
