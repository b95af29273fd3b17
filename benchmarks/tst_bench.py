"""TST throughput side by side: NTP step vs TST phase-1 step (and the ablations) at equal FLOPs, and the
cost of the multi-hot CE against one cross-entropy call and against PatchTrain's "K CE calls".

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/tst_bench.py [--d 128 --layers 4 --L 128 --B 16 --s 4]

Prints two tables. Ratios are measured within one run (the machine is shared: absolute numbers are noisy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

from neurips26.nn import Llama, LlamaConfig
from neurips26.tst import (
    TSTSchedule,
    flops_per_step,
    make_trainer,
    multi_hot_cross_entropy,
    multi_hot_cross_entropy_reference,
)


def _time(fn, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_steps(args: argparse.Namespace) -> None:
    cfg = LlamaConfig(vocab_size=args.vocab, d_model=args.d, n_layers=args.layers, n_heads=4, max_seq_len=args.L)
    print(f"\n== training step, d={args.d}, layers={args.layers}, L={args.L}, B={args.B}, s={args.s}, "
          f"V={args.vocab}, threads={torch.get_num_threads()}")
    rows = [("arm (phase)", "ms/step", "raw tok/step", "raw tok/s", "tok/s ÷ NTP", "GFLOP/step")]
    base_tps = None
    for arm, label in (("ntp", "NTP"), ("tst", "TST phase 1"), ("patch_level", "PatchTrain K=s phase 1"),
                       ("output_only", "output-MCE-only phase 1"), ("input_only", "input-only phase 1")):
        torch.manual_seed(0)
        model = Llama(cfg)
        opt = torch.optim.AdamW(model.parameters(), 1e-3)
        total = 10_000
        tr = make_trainer(arm, model, opt, total_steps=total, bag_size=args.s, superposition_fraction=0.5,
                          context_len=args.L)
        n = tr.row_len(0)
        ids = torch.randint(0, args.vocab, (args.B, n))

        def step(tr=tr, ids=ids):
            tr.train_step(ids)

        sec = _time(step, args.repeats)
        tps = args.B * n / sec
        base_tps = base_tps or tps
        rows.append((label, f"{sec * 1e3:.1f}", str(args.B * n), f"{tps:,.0f}", f"{tps / base_tps:.2f}",
                     f"{flops_per_step(model, rows=args.B, context_len=args.L) / 1e9:.2f}"))
    _print(rows)
    print(f"(the superposition phase should read ≈ s = {args.s}× the raw tokens per second of NTP)")
    assert TSTSchedule(10, args.s, 0.3).raw_tokens_per_row(0, args.L) == args.s * (args.L + 1)


def bench_loss(args: argparse.Namespace) -> None:
    B, L, V, s = args.B, args.L, args.vocab, args.s
    print(f"\n== loss forward+backward, logits [{B}, {L}, {V}], s={s}")
    torch.manual_seed(0)
    logits = torch.randn(B, L, V, requires_grad=True)
    targets = torch.randint(0, V, (B, L, s))

    def one_ce():
        F.cross_entropy(logits.reshape(-1, V), targets[..., 0].reshape(-1)).backward()

    def mce():
        multi_hot_cross_entropy(logits, targets).backward()

    def k_ce_calls():  # PatchTrain's form: K separate CE calls, each with its own log-softmax
        (sum(F.cross_entropy(logits.reshape(-1, V), targets[..., k].reshape(-1)) for k in range(s)) / s).backward()

    def dense():
        multi_hot_cross_entropy_reference(logits, targets).backward()

    rows = [("loss", "ms", "÷ one CE")]
    base = None
    for name, fn in (("one F.cross_entropy (NTP)", one_ce), ("multi_hot_cross_entropy (1 log-softmax, s gathers)", mce),
                     (f"mean of {s} F.cross_entropy (PatchTrain)", k_ce_calls), ("dense multi-hot reference", dense)):
        sec = _time(fn, args.repeats)
        base = base or sec
        rows.append((name, f"{sec * 1e3:.2f}", f"{sec / base:.2f}"))
    _print(rows)


def _print(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, r in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--L", type=int, default=128)
    parser.add_argument("--B", type=int, default=16)
    parser.add_argument("--s", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    bench_steps(args)
    bench_loss(args)


if __name__ == "__main__":
    main()
