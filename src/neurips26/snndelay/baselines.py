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

from ._checks import NONNEGATIVE, Bool, Choice, Int, trusted, validate
from .layers import CausalGaussianSmoothing, DayInputLayer, validate_inputs
from .model import N_CLASSES, ResidualDelaySNN, count_core_params

_COUNT = Int(low=1)
_CLASSES = Int(low=2)  # the blank and at least one label


class _Decoder(nn.Module):
    """Shared input pipeline: validation, per-day layer, causal smoothing (each subclass declares and checks
    all its arguments, these included, before this runs)."""

    def __init__(self, n_in: int, n_days: int, smooth_sigma: float) -> None:
        super().__init__()
        self.n_in, self.n_days = n_in, n_days
        self.day_input = DayInputLayer(n_in, n_days)
        self.smooth = CausalGaussianSmoothing(smooth_sigma)

    def _prepare(self, x: Tensor, day_idx: Tensor | None) -> Tensor:
        day_idx = validate_inputs(x, day_idx, self.n_in, self.n_days, type(self).__name__)
        with trusted():
            return self.smooth(self.day_input(x, day_idx))


class GRUDecoder(_Decoder):
    """GRU decoder: ``[B, T, F] -> GRU(hidden, n_layers) -> Linear -> [B, T, n_classes]``.

    Per layer and step: $r,z = \\sigma(W x + U h + b)$, $n = \\tanh(W_n x + b_n + r\\odot(U_n h + c_n))$,
    $h' = (1-z)\\odot n + z \\odot h$; parameters $3(F H + H^2 + 2H)$ (PyTorch keeps two biases).
    """

    @validate(n_in=_COUNT, hidden=_COUNT, n_layers=_COUNT, n_classes=_CLASSES, bidirectional=Bool(), n_days=_COUNT,
              smooth_sigma=NONNEGATIVE)
    def __init__(self, n_in: int, hidden: int, n_layers: int = 2, n_classes: int = N_CLASSES, *,
                 bidirectional: bool = False, n_days: int = 1, smooth_sigma: float = 2.0) -> None:
        n_in, hidden, n_layers, n_classes, n_days = map(int, (n_in, hidden, n_layers, n_classes, n_days))
        super().__init__(n_in, n_days, smooth_sigma)
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

    @validate(n_in=_COUNT, channels=_COUNT, n_classes=_CLASSES, kernel=_COUNT, n_days=_COUNT, smooth_sigma=NONNEGATIVE)
    def __init__(self, n_in: int, channels: int, n_classes: int = N_CLASSES, *,
                 dilations: tuple[int, ...] = (1, 2, 4, 8), kernel: int = 3, n_days: int = 1,
                 smooth_sigma: float = 2.0) -> None:
        if not isinstance(dilations, tuple | list) or not dilations or any(
                isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dilations):
            raise ValueError(f"TCNDecoder: dilations must be a non-empty sequence of positive ints, got {dilations!r}")
        n_in, channels, n_classes, kernel, n_days = map(int, (n_in, channels, n_classes, kernel, n_days))
        super().__init__(n_in, n_days, smooth_sigma)
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

    @validate(n_in=_COUNT, hidden=_COUNT, n_layers=_COUNT, n_classes=_CLASSES, stack=_COUNT, n_days=_COUNT,
              smooth_sigma=NONNEGATIVE)
    def __init__(self, n_in: int, hidden: int, n_layers: int = 2, n_classes: int = N_CLASSES, *, stack: int = 8,
                 n_days: int = 1, smooth_sigma: float = 2.0) -> None:
        n_in, hidden, n_layers, n_classes, stack, n_days = map(int, (n_in, hidden, n_layers, n_classes, stack, n_days))
        super().__init__(n_in, n_days, smooth_sigma)
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


@validate(kind=Choice(*sorted(DECODERS)))
def build_decoder(kind: str, n_in: int, width: int, **kwargs) -> nn.Module:
    """One of :data:`DECODERS` (``"snn"``, ``"gru"``, ``"bigru"``, ``"tcn"``, ``"mlp"``) at a given width."""
    return DECODERS[kind](n_in, width, **dict(kwargs))


@validate(kind=Choice(*sorted(DECODERS)), budget=_COUNT, lo=_COUNT, hi=_COUNT)
def matched_width(kind: str, n_in: int, budget: int, *, lo: int = 4, hi: int = 4096, **kwargs) -> int:
    """The width whose core parameter count is closest to ``budget`` (core counts grow with width)."""
    if lo > hi:
        raise ValueError(f"matched_width: lo must be <= hi, got lo={lo}, hi={hi}")

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
