"""The resolution router, its margin-regularised objective, and region selection.

The router scores each of the gh×gw regions of the full-resolution image from the *low-resolution*
tokens only, so the decision costs one small MLP and no attention (inferred form, spec §3):

$$\\ell_j = \\mathrm{MLP}\\big([\\,\\bar f_j;\\; e_q;\\; \\bar f_j \\odot W e_q\\,]\\big),\\qquad
  \\bar f_j = \\tfrac{1}{|R_j|}\\sum_{t \\in R_j} F_L[t]$$

where $R_j$ are the low-resolution tokens inside region j and $e_q$ the query embedding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.constraints import AnyOf, Choice, Int, Optional, Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorC

from ._checks import GRID, Mask, as_bool, check_k_range, tensor


def pool_regions(tokens: Tensor, grid: tuple[int, int], region_grid: tuple[int, int]) -> Tensor:
    """Mean of the raster-ordered ``tokens [B, h·w, d]`` inside each region: ``[B, gh·gw, d]`` (raster order).

    Needs ``h % gh == 0`` and ``w % gw == 0`` (each region covers a whole block of tokens)."""
    check_arguments("pool_regions", {"low_grid": GRID, "region_grid": GRID},
                    {"low_grid": grid, "region_grid": region_grid})
    (h, w), (gh, gw) = (int(g) for g in grid), (int(g) for g in region_grid)
    b, n, d = tokens.shape
    if n != h * w:
        raise ValueError(f"pool_regions: low_tokens has {n} tokens but low_grid {grid} needs {h * w}")
    if h % gh or w % gw:
        raise ValueError(f"pool_regions: region_grid {region_grid} must divide low_grid {grid}")
    x = tokens.reshape(b, gh, h // gh, gw, w // gw, d)
    return x.mean(dim=(2, 4)).reshape(b, gh * gw, d)


class ResolutionRouter(nn.Module):
    """Attention-free region scorer.

    Args:
        feat_dim: width d of the low-resolution tokens.
        query_dim: width of the query embedding e_q.
        hidden: width of the MLP.
    """

    @validate(feat_dim=Int(low=1), query_dim=Int(low=1), hidden=Int(low=1))
    def __init__(self, feat_dim: int, query_dim: int, hidden: int = 128) -> None:
        super().__init__()
        self.feat_dim, self.query_dim = feat_dim, query_dim
        self.norm = nn.LayerNorm(feat_dim)
        self.query_proj = nn.Linear(query_dim, feat_dim)                            # W
        self.mlp = nn.Sequential(nn.Linear(2 * feat_dim + query_dim, hidden), nn.GELU(),
                                 nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def forward(self, low_tokens: Tensor, low_grid: tuple[int, int], query_emb: Tensor,
                region_grid: tuple[int, int]) -> Tensor:
        """``low_tokens [B, h·w, feat_dim]`` (raster), ``query_emb [B, query_dim]`` → logits ``[B, gh·gw]``."""
        check_arguments("ResolutionRouter.forward",
                        {"low_tokens": tensor(f"B T {self.feat_dim}"), "query_emb": tensor(f"B {self.query_dim}")},
                        {"low_tokens": low_tokens, "query_emb": query_emb})
        pooled = self.norm(pool_regions(low_tokens, low_grid, region_grid))        # \bar f_j: [B, R, d]
        eq = query_emb[:, None, :].expand(-1, pooled.shape[1], -1)                 # e_q:      [B, R, q]
        inter = pooled * self.query_proj(query_emb)[:, None, :]                    # \bar f_j ⊙ W e_q
        return self.mlp(torch.cat([pooled, eq, inter], dim=-1)).squeeze(-1)        # ℓ: [B, R]


def _check_loss_inputs(logits: Tensor, fg_mask: Tensor) -> tuple[Tensor, Tensor]:
    """``fg_mask`` as bool; every image needs a positive and a negative region (the shapes are declared)."""
    fg = as_bool(fg_mask)
    n_pos = fg.sum(1)
    if bool((n_pos == 0).any()):
        raise ValueError(f"fg_mask: image {int((n_pos == 0).nonzero()[0, 0])} has no positive region")
    if bool((n_pos == fg.shape[1]).any()):
        raise ValueError(f"fg_mask: image {int((n_pos == fg.shape[1]).nonzero()[0, 0])} has no negative region")
    return logits, fg


def _pos_weight(fg: Tensor, pos_weight: float | str) -> Tensor:
    """Per-image positive weight ``[B, 1]``: $n_{neg}/n_{pos}$ for ``"auto"``, else the given float."""
    if isinstance(pos_weight, str):                                                # "auto" (declared by the callers)
        n_pos = fg.sum(1, keepdim=True).float()
        return (fg.shape[1] - n_pos) / n_pos
    return torch.full((fg.shape[0], 1), float(pos_weight))


@validate(logits=TensorC("B R", dtype="float"), fg_mask=Mask("B R"),
          pos_weight=AnyOf(Choice("auto"), Real(low=0.0, closed="neither")))
def bce_routing_loss(logits: Tensor, fg_mask: Tensor, pos_weight: float | str = "auto") -> Tensor:
    r"""Weighted BCE-with-logits, mean over regions, then over images (the plain-BCE ablation):

    $\mathcal L_{BCE} = -\tfrac1R\sum_j \big[w_+ y_j \log\sigma(\ell_j) + (1-y_j)\log(1-\sigma(\ell_j))\big]$.
    """
    logits, fg = _check_loss_inputs(logits, fg_mask)
    return _bce(logits, fg, _pos_weight(fg, pos_weight)).mean()


def _bce(logits: Tensor, fg: Tensor, w: Tensor) -> Tensor:
    y = fg.to(logits.dtype)
    # -[w y log σ(ℓ) + (1-y) log(1-σ(ℓ))], with log σ(ℓ) = -softplus(-ℓ), log(1-σ(ℓ)) = -softplus(ℓ)
    per = w.to(logits.dtype) * y * F.softplus(-logits) + (1 - y) * F.softplus(logits)
    return per.mean(1)                                                              # [B]


@validate(logits=TensorC("B R", dtype="float"), fg_mask=Mask("B R"), gamma=Real(low=0.0), alpha=Real(0.0, 1.0))
def focal_routing_loss(logits: Tensor, fg_mask: Tensor, gamma: float = 2.0, alpha: float = 0.75) -> Tensor:
    r"""Focal loss (ablation): $-\alpha_t (1-p_t)^\gamma \log p_t$, mean over regions and images."""
    logits, fg = _check_loss_inputs(logits, fg_mask)
    y = fg.to(logits.dtype)
    p = torch.sigmoid(logits)
    p_t = y * p + (1 - y) * (1 - p)
    a_t = y * alpha + (1 - y) * (1 - alpha)
    ce = F.binary_cross_entropy_with_logits(logits, y, reduction="none")
    return (a_t * (1 - p_t) ** gamma * ce).mean()


@validate(logits=TensorC("B R", dtype="float"), fg_mask=Mask("B R"), margin=Real(low=0.0), lam=Real(low=0.0),
          hard_negatives=Int(low=1), pos_weight=AnyOf(Choice("auto"), Real(low=0.0, closed="neither")))
def margin_routing_loss(logits: Tensor, fg_mask: Tensor, margin: float = 2.0, lam: float = 1.0,
                        hard_negatives: int = 4, pos_weight: float | str = "auto") -> Tensor:
    r"""Margin-regularised routing loss (form inferred from the abstract; spec §"Router objective").

    Per image $b$ with positives $P$ and the $k = \min(h, |N|)$ highest-scored negatives $N_k$:

    $$\mathcal L_b = \mathrm{BCE}_b(\ell, y; w_+) + \lambda\,\frac{1}{|P|\,k}\sum_{p\in P}\sum_{n\in N_k}
       \big[m - (\ell_p - \ell_n)\big]_+$$

    and the loss is the mean of $\mathcal L_b$ over images. ``logits [B, R]``, ``fg_mask [B, R]`` (bool or
    0/1; every image needs a positive and a negative region). Returns a scalar.
    """
    logits, fg = _check_loss_inputs(logits, fg_mask)
    margin, lam, hard_negatives = float(margin), float(lam), int(hard_negatives)
    w = _pos_weight(fg, pos_weight)
    bce = _bce(logits, fg, w)                                                       # [B]
    b, r = logits.shape
    # hard negatives: the k highest logits among negatives (positives pushed to -inf before top-k)
    k = min(hard_negatives, r)
    neg_scores = logits.detach().masked_fill(fg, float("-inf"))
    top = neg_scores.topk(k, dim=1).indices                                         # [B, k]
    n_neg = (~fg).sum(1)                                                            # [B]
    k_b = n_neg.clamp(max=hard_negatives)                                           # min(h, |N|)
    valid = torch.arange(k)[None, :] < k_b[:, None]                                 # [B, k]
    l_n = logits.gather(1, top)                                                     # ℓ_n: [B, k]
    # [m - (ℓ_p - ℓ_n)]_+ for every (region p, hard negative n): [B, R, k]
    hinge = F.relu(margin - (logits[:, :, None] - l_n[:, None, :]))
    pair = fg[:, :, None] & valid[:, None, :]
    n_pairs = fg.sum(1) * k_b                                                       # |P| k
    margin_term = (hinge * pair).sum((1, 2)) / n_pairs
    return (bce + lam * margin_term).mean()


@validate(logits=TensorC("B R", dtype="float"), threshold=Real(0.0, 1.0, closed="neither"), k_min=Int(low=0),
          k_max=Optional(Int(low=1)))
def select_regions(logits: Tensor, threshold: float = 0.5, k_min: int = 1, k_max: int | None = None) -> list[Tensor]:
    r"""Active regions per image: $A = \{j : \sigma(\ell_j) > \tau\}$, topped up to ``k_min`` and capped at
    ``k_max`` by highest logit. ``logits [B, R]`` → a list of B sorted LongTensors (raster order).

    Since $\sigma$ is monotone, $A$ is a prefix of the regions sorted by logit, so the rule is: take the
    $\mathrm{clip}(|A|, k_{min}, k_{max})$ highest-logit regions.
    """
    check_k_range("select_regions", k_min, k_max, logits.shape[1])
    out = []
    n_pass = (torch.sigmoid(logits) > threshold).sum(1)
    order = logits.argsort(dim=1, descending=True, stable=True)
    for i in range(logits.shape[0]):
        n = max(int(n_pass[i]), k_min)
        if k_max is not None:
            n = min(n, k_max)
        out.append(order[i, :n].sort().values)
    return out

