"""Predict full-benchmark scores from 10% of the questions: mRMR picks the questions, kernel ridge maps the
answers on them to the full score. Real answers (mmlu, 83 models x 567 questions), some of them missing."""

import numpy as np

from neurips26.data import load_effbench
from neurips26.effbench import EfficientBenchmark, KRRPredictor, MRMRSelector, RandomSelector, evaluate, random_split

S, _ = load_effbench("mmlu")
S = S.astype(float)
y = S.mean(1)  # the full-benchmark score of every model
src, tgt = random_split(len(y), rng=0)  # half the models are already evaluated, half are new

for name, selector in (("mRMR++", MRMRSelector(0.1, mi_k=5)), ("Random++", RandomSelector(0.1, random_state=0))):
    bench = EfficientBenchmark(selector, KRRPredictor()).fit(S[src])
    m = evaluate(y[tgt], bench.predict(S[tgt]))
    print(f"{name}: {bench.coreset_.size} questions, target RMSE {m['rmse_pp']:.2f} pp, Kendall {m['kendall']:.3f}")

# missing answers (NaN): masked in the selection, filled by the source models' mean for the regressor
holes = S[src].copy()
holes[np.random.default_rng(0).random(holes.shape) < 0.1] = np.nan
bench = EfficientBenchmark(MRMRSelector(0.1, mi_k=5), KRRPredictor()).fit(holes)
m = evaluate(y[tgt], bench.predict(S[tgt]))
print(f"mRMR++ with 10% of the source answers missing: target RMSE {m['rmse_pp']:.2f} pp")
