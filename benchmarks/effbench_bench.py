"""mRMR++ against benchpred's methods as their authors ship them, on the same splits; MI estimators.

    .venv/bin/python benchmarks/effbench_bench.py [--datasets mmlu ifeval] [--seeds 2] [--splits random binned]
                                                  [--irt] [--budget 0.1]

For every (split, dataset, seed) one split of the models is drawn (``random``: the standard uniformly random
50/50 split; ``binned``: M = 30 sources from 10 accuracy bins, the paper's data-poor protocol) and every
method runs on exactly that split with the same coreset size n = budget x questions:

* ours: mRMR (MIQ, mi_k = 5) and a random coreset, both refitted with our degree-2 KRR ("++");
* benchpred (``benchpred.all_methods``, default arguments): random sampling, random + RidgeCV, anchor points
  (weighted and predictor), Lasso, PCA imputation, double optimisation, AIPW, and with ``--irt`` the
  tinyBenchmarks p-IRT and gp-IRT (py-irt on pyro, 2000 epochs: slow on a shared CPU). Each is scored with
  its own estimator and, as ``<name>++``, with its coreset refitted by our KRR.

Reported per method: selection (fit) wall seconds and their ratio to mRMR's, target RMSE / MAE (pp),
Spearman and Kendall tau (target models only), and RMSE ratio peer / mRMR++. Then mRMR++ with three
relevance estimators for 0/1 questions against the continuous score: discrete-continuous kNN (Ross 2014,
``mi="ross"``), KSG treating the answers as continuous (``mi="ksg"``), plug-in MI after 10 quantile bins.
Timings are wall clock on whatever machine runs this: read the ratios within one run.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from neurips26.claims import measure
from neurips26.data import load_effbench
from neurips26.effbench import KRRPredictor, MRMRSelector, RandomSelector, binned_split, evaluate, random_split

#: benchpred 1.0.0 methods (label -> all_methods key), run with their shipped defaults
PEERS = {"bp:Random": "random_sampling", "bp:Random+Ridge": "random_sampling_and_learn",
         "bp:AnchorPts": "anchor_points_weighted", "bp:AnchorPts-pred": "anchor_points_predictor",
         "bp:Lasso": "lasso", "bp:PCA": "pca", "bp:DoubleOpt": "double_optimize", "bp:AIPW": "aipw"}
IRT_PEERS = {"bp:p-IRT": "pirt", "bp:gp-IRT": "gpirt"}
MI_ESTIMATORS = ("ross", "ksg", "binned")  # mRMR's relevance estimator for 0/1 questions vs the score


def _matrix(name):
    S, _ = load_effbench(name)
    S = S[S.sum(1) > 0].astype(np.float64)  # openllm_math has all-zero models
    return S, S.mean(1)


def _split(y, M, seed):
    return binned_split(y, M, rng=np.random.default_rng([seed, M]))


def _krr_rmse(S, y, src, tgt, idx):
    krr = KRRPredictor().fit(S[src][:, idx], y[src])
    return evaluate(y[tgt], np.clip(krr.predict(S[tgt][:, idx]), 0, 1))


def run_peer(label, S_src, S_tgt, n, seed):
    """One benchpred method as shipped: (clipped target predictions, coreset, fit wall seconds)."""
    import benchpred

    method = benchpred.all_methods[{**PEERS, **IRT_PEERS}[label]]()
    seconds = measure.time_once(lambda: method.fit(S_src, n, seed=seed), clock="wall")
    idx = np.asarray(method.get_coreset(), dtype=np.int64)
    return np.clip(np.asarray(method.predict(S_tgt[:, idx]), dtype=np.float64).reshape(-1), 0, 1), idx, seconds


KEYS = ("rmse_pp", "mae_pp", "spearman", "kendall", "select_s")


def _ours(S, y, src, tgt, n, seed, rows, base):
    for label, sel in (("mRMR++", MRMRSelector(n, mi_k=5, random_state=seed)),
                       ("Random++", RandomSelector(n, random_state=seed))):
        t = measure.time_once(lambda sel=sel: sel.fit(S[src], y[src]), clock="wall")
        rows.append({**base, "method": label, "select_s": t, **_krr_rmse(S, y, src, tgt, sel.selected_)})


def _mi(S, y, src, tgt, n, seed, rows, base):
    for est in MI_ESTIMATORS:
        sel = MRMRSelector(n, mi=est, mi_k=5, random_state=seed)
        t = measure.time_once(lambda sel=sel: sel.fit(S[src], y[src]), clock="wall")
        rows.append({**base, "method": f"mRMR++ ({est} MI)", "select_s": t,
                     **_krr_rmse(S, y, src, tgt, sel.selected_)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["mmlu", "ifeval"])
    parser.add_argument("--splits", nargs="+", default=["random", "binned"], choices=["random", "binned"])
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--irt", action="store_true", help="also benchpred's p-IRT and gp-IRT (slow)")
    args = parser.parse_args()

    peers = {**PEERS, **(IRT_PEERS if args.irt else {})}
    rows: list[dict] = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for split in args.splits:
            for name in args.datasets:
                S, y = _matrix(name)
                n = max(2, round(args.budget * S.shape[1]))
                for seed in range(args.seeds):
                    src, tgt = (random_split(len(y), rng=np.random.default_rng([seed, 5050])) if split == "random"
                                else _split(y, 30, seed))
                    base = {"split": split, "dataset": name, "seed": seed}
                    _ours(S, y, src, tgt, n, seed, rows, base)
                    for label in peers:
                        try:
                            pred, idx, t = run_peer(label, S[src], S[tgt], n, seed)
                        except Exception as exc:  # reported, the others go on
                            print(f"  {label} failed on {split}/{name}/{seed}: {type(exc).__name__}: {exc}")
                            continue
                        rows.append({**base, "method": label, "select_s": t, **evaluate(y[tgt], pred)})
                        rows.append({**base, "method": label + "++", "select_s": t, **_krr_rmse(S, y, src, tgt, idx)})
                    _mi(S, y, src, tgt, n, seed, rows, base)
                    print(f"  {split} {name} seed {seed} done ({len(src)} source / {len(tgt)} target models)",
                          flush=True)

    for split in args.splits:
        here = [r for r in rows if r["split"] == split]
        methods = list(dict.fromkeys(r["method"] for r in here))
        mean = {m: {k: float(np.nanmean([r[k] for r in here if r["method"] == m])) for k in KEYS} for m in methods}
        ref = mean["mRMR++"]
        print(f"\nsplit {split}; datasets {', '.join(args.datasets)}; n = {args.budget:.0%}; {args.seeds} seeds "
              "(mean over dataset x seed; target models only)")
        header = (f"{'method':26s} {'select s':>9s} {'x mRMR':>7s} {'RMSE pp':>8s} {'MAE pp':>7s} {'Spearman':>9s} "
                  f"{'Kendall':>8s} {'RMSE / mRMR++':>14s}")
        print(header + "\n" + "-" * len(header))
        for m in methods:
            v = mean[m]
            print(f"{m:26s} {v['select_s']:9.3f} {v['select_s'] / ref['select_s']:7.1f} {v['rmse_pp']:8.2f} "
                  f"{v['mae_pp']:7.2f} {v['spearman']:9.3f} {v['kendall']:8.3f} {v['rmse_pp'] / ref['rmse_pp']:14.2f}")


if __name__ == "__main__":
    main()
