"""Operation-level energy estimate from actual activity (a count of operations, not a measurement).

$$E = E_{AC}\\cdot\\mathrm{SOPs} + E_{MAC}\\cdot\\mathrm{MACs}$$ with $E_{MAC}$ = 4.6 pJ, $E_{AC}$ = 0.9 pJ

(45 nm, 32-bit float, Horowitz 2014; the convention of most SNN papers, inferred for this one).

* A :class:`DelayedLinear` whose input is a non-negative integer tensor (spikes, or SEW-ADD residual sums
  with values 0..L) is event-driven: each input event reaches each of the ``out_features`` targets once, so
  $\\mathrm{SOPs} = \\sum_{t,i} h_{t,i}\\cdot\\mathrm{fan\\text{-}out}$ (multiplicity counted). Delays add buffer
  memory (``in · (D+1)`` entries per layer), not operations.
* Everything else is dense: ``nn.Linear`` and ``DelayedLinear`` on real input $F_{in}F_{out}$ per bin,
  ``nn.Conv1d`` $C_{in}C_{out}k$ per output bin, ``nn.GRU`` $3(FH + H^2 + 2H)$ per step, layer and direction,
  the per-day layer $F^2$ per bin.
* The split: ``joules_activity_per_bin`` is the event-driven part (the SOPs of the spiking synapses, the
  only part that depends on the trained activity and on the delays); ``joules_fixed_per_bin`` is the dense
  part (stem, per-day layer, any real-valued input), fixed by the architecture. For a non-spiking network
  everything is fixed (its MAC count does not depend on its weights). ``dense_equivalent_joules_per_bin``
  is what the spiking synapses would cost as dense MACs (in · out per bin at E_MAC): the saving owed to
  sparse events is ``dense_equivalent / activity``.
* Normalisation, neuron state updates and nonlinearities are not counted (as in NeuroBench's
  synaptic-operation metric).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from ._checks import MODULE, NONNEGATIVE, TensorC, int_list, validate
from .delays import DelayedLinear
from .layers import DayInputLayer
from .neurons import LIF


def _valid_mask(b: int, t: int, lengths: Sequence[int] | Tensor | None) -> Tensor:
    if lengths is None:
        return torch.ones(b, t, dtype=torch.bool)
    lens = torch.tensor(int_list("lengths", lengths), dtype=torch.long).view(-1, 1)
    if lens.shape[0] != b or int(lens.min()) < 1 or int(lens.max()) > t:
        raise ValueError(f"estimate_energy: lengths must be {b} values in 1..{t}, got {lens.view(-1).tolist()}")
    return torch.arange(t).view(1, -1) < lens


@torch.no_grad()
@validate(model=MODULE, x=TensorC("B T F", finite=False), e_mac=NONNEGATIVE, e_ac=NONNEGATIVE)  # x: values by the model
def estimate_energy(model: nn.Module, x: Tensor, day_idx: Tensor | None = None, *,
                    lengths: Sequence[int] | Tensor | None = None, e_mac: float = 4.6e-12,
                    e_ac: float = 0.9e-12) -> dict[str, float]:
    """Count SOPs and MACs of ``model(x, day_idx)`` on ``x [B, T, F]`` (only bins ``t < lengths[b]``).

    Returns ``sops``, ``macs``, ``bins``, their per-bin values, ``joules``, ``joules_per_bin``, the mean
    ``spike_rate`` of the LIF layers (NaN without LIF layers) and ``delay_buffer_entries``.
    """
    mask = _valid_mask(x.shape[0], x.shape[1], lengths).to(x.device)
    bins = int(mask.sum())
    counts = {"sops": 0.0, "macs": 0.0, "spikes": 0.0, "neuron_bins": 0.0, "buffer": 0, "event_dense_macs": 0.0}

    def per_bin_dense(macs_per_bin: float) -> None:
        counts["macs"] += macs_per_bin * bins

    def hook(module: nn.Module, inputs: tuple, output) -> None:
        inp = inputs[0]
        if isinstance(module, DelayedLinear):
            counts["buffer"] += module.delay_buffer_entries()
            integer = bool((inp >= 0).all() and (inp == inp.round()).all())
            if integer:
                # SOPs = Σ_{b,t,i} h_{b,t,i} · fan-out
                counts["sops"] += float((inp * mask.unsqueeze(-1)).sum()) * module.out_features
                counts["event_dense_macs"] += module.in_features * module.out_features * bins
            else:
                per_bin_dense(module.in_features * module.out_features)
        elif isinstance(module, nn.Linear):
            per_bin_dense(module.in_features * module.out_features)
        elif isinstance(module, nn.Conv1d):
            per_bin_dense(module.in_channels // module.groups * module.out_channels * module.kernel_size[0])
        elif isinstance(module, nn.GRU):
            h, dirs = module.hidden_size, 2 if module.bidirectional else 1
            for layer in range(module.num_layers):
                f_in = module.input_size if layer == 0 else h * dirs
                per_bin_dense(dirs * 3 * (f_in * h + h * h + 2 * h))
        elif isinstance(module, DayInputLayer):
            per_bin_dense(module.weight.shape[1] * module.weight.shape[2])
        elif isinstance(module, LIF):
            counts["spikes"] += float((output * mask.unsqueeze(-1)).sum())
            counts["neuron_bins"] += bins * output.shape[-1]

    kinds = (DelayedLinear, nn.Linear, nn.Conv1d, nn.GRU, DayInputLayer, LIF)
    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, kinds)]
    was_training = model.training
    model.eval()
    try:
        model(x, day_idx)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    joules = e_ac * counts["sops"] + e_mac * counts["macs"]
    rate = counts["spikes"] / counts["neuron_bins"] if counts["neuron_bins"] else float("nan")
    return {"sops": counts["sops"], "macs": counts["macs"], "bins": float(bins),
            "sops_per_bin": counts["sops"] / bins, "macs_per_bin": counts["macs"] / bins,
            "joules": joules, "joules_per_bin": joules / bins, "spike_rate": rate,
            "joules_activity_per_bin": e_ac * counts["sops"] / bins,
            "joules_fixed_per_bin": e_mac * counts["macs"] / bins,
            "dense_equivalent_joules_per_bin": e_mac * counts["event_dense_macs"] / bins,
            "delay_buffer_entries": float(counts["buffer"])}
