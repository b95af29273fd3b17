"""The restricted unpickler admits numpy/scipy arrays and refuses everything that could run code."""

import os
import pickle
from collections import defaultdict

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from neurips26.data.errors import UnsafePickleError
from neurips26.data.safe_pickle import load_joblib_array_file, rebuild_csr, restricted_load, restricted_loads


class _Evil:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"echo pwned > {self.target}",))


class _EvalEvil:
    def __reduce__(self):
        return (eval, ("__import__('os').getcwd()",))


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_malicious_pickle_is_refused_before_it_runs(tmp_path, protocol):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Evil(marker), protocol=protocol)
    assert b"system" in payload  # it really asks for os.system (posix.system)
    path = tmp_path / "ind.cora.x"
    path.write_bytes(payload)
    with pytest.raises(UnsafePickleError, match="refused to load global"):
        restricted_load(path)
    assert not marker.exists()
    with pytest.raises(UnsafePickleError, match=r"(__builtin__|builtins)\.eval"):
        restricted_loads(pickle.dumps(_EvalEvil(), protocol=protocol))


def test_malicious_object_hidden_inside_an_allowed_container(tmp_path):
    marker = tmp_path / "pwned"
    graph = defaultdict(list, {0: [1], 1: [_Evil(marker)]})
    with pytest.raises(UnsafePickleError):
        restricted_loads(pickle.dumps(graph, protocol=2))
    assert not marker.exists()


@pytest.mark.parametrize("name", ["getattr", "__import__", "exec", "open"])
def test_dangerous_builtins_are_refused(name):
    # hand-written protocol-0 pickle: GLOBAL builtins.<name>, then call it with no arguments
    payload = f"cbuiltins\n{name}\n(tR.".encode()
    with pytest.raises(UnsafePickleError, match=f"builtins.{name}"):
        restricted_loads(payload)


def test_numpy_function_other_than_reconstruction_is_refused():
    payload = b"cnumpy\nload\n(S'/etc/passwd'\ntR."
    with pytest.raises(UnsafePickleError, match="numpy.load"):
        restricted_loads(payload)


@pytest.mark.parametrize("protocol", [0, 2, 5])
def test_arrays_csr_and_adjacency_dicts_load(protocol):
    rng = np.random.default_rng(0)
    matrix = sp.random(7, 5, density=0.4, format="csr", random_state=1, dtype=np.float32)
    labels = np.eye(3, dtype=np.int32)[rng.integers(0, 3, 7)]
    graph = defaultdict(list, {0: [1, 2], 1: [0], 2: [0]})
    for obj in (matrix, labels, graph):
        out = restricted_loads(pickle.dumps(obj, protocol=protocol))
        if sp.issparse(obj):
            assert (rebuild_csr(out, "x") != obj).nnz == 0 and out.dtype == obj.dtype
        elif isinstance(obj, np.ndarray):
            np.testing.assert_array_equal(out, obj)
        else:
            assert dict(out) == dict(obj)


def test_python2_style_names_are_mapped():
    # protocol 0 written with fix_imports gives copy_reg/__builtin__ names, as Python 2's cPickle did
    payload = pickle.dumps(sp.csr_matrix(np.eye(3)), protocol=0, fix_imports=True)
    assert b"copy_reg" in payload
    assert (rebuild_csr(restricted_loads(payload), "x") != sp.csr_matrix(np.eye(3))).nnz == 0


def test_rebuild_csr_rejects_inconsistent_state():
    bad = sp.csr_matrix(np.eye(3))
    bad.__dict__["indices"] = np.array([5, 0, 1], dtype=np.int32)  # column 5 of 3
    with pytest.raises(ValueError):
        rebuild_csr(bad, "x")
    with pytest.raises(UnsafePickleError, match="csr_matrix"):
        rebuild_csr(np.eye(3), "x")


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    np.array([[True, False], [False, True]]),
    np.zeros((0, 3)),
])
def test_joblib_arrays_match_joblib_load(tmp_path, array):
    path = tmp_path / "scores.jbl"
    joblib.dump(array, path)
    out = load_joblib_array_file(path)
    reference = joblib.load(path)  # joblib's own reader is the independent reference (trusted file)
    assert out.dtype == reference.dtype and out.shape == reference.shape
    np.testing.assert_array_equal(out, reference)


def test_joblib_model_list_and_refusals(tmp_path):
    names = ["org/model-a", "org/model-b"]
    joblib.dump(names, tmp_path / "m.jbl")
    assert load_joblib_array_file(tmp_path / "m.jbl") == names
    joblib.dump(np.array([_EvalEvil()], dtype=object), tmp_path / "obj.jbl")
    with pytest.raises(UnsafePickleError):
        load_joblib_array_file(tmp_path / "obj.jbl")
    joblib.dump(np.ones(3), tmp_path / "z.jbl", compress=3)
    with pytest.raises(UnsafePickleError, match="compressed"):
        load_joblib_array_file(tmp_path / "z.jbl")
    marker = tmp_path / "pwned"
    joblib.dump(_Evil(marker), tmp_path / "evil.jbl")
    with pytest.raises(UnsafePickleError, match="refused"):
        load_joblib_array_file(tmp_path / "evil.jbl")
    assert not marker.exists()
