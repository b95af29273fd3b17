"""The non-spiking decoders the paper compares against, at matched core parameters.

All share the SNN's input pipeline (per-day affine + softsign, causal smoothing) and output
``logits [B, T, 41]`` (blank 0), so a comparison isolates the temporal model:

* :class:`GRUDecoder`: the Willett et al. baseline (unidirectional = causal; bidirectional = an upper
  reference that sees the future).
* :class:`TCNDecoder`: causal dilated convolutions, kernel 3, dilations 1, 2, 4, 8, residual.
* :class:`FrameStackMLP`: a feed-forward MLP on the last K bins stacked (the baseline's input unfolding,
  stride 1, causal).

The D = 0 SNN (``ResidualDelaySNN(max_delay=0)``) is the fourth baseline. :func:`matched_width` picks
the width of a baseline whose core parameter count is closest to a budget.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_bool, trusted
from .layers import CausalGaussianSmoothing, DayInputLayer, validate_inputs
from .model import N_CLASSES, ResidualDelaySNN, _positive_int, count_core_params


def _check_classes(n_classes: object) -> None:
    _positive_int("n_classes", n_classes)
    if n_classes < 2:
        raise ValueError(f"n_classes must be >= 2 (blank + at least one label), got {n_classes}")


class _Decoder(nn.Module):
    """Shared input pipeline: validation, per-day layer, causal smoothing."""

    def __init__(self, n_in: int, n_days: int, smooth_sigma: float) -> None:
        _positive_int("n_in", n_in)
        _positive_int("n_days", n_days)
        super().__init__()
        self.n_in, self.n_days = n_in, n_days
        self.day_input = DayInputLayer(n_in, n_days)
        self.smooth = CausalGaussianSmoothing(smooth_sigma)

    def _prepare(self, x: Tensor, day_idx: Tensor | None) -> Tensor:
        day_idx = validate_inputs(x, day_idx, self.n_in, self.n_days)
        with trusted():
            return self.smooth(self.day_input(x, day_idx))


class GRUDecoder(_Decoder):
    """GRU decoder: ``[B, T, F] -> GRU(hidden, n_layers) -> Linear -> [B, T, n_classes]``.

    Per layer and step: $r,z = \\sigma(W x + U h + b)$, $n = \\tanh(W_n x + b_n + r\\odot(U_n h + c_n))$,
    $h' = (1-z)\\odot n + z \\odot h$; parameters $3(F H + H^2 + 2H)$ (PyTorch keeps two biases).
    """

    def __init__(self, n_in: int, hidden: int, n_layers: int = 2, n_classes: int = N_CLASSES, *,
                 bidirectional: bool = False, n_days: int = 1, smooth_sigma: float = 2.0) -> None:
        super().__init__(n_in, n_days, smooth_sigma)
        _positive_int("hidden", hidden)
        _positive_int("n_layers", n_layers)
        _check_classes(n_classes)
        check_bool("bidirectional", bidirectional)
        self.hidden, self.bidirectional = hidden, bidirectional
        self.gru = nn.GRU(n_in, hidden, n_layers, batch_first=True, bidirectional=bidirectional)
        self.readout = nn.Linear(hidden * (2 if bidirectional else 1), n_classes)

    def forward(self, x: Tensor, day_idx: Tensor | None = None) -> Tensor:
        out, _ = self.gru(self._prepare(x, day_idx))
        return self.readout(out)


class _CausalConvBlock(nn.Module):
    """$h \\leftarrow h + \\mathrm{ReLU}(\\mathrm{LN}(\\mathrm{conv}_{k=3,\\,\\mathrm{dil}}(h)))$, left-padded."""

    def __init__(self, channels: int, dilation: int, kernel: int = 3) -> None:
        super().__init__()
        self.pad = (kernel - 1) * dilation
        self.conv = nn.Conv1d(channels, channels, kernel, dilation=dilation)
        self.norm = nn.LayerNorm(channels)

    def forward(self, h: Tensor) -> Tensor:  # h [B, T, C]
        y = self.conv(F.pad(h.transpose(1, 2), (self.pad, 0))).transpose(1, 2)
        return h + F.relu(self.norm(y))


class TCNDecoder(_Decoder):
    """Causal TCN: ``Linear(F->C)``, residual blocks with dilations ``(1, 2, 4, 8)`` (kernel 3), ``Linear(C->41)``.

    Receptive field $1 + 2\\sum_l \\mathrm{dil}_l = 31$ bins for the default dilations.
    """

    def __init__(self, n_in: int, channels: int, n_classes: int = N_CLASSES, *,
                 dilations: tuple[int, ...] = (1, 2, 4, 8), kernel: int = 3, n_days: int = 1,
                 smooth_sigma: float = 2.0) -> None:
        super().__init__(n_in, n_days, smooth_sigma)
        _positive_int("channels", channels)
        _check_classes(n_classes)
        _positive_int("kernel", kernel)
        if isinstance(dilations, str) or not isinstance(dilations, tuple | list) or not dilations or any(
                isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dilations):
            raise ValueError(f"dilations must be a non-empty sequence of positive ints, got {dilations!r}")
        self.channels = channels
        self.inp = nn.Linear(n_in, channels)
        self.blocks = nn.ModuleList(_CausalConvBlock(channels, d, kernel) for d in dilations)
        self.readout = nn.Linear(channels, n_classes)

    def forward(self, x: Tensor, day_idx: Tensor | None = None) -> Tensor:
        h = F.relu(self.inp(self._prepare(x, day_idx)))
        for block in self.blocks:
            h = block(h)
        return self.readout(h)


class FrameStackMLP(_Decoder):
    """MLP on stacked frames: input at t is $[x_{t-K+1}, \\dots, x_t]$ (zeros before 0), then
    ``n_layers`` of Linear + LayerNorm + ReLU (width ``hidden``) and ``Linear(hidden -> 41)``."""

    def __init__(self, n_in: int, hidden: int, n_layers: int = 2, n_classes: int = N_CLASSES, *, stack: int = 8,
                 n_days: int = 1, smooth_sigma: float = 2.0) -> None:
        super().__init__(n_in, n_days, smooth_sigma)
        _positive_int("hidden", hidden)
        _positive_int("n_layers", n_layers)
        _positive_int("stack", stack)
        _check_classes(n_classes)
        self.hidden, self.stack = hidden, stack
        layers: list[nn.Module] = []
        width = n_in * stack
        for _ in range(n_layers):
            layers += [nn.Linear(width, hidden), nn.LayerNorm(hidden), nn.ReLU()]
            width = hidden
        self.mlp = nn.Sequential(*layers)
        self.readout = nn.Linear(hidden, n_classes)

    def forward(self, x: Tensor, day_idx: Tensor | None = None) -> Tensor:
        x = self._prepare(x, day_idx)
        b, t, f = x.shape
        # windows [B, T, F, K]: the last K bins, oldest first
        windows = F.pad(x, (0, 0, self.stack - 1, 0)).unfold(1, self.stack, 1)
        stacked = windows.transpose(2, 3).reshape(b, t, self.stack * f)
        return self.readout(self.mlp(stacked))


DECODERS: dict[str, Callable[..., nn.Module]] = {
    "snn": lambda n_in, width, **kw: ResidualDelaySNN(n_in, width, kw.pop("n_layers", 3), **kw),
    "gru": lambda n_in, width, **kw: GRUDecoder(n_in, width, kw.pop("n_layers", 2), **kw),
    "bigru": lambda n_in, width, **kw: GRUDecoder(n_in, width, kw.pop("n_layers", 2), bidirectional=True, **kw),
    "tcn": lambda n_in, width, **kw: TCNDecoder(n_in, width, **kw),
    "mlp": lambda n_in, width, **kw: FrameStackMLP(n_in, width, kw.pop("n_layers", 2), **kw),
}


def build_decoder(kind: str, n_in: int, width: int, **kwargs) -> nn.Module:
    """One of :data:`DECODERS` (``"snn"``, ``"gru"``, ``"bigru"``, ``"tcn"``, ``"mlp"``) at a given width."""
    if kind not in DECODERS:
        raise ValueError(f"kind must be one of {sorted(DECODERS)}, got {kind!r}")
    return DECODERS[kind](n_in, width, **dict(kwargs))


def matched_width(kind: str, n_in: int, budget: int, *, lo: int = 4, hi: int = 4096, **kwargs) -> int:
    """The width whose core parameter count is closest to ``budget`` (core counts grow with width)."""
    _positive_int("budget", budget)
    _positive_int("lo", lo)
    _positive_int("hi", hi)
    if lo > hi:
        raise ValueError(f"lo must be <= hi, got lo={lo}, hi={hi}")
    if kind not in DECODERS:
        raise ValueError(f"kind must be one of {sorted(DECODERS)}, got {kind!r}")

    def core(width: int) -> int:
        return count_core_params(build_decoder(kind, n_in, width, n_days=1, **kwargs))

    while lo < hi:  # smallest width with core >= budget
        mid = (lo + hi) // 2
        if core(mid) >= budget:
            hi = mid
        else:
            lo = mid + 1
    if lo > 4 and abs(core(lo - 1) - budget) < abs(core(lo) - budget):
        return lo - 1
    return lo
