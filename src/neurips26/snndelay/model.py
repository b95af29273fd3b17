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

import torch
from torch import Tensor, nn

from ._checks import BETA, MODULE, NONNEGATIVE, Bool, Choice, Int, TensorC, check_arguments, trusted, validate
from .delays import DELAY_DISTS, DelayedLinear
from .layers import CausalGaussianSmoothing, DayInputLayer, validate_inputs
from .neurons import LIF

N_CLASSES = 41
_TIME_FIRST_X = TensorC(ndim=3, finite=False)  # [T, B, F]; validate_inputs checks the rest after the transpose
_STEP_X = TensorC(ndim=2, finite=False)  # [B, F]; likewise


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
        time_first: ``forward`` takes ``x [T, B, F]`` and returns ``[T, B, n_classes]`` (multi-step layout).

    Streaming (causal decoding, one 20-ms bin at a time)::

        state = model.init_state(batch_size)
        for t in range(T):
            logits_t, state = model.step(x[:, t], day_idx, state)   # [B, n_classes]

    equals ``model(x, day_idx)[:, t]`` (see ``tests/snndelay``: equal spikes, logits to round-off).
    """

    @validate(n_in=Int(low=1), hidden=Int(low=1), n_layers=Int(low=1), n_classes=Int(low=2), max_delay=Int(low=0),
              beta=BETA, delay_seed=Int(low=0), n_days=Int(low=1), delay_dist=Choice(*DELAY_DISTS),
              smooth_sigma=NONNEGATIVE, learn_beta=Bool(), time_first=Bool())
    def __init__(self, n_in: int, hidden: int, n_layers: int, n_classes: int = N_CLASSES, max_delay: int = 8,
                 beta: float = 0.8, delay_seed: int = 0, n_days: int = 1, *, delay_dist: str = "uniform",
                 smooth_sigma: float = 2.0, learn_beta: bool = False, time_first: bool = False) -> None:
        # every argument is checked (by the declaration) before any submodule is built: building draws from
        # torch's RNG, and a refused call must leave the process as it found it
        n_in, hidden, n_layers, n_classes, max_delay, n_days = map(int, (n_in, hidden, n_layers, n_classes,
                                                                         max_delay, n_days))
        super().__init__()
        self.time_first = time_first
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
        if self.time_first:
            check_arguments("ResidualDelaySNN (time_first)", {"x": _TIME_FIRST_X}, {"x": x})
            x = x.transpose(0, 1)
        day_idx = validate_inputs(x, day_idx, self.n_in, self.n_days, "ResidualDelaySNN")
        with trusted():  # the layers below get checked tensors: no per-layer value checks (hooks still run)
            out = self._layers(x, day_idx, return_spikes)
        if not self.time_first:
            return out
        if return_spikes:
            return out[0].transpose(0, 1), [s.transpose(0, 1) for s in out[1]]
        return out.transpose(0, 1)

    # ------------------------------------------------------------------ streaming
    @validate(batch_size=Int(low=1))
    def init_state(self, batch_size: int) -> dict:
        """Zero state of every stage for ``batch_size`` sentences (smoothing history, LIF membranes and last
        spikes, each delayed synapse's last D + 1 inputs)."""
        p = self.stem.weight
        kw = {"dtype": p.dtype, "device": p.device}
        return {"smooth": self.smooth.init_state((batch_size, self.n_in), **kw),
                "stem": self.stem_lif.init_state((batch_size, self.hidden), **kw),
                "syn": [syn.init_state(batch_size) for syn in self.synapses],
                "lif": [lif.init_state((batch_size, self.hidden), **kw) for lif in self.lifs],
                "readout": self.readout.init_state(batch_size)}

    @torch.no_grad()
    def step(self, x_t: Tensor, day_idx: Tensor | None, state: dict) -> tuple[Tensor, dict]:
        """One bin ``x_t [B, n_in]`` -> ``(logits_t [B, n_classes], new_state)`` (inference; no gradients).

        The same stages as :meth:`forward` applied to bin t alone: every one is causal, so the output at t
        depends only on the state (the past) and ``x_t``.
        """
        check_arguments("ResidualDelaySNN.step", {"x_t": _STEP_X}, {"x_t": x_t})
        day_idx = validate_inputs(x_t.unsqueeze(1), day_idx, self.n_in, self.n_days, "ResidualDelaySNN.step")
        if not isinstance(state, dict) or set(state) != {"smooth", "stem", "syn", "lif", "readout"}:
            raise ValueError("ResidualDelaySNN.step: state must be the dict from init_state (or the previous step)")
        with trusted():
            # x' = softsign(A_d x_t + c_d), then the causal smoothing's next output
            a, c = self.day_input.weight[day_idx], self.day_input.bias[day_idx]
            x = torch.nn.functional.softsign(torch.bmm(x_t.unsqueeze(1), a) + c).squeeze(1)
            x, smooth = self.smooth.step(x, state["smooth"])
            h, stem = self.stem_lif.step(self.stem_norm(self.stem(x)), state["stem"])
            syn_states, lif_states = [], []
            for syn, norm, lif, ss, ls in zip(self.synapses, self.norms, self.lifs, state["syn"], state["lif"]):
                cur, ss = syn.step(h, ss)
                s, ls = lif.step(norm(cur), ls)
                h = h + s
                syn_states.append(ss)
                lif_states.append(ls)
            logits, ro = self.readout.step(h, state["readout"])
        return logits, {"smooth": smooth, "stem": stem, "syn": syn_states, "lif": lif_states, "readout": ro}

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


@validate(model=MODULE)
def count_core_params(model: nn.Module) -> int:
    """Trainable parameters except the per-day input layers (any submodule of type ``DayInputLayer``)."""
    day = {id(p) for m in model.modules() if isinstance(m, DayInputLayer) for p in m.parameters()}
    return sum(p.numel() for p in model.parameters() if p.requires_grad and id(p) not in day)
