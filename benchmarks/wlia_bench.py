"""WLIA benchmark: server-side attack cost per round, RNR's client training overhead, and (with
``--flower``) the in-process FedAvg loop vs Flower's simulation engine (Ray) on the same job.

    .venv/bin/python benchmarks/wlia_bench.py [--repeats 5] [--flower]

Timings are wall-clock medians on a shared 2-core CPU: compare the ratios within one run, not the
absolute numbers across runs. Not run in CI.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _table(title: str, header: tuple[str, ...], rows: list[tuple]) -> None:
    print(f"\n{title}")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))


def bench_attacks(repeats: int) -> None:
    from neurips26.wlia import WLIA, BiasAnalytic, LLGRowSum

    rows = []
    for n_clients, C, H in [(10, 10, 64), (100, 10, 64), (100, 100, 512)]:
        g = {"fc.weight": torch.randn(C, H), "fc.bias": torch.randn(C)}
        locals_ = [{k: v + 0.01 * torch.randn_like(v) for k, v in g.items()} for _ in range(n_clients)]
        def bare(g=g, locals_=locals_):
            return [np.linalg.norm(sd["fc.weight"].numpy(), axis=1) - np.linalg.norm(g["fc.weight"].numpy(), axis=1)
                    for sd in locals_]

        ref_time = _median_time(bare, repeats)
        for name, make in (("WLIA", WLIA), ("LLG row-sum", LLGRowSum), ("bias-analytic", BiasAnalytic)):
            def one_round(make=make, g=g, locals_=locals_):
                attack = make()
                for k, sd in enumerate(locals_):
                    attack.observe(k, 1, g, sd)
                attack.infer_all()

            t = _median_time(one_round, repeats)
            rows.append((f"K={n_clients} C={C} H={H}", name, f"{1e3 * t:.2f}", f"{1e6 * t / n_clients:.1f}",
                         f"{t / ref_time:.1f}x" if name == "WLIA" else ""))
    _table("Attack cost per round (observe every client + infer all)",
           ("setting", "attack", "ms/round", "us/client", "WLIA vs bare numpy norms"), rows)


def bench_rnr(repeats: int) -> None:
    from sklearn.datasets import load_digits

    from neurips26.wlia import RNRPenalty, local_train, make_model

    X, y = load_digits(return_X_y=True)
    X = torch.as_tensor(X / 16.0, dtype=torch.float32)[:400]
    y = torch.as_tensor(y, dtype=torch.int64)[:400]
    rows = []
    for kind in ("logistic", "mlp-relu"):
        def train(penalty, kind=kind):
            model = make_model(kind, 64, 10, seed=0)
            local_train(model, X, y, epochs=2, lr=0.05, batch_size=32, seed=0, penalty=penalty, penalty_key=(0, 1))

        plain = _median_time(lambda: train(None), repeats)
        rnr = _median_time(lambda: train(RNRPenalty(lam=0.2, spread=0.5, seed=0)), repeats)
        rows.append((kind, f"{1e3 * plain:.1f}", f"{1e3 * rnr:.1f}", f"{rnr / plain:.2f}x"))
    _table("Client local training, 400 samples x 2 epochs, batch 32 (RNR overhead)",
           ("model", "plain CE ms", "CE + RNR ms", "ratio"), rows)


def bench_flower() -> None:
    from sklearn.datasets import load_digits

    from neurips26.wlia import WLIA, dirichlet_partition, make_model, simulate_fedavg
    from neurips26.wlia.flower import run_flower_simulation

    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    parts = dirichlet_partition(y, 4, 0.5, seed=0)

    def model():
        return make_model("mlp-relu", 64, 10, seed=0)

    rows = []
    for rounds in (2, 5):
        t0 = time.perf_counter()
        simulate_fedavg(model, X, y, parts, rounds=rounds, attacks=[WLIA()])
        t_local = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_flower_simulation(model, X, y, parts, rounds=rounds, attacks=[WLIA()])
        t_flower = time.perf_counter() - t0
        rows.append((rounds, f"{t_local:.2f}", f"{t_flower:.2f}", f"{t_flower / t_local:.0f}x"))
    _table("FedAvg + WLIA, digits, 4 clients: in-process loop vs Flower simulation (Ray, incl. start-up)",
           ("rounds", "in-process s", "Flower/Ray s", "ratio"), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--flower", action="store_true", help="also time Flower's simulation engine (Ray)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    bench_attacks(args.repeats)
    bench_rnr(args.repeats)
    if args.flower:
        bench_flower()


if __name__ == "__main__":
    main()
