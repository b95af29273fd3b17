"""EMC vs the GCAL port: time and peak memory of each domain's adaptation as the stream grows.

One stream, both methods from the same source GCN; for domain t = 1..T we record the adaptation's
process CPU time, wall time and peak tensor bytes (dispatch-level tracking in a shadow pass, or the
CUDA allocator's peak on GPU). EMC's cost should stay flat in t; GCAL replays every stored memory
through its O(m^2) edge generator, so its cost grows with t. Ratios are within one run; absolute times
on a shared CPU are noisy.

    .venv/bin/python benchmarks/emc_bench.py --dataset csbm --n-nodes 1000 --domains 20
    .venv/bin/python benchmarks/emc_bench.py --dataset cora --domains 8
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

from neurips26.emc import EMC, GCAL, continual_eval, csbm_stream, planetoid_shift_stream, train_source_gnn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("csbm", "cora", "citeseer"), default="csbm")
    parser.add_argument("--n-nodes", type=int, default=1000, help="CSBM nodes per domain")
    parser.add_argument("--domains", type=int, default=12, help="stream length T")
    parser.add_argument("--gcal-epochs", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    if args.domains < 1 or args.n_nodes < 10 or args.gcal_epochs < 1:
        print("emc_bench: --domains >= 1, --n-nodes >= 10 and --gcal-epochs >= 1 required", file=sys.stderr)
        return 2
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if args.dataset == "csbm":
        stream = csbm_stream(n_domains=args.domains, n_nodes=args.n_nodes, seed=args.seed)
    else:
        stream = planetoid_shift_stream(args.dataset, n_domains=args.domains, seed=args.seed)
    dev = torch.device(args.device)
    stream = [g.to(dev) for g in stream]
    n_classes = int(stream[0].y.max()) + 1
    model = train_source_gnn(stream[0], hidden=args.hidden, epochs=100, seed=args.seed).to(dev)
    results = {
        "EMC": continual_eval(EMC(model, n_classes).fit_source(stream[0]), stream[1:]),
        "GCAL": continual_eval(GCAL(model, epochs=args.gcal_epochs, seed=args.seed), stream[1:]),
    }
    emc, gcal = results["EMC"], results["GCAL"]
    times = {k: (r.time_s if dev.type == "cuda" else r.cpu_time_s) for k, r in results.items()}
    label = "wall s" if dev.type == "cuda" else "CPU s"
    print(f"# {args.dataset}, {len(stream) - 1} domains, device {dev}, GCAL {args.gcal_epochs} epochs/domain")
    print(f"| domain t | EMC {label} | GCAL {label} | time ratio | EMC peak MB | GCAL peak MB | memory ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for t in range(len(stream) - 1):
        te, tg = times["EMC"][t], times["GCAL"][t]
        me, mg = emc.peak_bytes[t], gcal.peak_bytes[t]
        print(f"| {t + 1} | {te:.4f} | {tg:.3f} | {tg / te:.1f}x | {me / 1e6:.2f} | {mg / 1e6:.2f} | "
              f"{mg / me:.1f}x |")
    for k, r in results.items():
        tt = np.asarray(times[k])
        half = max(1, len(tt) // 2)
        print(f"{k}: AP {r.average_accuracy:.3f}, AF {r.forgetting:.3f}; median time first half "
              f"{np.median(tt[:half]):.4f} s, second half {np.median(tt[half:]) if len(tt) > 1 else tt[0]:.4f} s; "
              f"peak first {r.peak_bytes[0] / 1e6:.2f} MB, last {r.peak_bytes[-1] / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
