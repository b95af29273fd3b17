"""mRMR++ against benchpred's methods as their authors ship them (the real peer, ``pip install --no-deps
benchpred==1.0.0``) on the ``neurips26.bench`` harness: coreset-selection CPU time (interleaved pairs) and target
RMSE (deterministic given the split), on the same split of the models, with the same coreset size n = budget x
questions. Writes results/effbench/bench.json (1 thread, process clock, t-interval on the log ratio).

    .venv/bin/python benchmarks/effbench_bench.py [--datasets mmlu ifeval] [--budget 0.1] [--seed 0] [--repeats 7]

Per dataset (the standard uniformly random 50/50 split of the models, seeded):

* ours: mRMR (MIQ, mi_k = 5) refitted with our degree-2 KRR ("++"), and a random coreset with the same KRR;
* benchpred 1.0.0 (``benchpred.all_methods``, default arguments): random sampling, random + RidgeCV, anchor points
  (weighted and predictor), Lasso, PCA imputation, double optimisation, AIPW; each scored with its own estimator
  and, as ``<name>++``, with its coreset refitted by our KRR. A peer whose first fit takes more than
  ``--pair-limit`` CPU-seconds (benchpred's Lasso on ifeval: about a minute) is timed once, as a count.
* mRMR++ with three relevance estimators for 0/1 questions: discrete-continuous kNN (Ross 2014), KSG treating the
  answers as continuous, plug-in MI after 10 quantile bins (counts of RMSE; ours).

A scaling row fits mRMR's selection time in the coreset size n. No FLOP limit: selection is a greedy loop of
small kNN-MI estimates, not one kernel.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from neurips26.bench import Bench
from neurips26.data import load_effbench
from neurips26.effbench import KRRPredictor, MRMRSelector, RandomSelector, evaluate, random_split

#: benchpred 1.0.0 methods (label -> all_methods key), run with their shipped defaults
PEERS = {"Random": "random_sampling", "Random+Ridge": "random_sampling_and_learn",
         "AnchorPts": "anchor_points_weighted", "AnchorPts-pred": "anchor_points_predictor", "Lasso": "lasso",
         "PCA": "pca", "DoubleOpt": "double_optimize", "AIPW": "aipw"}
MI_ESTIMATORS = ("ross", "ksg", "binned")


def _matrix(name: str) -> tuple[np.ndarray, np.ndarray]:
    S, _ = load_effbench(name)
    S = S[S.sum(1) > 0].astype(np.float64)  # openllm_math has all-zero models
    return S, S.mean(1)


def _krr_rmse(S, y, src, tgt, idx) -> float:
    krr = KRRPredictor().fit(S[src][:, idx], y[src])
    return evaluate(y[tgt], np.clip(krr.predict(S[tgt][:, idx]), 0, 1))["rmse_pp"]


def bench_dataset(bench: Bench, name: str, args: argparse.Namespace, benchpred) -> None:
    S, y = _matrix(name)
    n = max(2, round(args.budget * S.shape[1]))
    src, tgt = random_split(len(y), rng=np.random.default_rng([args.seed, 5050]))
    setting = f"{name} ({S.shape[0]} models x {S.shape[1]} questions, n={n})"

    def mrmr(**kw):
        return MRMRSelector(n, mi_k=5, random_state=args.seed, **kw).fit(S[src], y[src])

    ours = _krr_rmse(S, y, src, tgt, mrmr().selected_)
    bench.count(f"{setting}: target RMSE, mRMR++ vs Random++ (same KRR)", ours=ours,
                peer=_krr_rmse(S, y, src, tgt, RandomSelector(n, random_state=args.seed).fit(S[src], y[src]).selected_),
                peer_name="random coreset + our KRR", peer_kind="ours", unit="RMSE pp")
    if benchpred is None:
        print(f"{name}: benchpred not installed: peer rows skipped (pip install --no-deps benchpred==1.0.0)")
    for label, key in ({} if benchpred is None else PEERS).items():
        def peer_fit(key=key):
            method = benchpred.all_methods[key]()
            method.fit(S[src], n, seed=args.seed)
            return method

        t0 = time.process_time()
        method = peer_fit()
        first = time.process_time() - t0
        idx = np.asarray(method.get_coreset(), dtype=np.int64)
        pred = np.clip(np.asarray(method.predict(S[tgt][:, idx]), dtype=np.float64).reshape(-1), 0, 1)
        peer_name = f"benchpred {label} ({key})"
        if first <= args.pair_limit:
            bench.compare(f"{setting}: coreset selection, mRMR vs {label}", ours=mrmr, peer=peer_fit,
                          peer_name=peer_name, peer_kind="real")
        else:
            t0 = time.process_time()
            mrmr()
            bench.count(f"{setting}: coreset selection CPU time, mRMR vs {label} (one run each)",
                        ours=time.process_time() - t0, peer=first, peer_name=peer_name, peer_kind="real",
                        unit="CPU seconds, one run", note=f"one fit over the {args.pair_limit:g} s pair limit")
        bench.count(f"{setting}: target RMSE, mRMR++ vs {label} as shipped", ours=ours,
                    peer=evaluate(y[tgt], pred)["rmse_pp"], peer_name=peer_name, peer_kind="real", unit="RMSE pp")
        bench.count(f"{setting}: target RMSE, mRMR++ vs {label}'s coreset + our KRR", ours=ours,
                    peer=_krr_rmse(S, y, src, tgt, idx), peer_name=f"{peer_name} coreset, KRR refit",
                    peer_kind="real", unit="RMSE pp")
    for est in MI_ESTIMATORS[1:]:
        bench.count(f"{setting}: target RMSE, mRMR++ with Ross MI vs {est} MI", ours=ours,
                    peer=_krr_rmse(S, y, src, tgt, mrmr(mi=est).selected_), peer_name=f"mRMR++ ({est} relevance)",
                    peer_kind="ours", unit="RMSE pp")
    if name == args.datasets[0]:
        sizes = [max(2, round(f * S.shape[1])) for f in (0.025, 0.05, 0.1, 0.2)]
        bench.scaling(f"mRMR selection time in the coreset size n ({name})", sizes=sizes,
                      time_of=lambda k: bench.time(lambda: MRMRSelector(int(k), mi_k=5, random_state=args.seed).fit(
                          S[src], y[src]), repeats=3),
                      claimed="none stated in the paper; greedy MIQ adds one question per step over all candidates "
                              "(slope 1 if a step costs the same throughout)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["mmlu", "ifeval"])
    ap.add_argument("--budget", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pair-limit", type=float, default=2.0, help="CPU-s of one peer fit above which it is timed once")
    args, _ = ap.parse_known_args()
    bench = Bench("effbench", description=f"mRMR++ vs benchpred 1.0.0's methods at their defaults, coreset "
                  f"{args.budget:.0%} of the questions, random 50/50 model split (seed {args.seed}; one split: the "
                  "RMSE rows are one draw, the claim check decides over seeds)", argv=sys.argv[1:])
    try:
        import benchpred
    except ImportError:
        benchpred = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in args.datasets:
            bench_dataset(bench, name, args, benchpred)
    bench.write()


if __name__ == "__main__":
    main()
