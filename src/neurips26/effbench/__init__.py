"""effbench - "Efficient Benchmarking Is Just Feature Selection and Multiple Regression"
(Bowyer, Locatelli, Cao, 2026; arXiv 2605.25773).

What: predict a model's full-benchmark score from its answers on a few questions.
Why: running every question of every benchmark on every new model is expensive; a 10% coreset
plus a regressor fitted on ~30 already-evaluated models predicts the full score to ~2-3 pp.
How: treat questions as features and the full score as the target. Pick questions greedily by
mRMR (kNN mutual information with the score, divided by the mean plug-in MI with the questions already
picked), then fit ridge ("+") or degree-2 polynomial kernel ridge ("++") on the source models, alpha by
closed-form leave-one-out. The same "++" refit also improves the older selectors (random questions,
anchor points, tinyBenchmarks IRT), which live in :mod:`neurips26.effbench.baselines`.

    from neurips26.effbench import EfficientBenchmark, MRMRSelector, KRRPredictor
    bench = EfficientBenchmark(MRMRSelector(0.1), KRRPredictor()).fit(S_source)   # (M, N) 0/1
    bench.predict(S_new[:, bench.coreset_])                                       # (m,) in [0, 1]
"""

from .baselines import (
                        AIPWPredictor,
                        AnchorPointsSelector,
                        GPIRTPredictor,
                        IRTSelector,
                        LassoSelector,
                        LinearPredictor,
                        RandomSelector,
                        anchor_points,
                        k_medoids,
)
from .irt import IRTParams, estimate_ability, fit_irt_2pl
from .metrics import binned_split, evaluate, evaluate_split, nogueira_stability, random_split, stress_split
from .mi import (
                 binned_relevance,
                 jitter_target,
                 ksg_mi,
                 masked_columns,
                 plugin_mi_binary,
                 plugin_mi_binary_masked,
                 ross_mi,
)
from .mrmr import MRMRSelector
from .pipeline import BenchmarkPredictor, EfficientBenchmark, make_predictor, make_selector
from .regress import KRRPredictor, MeanPredictor, RidgePredictor, kernel_ridge_loo, poly_kernel, ridge_loo

__all__ = [
    "AIPWPredictor", "AnchorPointsSelector", "BenchmarkPredictor", "EfficientBenchmark", "GPIRTPredictor", "IRTParams",
    "IRTSelector", "KRRPredictor", "LassoSelector", "LinearPredictor", "MRMRSelector", "MeanPredictor",
    "RandomSelector", "RidgePredictor", "anchor_points", "binned_split", "estimate_ability", "evaluate",
    "evaluate_split", "fit_irt_2pl", "jitter_target", "k_medoids", "kernel_ridge_loo", "ksg_mi",
    "make_predictor", "make_selector", "nogueira_stability", "plugin_mi_binary", "poly_kernel", "ridge_loo",
    "ross_mi", "binned_relevance", "masked_columns", "plugin_mi_binary_masked", "random_split", "stress_split",
]
