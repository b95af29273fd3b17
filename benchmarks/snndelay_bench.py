"""Side by side: fixed-delay SNN building blocks vs their peers (not run in CI).

    .venv/bin/python benchmarks/snndelay_bench.py [--threads 1] [--batch 32] [--time 120] [--repeats 5]

Rows (each a ratio to the peer measured in the same run, median of ``--repeats`` after one warm-up;
process CPU time under ``torch_threads``):
  DelayedLinear fwd+bwd vs nn.Linear     D in {0, 1, 2, 4, 8, 16}, conv and gather fast paths, 256 -> 256
  LIF fwd+bwd vs snnTorch snn.Leaky      our hand-written BPTT and our autograd reference (needs snntorch)
  SNN step vs GRU step                   ResidualDelaySNN (D = 0, 8) vs GRUDecoder at ~72k core parameters
  SOPs vs NeuroBench                     our estimate_energy SOPs vs neurobench's single_layer_MACs on the
                                         same spike tensors (needs neurobench; otherwise skipped)
Absolute times depend on the machine and its load; the ratios are the comparable numbers.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from neurips26.claims import measure, torch_threads
from neurips26.snndelay import (
    LIF,
    DelayedLinear,
    GRUDecoder,
    ResidualDelaySNN,
    count_core_params,
    ctc_loss,
    estimate_energy,
    make_batch,
    synthetic_speech_bci,
)


def _fwd_bwd(module: nn.Module, x: torch.Tensor, **kw):
    def step() -> None:
        module.zero_grad(set_to_none=True)
        module(x, **kw).sum().backward()

    return step


def bench_delayed_linear(args) -> None:
    print(f"\n## DelayedLinear fwd+bwd vs nn.Linear  (x [{args.batch}, {args.time}, 256] -> 256)")
    x = torch.randn(args.batch, args.time, 256, requires_grad=True)
    base = measure.timeit(_fwd_bwd(nn.Linear(256, 256), x), repeats=args.repeats).median
    print(f"nn.Linear: {base * 1e3:.2f} ms")
    print("| D | conv (ms) | conv / Linear | gather (ms) | gather / Linear |")
    print("|---|---|---|---|---|")
    for d in (0, 1, 2, 4, 8, 16):
        layer = DelayedLinear(256, 256, d, seed=0)
        t_conv = measure.timeit(_fwd_bwd(layer, x, backend="conv"), repeats=args.repeats).median
        t_gat = measure.timeit(_fwd_bwd(layer, x, backend="gather"), repeats=args.repeats).median
        print(f"| {d} | {t_conv * 1e3:.2f} | {t_conv / base:.2f}x | {t_gat * 1e3:.2f} | {t_gat / base:.2f}x |")


def bench_lif(args) -> None:
    print(f"\n## LIF fwd+bwd vs snnTorch snn.Leaky  (current [{args.batch}, {args.time}, 256])")
    cur = (torch.randn(args.batch, args.time, 256) + 0.5).requires_grad_(True)
    ours = measure.timeit(_fwd_bwd(LIF(0.8), cur), repeats=args.repeats).median
    ref = measure.timeit(_fwd_bwd(LIF(0.8, backend="reference"), cur), repeats=args.repeats).median
    print(f"ours (hand BPTT): {ours * 1e3:.1f} ms; ours (autograd reference): {ref * 1e3:.1f} ms "
          f"({ref / ours:.2f}x ours)")
    try:
        import snntorch as snn
        from snntorch import surrogate
    except ImportError:
        print("snntorch not installed: peer row skipped (pip install snntorch)")
        return
    leaky = snn.Leaky(beta=0.8, spike_grad=surrogate.fast_sigmoid(slope=10), reset_mechanism="subtract")

    def step() -> None:
        mem = leaky.init_leaky()
        out = []
        for t in range(cur.shape[1]):
            s, mem = leaky(cur[:, t], mem)
            out.append(s)
        torch.stack(out, 1).sum().backward()

    peer = measure.timeit(step, repeats=args.repeats).median
    print(f"snn.Leaky: {peer * 1e3:.1f} ms  -> snn.Leaky / ours = {peer / ours:.2f}x")


def bench_models(args) -> None:
    print("\n## Training step (fwd + CTC + bwd) at ~72k core parameters, batch of synthetic sentences")
    data = synthetic_speech_bci(n_sentences=args.batch, n_channels=64, seed=0)
    batch = make_batch(data, list(range(args.batch)))
    models = {"SNN D=0": ResidualDelaySNN(128, 128, 3, max_delay=0, n_days=4),
              "SNN D=8": ResidualDelaySNN(128, 128, 3, max_delay=8, n_days=4),
              "GRU 64x2": GRUDecoder(128, 64, 2, n_days=4)}
    times = {}
    for name, model in models.items():
        def step(model=model) -> None:
            model.zero_grad(set_to_none=True)
            ctc_loss(model(batch.x, batch.day), batch.targets, batch.lengths).backward()

        times[name] = measure.timeit(step, repeats=args.repeats).median
    gru = times["GRU 64x2"]
    print("| model | core params | step (ms) | / GRU |")
    print("|---|---|---|---|")
    for name, model in models.items():
        print(f"| {name} | {count_core_params(model):,} | {times[name] * 1e3:.0f} | {times[name] / gru:.2f}x |")
    bench_sops(models["SNN D=8"], batch)


def bench_sops(model: ResidualDelaySNN, batch) -> None:
    print("\n## SOPs: ours vs NeuroBench's single_layer_MACs (same spike tensors, per delayed layer)")
    ours = estimate_energy(model, batch.x, batch.day, lengths=batch.lengths)
    print(f"ours: {ours['sops_per_bin']:.0f} SOPs/bin, {ours['macs_per_bin']:.0f} MACs/bin, "
          f"{ours['joules_per_bin'] * 1e9:.1f} nJ/bin, spike rate {ours['spike_rate']:.3f}")
    try:
        from neurobench.metrics.utils.layers import single_layer_MACs
    except ImportError:
        print("neurobench not installed: peer row skipped (pip install neurobench)")
        return
    with torch.no_grad():
        _, spikes = model(batch.x, batch.day, return_spikes=True)
    mask = (torch.arange(batch.x.shape[1])[None] < batch.lengths[:, None]).unsqueeze(-1)
    h, inputs = spikes[0], []
    for s in spikes[1:]:
        inputs.append(h)
        h = h + s
    inputs.append(h)
    layers = list(model.synapses) + [model.readout]
    total_nb = 0
    for inp, layer in zip(inputs, layers):
        lin = nn.Linear(layer.in_features, layer.out_features)
        flat = (inp * mask)[mask.expand_as(inp)].view(-1, layer.in_features)
        ops, spiking = single_layer_MACs(flat, lin)
        total_nb += ops
    print(f"neurobench: {total_nb / int(mask.sum()):.0f} ops/bin on the delayed layers "
          f"(ours counts SEW-ADD sums with multiplicity; NeuroBench counts nonzero inputs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--time", type=int, default=120, help="time bins per sequence")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with torch_threads(args.threads):
        bench_delayed_linear(args)
        bench_lif(args)
        bench_models(args)


if __name__ == "__main__":
    main()
