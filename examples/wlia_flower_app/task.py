"""What server and clients share: the synthetic task, the partition and the model (no download needed)."""

from __future__ import annotations

import numpy as np

from neurips26.wlia import dirichlet_partition, make_model

N_CLASSES, N_FEATURES, N_SAMPLES = 10, 64, 2000


def make_task(num_partitions: int, alpha: float, seed: int):
    """Gaussian class clusters ``X [N, 64]``, labels ``y [N]`` and a Dirichlet(alpha) label-skewed partition."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(N_CLASSES, N_FEATURES))
    y = rng.integers(0, N_CLASSES, size=N_SAMPLES)
    X = (centres[y] + rng.normal(size=(N_SAMPLES, N_FEATURES))).astype(np.float32)
    parts = dirichlet_partition(y, num_partitions, alpha, seed=seed, min_size=10)
    return X, y, parts


def model_fn():
    return make_model("mlp-relu", N_FEATURES, N_CLASSES, hidden=32, seed=0)
