"""TST throughput on the ``neurips26.bench`` harness: a TST phase-1 (superposition) training step and the ablations
against an NTP step of the same Llama at equal FLOPs, and the multi-hot CE against one ``F.cross_entropy`` call
(the real torch op), PatchTrain's "s CE calls" form and the dense multi-hot reference. Writes
results/tst/bench.json (1 thread, process clock, interleaved pairs, t-interval on the log ratio).

    .venv/bin/python benchmarks/tst_bench.py [--d 128 --layers 4 --L 128 --B 16 --s 4] [--repeats 7]

Peers: the NTP step is our re-implementation of plain next-token training on the same model (``make_trainer
("ntp")``); PatchTrain (patch-level training, K = s) is ours too. A superposition step reads s x the raw tokens
of an NTP step at the same FLOPs, so raw tokens/s over NTP = s x the speed-up column (the count rows give the raw
tokens per step). ours / limit: ``flops_per_step`` (6 N BL + causal attention) against the GEMM rate. The scaling
row fits the multi-hot CE's time in s: one log-softmax and s gathers, so nearly flat.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

from neurips26.bench import Bench
from neurips26.nn import Llama, LlamaConfig
from neurips26.tst import flops_per_step, make_trainer, multi_hot_cross_entropy, multi_hot_cross_entropy_reference

ARMS = {"tst": "TST phase 1", "patch_level": "PatchTrain K=s phase 1", "output_only": "output-MCE-only phase 1",
        "input_only": "input-only phase 1"}


def _trainer(arm: str, cfg: LlamaConfig, args: argparse.Namespace):
    torch.manual_seed(0)
    model = Llama(cfg)
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    tr = make_trainer(arm, model, opt, total_steps=10_000, bag_size=args.s, superposition_fraction=0.5,
                      context_len=args.L)
    ids = torch.randint(0, args.vocab, (args.B, tr.row_len(0)), generator=torch.Generator().manual_seed(1))
    return (lambda: tr.train_step(ids)), model, args.B * tr.row_len(0)


def bench_steps(bench: Bench, args: argparse.Namespace) -> None:
    cfg = LlamaConfig(vocab_size=args.vocab, d_model=args.d, n_layers=args.layers, n_heads=4, max_seq_len=args.L)
    ntp, model, ntp_tokens = _trainer("ntp", cfg, args)
    flops = flops_per_step(model, rows=args.B, context_len=args.L)
    for arm, label in ARMS.items():
        step, _, tokens = _trainer(arm, cfg, args)
        bench.compare(f"training step, {label} vs NTP (d={args.d}, {args.layers} layers, L={args.L}, B={args.B}, "
                      f"s={args.s})", ours=step, peer=ntp, peer_name="NTP step, same model and FLOPs",
                      peer_kind="ours", flops=flops, note=f"raw tokens/step {tokens} vs NTP {ntp_tokens}: raw tokens/s "
                      f"over NTP = {tokens / ntp_tokens:g} x the speed-up")
        bench.count(f"raw tokens per training step, {label}", ours=tokens, peer=ntp_tokens, peer_name="NTP step",
                    peer_kind="ours", unit="raw tokens per step", lower_is_better=False)


def bench_loss(bench: Bench, args: argparse.Namespace) -> None:
    B, L, V, s = args.B, args.L, args.vocab, args.s
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(B, L, V, generator=g).requires_grad_(True)
    targets = torch.randint(0, V, (B, L, s), generator=g)

    def backward_of(loss_fn):
        def step() -> None:
            logits.grad = None
            loss_fn().backward()

        return step

    mce = backward_of(lambda: multi_hot_cross_entropy(logits, targets))
    peers = {"one F.cross_entropy (NTP's loss)": (
                 lambda: F.cross_entropy(logits.reshape(-1, V), targets[..., 0].reshape(-1)), "real"),
             f"mean of {s} F.cross_entropy calls (PatchTrain's form)": (
                 lambda: sum(F.cross_entropy(logits.reshape(-1, V), targets[..., k].reshape(-1))
                             for k in range(s)) / s, "ours"),
             "dense multi-hot reference": (lambda: multi_hot_cross_entropy_reference(logits, targets), "ours")}
    bytes_moved = 3.0 * 4 * B * L * V  # read logits, write and read the softmax-sized gradient
    for name, (fn, kind) in peers.items():
        bench.compare(f"loss fwd+bwd, logits [{B}, {L}, {V}], s={s}: multi_hot_cross_entropy vs {name}", ours=mce,
                      peer=backward_of(fn), peer_name=name, peer_kind=kind, bytes_moved=bytes_moved)

    def time_at(bag: float) -> float:
        tg = torch.randint(0, V, (B, L, int(bag)), generator=torch.Generator().manual_seed(2))
        return bench.time(backward_of(lambda: multi_hot_cross_entropy(logits, tg)), repeats=5)

    bench.scaling(f"multi_hot_cross_entropy fwd+bwd time in the bag size s (logits [{B}, {L}, {V}])",
                  sizes=[1, 2, 4, 8, 16], time_of=time_at, claimed="one log-softmax + s gathers: about flat (slope ~0)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--L", type=int, default=128)
    ap.add_argument("--B", type=int, default=16)
    ap.add_argument("--s", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=2048)
    args, _ = ap.parse_known_args()
    bench = Bench("tst", description=f"TST phase-1 step and ablations vs NTP at equal FLOPs; the multi-hot CE vs one "
                  f"CE, s CE calls and the dense reference (s = {args.s})", argv=sys.argv[1:])
    bench_steps(bench, args)
    bench_loss(bench, args)
    bench.write()


if __name__ == "__main__":
    main()
