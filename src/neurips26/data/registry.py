"""Dataset entries, path resolution with checksums, and small loaders for each registered dataset."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Dataset:
    """A registered dataset: its relative path inside a data folder, provenance, license, checksum."""

    name: str
    relpath: str
    source: str
    license: str
    sha256: str | None = None


DATASETS: dict[str, Dataset] = {d.name: d for d in (
    Dataset("effbench/correctness", "effbench/correctness.npz",
            "GitHub socialfoundations/benchmark-prediction @2e98c82, data/scores/ (repackaged as npz)",
            "MIT", "c14551396d82561daf0a2ea363317baa9cb762c536301c93846f39f2176329bd"),
    Dataset("tinyshakespeare", "tinyshakespeare/input.txt",
            "GitHub karpathy/char-rnn @6f9487a, data/tinyshakespeare/input.txt", "public domain text",
            "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"),
    Dataset("planetoid/cora", "planetoid/cora.npz",
            "GitHub kimiyoung/planetoid @af6abf4, data/ind.cora.* (converted to npz)", "MIT"),
    Dataset("planetoid/citeseer", "planetoid/citeseer.npz",
            "GitHub kimiyoung/planetoid @af6abf4, data/ind.citeseer.* (converted to npz)", "MIT"),
    Dataset("tsplib_small", "tsplib_small/tsplib_n_le_300.json",
            "GitHub CIAM-Group/NCO_code @274df3c (TSPLIB instances n <= 300 with optima)", "MIT / TSPLIB"),
    Dataset("cvrplib_x_small", "cvrplib_x_small",
            "GitHub PyVRP/Instances @1445e12, CVRP/ (Uchoa et al. X instances n <= 250)", "MIT"),
)}

#: Registered too, but read from the scikit-learn wheel instead of a data folder.
PACKAGED = {"sklearn/digits": "scikit-learn's bundled optdigits (sklearn.datasets.load_digits)"}


class DatasetNotFoundError(FileNotFoundError):
    """A registered dataset is not present in any searched folder."""


def _repo_shared_data_candidates() -> list[Path]:
    here = Path(__file__).resolve()
    # src/neurips26/data/registry.py -> parents[3] is the repository root; shared/ sits beside it.
    candidates = [here.parents[3].parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    return list(dict.fromkeys(candidates))


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "neurips26" / "data"


def search_dirs() -> list[Path]:
    """The folders searched for data, in order (they need not exist)."""
    dirs = []
    env = os.environ.get("NEURIPS26_DATA")
    if env:
        dirs.append(Path(env))
    dirs += _repo_shared_data_candidates()
    dirs.append(_user_cache_dir())
    return dirs


def dataset_path(name: str, *, verify: bool = True) -> Path:
    """Resolve a registered dataset name to its local path (file or folder).

    Raises:
        ValueError: ``name`` is not registered.
        DatasetNotFoundError: not present in any searched folder.
        OSError: present but its sha256 does not match the registered one.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; registered: {sorted(DATASETS) + sorted(PACKAGED)}")
    entry = DATASETS[name]
    searched = search_dirs()
    for folder in searched:
        path = folder / entry.relpath
        if path.exists():
            if verify and entry.sha256 and path.is_file():
                _verify_sha256(path, entry.sha256)
            return path
    places = "\n  ".join(str(folder / entry.relpath) for folder in searched)
    raise DatasetNotFoundError(
        f"dataset {name!r} not found. Looked in:\n  {places}\nIt comes from {entry.source} "
        f"(license: {entry.license}). Put it at <dir>/{entry.relpath} and set NEURIPS26_DATA=<dir>.")


@lru_cache(maxsize=32)
def _sha256_of(path: str, mtime_ns: int, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verify_sha256(path: Path, expected: str) -> None:
    stat = path.stat()
    actual = _sha256_of(str(path), stat.st_mtime_ns, stat.st_size)
    if actual != expected:
        raise OSError(f"{path}: sha256 {actual} does not match the registered {expected}; "
                      "the file is corrupt or a different version")


# ---------------------------------------------------------------------------------------------------
# Loaders


def load_effbench(name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """One correctness matrix of ``effbench/correctness``: ``(S, model_names)``.

    ``S``: ``uint8`` array ``[models, questions]`` of 0/1; ``model_names`` a string array or ``None``.
    """
    path = dataset_path("effbench/correctness")
    with np.load(path, allow_pickle=False) as archive:
        keys = [k for k in archive.files if not k.endswith("__models")]
        if name not in keys:
            raise ValueError(f"effbench matrix {name!r} not in {path.name}; available: {sorted(keys)}")
        matrix = archive[name]
        models = archive[f"{name}__models"] if f"{name}__models" in archive.files else None
    return matrix, models


def effbench_names() -> list[str]:
    with np.load(dataset_path("effbench/correctness"), allow_pickle=False) as archive:
        return [k for k in archive.files if not k.endswith("__models")]


def load_tinyshakespeare() -> str:
    """The tiny-shakespeare corpus as one string (1,115,394 characters)."""
    return dataset_path("tinyshakespeare").read_text(encoding="utf-8")


def load_planetoid(name: str) -> dict[str, Any]:
    """Cora or CiteSeer: ``x`` (float32 dense ``[nodes, features]``), ``y`` (int64, -1 = unlabeled),
    ``edge_index`` (int64 ``[2, edges]``, both directions), ``train_idx``, ``val_idx``, ``test_idx``."""
    if name not in ("cora", "citeseer"):
        raise ValueError(f"planetoid name must be 'cora' or 'citeseer', got {name!r}")
    from scipy.sparse import csr_matrix

    with np.load(dataset_path(f"planetoid/{name}"), allow_pickle=False) as d:
        x = csr_matrix((d["x_data"], d["x_indices"], d["x_indptr"]), shape=tuple(d["x_shape"]))
        out = {"x": np.asarray(x.todense(), dtype=np.float32)}
        for key in ("y", "edge_index", "train_idx", "val_idx", "test_idx"):
            out[key] = d[key]
    return out


def load_tsplib_small() -> list[dict[str, Any]]:
    """TSPLIB EUC_2D instances with n <= 300: dicts with ``name``, ``n``, ``optimal_cost``, ``coords``."""
    return json.loads(dataset_path("tsplib_small").read_text(encoding="utf-8"))


def load_cvrplib_x_small() -> list[Path]:
    """Paths of the CVRPLIB X ``.vrp`` files (each has a ``.sol`` beside it), sorted by name."""
    return sorted(dataset_path("cvrplib_x_small").glob("*.vrp"))


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits: ``X`` float64 ``[1797, 64]`` in 0..16, ``y`` int ``[1797]``."""
    from sklearn.datasets import load_digits as _sk_load_digits

    bunch = _sk_load_digits()
    return bunch.data, bunch.target
