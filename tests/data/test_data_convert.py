"""Converters from upstream formats: a hand-built Planetoid graph with a known answer, and round trips
that rebuild the upstream layout from the cached files and must reproduce their pinned digests."""

import hashlib
import json
import pickle
from collections import defaultdict

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from neurips26.data.convert import convert_effbench, convert_planetoid, convert_tsplib_lehd, tsplib_instances
from neurips26.data.errors import UnsafePickleError
from neurips26.data.integrity import arrays_sha256
from neurips26.data.sources import DATASETS, EFFBENCH_MATRICES, EFFBENCH_WITH_MODELS, PLANETOID_PARTS
from neurips26.data.testing import requires_dataset


def _arrays(npz_bytes):
    import io

    with np.load(io.BytesIO(npz_bytes), allow_pickle=False) as d:
        return {k: d[k] for k in d.files}


def _write_planetoid(folder, name, parts, test_order, protocol=0):
    paths = {}
    for part in PLANETOID_PARTS:
        path = folder / f"ind.{name}.{part}"
        if part == "test.index":
            path.write_text("".join(f"{i}\n" for i in test_order))
        else:
            path.write_bytes(pickle.dumps(parts[part], protocol=protocol))
        paths[path.name] = path
    return paths


def test_tiny_planetoid_graph_by_hand(tmp_path):
    # 6 nodes, 2 classes, 3 features; nodes 0..2 in allx, test nodes listed as [5, 3]; node 4 is absent
    feats = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 0, 0], [0, 1, 1]], dtype=np.float32)
    labels = np.array([0, 1, 1, 0, -1, 1])
    onehot = lambda ids: np.eye(2, dtype=np.int32)[labels[ids]]  # noqa: E731
    parts = {
        "x": sp.csr_matrix(feats[:2]), "y": onehot([0, 1]),
        "allx": sp.csr_matrix(feats[:3]), "ally": onehot([0, 1, 2]),
        "tx": sp.csr_matrix(feats[[5, 3]]), "ty": onehot([5, 3]),
        "graph": defaultdict(list, {0: [1], 1: [0, 2], 2: [1, 2], 3: [5], 4: [], 5: [3, 0]}),
    }
    out = _arrays(convert_planetoid(_write_planetoid(tmp_path, "tiny", parts, [5, 3])))
    x = sp.csr_matrix((out["x_data"], out["x_indices"], out["x_indptr"]), shape=tuple(out["x_shape"]))
    np.testing.assert_array_equal(x.toarray(), feats)
    np.testing.assert_array_equal(out["y"], labels)
    expected_edges = [(0, 1), (0, 5), (1, 0), (1, 2), (2, 1), (3, 5), (5, 0), (5, 3)]  # no self loop 2-2
    assert list(map(tuple, out["edge_index"].T.tolist())) == expected_edges
    np.testing.assert_array_equal(out["train_idx"], [0, 1])
    np.testing.assert_array_equal(out["val_idx"], np.arange(2, 502))
    np.testing.assert_array_equal(out["test_idx"], [3, 5])
    assert out["x_data"].dtype == np.float32 and out["x_indices"].dtype == np.int32


