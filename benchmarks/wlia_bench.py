"""WLIA on the ``neurips26.bench`` harness: the server-side cost of one attack round (observe every client's update,
infer every label distribution) for WLIA against LLG's row-sum and the bias-analytic attack (our
re-implementations: neither ships as a package) and against the bare numpy row norms it is built on (its floor);
the client's RNR training overhead against plain cross-entropy training; the scaling of WLIA's round in the number
of clients; and, with ``--flower``, our in-process FedAvg loop against Flower's simulation engine (Ray; the real
peer). Writes results/wlia/bench.json (1 thread, process clock, interleaved pairs, t-interval on the log ratio).

    .venv/bin/python benchmarks/wlia_bench.py [--repeats 7] [--flower]

ours / limit on the attack rows: the bytes of the local last-layer weights read once (K·C·(H+1) float32) against the
copy rate. The Flower rows are one wall-clock run each (Ray's workers are other processes, which a process clock
cannot see; Ray's start-up included) and are kept as counts, not interleaved timings.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from neurips26.bench import Bench
from neurips26.wlia import WLIA, BiasAnalytic, LLGRowSum, RNRPenalty, local_train, make_model


def _updates(n_clients: int, C: int, H: int) -> tuple[dict, list[dict]]:
    g = torch.Generator().manual_seed(0)
    glob = {"fc.weight": torch.randn(C, H, generator=g), "fc.bias": torch.randn(C, generator=g)}
    return glob, [{k: v + 0.01 * torch.randn(v.shape, generator=g) for k, v in glob.items()} for _ in range(n_clients)]


def _round(make, glob: dict, locals_: list[dict]):
    def one_round() -> None:
        attack = make()
        for k, sd in enumerate(locals_):
            attack.observe(k, 1, glob, sd)
        attack.infer_all()

    return one_round


def bench_attacks(bench: Bench) -> None:
    for n_clients, C, H in [(10, 10, 64), (100, 10, 64), (100, 100, 512)]:
        glob, locals_ = _updates(n_clients, C, H)
        wlia = _round(WLIA, glob, locals_)
        nbytes = 4.0 * n_clients * C * (H + 1)
        setting = f"K={n_clients} C={C} H={H}"

        def bare(glob=glob, locals_=locals_):
            ref = np.linalg.norm(glob["fc.weight"].numpy(), axis=1)
            return [np.linalg.norm(sd["fc.weight"].numpy(), axis=1) - ref for sd in locals_]

        bench.compare(f"{setting}: WLIA round vs bare numpy row norms", ours=wlia, peer=bare,
                      peer_name="numpy row norms of every update (WLIA's floor)", peer_kind="ours",
                      bytes_moved=nbytes, note="speed-up < 1: WLIA's bookkeeping over the bare arithmetic")
        for name, make in (("LLG row-sum", LLGRowSum), ("bias-analytic", BiasAnalytic)):
            bench.compare(f"{setting}: WLIA round vs {name}", ours=wlia, peer=_round(make, glob, locals_),
                          peer_name=f"{name} attack", peer_kind="ours", bytes_moved=nbytes)

    def time_at(k: float) -> float:
        glob, locals_ = _updates(int(k), 10, 64)
        return bench.time(_round(WLIA, glob, locals_), repeats=5)

    bench.scaling("WLIA round time in the number of clients K (C=10, H=64)", sizes=[25, 100, 400, 1600],
                  time_of=time_at, claimed="O(K·C·H) -> slope 1 in K")


def bench_rnr(bench: Bench) -> None:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = torch.as_tensor(X / 16.0, dtype=torch.float32)[:400]
    y = torch.as_tensor(y, dtype=torch.int64)[:400]
    for kind in ("logistic", "mlp-relu"):
        def train(penalty, kind=kind):
            model = make_model(kind, 64, 10, seed=0)
            local_train(model, X, y, epochs=2, lr=0.05, batch_size=32, seed=0, penalty=penalty, penalty_key=(0, 1))

        bench.compare(f"client local training ({kind}, 400 digits x 2 epochs, batch 32): CE + RNR vs plain CE",
                      ours=lambda train=train: train(RNRPenalty(lam=0.2, spread=0.5, seed=0)),
                      peer=lambda train=train: train(None), peer_name="plain cross-entropy local training",
                      peer_kind="ours", note="speed-up < 1 is RNR's overhead on the client")


def bench_flower(bench: Bench) -> None:
    from sklearn.datasets import load_digits

    from neurips26.wlia import dirichlet_partition, run_flower_simulation, simulate_fedavg

    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    parts = dirichlet_partition(y, 4, 0.5, seed=0)

    def model():
        return make_model("mlp-relu", 64, 10, seed=0)

    for rounds in (2, 5):
        t0 = time.perf_counter()
        simulate_fedavg(model, X, y, parts, rounds=rounds, attacks=[WLIA()])
        local = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_flower_simulation(model, X, y, parts, rounds=rounds, attacks=[WLIA()])
        flower = time.perf_counter() - t0
        bench.count(f"FedAvg + WLIA, digits, 4 clients, {rounds} rounds: in-process loop vs Flower simulation",
                    ours=local, peer=flower, peer_name="Flower simulation engine (Ray, start-up included)",
                    peer_kind="real", unit="wall seconds, one run")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flower", action="store_true", help="also time Flower's simulation engine (Ray)")
    args, _ = ap.parse_known_args()
    bench = Bench("wlia", description="server-side attack round (WLIA vs LLG row-sum, bias-analytic, bare norms), "
                  "RNR's client overhead, WLIA's scaling in K" + (", in-process FedAvg vs Flower" if args.flower
                                                                   else ""), argv=sys.argv[1:])
    bench_attacks(bench)
    bench_rnr(bench)
    if args.flower:
        bench_flower(bench)
    bench.write()


if __name__ == "__main__":
    main()
