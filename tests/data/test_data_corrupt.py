"""Corrupt cached files: one integrity path turns every decoding failure into ``CorruptDataError`` (a
``DatasetNotFoundError`` with the fix ``neurips26 data fetch NAME --force``); ``data verify`` lists them one
line each and exits 1; ``data list``/``path`` never traceback; ``data fetch --force`` replaces them atomically.

Every file here is made in a temporary folder (``isolated``: ../shared hidden, an empty NEURIPS26_DATA)."""

from __future__ import annotations

import hashlib
import io
import json
import pickle

import numpy as np
import pytest

from neurips26 import data
from neurips26.data import registry, resolve
from neurips26.data.cli import main
from neurips26.data.errors import ChecksumError, CorruptDataError, DatasetNotFoundError
from neurips26.data.integrity import arrays_sha256
from neurips26.data.spec import Dataset, FileSpec, Upstream


def _npz_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def _register(monkeypatch, name: str, relpath: str, body: bytes, *, npz_arrays=None, upstream=None) -> Dataset:
    """A dataset whose pinned digest is that of ``body`` (the intact file)."""
    digest = hashlib.sha256(body).hexdigest()
    content = arrays_sha256(npz_arrays) if npz_arrays is not None else None
    entry = Dataset(name, relpath, "made in the test", "none", digest,
                    files=(FileSpec(relpath, digest, len(body), content),), upstream=upstream)
    monkeypatch.setitem(registry.DATASETS, name, entry)
    return entry


def _flip(body: bytes, at: int) -> bytes:
    damaged = bytearray(body)
    damaged[at] ^= 0xFF
    return bytes(damaged)


ARRAYS = {"a": np.arange(4000, dtype=np.int64), "b": np.linspace(0, 1, 3000)}
GOOD_NPZ = _npz_bytes(**ARRAYS)

