"""The offline data registry: search order, checksums, helpful misses."""

import hashlib

import numpy as np
import pytest

from neurips26 import data
from neurips26.data.registry import DATASETS
from neurips26.data.testing import require_dataset


def test_shared_data_is_found_and_verified():
    require_dataset("effbench/correctness")
    path = data.dataset_path("effbench/correctness")
    assert path.is_file()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == DATASETS["effbench/correctness"].sha256


def test_env_folder_takes_precedence(tmp_path, monkeypatch):
    (tmp_path / "tinyshakespeare").mkdir()
    text = "To be, or not to be"
    (tmp_path / "tinyshakespeare" / "input.txt").write_text(text)
    monkeypatch.setenv("NEURIPS26_DATA", str(tmp_path))
    with pytest.raises(OSError, match="sha256"):
        data.load_tinyshakespeare()  # a different file than the registered one is refused
    (tmp_path / "planetoid").mkdir()
    np.savez(tmp_path / "planetoid" / "cora.npz", marker=np.array([1]))
    assert data.dataset_path("planetoid/cora", verify=False) == tmp_path / "planetoid" / "cora.npz"


def test_missing_dataset_error_names_places_and_source(tmp_path, monkeypatch):
    monkeypatch.setenv("NEURIPS26_DATA", str(tmp_path))
    monkeypatch.setattr("neurips26.data.registry._repo_shared_data_candidates", lambda: [tmp_path / "shared"])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(data.DatasetNotFoundError) as exc:
        data.dataset_path("planetoid/citeseer")
    message = str(exc.value)
    assert "'planetoid/citeseer' not found" in message
    assert str(tmp_path / "planetoid" / "citeseer.npz") in message
    assert "kimiyoung/planetoid" in message and "NEURIPS26_DATA" in message


def test_unknown_dataset_name():
    with pytest.raises(ValueError, match="unknown dataset 'mnist'"):
        data.dataset_path("mnist")


def test_loaders_return_documented_shapes():
    for name in ("effbench/correctness", "planetoid/cora", "tinyshakespeare", "tsplib_small", "cvrplib_x_small"):
        require_dataset(name)
    S, models = data.load_effbench("mmlu")
    assert S.shape == (83, 567) and set(np.unique(S)) <= {0, 1} and models is None
    assert "ifeval" in data.effbench_names()
    cora = data.load_planetoid("cora")
    assert cora["x"].shape == (2708, 1433) and cora["edge_index"].shape[0] == 2
    assert len(data.load_tinyshakespeare()) == 1_115_394
    tsp = data.load_tsplib_small()
    assert tsp[0]["n"] == len(tsp[0]["coords"])
    assert len(data.load_cvrplib_x_small()) == 32
    X, y = data.load_digits()
    assert X.shape == (1797, 64) and y.shape == (1797,)
    with pytest.raises(ValueError, match="not in correctness.npz"):
        data.load_effbench("qnli")
    with pytest.raises(ValueError, match="'cora' or 'citeseer'"):
        data.load_planetoid("pubmed")
