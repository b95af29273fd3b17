"""Converters from canonical upstream formats to the pickle-free files the loaders read.

Each converter takes ``{upstream file name: local path}`` and returns the bytes of the converted file
(the fetch step verifies them against the pinned digest before anything is written).

* ``planetoid``: Planetoid's ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}`` (Python-2 pickles,
  read with :class:`~neurips26.data.safe_pickle.RestrictedUnpickler`) -> ``<name>.npz``.
* ``effbench``: benchmark-prediction's ``data/scores/*.jbl`` (joblib, read with the restricted joblib
  reader) -> ``correctness.npz``.
* ``tsplib_lehd``: the LEHD repository's ``TSPlib_70instances.txt`` (one Python list literal of strings
  per line: name, optimal cost, x1, y1, x2, y2, ...) -> ``tsplib_n_le_300.json``.
"""

from __future__ import annotations

import ast
import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import scipy.sparse

from .errors import UnsafePickleError
from .safe_pickle import load_joblib_array_file, rebuild_csr, restricted_load
from .sources import EFFBENCH_MATRICES, EFFBENCH_WITH_MODELS, PLANETOID_PARTS


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """``np.savez_compressed`` into memory (numpy >= 2 writes fixed zip timestamps: same arrays, same bytes)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------------
# Planetoid


def _one_hot_labels(matrix: np.ndarray, what: str) -> np.ndarray:
    r"""$y_v = \arg\max_c Y_{vc}$, and $-1$ where the row is all zero (unlabeled)."""
    matrix = np.asarray(matrix)
    if matrix.ndim != 2 or matrix.dtype.hasobject:
        raise ValueError(f"{what}: expected a 2-D one-hot label array, got shape {matrix.shape}")
    labels = matrix.argmax(axis=1).astype(np.int64)
    labels[~matrix.any(axis=1)] = -1
    return labels


def planetoid_arrays(parts: Mapping[str, object], test_index: np.ndarray) -> dict[str, np.ndarray]:
    """Assemble the npz arrays from already unpickled Planetoid parts (``x``, ``y``, ``tx``, ``ty``,
    ``allx``, ``ally``, ``graph``) and the test node ids in file order.

    Planetoid layout: ``allx``/``ally`` are nodes ``0 .. len(allx)-1``; row ``i`` of ``tx``/``ty`` is node
    ``test_index[i]``; nodes in ``min(test_index) .. max(test_index)`` missing from ``test_index``
    (CiteSeer's isolated nodes) get zero features and label $-1$. ``train_idx = 0 .. len(y)-1``,
    ``val_idx`` the next 500, ``test_idx`` the sorted test ids. Edges: the adjacency lists in both
    directions, self loops removed, deduplicated, sorted by (source, target).
    """
    allx = rebuild_csr(parts["allx"], "allx")
    tx = rebuild_csr(parts["tx"], "tx")
    x_train = rebuild_csr(parts["x"], "x")
    ally, ty, y_train = (np.asarray(parts[k]) for k in ("ally", "ty", "y"))
    test_index = np.asarray(test_index, dtype=np.int64)
    n_all, n_test = allx.shape[0], tx.shape[0]
    if ally.shape[0] != n_all or ty.shape[0] != n_test or len(test_index) != n_test:
        raise ValueError(f"planetoid: inconsistent sizes allx {allx.shape}, ally {ally.shape}, tx {tx.shape}, "
                         f"ty {ty.shape}, test.index {len(test_index)}")
    if x_train.shape[0] != y_train.shape[0] or x_train.shape[0] > n_all:
        raise ValueError(f"planetoid: x {x_train.shape} and y {y_train.shape} must be the first rows of allx")
    if len(np.unique(test_index)) != n_test or test_index.min() < n_all:
        raise ValueError("planetoid: test.index must hold distinct node ids after the allx nodes")
    n_nodes = int(test_index.max()) + 1
    graph = parts["graph"]
    if not isinstance(graph, dict):
        raise UnsafePickleError(f"planetoid graph: expected a dict of adjacency lists, got {type(graph).__name__}")
    # features: stack [allx; tx] and scatter the tx rows to their node ids (rows of absent nodes stay 0)
    source_row = np.full(n_nodes, -1, dtype=np.int64)
    source_row[:n_all] = np.arange(n_all)
    source_row[test_index] = n_all + np.arange(n_test)
    stacked = scipy.sparse.vstack([allx, tx, scipy.sparse.csr_matrix((1, allx.shape[1]))], format="csr")
    x = stacked[np.where(source_row >= 0, source_row, n_all + n_test)].tocsr().astype(np.float32)
    x.sum_duplicates()
    x.sort_indices()
    labels_all = np.full(n_nodes, -1, dtype=np.int64)
    labels_all[:n_all] = _one_hot_labels(ally, "ally")
    labels_all[test_index] = _one_hot_labels(ty, "ty")
    # edges
    src, dst = [], []
    for node, neighbours in graph.items():
        if not isinstance(neighbours, list | tuple):
            raise UnsafePickleError("planetoid graph: adjacency values must be lists of node ids")
        for other in neighbours:
            src.append(int(node))
            dst.append(int(other))
    edges = np.asarray([src + dst, dst + src], dtype=np.int64)
    if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
        raise ValueError(f"planetoid graph: node ids outside 0..{n_nodes - 1}")
    edges = edges[:, edges[0] != edges[1]]
    edges = np.unique(edges, axis=1)  # lexicographic by (source, target)
    n_train = y_train.shape[0]
    return {
        "x_data": x.data.astype(np.float32), "x_indices": x.indices.astype(np.int32),
        "x_indptr": x.indptr.astype(np.int32), "x_shape": np.asarray(x.shape, dtype=np.int64),
        "y": labels_all, "edge_index": edges,
        "train_idx": np.arange(n_train, dtype=np.int64),
        "val_idx": np.arange(n_train, n_train + 500, dtype=np.int64),
        "test_idx": np.sort(test_index),
    }


def convert_planetoid(raw: Mapping[str, Path]) -> bytes:
    """``{"ind.<name>.<part>": path}`` for the eight parts -> npz bytes."""
    names = {key.split(".")[1] for key in raw}
    if len(names) != 1:
        raise ValueError(f"planetoid: expected the files of one graph, got {sorted(raw)}")
    name = names.pop()
    parts = {}
    for part in PLANETOID_PARTS:
        path = raw[f"ind.{name}.{part}"]
        if part == "test.index":
            test_index = np.asarray([int(line) for line in Path(path).read_text().split()], dtype=np.int64)
        else:
            parts[part] = restricted_load(path)
    return npz_bytes(planetoid_arrays(parts, test_index))


# ---------------------------------------------------------------------------------------------------
# effbench


def convert_effbench(raw: Mapping[str, Path]) -> bytes:
    """``{"<matrix>.jbl": path, "<matrix>_models.jbl": path}`` -> ``correctness.npz`` bytes.

    Each matrix becomes ``uint8`` 0/1 ``[models, questions]``; each model list a unicode array
    ``<matrix>__models``. Values other than 0 and 1 are refused (no thresholding).
    """
    arrays: dict[str, np.ndarray] = {}
    for matrix in EFFBENCH_MATRICES:
        scores = np.asarray(load_joblib_array_file(raw[f"{matrix}.jbl"]))
        if scores.ndim != 2 or scores.dtype.hasobject or not np.isin(scores, (0, 1)).all():
            raise ValueError(f"effbench {matrix}: expected a 2-D 0/1 array, got {scores.dtype} {scores.shape}")
        arrays[matrix] = scores.astype(np.uint8)
        if matrix in EFFBENCH_WITH_MODELS:
            models = load_joblib_array_file(raw[f"{matrix}_models.jbl"])
            models = np.asarray([str(m) for m in models])
            if models.shape != (scores.shape[0],):
                raise ValueError(f"effbench {matrix}: {models.shape[0]} model names for {scores.shape[0]} rows")
            arrays[f"{matrix}__models"] = models
    return npz_bytes(arrays)


# ---------------------------------------------------------------------------------------------------
# TSPLIB (LEHD's text file)


def tsplib_instances(text: str, *, max_n: int = 300) -> list[dict]:
    """Parse LEHD's ``TSPlib_70instances.txt``: keep instances with ``n <= max_n``, sorted by ``n``
    (stable, so ties keep file order); coordinates as floats, the optimum as an int."""
    out = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            fields = ast.literal_eval(line.strip())  # literals only: no code runs
        except (ValueError, SyntaxError) as exc:
            raise ValueError(f"TSPLIB line {line_no}: not a list literal ({exc})") from exc
        if not isinstance(fields, list) or len(fields) < 4 or len(fields) % 2:
            raise ValueError(f"TSPLIB line {line_no}: expected [name, optimum, x1, y1, ...]")
        name, optimum, coords = str(fields[0]), int(float(fields[1])), [float(v) for v in fields[2:]]
        n = len(coords) // 2
        if n <= max_n:
            out.append({"name": name, "n": n, "optimal_cost": optimum,
                        "coords": [[coords[2 * i], coords[2 * i + 1]] for i in range(n)]})
    out.sort(key=lambda inst: inst["n"])
    return out


def convert_tsplib_lehd(raw: Mapping[str, Path]) -> bytes:
    text = Path(raw["TSPlib_70instances.txt"]).read_text(encoding="utf-8")
    return json.dumps(tsplib_instances(text)).encode("utf-8")


CONVERTERS: dict[str, Callable[[Mapping[str, Path]], bytes]] = {
    "planetoid": convert_planetoid,
    "effbench": convert_effbench,
    "tsplib_lehd": convert_tsplib_lehd,
}
