"""Token merging shared by the ViT (ToMe inside the encoder, :class:`~.model.ViT`) and the baselines
(:mod:`.baselines`): one home that both import, so neither imports the other for it."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from neurips26.constraints import Int, Optional, validate
from neurips26.constraints import Tensor as TensorC

__all__ = ["bipartite_merge", "gather_tokens"]


def gather_tokens(x: Tensor, idx: Tensor) -> Tensor:
    """The tokens ``idx [B, k]`` of ``x [B, T, e]`` → ``[B, k, e]``."""
    return x.gather(1, idx[..., None].expand(-1, -1, x.shape[-1]))


@validate(x=TensorC("B N D", dtype="float"), metric=TensorC("B N C", dtype="float"), size=TensorC("B N", dtype="float"),
          r=Int(low=0), extra=Optional(TensorC("B N E", dtype="float")))
def bipartite_merge(metric: Tensor, x: Tensor, size: Tensor, r: int,
                    extra: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
    r"""One ToMe step on ``x [B, N, d]`` with token sizes ``size [B, N]`` (positive).

    Split tokens alternately into A (even) and B (odd); each A token's best match in B by cosine similarity
    of ``metric [B, N, c]``; the r A tokens with the most similar matches are merged into their B partners
    by the size-weighted mean $x_b \leftarrow (s_b x_b + \sum s_a x_a)/(s_b + \sum s_a)$. ``extra [B, N, e]``
    is merged the same way. Returns ``(x [B, N-r, d], size [B, N-r], extra)``; $\sum s\,x$ and $\sum s$
    are preserved.
    """
    if not bool((size > 0).all()):
        raise ValueError(f"bipartite_merge: size must be positive, got a minimum of {float(size.min())}")
    b, n, d = x.shape
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
        tb.scatter_add_(1, dst[..., None].expand(-1, -1, t.shape[-1]), gather_tokens(ta, src))
        return torch.cat([gather_tokens(ta, unm), tb], dim=1)

    new_size = merge(size.new_ones(b, n, 1))[..., 0]
    out = merge(x) / new_size[..., None]
    new_extra = None if extra is None else merge(extra) / new_size[..., None]
    # the size after merging: Σ s over members (merge() multiplied ones by size)
    return out, new_size, new_extra
