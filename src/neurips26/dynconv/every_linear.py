r"""Dynamic short convs after every linear layer (the paper's 1.60x placement; exact placement inferred).

The paper reports a larger compute advantage when the dynamic conv follows *every* linear layer rather
than only the q, k, v projections. The placement is not published in what we could read; we take the
natural reading: in each block, after ``q_proj, k_proj, v_proj, o_proj`` and the SwiGLU's ``gate_proj,
up_proj, down_proj``, a :class:`~.modules.DynamicShortConv` (W = 4, rank R, static filter + residual)
whose conditioning is that linear layer's own input $u_t$:

$$y_t = \sum_{w=0}^{W-1} \big(K_{t,w} + S_w\big) \odot (A u)_{t-w} + (A u)_t,\qquad
K_t = \mathrm{reshape}\big((W_{in} u_t)\, U, (W, D_{out})\big).$$

For q/k/v/gate/up the input is the normed block input (the QKV recipe's conditioning), for ``o_proj`` the
attention output, for ``down_proj`` the SwiGLU hidden state. The lm head and embedding are left alone.
"""

from __future__ import annotations

import torch
from torch import nn

from neurips26.constraints import Choice, Instance, Int, validate
from neurips26.nn import Llama, LlamaConfig

from .modules import DynamicShortConv, StaticShortConv, conv_attention_factory

LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class ConvLinear(nn.Module):
    """``linear`` followed by a short conv over time: ``[B, T, D_in] -> [B, T, D_out]``.

    Args:
        linear: the wrapped ``nn.Linear`` (kept as ``.linear``, so its weight keeps its name prefix).
        conv: ``"dynamic"`` (conditioned on the linear's input) or ``"static"``.
        kernel_size, rank: the conv's ``W`` and ``R``.
    """

    @validate(linear=Instance(nn.Linear, "torch.nn.Linear"), conv=Choice("dynamic", "static"))
    def __init__(self, linear: nn.Linear, *, conv: str = "dynamic", kernel_size: int = 4, rank: int = 15) -> None:
        super().__init__()
        self.linear = linear
        d_in, d_out = linear.in_features, linear.out_features
        if conv == "dynamic":
            self.conv = DynamicShortConv(d_out, kernel_size, rank, cond_dim=d_in, static=True, residual=True)
        else:
            self.conv = StaticShortConv(d_out, kernel_size, residual=True)
        self.kind = conv

    @property
    def in_features(self) -> int:
        return self.linear.in_features

    @property
    def out_features(self) -> int:
        return self.linear.out_features

    @property
    def weight(self) -> torch.Tensor:
        return self.linear.weight

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        h = self.linear(u)  # [B, T, D_out]
        if self.kind == "dynamic":
            return self.conv(h, cond=u)
        return self.conv(h)


@validate(model=Instance(nn.Module, "torch.nn.Module"), conv=Choice("dynamic", "static"), kernel_size=Int(low=1),
          rank=Int(low=1))
def add_convs_after_linears(model: nn.Module, *, conv: str = "dynamic", kernel_size: int = 4, rank: int = 15,
                            names: tuple[str, ...] = LINEAR_NAMES) -> nn.Module:
    """Wrap every ``nn.Linear`` named in ``names`` inside ``model.layers`` in a :class:`ConvLinear` (in place;
    returns ``model``). New parameters start as the module's init (``U = 0``: the layer is the static
    filter plus the residual at first)."""
    layers = getattr(model, "layers", None)
    if not isinstance(layers, nn.ModuleList):
        raise TypeError(f"model must have a .layers ModuleList (a neurips26.nn.Llama), got {type(model).__name__}")
    count = 0
    for block in layers:
        for parent in list(block.modules()):
            for name, child in list(parent.named_children()):
                if name in names and isinstance(child, nn.Linear):
                    setattr(parent, name, ConvLinear(child, conv=conv, kernel_size=kernel_size, rank=rank))
                    count += 1
    if count == 0:
        raise ValueError(f"no nn.Linear named {names} found in model.layers")
    return model


@validate(config=Instance(LlamaConfig), conv=Choice("dynamic", "static"), kernel_size=Int(low=1),
          rank=Int(low=1))
def every_linear_llama(config: LlamaConfig, *, conv: str = "dynamic", kernel_size: int = 4,
                       rank: int = 15) -> Llama:
    """A :class:`neurips26.nn.Llama` with a short conv after each of the seven linear layers of every block
    (attention from :class:`~.modules.ConvAugmentedAttention`, so KV-cached decoding works)."""
    model = Llama(config, attention_factory=conv_attention_factory("none"))
    return add_convs_after_linears(model, conv=conv, kernel_size=kernel_size, rank=rank)
