"""Deep vs wide decoders at equal parameters: greedy latency (batch 1 and 256), training step time, FLOPs,
and (with --train-steps) greedy gaps; the POMO-style light decoder and, where installed, RL4CO's POMO
side by side.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/routing_bench.py [--n 20] [--train-steps 0] [--device cpu]

Prints one row per model (params, FLOPs per tour, latency, step time, achieved GFLOP/s, gap) and the
deep/wide ratios of each equal-parameter pair. rl4co is not a dependency of the project (no extra): when
it is importable its POMO (~1M parameters, TSP50 by default) is timed on the same instances; its gap is only
meaningful with a trained checkpoint (--rl4co-ckpt), otherwise the row says "untrained".
"""

from __future__ import annotations

import argparse
import importlib.util

import numpy as np
import torch

from neurips26.claims import measure, torch_threads
from neurips26.routing import (
    POMOLightDecoder,
    TSPDecoderOnly,
    equal_param_pairs,
    greedy_construct,
    make_tsp_instances,
    optimality_gap,
    scaling_grid,
    solve_tsp_reference,
    tour_flops,
    tour_length,
    train_supervised,
)


def _step_time(model, X, tours, batch, device):
    def step():
        train_supervised(model, X, tours, steps=1, batch_size=batch, lr=1e-4, seed=0, warmup_steps=1)
    return measure.timeit(step, warmup=1, repeats=5, clock="wall").median


def _latency(model, X, device):
    def run():
        greedy_construct(model, X)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    return measure.timeit(run, warmup=1, repeats=5 if len(X) == 1 else 3, clock="wall").median