DAMAGES = {
    "truncated-header": lambda b: b[:10],
    "truncated-middle": lambda b: b[: len(b) // 2],
    "truncated-end": lambda b: b[:-5],
    "flipped-byte": lambda b: _flip(b, len(b) // 3),
    "flipped-directory": lambda b: _flip(b, len(b) - 30),
    "empty": lambda b: b"",
    "not-a-zip": lambda b: b"hello, I am text\n" * 10,
    "pickle": lambda b: pickle.dumps({"a": [1, 2, 3]}),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_every_damage_to_an_npz_is_a_corrupt_data_error(damage, isolated, tmp_path, monkeypatch):
    entry = _register(monkeypatch, "fake/npz", "fake/arrays.npz", GOOD_NPZ, npz_arrays=ARRAYS)
    target = tmp_path / "env" / entry.relpath
    target.parent.mkdir(parents=True)
    damaged = DAMAGES[damage](GOOD_NPZ)
    target.write_bytes(damaged)
    with pytest.raises(CorruptDataError) as info:
        data.dataset_path("fake/npz")
    err = info.value
    assert isinstance(err, DatasetNotFoundError) and isinstance(err, ChecksumError) and isinstance(err, OSError)
    assert err.name == "fake/npz" and err.path == target and err.fix == "neurips26 data fetch fake/npz --force"
    assert err.expected == entry.sha256 and err.actual == hashlib.sha256(damaged).hexdigest()
    message = str(err)
    assert len(message.splitlines()) == 1
    for part in ("'fake/npz'", str(target), entry.sha256, err.actual, "neurips26 data fetch fake/npz --force"):
        assert part in message
    assert not data.is_available("fake/npz")
    again = pickle.loads(pickle.dumps(err))  # keeps its attributes (multiprocessing, pytest-xdist)
    assert (type(again), again.path, again.expected, again.actual, again.fix) == \
        (CorruptDataError, err.path, err.expected, err.actual, err.fix)


def test_the_intact_npz_and_the_same_arrays_rewritten_are_accepted(isolated, tmp_path, monkeypatch):
    entry = _register(monkeypatch, "fake/npz", "fake/arrays.npz", GOOD_NPZ, npz_arrays=ARRAYS)
    target = tmp_path / "env" / entry.relpath
    target.parent.mkdir(parents=True)
    target.write_bytes(GOOD_NPZ)
    assert data.dataset_path("fake/npz") == target
    np.savez(target, **ARRAYS)  # other bytes (uncompressed), same arrays
    assert data.dataset_path("fake/npz") == target


def test_a_decoder_library_error_named_in_errors_is_corrupt_data_too(isolated, tmp_path, monkeypatch):
    class LibraryError(Exception):
        pass

    def decode(path):
        raise LibraryError("header too short")

    _register(monkeypatch, "fake/d", "fake/t.safetensors", b"\x08\x00")
    (tmp_path / "env" / "fake").mkdir()
    (tmp_path / "env" / "fake" / "t.safetensors").write_bytes(b"\x08\x00")
    with pytest.raises(LibraryError):
        resolve.read_dataset("fake/d", decode)
    with pytest.raises(CorruptDataError, match="LibraryError: header too short"):
        resolve.read_dataset("fake/d", decode, errors=(LibraryError,))


@pytest.mark.parametrize("relpath, body, decode, bad", [
    ("fake/t.json", b'{"a": [1, 2]}', lambda p: json.loads(p.read_text(encoding="utf-8")), b'{"a": [1, '),
    ("fake/t.txt", "caf\u00e9\n".encode(), lambda p: p.read_text(encoding="utf-8"), b"caf\xe9\n"),
    ("fake/t.npz", GOOD_NPZ, lambda p: dict(np.load(p, allow_pickle=False)), GOOD_NPZ[:-7]),
    ("fake/t.jbl", pickle.dumps([1, 2, 3]), lambda p: pickle.loads(p.read_bytes()), pickle.dumps([1, 2, 3])[:-3]),
    ("fake/t.zip", b"PK\x03\x04" + b"\0" * 40, lambda p: __import__("zipfile").ZipFile(p).namelist(), b"PK\x03\x04"),
    ("fake/t.pt", b"", lambda p: __import__("torch").load(p, weights_only=True), None),
])
def test_read_dataset_turns_a_decoding_failure_into_corrupt_data(relpath, body, decode, bad, isolated, tmp_path,
                                                                 monkeypatch):
    # the digest pins the damaged bytes, so only the decoder can notice (e.g. a file verified and then read)
    if bad is None:  # a torch checkpoint cut in the middle
        import torch

        buffer = io.BytesIO()
        torch.save({"w": torch.ones(100)}, buffer)
        bad = buffer.getvalue()[: len(buffer.getvalue()) // 2]
    entry = _register(monkeypatch, "fake/d", relpath, bad)
    target = tmp_path / "env" / relpath
    target.parent.mkdir(parents=True)
    target.write_bytes(bad)
    with pytest.raises(CorruptDataError, match="cannot be decoded") as info:
        resolve.read_dataset("fake/d", decode)
    assert info.value.path == target and info.value.fix == "neurips26 data fetch fake/d --force"
    assert info.value.expected == entry.sha256 == info.value.actual
    # an argument error inside the loader stays what it is
    with pytest.raises(ZeroDivisionError):
        resolve.read_dataset("fake/d", lambda p: 1 / 0)


def test_loaders_of_registered_datasets_raise_corrupt_data(isolated, tmp_path):
    folder = tmp_path / "env"
    for relpath, body in (("effbench/correctness.npz", GOOD_NPZ[:200]), ("planetoid/cora.npz", b"PK\x03\x04junk"),
                          ("tsplib_small/tsplib_n_le_300.json", b'[{"name": '),
                          ("tinyshakespeare/input.txt", b"\xff\xfe")):
        (folder / relpath).parent.mkdir(parents=True, exist_ok=True)
        (folder / relpath).write_bytes(body)
    for load, name in ((lambda: data.load_effbench("mmlu"), "effbench/correctness"),
                       (data.effbench_names, "effbench/correctness"),
                       (lambda: data.load_planetoid("cora"), "planetoid/cora"),
                       (data.load_tsplib_small, "tsplib_small"), (data.load_tinyshakespeare, "tinyshakespeare")):
        with pytest.raises(CorruptDataError) as info:
            load()
        assert info.value.name == name and info.value.fix.endswith("--force")


def test_a_folder_dataset_missing_a_file_or_holding_a_folder_is_corrupt(isolated, tmp_path, monkeypatch):
    files = {"fake/dir/a.txt": b"alpha\n", "fake/dir/b.txt": b"beta\n"}
    entry = Dataset("fake/dir", "fake/dir", "test", "none", None, is_folder=True,
                    files=tuple(FileSpec(k, hashlib.sha256(v).hexdigest(), len(v)) for k, v in files.items()))
    monkeypatch.setitem(registry.DATASETS, entry.name, entry)
    root = tmp_path / "env"
    (root / "fake/dir").mkdir(parents=True)
    (root / "fake/dir/a.txt").write_bytes(files["fake/dir/a.txt"])
    with pytest.raises(CorruptDataError, match="b.txt is corrupt: missing") as info:
        data.dataset_path("fake/dir")
    assert info.value.actual is None and "(unreadable)" in str(info.value)
    (root / "fake/dir/b.txt").mkdir()
    with pytest.raises(CorruptDataError, match="a folder where a file belongs"):
        data.dataset_path("fake/dir")


def test_cli_verify_lists_corrupt_files_one_line_each_and_exits_1(isolated, tmp_path, monkeypatch, capsys):
    root = tmp_path / "env"
    for name in ("one", "two"):
        entry = _register(monkeypatch, f"fake/{name}", f"fake/{name}.npz", GOOD_NPZ, npz_arrays=ARRAYS)
        (root / entry.relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / entry.relpath).write_bytes(GOOD_NPZ[: 100 if name == "one" else -1])
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    corrupt = [line for line in out.splitlines() if "CORRUPT" in line]
    assert len(corrupt) == 2 and len(out.splitlines()) == len(registry.DATASETS)
    for line, name in zip(corrupt, ("one", "two")):
        assert line.startswith(f"fake/{name}: CORRUPT {root / 'fake' / name}.npz is corrupt")
        assert "expected sha256" in line and "actual sha256" in line and f"fetch fake/{name} --force" in line
    assert main(["list"]) == 0
    assert "CORRUPT" in capsys.readouterr().out
    assert main(["path", "fake/one"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fake/one: corrupt" in err and "--force" in err


def test_cli_fetch_without_force_names_the_fix_and_force_replaces_the_file(isolated, tmp_path, monkeypatch,
                                                                           server, capsys):
    server.files["/arrays.npz"] = GOOD_NPZ
    entry = _register(monkeypatch, "fake/npz", "fake/arrays.npz", GOOD_NPZ, npz_arrays=ARRAYS,
                      upstream=Upstream({"fake/arrays.npz": server.url("/arrays.npz")},
                                        {"fake/arrays.npz": hashlib.sha256(GOOD_NPZ).hexdigest()}))
    target = tmp_path / "env" / entry.relpath  # the corrupt copy comes first in the search path
    target.parent.mkdir(parents=True)
    target.write_bytes(GOOD_NPZ[:-3])
    assert main(["fetch", "fake/npz"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is corrupt" in err and "neurips26 data fetch fake/npz --force" in err
    assert target.read_bytes() == GOOD_NPZ[:-3]  # a failed call changes nothing
    inode = target.stat().st_ino
    assert main(["fetch", "fake/npz", "--force"]) == 0
    assert f"fake/npz: ok {target}" in capsys.readouterr().out
    assert target.read_bytes() == GOOD_NPZ and target.stat().st_ino != inode  # replaced by a rename
    assert sorted(p.name for p in target.parent.iterdir()) == ["arrays.npz"]  # no temporaries left
    assert sorted(p.name for p in (tmp_path / "env").iterdir()) == ["fake"]
    assert main(["verify"]) == 0
    assert main(["fetch", "fake/npz", "--frob"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_force_fetch_that_fails_leaves_the_corrupt_copy_and_no_temporaries(isolated, tmp_path, monkeypatch,
                                                                            server):
    server.files["/arrays.npz"] = b"something else entirely"
    entry = _register(monkeypatch, "fake/npz", "fake/arrays.npz", GOOD_NPZ, npz_arrays=ARRAYS,
                      upstream=Upstream({"fake/arrays.npz": server.url("/arrays.npz")},
                                        {"fake/arrays.npz": hashlib.sha256(GOOD_NPZ).hexdigest()}))
    target = tmp_path / "env" / entry.relpath
    target.parent.mkdir(parents=True)
    target.write_bytes(GOOD_NPZ[:-3])
    with pytest.raises(ChecksumError):
        data.fetch("fake/npz", progress=False, force=True)
    assert target.read_bytes() == GOOD_NPZ[:-3]
    assert sorted(p.name for p in target.parent.iterdir()) == ["arrays.npz"]
    assert sorted(p.name for p in (tmp_path / "env").iterdir()) == ["fake"]
    with pytest.raises(TypeError, match="force must be a bool"):
        data.fetch("fake/npz", force="yes")


def test_a_claim_whose_data_is_corrupt_is_skipped_with_the_fix(isolated, tmp_path, monkeypatch):
    """``check`` on a paper whose dataset is a damaged file: its claim is skipped with the --force fix, the others
    run (not 'inconclusive BadZipFile')."""
    from neurips26.claims import Claim, Evidence, Paper, rules
    from neurips26.claims import runner as runner_module
    from neurips26.claims.catalog import lookup

    entry = _register(monkeypatch, "fake/npz", "fake/arrays.npz", GOOD_NPZ, npz_arrays=ARRAYS)
    (tmp_path / "env" / "fake").mkdir()
    (tmp_path / "env" / entry.relpath).write_bytes(_flip(GOOD_NPZ, len(GOOD_NPZ) // 2))

    def needs_data(ctx):
        arrays = resolve.read_dataset("fake/npz", lambda p: dict(np.load(p, allow_pickle=False)))
        return Evidence([float(arrays["a"].sum())])

    paper = Paper(id="P12", slug="effbench", default_seeds={"quick": 1}, claims=(
        Claim("C1", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=needs_data),
        Claim("C2", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=lambda ctx: Evidence([1.0]))))
    monkeypatch.setattr(runner_module, "load_paper", lambda name: paper)
    run_dir, runs = runner_module.run_checks([lookup("effbench")], scale="quick", out_root=tmp_path / "runs",
                                             show_progress=False)
    by_id = {claim["id"]: claim for claim in json.loads((run_dir / "effbench.json").read_text())["claims"]}
    assert by_id["C1"]["verdict"] == "skipped" and "error" not in by_id["C1"]
    assert by_id["C1"]["fix"] == "neurips26 data fetch fake/npz --force"
    assert "is corrupt" in by_id["C1"]["reason"] and entry.sha256 in by_id["C1"]["reason"]
    assert by_id["C2"]["verdict"] == "supported" and runs[0].claim_errors == 0
