"""Side by side on the ``neurips26.bench`` harness (writes results/routing/bench.json), TSP10 by default:

* deep vs wide at equal parameters (32x8 vs 64x2): greedy latency at batch 1 and 256 and one training step
  (interleaved pairs, 1 thread, process clock), FLOPs per tour in closed form;
* our 32x8 decoder trained ``--train-steps`` supervised steps (Held-Karp labels) against the classical
  references on the same 200 test instances: farthest insertion (FI) and FI + best-improvement 2-opt (gap and
  CPU time), greedy and x8 multi-start; and on TSPLIB n <= 100 (nint distances, proven optima), greedy;
* RL4CO's POMO (the real peer, where ``rl4co`` is importable: ``pip install rl4co==0.7.0``): trained by its
  own REINFORCE loss with the shared baseline for the same CPU seconds as our model, then both decode the same
  test instances with x8 multi-start (gap and CPU time). An equal-CPU comparison at a tiny budget, not the
  paper's setting (POMO is meant for hours of GPU training).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/routing_bench.py [--n 10] [--train-steps 1200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from neurips26.bench import Bench
from neurips26.claims import torch_threads
from neurips26.data import DatasetNotFoundError, load_tsplib_small
from neurips26.routing import (
    DecoderConfig,
    TSPDecoderOnly,
    farthest_insertion_tours,
    greedy_construct,
    make_tsp_instances,
    multi_start_construct,
    optimality_gap,
    solve_tsp_reference,
    tour_flops,
    tour_length,
    train_supervised,
    two_opt,
)
from neurips26.routing.rl4co_peer import RL4COPOMO, rl4co_available


def _gap(lengths, ref) -> float:
    """Mean gap (%); a tour that equals the optimum can come out at -1e-14 % by float rounding: that is 0."""
    gap = float(optimality_gap(np.asarray(lengths, dtype=np.float64), ref).mean())
    return 0.0 if -1e-9 < gap < 0 else gap


def _solved(lengths, ref) -> int:
    """Instances whose tour is optimal (to 1e-9 relative)."""
    return int((np.asarray(lengths, dtype=np.float64) <= np.asarray(ref, dtype=np.float64) * (1 + 1e-9)).sum())


def _cpu(fn) -> tuple[float, object]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10, help="cities per instance")
    ap.add_argument("--train-steps", type=int, default=1200, help="supervised steps of our 32x8 model")
    ap.add_argument("--n-test", type=int, default=200)
    ap.add_argument("--tsplib-max-n", type=int, default=100)
    args, rest = ap.parse_known_args()
    bench = Bench("routing", description=f"deep 32x8 vs wide 64x2 (equal parameters), our trained 32x8 vs "
                  f"farthest insertion (+2-opt) and RL4CO POMO (equal CPU training), TSP{args.n}", argv=rest)
    n = args.n
    backend = "exact" if n <= 12 else "auto"
    X_train = make_tsp_instances(4000, n, seed=0)
    tours = solve_tsp_reference(X_train, backend, runs=1)
    X_test = make_tsp_instances(args.n_test, n, seed=1)
    ref = tour_length(X_test, solve_tsp_reference(X_test, backend))
    with torch_threads(bench.threads):
        deep_cfg, wide_cfg = DecoderConfig(32, 8), DecoderConfig(64, 2)
        torch.manual_seed(0)
        deep, wide = TSPDecoderOnly(deep_cfg), TSPDecoderOnly(wide_cfg)
        note = (f"equal parameters ({deep.num_params():,} vs {wide.num_params():,}); FLOPs/tour "
                f"{tour_flops(deep_cfg, n):,} vs {tour_flops(wide_cfg, n):,}")
        for b in (1, 256):
            Xb = make_tsp_instances(b, n, seed=2)
            bench.compare(f"greedy decode, batch {b}: 32x8 (deep) vs 64x2 (wide)",
                          ours=lambda Xb=Xb: greedy_construct(deep, Xb), peer=lambda Xb=Xb: greedy_construct(wide, Xb),
                          peer_name="64x2 (wide, ours)", peer_kind="ours", flops=b * tour_flops(deep_cfg, n),
                          note=note)

        def step(model):
            return lambda: train_supervised(model, X_train, tours, steps=1, batch_size=128, lr=1e-4, warmup_steps=1)

        bench.compare("one training step, batch 128: 32x8 vs 64x2", ours=step(deep), peer=step(wide),
                      peer_name="64x2 (wide, ours)", peer_kind="ours", note=note)

        # our model, trained; then the classical references on the same instances
        torch.manual_seed(0)
        model = TSPDecoderOnly(deep_cfg)
        train_s, _ = _cpu(lambda: train_supervised(model, X_train, tours, steps=args.train_steps, batch_size=128,
                                                   lr=3e-3, seed=0))
        greedy_s, (_, g_len) = _cpu(lambda: greedy_construct(model, X_test))
        x8_s, (_, x8_len) = _cpu(lambda: multi_start_construct(model, X_test, augment=True))
        fi_s, fi = _cpu(lambda: farthest_insertion_tours(X_test))
        opt_s, fi2 = _cpu(lambda: two_opt(X_test, fi))
        ours_greedy, ours_x8 = _gap(g_len, ref), _gap(x8_len, ref)
        fi_gap, fi2_gap = _gap(tour_length(X_test, fi), ref), _gap(tour_length(X_test, fi2), ref)
        trained = f"32x8 after {args.train_steps} supervised steps ({train_s:.0f} CPU-s)"
        bench.count(f"TSP{n} test gap: 32x8 greedy vs farthest insertion", ours=ours_greedy, peer=fi_gap,
                    peer_name="farthest insertion (ours)", peer_kind="ours", unit="mean gap to optimum (%)",
                    note=f"{trained}; CPU-s for {args.n_test} instances: ours {greedy_s:.2f}, FI {fi_s:.2f}")
        bench.count(f"TSP{n} test gap: 32x8 greedy vs FI + 2-opt", ours=ours_greedy, peer=fi2_gap,
                    peer_name="FI + 2-opt (ours)", peer_kind="ours", unit="mean gap to optimum (%)",
                    note=f"{trained}; CPU-s: ours {greedy_s:.2f}, FI + 2-opt {fi_s + opt_s:.2f}")
        bench.count(f"TSP{n} test: 32x8 x8 multi-start vs FI + 2-opt, optimal tours", ours=_solved(x8_len, ref),
                    peer=_solved(tour_length(X_test, fi2), ref), peer_name="FI + 2-opt (ours)", peer_kind="ours",
                    unit=f"instances solved to the proven optimum (of {args.n_test})", lower_is_better=False,
                    note=f"{trained}; {8 * n} rollouts per instance; mean gap ours {ours_x8:.3g} %, FI + 2-opt "
                         f"{fi2_gap:.3g} %; CPU-s: ours {x8_s:.2f}, FI + 2-opt {fi_s + opt_s:.2f}")
        bench.compare(f"TSP{n}, {args.n_test} instances: 32x8 greedy vs farthest insertion (time)",
                      ours=lambda: greedy_construct(model, X_test), peer=lambda: farthest_insertion_tours(X_test),
                      peer_name="farthest insertion (ours, numpy)", peer_kind="ours")
        _tsplib_rows(bench, model, args.tsplib_max_n, trained)
        _rl4co_rows(bench, n, X_test, ref, train_s, ours_x8, x8_s, model, x8_len)
    bench.write()


def _tsplib_rows(bench: Bench, model, max_n: int, trained: str) -> None:
    try:
        insts = [i for i in load_tsplib_small() if i["n"] <= max_n]
    except DatasetNotFoundError as err:
        print(f"TSPLIB rows left out: {err}")
        return
    ours, fi_g, fi2_g = [], [], []
    for inst in insts:
        c = np.asarray(inst["coords"], dtype=np.float64)
        x = (c - c.min(0)) / (c.max(0) - c.min(0)).max()  # unit square, aspect kept, for the model
        tour, _ = greedy_construct(model, x[None])
        fi = farthest_insertion_tours(c[None])
        for out, t in ((ours, tour.numpy()), (fi_g, fi), (fi2_g, two_opt(c[None], fi))):
            out.append(float(optimality_gap(tour_length(c[None], t, rounding="nint_half_up"),
                                            [inst["optimal_cost"]])[0]))
    names = ", ".join(i["name"] for i in insts)
    for peer, gaps in (("farthest insertion (ours)", fi_g), ("FI + 2-opt (ours)", fi2_g)):
        bench.count(f"TSPLIB n <= {max_n} ({len(insts)} instances) mean gap: 32x8 greedy vs {peer.split(' (')[0]}",
                    ours=float(np.mean(ours)), peer=float(np.mean(gaps)), peer_name=peer, peer_kind="ours",
                    unit="mean gap to the proven optimum (%)",
                    note=f"{trained} on TSP10 (no fine-tuning: a size-generalisation test); {names}")


def _rl4co_rows(bench: Bench, n: int, X_test, ref, train_s: float, ours_x8: float, x8_s: float, model,
                x8_len) -> None:
    if not rl4co_available():
        print("rl4co is not installed (pip install rl4co==0.7.0): the POMO rows are left out")
        return
    import rl4co

    peer = RL4COPOMO(n, seed=0)
    res = peer.train(steps=100_000, batch_size=64, lr=1e-4, seed=0, max_seconds=train_s)
    solve_s, (_, p_len) = _cpu(lambda: peer.solve(X_test))
    pomo_gap = _gap(p_len, ref)
    info = (f"rl4co {rl4co.__version__} POMO ({peer.num_params():,} parameters, RL4CO defaults, Adam 1e-4, batch 64 "
            f"x {n} starts) trained {res.steps} REINFORCE steps in {res.seconds:.0f} CPU-s, the same CPU time as ours")
    bench.count(f"TSP{n} test after equal CPU training: 32x8 vs RL4CO POMO, both x8 multi-start, optimal tours",
                ours=_solved(x8_len, ref), peer=_solved(p_len, ref), peer_name="RL4CO POMO", peer_kind="real",
                unit=f"instances solved to the proven optimum (of {len(X_test)})", lower_is_better=False,
                note=f"{info}; mean gap ours {ours_x8:.3g} %, POMO {pomo_gap:.3g} %; decode CPU-s for "
                     f"{len(X_test)} instances: ours {x8_s:.2f}, POMO {solve_s:.2f}")
    Xs = X_test[:50]
    bench.compare(f"TSP{n}, 50 instances, x8 multi-start decode: 32x8 vs RL4CO POMO (time)",
                  ours=lambda: multi_start_construct(model, Xs, augment=True), peer=lambda: peer.solve(Xs),
                  peer_name="RL4CO POMO", peer_kind="real",
                  note="POMO encodes once per instance and decodes with a light pointer; ours re-runs 8 blocks "
                       "every step")


if __name__ == "__main__":
    sys.exit(main())