def _rl4co_row(args, ref_solver):
    if importlib.util.find_spec("rl4co") is None:
        return None, "rl4co not installed: POMO side-by-side skipped (`pip install rl4co`, not a project extra)"
    try:
        from rl4co.envs import TSPEnv
        from rl4co.models.zoo import POMO

        env = TSPEnv(generator_params={"num_loc": args.rl4co_n})
        model = POMO.load_from_checkpoint(args.rl4co_ckpt) if args.rl4co_ckpt else POMO(env)
        policy = model.policy.to(args.device).eval()
        td = env.reset(batch_size=[args.batch]).to(args.device)
        locs = td["locs"].detach().cpu().numpy()

        def run():
            with torch.no_grad():
                return policy(td.clone(), env, phase="test", decode_type="greedy")

        t = measure.timeit(run, warmup=1, repeats=3, clock="wall").median
        length = -run()["reward"].detach().cpu().numpy()
        ref = tour_length(locs, ref_solver(locs))
        gap = float(optimality_gap(length, ref).mean())
        params = sum(p.numel() for p in policy.parameters())
        return {"model": "rl4co POMO" + ("" if args.rl4co_ckpt else " (untrained)"), "params": params,
                "n": args.rl4co_n, f"latency_b{args.batch}_s": t, "gap_pct": gap}, None
    except Exception as err:  # the API moves between versions; say what failed
        return None, f"rl4co POMO side-by-side failed: {err!r}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20, help="cities per instance")
    ap.add_argument("--widths", type=int, nargs="+", default=[32, 64, 128])
    ap.add_argument("--depths", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--batch", type=int, default=256, help="large greedy batch")
    ap.add_argument("--train-batch", type=int, default=128)
    ap.add_argument("--train-steps", type=int, default=0, help="train each model this many steps for gaps")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rl4co-n", type=int, default=50)
    ap.add_argument("--rl4co-ckpt", default=None)
    args = ap.parse_args()

    device = args.device
    X_train = make_tsp_instances(2000 if args.train_steps else 512, args.n, seed=0)
    tours = solve_tsp_reference(X_train, "auto", runs=1)
    X_test = make_tsp_instances(args.batch, args.n, seed=1)
    ref = tour_length(X_test, solve_tsp_reference(X_test, "auto"))
    grid = scaling_grid(args.widths, args.depths, n_nodes=args.n)
    models = [(g.label, TSPDecoderOnly(g.config), tour_flops(g.config, args.n)) for g in grid]
    models.append(("pomo-light 128x6", POMOLightDecoder(d_model=128, n_layers=6), None))
    rows = {}
    with torch_threads(1) if device == "cpu" else _null():
        for label, model, flops in models:
            torch.manual_seed(0)
            model = model.to(device)
            row = {"params": model.num_params(), "tour_flops": flops}
            if args.train_steps:
                train_supervised(model, X_train, tours, steps=args.train_steps, batch_size=args.train_batch,
                                 lr=5e-4, seed=0)
                _, lengths = greedy_construct(model, X_test)
                row["gap_pct"] = float(optimality_gap(lengths.double().numpy(), ref).mean())
            row["latency_b1_s"] = _latency(model, X_test[:1], device)
            row[f"latency_b{args.batch}_s"] = _latency(model, X_test, device)
            row["train_step_s"] = _step_time(model, X_train, tours, args.train_batch, device)
            if flops:
                row[f"gflops_per_s_b{args.batch}"] = flops * args.batch / row[f"latency_b{args.batch}_s"] / 1e9
            rows[label] = row
            print(label, {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items()}, flush=True)

    print(f"\n| model | params | FLOPs/tour | greedy b=1 (ms) | greedy b={args.batch} (ms) | train step (ms) "
          "| gap (%) |")
    print("|---|---|---|---|---|---|---|")
    for label, r in rows.items():
        gap = f"{r['gap_pct']:.2f}" if "gap_pct" in r else "-"
        fl = f"{r['tour_flops'] / 1e6:.2f}M" if r["tour_flops"] else "-"
        print(f"| {label} | {r['params']:,} | {fl} | {r['latency_b1_s'] * 1e3:.1f} | "
              f"{r[f'latency_b{args.batch}_s'] * 1e3:.1f} | {r['train_step_s'] * 1e3:.1f} | {gap} |")
    print("\nDeep / wide at equal parameters (ratio > 1: the deep model is slower or worse):")
    for a, b in equal_param_pairs(grid):
        ra, rb = rows[a.label], rows[b.label]
        parts = [f"params {a.n_params / b.n_params:.3f}", f"FLOPs/tour {a.tour_flops / b.tour_flops:.2f}",
                 f"latency b=1 {ra['latency_b1_s'] / rb['latency_b1_s']:.2f}",
                 f"latency b={args.batch} {ra[f'latency_b{args.batch}_s'] / rb[f'latency_b{args.batch}_s']:.2f}",
                 f"train step {ra['train_step_s'] / rb['train_step_s']:.2f}"]
        if "gap_pct" in ra:
            parts.append(f"gap {ra['gap_pct'] / max(rb['gap_pct'], 1e-9):.2f}")
        print(f"  {a.label} / {b.label}: " + ", ".join(parts))
    pomo, msg = _rl4co_row(args, lambda locs: solve_tsp_reference(locs, "auto"))
    if pomo is None:
        print("\n" + msg)
    else:
        ours = rows[grid[-1].label]
        print(f"\n{pomo['model']} (TSP{pomo['n']}, {pomo['params']:,} params): latency b={args.batch} "
              f"{pomo[f'latency_b{args.batch}_s'] * 1e3:.1f} ms, gap {pomo['gap_pct']:.2f}%")
        print(f"  ratio ours {grid[-1].label} / POMO: latency "
              f"{ours[f'latency_b{args.batch}_s'] / pomo[f'latency_b{args.batch}_s']:.2f} (note: TSP{args.n} vs "
              f"TSP{pomo['n']}; run with --n {pomo['n']} for equal sizes)"
              + (f", gap {ours['gap_pct'] / max(pomo['gap_pct'], 1e-9):.2f}" if "gap_pct" in ours else ""))


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
