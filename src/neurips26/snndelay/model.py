"""The residual spiking phoneme decoder with fixed per-connection delays.

    x [B, T, F] --DayInputLayer(day)--> softsign --causal smoothing--> Linear(F->N) --LN--> LIF = h_0
    block l = 1..L:   s_l = LIF(LN(DelayedLinear_l(h_{l-1}))),   h_l = h_{l-1} + s_l      (SEW "ADD")
    readout:          logits = DelayedLinear(N -> 41)(h_L)                                   [B, T, 41]

Blank = class 0; phonemes 1..40 (39 ARPAbet + SIL). Every stage is causal (delays only reach back, the
smoothing is one-sided, LayerNorm acts per bin), so the decoder can stream. With ``max_delay=0`` it is
the same network with ordinary synapses: the same parameter count, the key ablation.
Inferred (the paper's layout is not available): LayerNorm in the stem, LayerNorm (not BatchNorm) in the
blocks, the delay seeds (``delay_seed + layer``), the causal half-Gaussian smoothing.
"""

from __future__ import annotations

from torch import Tensor, nn

from ._checks import check_bool, check_int, check_module, check_number, trusted
from .delays import DelayedLinear
from .layers import CausalGaussianSmoothing, DayInputLayer, validate_inputs
from .neurons import LIF

N_CLASSES = 41


def _positive_int(name: str, value: object) -> int:
    """A positive int (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class ResidualDelaySNN(nn.Module):
    """Residual SNN decoder. ``forward(x [B, T, n_in], day_idx [B]) -> logits [B, T, n_classes]``.

    Args:
        n_in: input features F.
        hidden: N, neurons per layer.
        n_layers: L, residual delayed blocks.
        n_classes: outputs including the CTC blank (41).
        max_delay: D, largest synaptic delay in bins (0: no delays).
        beta: LIF decay in (0, 1].
        delay_seed: seed of the delay draws (layer l uses ``delay_seed + l``).
        n_days: number of recording days (per-day input layers).
        delay_dist: ``"uniform"`` or ``"geometric"``.
        smooth_sigma: width of the causal input smoothing in bins (0: none).
        learn_beta: trainable β per LIF layer.
    """

    def __init__(self, n_in: int, hidden: int, n_layers: int, n_classes: int = N_CLASSES, max_delay: int = 8,
                 beta: float = 0.8, delay_seed: int = 0, n_days: int = 1, *, delay_dist: str = "uniform",
                 smooth_sigma: float = 2.0, learn_beta: bool = False) -> None:
        for name, val in (("n_in", n_in), ("hidden", hidden), ("n_layers", n_layers), ("n_classes", n_classes),
                          ("n_days", n_days)):
            _positive_int(name, val)
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2 (blank + at least one label), got {n_classes}")
        if isinstance(max_delay, bool) or not isinstance(max_delay, int) or max_delay < 0:
            raise ValueError(f"max_delay must be an int >= 0, got {max_delay!r}")
        check_number("beta", beta, low=0.0, high=1.0, open_low=True)
        check_int("delay_seed", delay_seed, 0)
        check_bool("learn_beta", learn_beta)
        super().__init__()
        self.n_in, self.hidden, self.n_layers, self.n_classes = n_in, hidden, n_layers, n_classes
        self.max_delay, self.n_days = max_delay, n_days
        self.day_input = DayInputLayer(n_in, n_days)
        self.smooth = CausalGaussianSmoothing(smooth_sigma)
        self.stem = nn.Linear(n_in, hidden)
        self.stem_norm = nn.LayerNorm(hidden)
        self.stem_lif = LIF(beta, learn_beta=learn_beta)
        self.synapses = nn.ModuleList(
            DelayedLinear(hidden, hidden, max_delay, seed=delay_seed + 1 + i, delay_dist=delay_dist)
            for i in range(n_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(n_layers))
        self.lifs = nn.ModuleList(LIF(beta, learn_beta=learn_beta) for _ in range(n_layers))
        self.readout = DelayedLinear(hidden, n_classes, max_delay, seed=delay_seed + 1 + n_layers,
                                     delay_dist=delay_dist)

    def forward(self, x: Tensor, day_idx: Tensor | None = None, *, return_spikes: bool = False):
        day_idx = validate_inputs(x, day_idx, self.n_in, self.n_days)
        with trusted():  # the layers below get checked tensors: no per-layer value checks (hooks still run)
            return self._layers(x, day_idx, return_spikes)

    def _layers(self, x: Tensor, day_idx: Tensor, return_spikes: bool):
        x = self.smooth(self.day_input(x, day_idx))
        # h_0 = LIF(LN(W_stem x + b))   [B, T, N]
        h = self.stem_lif(self.stem_norm(self.stem(x)))
        spikes = [h]
        for syn, norm, lif in zip(self.synapses, self.norms, self.lifs):
            # s_l = LIF(LN(Σ_i W_ji h_{l-1}(t - d_ji)));  h_l = h_{l-1} + s_l
            s = lif(norm(syn(h)))
            spikes.append(s)
            h = h + s
        logits = self.readout(h)
        return (logits, spikes) if return_spikes else logits


def count_core_params(model: nn.Module) -> int:
    """Trainable parameters except the per-day input layers (any submodule of type ``DayInputLayer``)."""
    check_module(model)
    day = {id(p) for m in model.modules() if isinstance(m, DayInputLayer) for p in m.parameters()}
    return sum(p.numel() for p in model.parameters() if p.requires_grad and id(p) not in day)
