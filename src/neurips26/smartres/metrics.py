"""Grounding metrics: box IoU, Acc@IoU and router foreground recall@k.

Boxes are ``[x1, y1, x2, y2]`` in full-resolution pixels (continuous coordinates: a box covering pixel
columns 3..7 is ``x1 = 3, x2 = 8``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from neurips26.constraints import Int, Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorC

from ._checks import Boxes, Mask, as_bool


@validate(a=Boxes("N 4"), b=Boxes("M 4"))
def box_iou(a: Tensor, b: Tensor) -> Tensor:
    r"""Pairwise IoU of ``a: [N, 4]`` and ``b: [M, 4]`` → ``[N, M]``.

    $\mathrm{IoU}(a, b) = |a \cap b| / (|a| + |b| - |a \cap b|)$; boxes of zero area against each other give 0.
    """
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])                      # [N]
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])                      # [M]
    # intersection rectangle, clamped at zero width/height: [N, M, 2]
    lo = torch.maximum(a[:, None, :2], b[None, :, :2])
    hi = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = (hi - lo).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area_a[:, None] + area_b[None, :] - inter
    return torch.where(union > 0, inter / union.clamp(min=1e-12), torch.zeros_like(inter))


@validate(pred=Boxes("N 4"), gt=Boxes("N 4"))
def paired_iou(pred: Tensor, gt: Tensor) -> Tensor:
    """IoU of ``pred[i]`` with ``gt[i]``: ``[N, 4], [N, 4] → [N]``."""
    lo = torch.maximum(pred[:, :2], gt[:, :2])
    hi = torch.minimum(pred[:, 2:], gt[:, 2:])
    wh = (hi - lo).clamp(min=0)
    inter = wh[:, 0] * wh[:, 1]
    union = ((pred[:, 2] - pred[:, 0]) * (pred[:, 3] - pred[:, 1])
             + (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1]) - inter)
    return torch.where(union > 0, inter / union.clamp(min=1e-12), torch.zeros_like(inter))


@validate(pred=Boxes("N 4"), gt=Boxes("N 4"), thresh=Real(0.0, 1.0, closed="right"))
def grounding_accuracy(pred: Tensor, gt: Tensor, thresh: float = 0.5) -> float:
    r"""Acc@thresh: the share of queries whose predicted box has $\mathrm{IoU} \ge$ ``thresh`` with the truth
    (the RefCOCO / EgoIntention metric). ``pred, gt: [N, 4]``."""
    iou = paired_iou(pred, gt)
    if iou.numel() == 0:
        raise ValueError("pred must hold at least one box, got 0")
    return float((iou >= thresh).float().mean())


@validate(logits=TensorC("B R", dtype="float"), fg_mask=Mask("B R"), k=Int(low=1))
def foreground_recall_at_k(logits: Tensor, fg_mask: Tensor, k: int) -> float:
    r"""Router recall@k: per image, $|\mathrm{top}_k(\ell) \cap \mathrm{FG}| / \min(k, |\mathrm{FG}|)$, averaged
    over images (1 means the k best-scored regions are foreground as far as there is foreground to find).
    ``logits, fg_mask: [B, R]``; every image needs at least one foreground region."""
    check_arguments("foreground_recall_at_k", {"k": Int(low=1, high=logits.shape[1])}, {"k": k})
    fg = as_bool(fg_mask)
    n_fg = fg.sum(1)
    if bool((n_fg == 0).any()):
        raise ValueError("fg_mask: every image needs at least one foreground region")
    top = logits.topk(k, dim=1).indices                                    # [B, k]
    hits = fg.gather(1, top).sum(1).float()
    return float((hits / n_fg.clamp(max=k).float()).mean())
