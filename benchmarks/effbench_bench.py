"""Selection time and RMSE, side by side: mRMR vs tinyBenchmarks IRT vs anchor points, same splits.

    .venv/bin/python benchmarks/effbench_bench.py [--datasets ifeval mmlu] [--M 30] [--seeds 3]
                                                  [--ref-steps 2000]

For every (dataset, seed) one binned split is drawn and every selector runs on exactly that split.
Reported per method: selection wall time (s) and its ratio to mRMR's, target RMSE (pp) of the
method's own estimator and of the KRR refit ("++"). Timings are noisy on a shared machine: read
the ratios within one run. (The spec's peer, benchpred, is not installed here; its random /
anchor-points baselines correspond to our RandomSelector / AnchorPointsSelector.)
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from neurips26.data import load_effbench
from neurips26.effbench import (
    AnchorPointsSelector,
    IRTSelector,
    KRRPredictor,
    MRMRSelector,
    RandomSelector,
    binned_split,
    evaluate,
)


def _methods(frac: float, seed: int, ref_steps: int):
    return {
        "mRMR (MIQ, k=5)": MRMRSelector(frac, mi_k=5, random_state=seed),
        "AnchorPts (PAM)": AnchorPointsSelector(frac, random_state=seed),
        "IRT lean (1-D, L-BFGS)": IRTSelector(frac, random_state=seed),
        f"IRT ref (10-D, Adam {ref_steps})": IRTSelector(frac, dims=10, optimizer="adam", steps=ref_steps,
                                                         random_state=seed),
        "Random": RandomSelector(frac, random_state=seed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["ifeval", "mmlu", "openllm_math"])
    parser.add_argument("--M", type=int, default=30, help="source models")
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--ref-steps", type=int, default=2000)
    args = parser.parse_args()

    times: dict[str, list[float]] = {}
    rmse_native: dict[str, list[float]] = {}
    rmse_pp: dict[str, list[float]] = {}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm = (np.random.default_rng(0).random((20, 30)) < 0.5).astype(float)
        for selector in _methods(0.2, 0, 5).values():  # imports (torch, sklearn) outside the timings
            selector.fit(warm)
        for name in args.datasets:
            S = load_effbench(name)[0].astype(np.float64)
            S = S[S.sum(1) > 0]
            y = S.mean(1)
            for seed in range(args.seeds):
                src, tgt = binned_split(y, args.M, rng=np.random.default_rng([seed, args.M]))
                for label, selector in _methods(args.budget, seed, args.ref_steps).items():
                    start = time.perf_counter()
                    selector.fit(S[src])
                    times.setdefault(label, []).append(time.perf_counter() - start)
                    idx = selector.selected_
                    native = selector.native_predictor()
                    pred = np.clip(native.predict(S[tgt][:, idx]), 0, 1)
                    rmse_native.setdefault(label, []).append(evaluate(y[tgt], pred)["rmse_pp"])
                    krr = KRRPredictor().fit(S[src][:, idx], y[src])
                    pred = np.clip(krr.predict(S[tgt][:, idx]), 0, 1)
                    rmse_pp.setdefault(label, []).append(evaluate(y[tgt], pred)["rmse_pp"])
                print(f"  {name} seed {seed} done", flush=True)

    base = float(np.mean(times["mRMR (MIQ, k=5)"]))
    header = f"{'method':34s} {'select s':>9s} {'x mRMR':>8s} {'RMSE native':>12s} {'RMSE ++':>9s}"
    print(f"\ndatasets {', '.join(args.datasets)}; M = {args.M}; n = {args.budget:.0%}; {args.seeds} seeds "
          f"(mean over dataset x seed)\n{header}\n{'-' * len(header)}")
    for label in times:
        t = float(np.mean(times[label]))
        print(f"{label:34s} {t:9.3f} {t / base:8.1f} {np.mean(rmse_native[label]):12.2f} "
              f"{np.mean(rmse_pp[label]):9.2f}")


if __name__ == "__main__":
    main()
