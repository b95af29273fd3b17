r"""A non-attention host: a small Mamba-style gated linear-recurrence mixer with a short conv in front.

Mamba-2 and Gated DeltaNet put a static causal short conv on their input streams; the paper reports that
making it dynamic helps them too. This module is a hand-written, minimal host of that kind (not Mamba-2
itself: no SSD chunking, a diagonal gate instead of a state matrix), small enough to read:

$$u_t = \mathrm{silu}(\mathrm{conv}(W_u x)_t),\qquad a_t = \sigma(W_a x_t + b_a),\qquad
h_t = a_t \odot h_{t-1} + (1 - a_t) \odot u_t,\qquad y_t = W_o\,(h_t \odot \mathrm{silu}(W_z x_t)).$$

``conv`` is ``"none"``, ``"static"`` (:class:`~.modules.StaticShortConv`, the Mamba default) or ``"dynamic"``
(:class:`~.modules.DynamicShortConv` conditioned on the block input $x$). The recurrence is a plain loop over
time (``T`` is small here). It plugs into :class:`neurips26.nn.Llama` in place of attention through
:func:`recurrent_mixer_factory` (``forward(x, cos, sin, **kw)``; RoPE tables are ignored).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import Choice, Int, check_arguments, validate
from neurips26.nn import LlamaConfig

from .modules import DynamicShortConv, StaticShortConv, stream


class GatedRecurrentMixer(nn.Module):
    """Gated diagonal linear recurrence with a short conv on its input stream: ``[B, T, D] -> [B, T, D]``.

    Args:
        d_model: width ``D``.  expand: inner width ``E = expand * D``.
        conv: ``"none"`` | ``"static"`` | ``"dynamic"``.  kernel_size, rank: the conv's ``W`` and ``R``.
    """

    @validate(d_model=Int(low=1), expand=Int(low=1), conv=Choice("none", "static", "dynamic"),
              kernel_size=Int(low=1), rank=Int(low=1))
    def __init__(self, d_model: int, *, expand: int = 1, conv: str = "static", kernel_size: int = 4,
                 rank: int = 15) -> None:
        super().__init__()
        inner = expand * d_model
        self.in_proj = nn.Linear(d_model, inner, bias=False)
        self.gate_proj = nn.Linear(d_model, inner)  # a_t = sigmoid(W_a x_t + b_a)
        self.z_proj = nn.Linear(d_model, inner, bias=False)
        self.out_proj = nn.Linear(inner, d_model, bias=False)
        self.kind = conv
        if conv == "static":
            self.conv: nn.Module | None = StaticShortConv(inner, kernel_size, residual=True)
        elif conv == "dynamic":
            self.conv = DynamicShortConv(inner, kernel_size, rank, cond_dim=d_model, static=True, residual=True)
        else:
            self.conv = None

    def forward(self, x: torch.Tensor, cos: torch.Tensor | None = None, sin: torch.Tensor | None = None,
                **_: Any) -> torch.Tensor:
        check_arguments("GatedRecurrentMixer.forward", {"x": stream(f"B T {self.in_proj.in_features}", floating=False)},
                        {"x": x})
        u = self.in_proj(x)  # [B, T, E]
        if self.kind == "static":
            u = self.conv(u)
        elif self.kind == "dynamic":
            u = self.conv(u, cond=x)
        u = F.silu(u)
        a = torch.sigmoid(self.gate_proj(x))  # [B, T, E], in (0, 1)
        # h_t = a_t h_{t-1} + (1 - a_t) u_t, h_{-1} = 0
        h = torch.zeros_like(u[:, 0])
        hs = []
        for t in range(u.shape[1]):
            h = a[:, t] * h + (1 - a[:, t]) * u[:, t]
            hs.append(h)
        hidden = torch.stack(hs, dim=1)
        return self.out_proj(hidden * F.silu(self.z_proj(x)))


@validate(conv=Choice("none", "static", "dynamic"), expand=Int(low=1), kernel_size=Int(low=1), rank=Int(low=1))
def recurrent_mixer_factory(conv: str = "static", *, expand: int = 1, kernel_size: int = 4,
                            rank: int = 15) -> Callable[[LlamaConfig, int], GatedRecurrentMixer]:
    """``Llama(config, attention_factory=recurrent_mixer_factory("dynamic"))``: the mixer in every layer."""

    def factory(config: LlamaConfig, layer_idx: int) -> GatedRecurrentMixer:
        return GatedRecurrentMixer(config.d_model, expand=expand, conv=conv, kernel_size=kernel_size, rank=rank)

    return factory