def test_planetoid_refuses_a_poisoned_part(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    parts = {p: np.zeros((1, 1)) for p in ("x", "y", "tx", "ty", "allx", "ally")}
    parts["graph"] = {0: [Evil()]}
    with pytest.raises(UnsafePickleError):
        convert_planetoid(_write_planetoid(tmp_path, "bad", parts, [1]))


def _planetoid_upstream_from_cache(d, seed):
    """Rebuild Planetoid's file layout from the cached arrays (test order shuffled as in the files)."""
    x = sp.csr_matrix((d["x_data"], d["x_indices"], d["x_indptr"]), shape=tuple(d["x_shape"]))
    y, test = d["y"], d["test_idx"]
    n_train, n_all, n_cls = len(d["train_idx"]), int(test.min()), int(y.max()) + 1
    onehot = lambda ids: np.eye(n_cls, dtype=np.int64)[y[ids]]  # noqa: E731
    order = np.random.default_rng(seed).permutation(test)
    graph = defaultdict(list)
    for s, t in d["edge_index"].T:
        graph[int(s)].append(int(t))
    for node in range(x.shape[0]):
        graph.setdefault(node, [])
    parts = {"x": x[:n_train], "y": onehot(np.arange(n_train)), "allx": x[:n_all], "ally": onehot(np.arange(n_all)),
             "tx": x[order], "ty": onehot(order), "graph": graph}
    return parts, order


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_planetoid_round_trip_reproduces_the_pinned_digest(tmp_path, name):
    from neurips26.data import dataset_path
    from neurips26.data.testing import require_dataset

    require_dataset(f"planetoid/{name}")
    with np.load(dataset_path(f"planetoid/{name}"), allow_pickle=False) as d:
        d = {k: d[k] for k in d.files}
    parts, order = _planetoid_upstream_from_cache(d, seed=3)
    out = _arrays(convert_planetoid(_write_planetoid(tmp_path, name, parts, order, protocol=2)))
    assert arrays_sha256(out) == DATASETS[f"planetoid/{name}"].files[0].content_sha256


def test_effbench_converter_on_joblib_fixtures(tmp_path):
    rng = np.random.default_rng(0)
    raw, expected = {}, {}
    for m in EFFBENCH_MATRICES:
        scores = (rng.random((4, 6)) < 0.5).astype(np.float64)
        joblib.dump(scores, tmp_path / f"{m}.jbl")
        raw[f"{m}.jbl"] = tmp_path / f"{m}.jbl"
        expected[m] = scores.astype(np.uint8)
    for m in EFFBENCH_WITH_MODELS:
        joblib.dump([f"org/{m}-{i}" for i in range(4)], tmp_path / f"{m}_models.jbl")
        raw[f"{m}_models.jbl"] = tmp_path / f"{m}_models.jbl"
    out = _arrays(convert_effbench(raw))
    for m in EFFBENCH_MATRICES:
        np.testing.assert_array_equal(out[m], expected[m])
        assert out[m].dtype == np.uint8
    assert list(out["ifeval__models"]) == [f"org/ifeval-{i}" for i in range(4)]
    joblib.dump(np.full((2, 2), 0.5), raw["mmlu.jbl"])
    with pytest.raises(ValueError, match="0/1"):
        convert_effbench(raw)


@requires_dataset("effbench/correctness")
def test_effbench_round_trip_reproduces_the_pinned_digest(tmp_path):
    from neurips26.data import dataset_path

    raw = {}
    with np.load(dataset_path("effbench/correctness"), allow_pickle=False) as d:
        for m in EFFBENCH_MATRICES:
            joblib.dump(d[m].astype(np.float64), tmp_path / f"{m}.jbl")  # upstream stores float scores
            raw[f"{m}.jbl"] = tmp_path / f"{m}.jbl"
        for m in EFFBENCH_WITH_MODELS:
            joblib.dump([str(s) for s in d[f"{m}__models"]], tmp_path / f"{m}_models.jbl")
            raw[f"{m}_models.jbl"] = tmp_path / f"{m}_models.jbl"
    out = _arrays(convert_effbench(raw))
    assert arrays_sha256(out) == DATASETS["effbench/correctness"].files[0].content_sha256


def _lehd_line(inst):
    fields = [inst["name"], str(inst["optimal_cost"])] + [repr(v) for xy in inst["coords"] for v in xy]
    return repr(fields)


def test_tsplib_parser_filters_and_sorts():
    a = {"name": "b3", "n": 3, "optimal_cost": 10, "coords": [[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]]}
    b = {"name": "a2", "n": 2, "optimal_cost": 2, "coords": [[0.0, 0.0], [1.0, 0.0]]}
    big = {"name": "c400", "n": 400, "optimal_cost": 1, "coords": [[float(i), 0.0] for i in range(400)]}
    text = "\n".join(_lehd_line(i) for i in (a, big, b)) + "\n"
    assert tsplib_instances(text) == [b, a]
    with pytest.raises(ValueError, match="line 1"):
        tsplib_instances("__import__('os').system('true')\n")


@requires_dataset("tsplib_small")
def test_tsplib_round_trip_reproduces_the_pinned_bytes(tmp_path):
    from neurips26.data import load_tsplib_small

    instances = load_tsplib_small()
    big = {"name": "pr439", "n": 439, "optimal_cost": 107217, "coords": [[float(i), 1.0] for i in range(439)]}
    lines = [_lehd_line(i) for i in sorted(instances + [big], key=lambda inst: inst["name"])]  # file order
    (tmp_path / "TSPlib_70instances.txt").write_text("\n".join(lines) + "\n")
    data = convert_tsplib_lehd({"TSPlib_70instances.txt": tmp_path / "TSPlib_70instances.txt"})
    assert json.loads(data) == instances
    assert hashlib.sha256(data).hexdigest() == DATASETS["tsplib_small"].sha256
