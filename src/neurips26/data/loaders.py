"""Small loaders for each registered dataset; each reads its files through :func:`read_dataset`, so a
damaged file raises :class:`~neurips26.data.errors.CorruptDataError` (with the fix), never a decoder's error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .resolve import dataset_path, read_dataset


def load_effbench(name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """One correctness matrix of ``effbench/correctness``: ``(S, model_names)``.

    ``S``: ``uint8`` array ``[models, questions]`` of 0/1; ``model_names`` a string array or ``None``.
    """
    keys = effbench_names()
    if name not in keys:
        raise ValueError(f"effbench matrix {name!r} not in correctness.npz; available: {sorted(keys)}")

    def decode(path: Path) -> tuple[np.ndarray, np.ndarray | None]:
        with np.load(path, allow_pickle=False) as archive:
            models = archive[f"{name}__models"] if f"{name}__models" in archive.files else None
            return archive[name], models

    return read_dataset("effbench/correctness", decode)


def _npz_keys(path: Path) -> list[str]:
    with np.load(path, allow_pickle=False) as archive:
        return list(archive.files)


def effbench_names() -> list[str]:
    """Names of the matrices in ``effbench/correctness`` (in file order)."""
    return [k for k in read_dataset("effbench/correctness", _npz_keys) if not k.endswith("__models")]


def load_tinyshakespeare() -> str:
    """The tiny-shakespeare corpus as one string (1,115,394 characters)."""
    return read_dataset("tinyshakespeare", lambda path: path.read_text(encoding="utf-8"))


def load_planetoid(name: str) -> dict[str, Any]:
    """Cora or CiteSeer: ``x`` (float32 dense ``[nodes, features]``), ``y`` (int64, -1 = unlabeled),
    ``edge_index`` (int64 ``[2, edges]``, both directions), ``train_idx``, ``val_idx``, ``test_idx``."""
    if name not in ("cora", "citeseer"):
        raise ValueError(f"planetoid name must be 'cora' or 'citeseer', got {name!r}")
    from scipy.sparse import csr_matrix

    def decode(path: Path) -> dict[str, Any]:
        with np.load(path, allow_pickle=False) as d:
            x = csr_matrix((d["x_data"], d["x_indices"], d["x_indptr"]), shape=tuple(d["x_shape"]))
            out = {"x": np.asarray(x.todense(), dtype=np.float32)}
            for key in ("y", "edge_index", "train_idx", "val_idx", "test_idx"):
                out[key] = d[key]
        return out

    return read_dataset(f"planetoid/{name}", decode)


def load_tsplib_small() -> list[dict[str, Any]]:
    """TSPLIB EUC_2D instances with n <= 300: dicts with ``name``, ``n``, ``optimal_cost``, ``coords``."""
    return read_dataset("tsplib_small", lambda path: json.loads(path.read_text(encoding="utf-8")))


def load_cvrplib_x_small() -> list[Path]:
    """Paths of the CVRPLIB X ``.vrp`` files (each has a ``.sol`` beside it), sorted by name."""
    return sorted(dataset_path("cvrplib_x_small").glob("*.vrp"))


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits: ``X`` float64 ``[1797, 64]`` in 0..16, ``y`` int ``[1797]``."""
    from sklearn.datasets import load_digits as _sk_load_digits

    bunch = _sk_load_digits()
    return bunch.data, bunch.target
