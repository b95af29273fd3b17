r"""What the paper compares against, at the kernel level.

* :func:`naive_dynamic_conv1d` / :func:`naive_lowrank_dynamic_conv1d`: the "naive PyTorch" form that
  materialises the full filter ``K [B, T, W, D]`` and the unfolded window of ``x`` (memory-bound; the
  paper's reason for fused kernels).
* :func:`static_depthwise_conv1d`: the static causal depthwise conv as one ``F.conv1d(groups=D)``
  (cuDNN on GPU) — the speed bar a dynamic conv kernel is measured against.

The model-level baselines are :class:`~.modules.StaticShortConv` (Canon-style static conv on Q/K/V)
and ``ConvAugmentedAttention(conv="none")`` (plain Llama attention).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from neurips26.constraints import Tensor, validate

from .ops import HEADWISE, LOWRANK, X, _check_same, _check_width, check_finite, check_lowrank_shapes, check_taps


def _window(x: torch.Tensor, width: int) -> torch.Tensor:
    """``x_{t-w}`` for all lags at once: ``[B, T, W, D]`` (lag 0 first; zeros before t = 0)."""
    xp = F.pad(x, (0, 0, width - 1, 0))  # [B, T+W-1, D]
    win = xp.unfold(1, width, 1)  # [B, T, D, W], index W-1 = current token
    return win.flip(-1).transpose(2, 3)  # [B, T, W, D], lag first


@validate(**HEADWISE)
def naive_dynamic_conv1d(x: torch.Tensor, taps: torch.Tensor, static_w: torch.Tensor | None = None,
                         residual: bool = False, *, finite_check: bool = True) -> torch.Tensor:
    r"""$y = \sum_w (K_{t,w} + S_w) \odot x_{t-w}$ with ``K = taps`` expanded to ``[B, T, W, D]``.

    Input checks as :func:`~.ops.dynamic_conv1d` (``finite_check=False`` skips the NaN/inf scan, for timing)."""
    check_taps(x, taps, static_w)
    if finite_check:
        check_finite(x=x, taps=taps, static_w=static_w)
    b, t, d = x.shape
    h, width = taps.shape[2], taps.shape[3]
    k = taps.transpose(2, 3).repeat_interleave(d // h, dim=-1)  # [B, T, W, D]
    if static_w is not None:
        k = k + static_w
    y = (k * _window(x, width)).sum(2)
    return y + x if residual else y


@validate(**LOWRANK)
def naive_lowrank_dynamic_conv1d(x: torch.Tensor, z: torch.Tensor, U: torch.Tensor,
                                 static_w: torch.Tensor | None = None, residual: bool = False, *,
                                 finite_check: bool = True) -> torch.Tensor:
    """Low-rank form with ``K = (z @ U).view(B, T, W, D)`` materialised (checks as
    :func:`~.ops.lowrank_dynamic_conv1d`)."""
    check_lowrank_shapes(x, z, U, static_w, "naive_lowrank_dynamic_conv1d")
    if finite_check:
        check_finite(x=x, z=z, U=U, static_w=static_w)
    b, t, d = x.shape
    width = U.shape[1] // d
    k = (z @ U).view(b, t, width, d)
    if static_w is not None:
        k = k + static_w
    y = (k * _window(x, width)).sum(2)
    return y + x if residual else y


@validate(x=X, static_w=Tensor("W D", finite=False))
def static_depthwise_conv1d(x: torch.Tensor, static_w: torch.Tensor, residual: bool = False, *,
                            finite_check: bool = True) -> torch.Tensor:
    """Static causal depthwise conv ``[B, T, D]`` with ``static_w [W, D]`` (lag 0 first) via ``F.conv1d``."""
    _check_width(static_w.shape[0], "static_w.shape[0]")
    _check_same("static_w", static_w, x)
    if finite_check:
        check_finite(x=x, static_w=static_w)
    t, d = x.shape[1], x.shape[2]
    width = static_w.shape[0]
    w = static_w.flip(0).T.unsqueeze(1)  # [D, 1, W], nn.Conv1d order
    y = F.conv1d(x.transpose(1, 2), w, padding=width - 1, groups=d)[..., :t].transpose(1, 2)
    return y + x if residual else y
