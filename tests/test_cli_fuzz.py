"""Hypothesis fuzzers of every file the ``neurips26`` command reads: run records (``report``), anongames game
JSON, effbench answer CSVs/npz and predictor folders, cached data files (``data``).

Each fuzzer starts from a valid file and breaks it the ways files break: truncated, wrong types, wrong nesting,
huge numbers, NaN/Infinity tokens, duplicate keys, bad UTF-8, nesting too deep for the parser, a folder where
the file belongs. The property is the CLI's contract: exit 0 with the full output, or exit 2 with one line on
stderr, nothing on stdout and nothing written; never a traceback. Calls are in-process
(``neurips26.cli.main``), so the whole file runs in well under a minute on one core.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from neurips26.cli import main

#: examples per fuzzer (NEURIPS26_FUZZ_EXAMPLES=2000 for a long local hunt)
EXAMPLES = int(os.environ.get("NEURIPS26_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------------
# breaking JSON documents

JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=5)
#: text put where a number was: NaN tokens, numbers beyond a double, integers beyond int()'s digit limit
BAD_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e400", str(10**400), "9" * 5000, "1" + "0" * 400 + ".5",
               "-0", "1e-400", "0x10", "+1", ".5", "01"]
_TOKEN = "\ue000TOKEN\ue000"
_DUP = "\ue000DUP\ue000"


def _paths(doc: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, prefix + (i,))


def _get(doc: Any, path: tuple) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


@st.composite
def broken_json(draw, valid: Any) -> bytes:
    """The bytes of ``valid`` (a JSON document) broken in one of the ways files break."""
    doc = copy.deepcopy(valid)
    paths = list(_paths(doc))
    how = draw(st.sampled_from(["replace", "delete", "wrap", "truncate", "number", "duplicate", "deep",
                                "utf8", "empty", "top"]))
    if how == "replace":  # a value of the wrong type (or a plausible one) anywhere
        doc = _set(doc, draw(st.sampled_from(paths)), draw(JUNK))
    elif how == "delete":
        path = draw(st.sampled_from([p for p in paths if p] or [()]))
        if path:
            parent = _get(doc, path[:-1])
            del parent[path[-1]]
    elif how == "wrap":  # wrong nesting: a value inside a list or an object
        path = draw(st.sampled_from(paths))
        value = _get(doc, path)
        doc = _set(doc, path, draw(st.sampled_from([[value], {"value": value}, [[value]]])))
    elif how == "number":
        numeric = [p for p in paths if isinstance(_get(doc, p), int | float) and not isinstance(_get(doc, p), bool)]
        doc = _set(doc, draw(st.sampled_from(numeric or paths)), _TOKEN)
        return json.dumps(doc).replace(json.dumps(_TOKEN), draw(st.sampled_from(BAD_NUMBERS))).encode()
    elif how == "duplicate":
        objects = [p for p in paths if isinstance(_get(doc, p), dict) and _get(doc, p)]
        if objects:
            target = _get(doc, draw(st.sampled_from(objects)))
            key = draw(st.sampled_from(sorted(target)))
            target[_DUP] = draw(JUNK)
            return json.dumps(doc).replace(json.dumps(_DUP), json.dumps(key)).encode()
    elif how == "deep":
        depth = draw(st.sampled_from([50, 5000, 100_000]))
        return ("[" * depth + json.dumps(doc) + "]" * depth).encode()
    text = json.dumps(doc, indent=draw(st.sampled_from([None, 1]))).encode()
    if how == "truncate":
        return text[: draw(st.integers(0, max(len(text) - 1, 0)))]
    if how == "utf8":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"])) + text[at:]
    if how == "empty":
        return draw(st.sampled_from([b"", b"   \n", b"null", b"[]", b"{}", b"\xef\xbb\xbf{}"]))
    if how == "top":
        return json.dumps(draw(JUNK)).encode()
    return text


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _call(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(argv)
    captured = capsys.readouterr()
    if currently_in_test_context():  # the outcomes' mix, in --hypothesis-show-statistics
        event(" ".join(arg for arg in argv[:2] if not arg.startswith("/")) + f": exit {rc}")
    return rc, captured.out, captured.err


def _assert_refused(rc: int, out: str, err: str, prefix: str) -> None:
    assert rc == 2, (rc, out, err)
    assert out == "", out  # never a partial output
    assert err.count("\n") == 1 and err.endswith("\n") and err.startswith(prefix), err
    assert "Traceback" not in err


@pytest.fixture()
def scratch() -> Iterator[Path]:
    """A fresh folder per call site; the fuzzers make their own per example under it."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as name:
        yield Path(name)


# ---------------------------------------------------------------------------------------------------
# report: run records

RECORD = {
    "schema": 3, "paper_id": "P07", "slug": "groupshift", "title": "Group shift", "scale": "smoke", "status": "ok",
    "start_time": "2026-12-01T00:00:00+00:00", "duration_s": 1.5, "cpu_s": 1.25, "budget_s": 30, "seeds": [0, 1],
    "device": "cpu", "claims": [
        {"id": "C1", "kind": "paper", "statement": "s", "paper_value": "2x", "metric": "m", "criterion": "c",
         "measured": {"mean": 1.9, "summary": "1.9x"}, "verdict": "supported", "reason": "r",
         "preconditions": [{"name": "converged", "met": True, "criterion": "c", "measured": {"summary": "ok"}}]},
        {"id": "C2", "kind": "sanity", "statement": "s", "paper_value": "exact", "metric": "m", "criterion": "c",
         "measured": None, "verdict": "skipped", "reason": "data absent", "fix": "neurips26 data fetch x"}],
    "tuning": [{"arm": "ours", "split": "validation", "size": 4, "best": {"lr": 0.1}, "best_score": 0.5}],
    "notes": ["a note"], "plots": [{"path": "plot.png", "caption": "a plot"}, "old.png"],
}


@FUZZ
@given(record=broken_json(RECORD), other=st.booleans(), compare=st.booleans())
def test_fuzz_report_records(record, other, compare, scratch, capsys):
    with tempfile.TemporaryDirectory(dir=scratch) as name:
        run, previous = Path(name) / "run", Path(name) / "previous"
        run.mkdir()
        previous.mkdir()
        # the broken record is in the run reported, or in the run it is compared with (--compare)
        (previous if compare else run).joinpath("groupshift.json").write_bytes(record)
        if compare:
            (run / "groupshift.json").write_text(json.dumps(RECORD))
        if other:  # a second, valid record beside the broken one
            (previous if compare else run).joinpath("tst.json").write_text(
                json.dumps({**RECORD, "paper_id": "P01", "slug": "tst"}))
        before = _listing(Path(name))
        argv = ["report", str(run)] + (["--compare", str(previous)] if compare else [])
        rc, out, err = _call(argv, capsys)
        if rc == 0:
            assert (run / "report.md").is_file() and (run / "report.html").is_file() and "wrote" in out
            assert _listing(Path(name)) == sorted(before + ["run/report.html", "run/report.md"])
            assert ("claim(s) differ" in out) == compare
        else:
            _assert_refused(rc, out, err, "neurips26 report: ")
            assert _listing(Path(name)) == before


@pytest.mark.parametrize("where", ["groupshift.json", "report.md", "report.html"])
def test_report_with_a_folder_where_a_file_belongs(where, scratch, capsys):
    run = scratch / "run"
    run.mkdir()
    if where != "groupshift.json":
        (run / "groupshift.json").write_text(json.dumps(RECORD))
    (run / where).mkdir()
    before = _listing(run)
    _assert_refused(*_call(["report", str(run)], capsys), "neurips26 report: ")
    assert _listing(run) == before


# ---------------------------------------------------------------------------------------------------
# anongames: game JSON

LINEAR = {"format": "anongames/v1", "kind": "linear", "a": [2, -1, "1/3"], "b": [-1, 1, 0.5]}
TABLES = {"kind": "tables", "U1": [[1, 0, 2], [0, 1, "1/2"], [3, 1, 0]], "U0": [[0, 1, 0], [1, 0, 1], [0.25, 0, 1]]}
GAME_COMMANDS = [["solve"], ["solve", "--json"], ["verify", "--profile", "1/2,0,1"], ["enumerate", "--limit", "3"]]


@FUZZ
@given(game=st.one_of(broken_json(LINEAR), broken_json(TABLES)), command=st.sampled_from(GAME_COMMANDS))
def test_fuzz_anongames_game_files(game, command, scratch, capsys):
    path = scratch / "game.json"
    path.write_bytes(game)
    rc, out, err = _call(["anongames", command[0], str(path), *command[1:]], capsys)
    if rc == 0:
        assert out
    else:
        _assert_refused(rc, out, err, "")


def test_anongames_game_path_that_is_a_folder(scratch, capsys):
    (scratch / "game.json").mkdir()
    _assert_refused(*_call(["anongames", "solve", str(scratch / "game.json")], capsys), "")


# ---------------------------------------------------------------------------------------------------
# effbench: answer files and predictor folders

N_MODELS, N_QUESTIONS, BUDGET = 24, 30, 5


@pytest.fixture(scope="module")
def effbench_model(tmp_path_factory):
    """A model folder written by ``effbench select`` on a seeded 0/1 matrix, and that matrix."""
    from neurips26.effbench.cli import main as effbench_main

    folder = tmp_path_factory.mktemp("effbench")
    rng = np.random.default_rng(0)
    S = (rng.random((N_MODELS, N_QUESTIONS)) < np.linspace(0.2, 0.8, N_QUESTIONS)).astype(int)
    np.savez(folder / "src.npz", scores=S)
    assert effbench_main(["select", "--matrix", str(folder / "src.npz"), "--budget", str(BUDGET),
                          "--out", str(folder / "model")]) == 0
    return folder / "model", S


CELLS = ["0", "1", "1", "0", "0.5", "", " 1 ", "nan", "NaN", "inf", "-inf", "1e999", "9" * 400, "-0", "1e-400",
         "x", '"1"', "0x1", "1,0", "\x00", "2", "-1"]


@st.composite
def answer_csv(draw) -> bytes:
    width = draw(st.sampled_from([N_QUESTIONS, BUDGET, BUDGET + 1, 0, 1]))
    n_rows = draw(st.integers(0, 8))
    clean = draw(st.integers(0, 4))  # mostly valid cells, so that some files are accepted
    rows = [[draw(st.sampled_from(CELLS[:4])) if draw(st.integers(0, 4)) < clean else draw(st.sampled_from(CELLS))
             for _ in range(width + draw(st.sampled_from([0, 0, 0, 1, -1])))] for _ in range(n_rows)]
    header = [f"q{j}" for j in range(width)] if draw(st.booleans()) else None
    text = "\n".join(",".join(row) for row in ([header] if header else []) + rows).encode("utf-8", "surrogatepass")
    how = draw(st.sampled_from(["plain", "plain", "truncate", "utf8", "bom"]))
    if how == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "utf8":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + b"\xff\xfe" + text[at:]
    elif how == "bom":
        text = b"\xef\xbb\xbf" + text
    return text


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@st.composite
def answer_npz(draw) -> bytes:
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    width = draw(st.sampled_from([N_QUESTIONS, BUDGET, 3]))
    good = (rng.random((3, width)) < 0.5).astype(draw(st.sampled_from([np.int64, np.float32, np.uint8, bool])))
    how = draw(st.sampled_from(["good", "nan", "inf", "huge", "3d", "1d", "two", "string", "object", "bytes"]))
    if how == "nan":
        good = good.astype(float)
        good[0, 0] = np.nan
    elif how == "inf":
        good = good.astype(float)
        good[-1, -1] = np.inf
    elif how == "huge":
        good = good.astype(float) * 1e308
    elif how == "3d":
        good = good[None]
    elif how == "1d":
        good = good[0]
    elif how == "two":
        return _npz(a=good, b=good)
    elif how == "string":
        return _npz(x=good.astype(str))
    elif how == "object":
        buffer = io.BytesIO()
        np.savez(buffer, x=np.array([[1, None]], dtype=object))
        return buffer.getvalue()
    data = _npz(x=good)
    if how == "bytes":
        cut = draw(st.integers(0, len(data) - 1))
        data = data[:cut] if draw(st.booleans()) else data[:cut] + bytes([data[cut] ^ 0xFF]) + data[cut + 1:]
    return data


@FUZZ
@given(body=st.one_of(answer_csv(), answer_npz()))
def test_fuzz_effbench_predict_answers(body, effbench_model, scratch, capsys):
    model, _ = effbench_model
    suffix = ".npz" if body.startswith(b"PK") or body[:1] == b"\x93" else ".csv"
    path = scratch / f"answers{suffix}"
    path.write_bytes(body)
    rc, out, err = _call(["effbench", "predict", "--model", str(model), "--answers", str(path)], capsys)
    if rc == 0:
        values = [float(line.split("\t")[1]) for line in out.splitlines()]
        assert values and all(0.0 <= v <= 1.0 for v in values)
    else:
        _assert_refused(rc, out, err, "neurips26 effbench: error: ")


@FUZZ
@given(body=answer_csv(), mi_k=st.sampled_from(["3", "1", "0", "-2", "23", "24", "1000", "x"]))
def test_fuzz_effbench_select_matrix(body, mi_k, scratch, capsys):
    with tempfile.TemporaryDirectory(dir=scratch) as name:
        path = Path(name) / "matrix.csv"
        path.write_bytes(body)
        out_dir = Path(name) / "out"
        rc, out, err = _call(["effbench", "select", "--matrix", str(path), "--budget", "2", "--out", str(out_dir),
                              "--mi-k", mi_k], capsys)
        if rc == 0:
            assert (out_dir / "predictor.json").is_file() and (out_dir / "coreset.json").is_file()
        else:
            _assert_refused(rc, out, err, "neurips26 effbench: error: ")
            assert not out_dir.exists()  # nothing half-written


def test_effbench_select_removes_the_temporaries_of_a_killed_select(effbench_model, scratch, capsys):
    _, S = effbench_model
    out = scratch / "m"
    out.mkdir()
    stale = [out / ".predictor.npz.k1l2m3.tmp", out / ".coreset.json.zz9.tmp"]
    keep = out / ".notes.abc.tmp"
    for path in stale + [keep]:
        path.write_bytes(b"partial")
    np.savez(scratch / "src.npz", x=S)
    rc, out_text, err = _call(["effbench", "select", "--matrix", str(scratch / "src.npz"), "--budget", "3",
                               "--out", str(out)], capsys)
    assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == [".notes.abc.tmp", "coreset.json", "predictor.json",
                                                       "predictor.npz"]


def _model_json(model: Path) -> dict:
    return json.loads((model / "predictor.json").read_text())


@st.composite
def broken_model(draw, model: Path) -> dict[str, bytes | None]:
    """File name -> new bytes (``None``: a folder in its place) for a copy of ``model``."""
    which = draw(st.sampled_from(["predictor.json", "predictor.json", "predictor.npz", "folder"]))
    if which == "folder":
        return {draw(st.sampled_from(["predictor.json", "predictor.npz"])): None}
    if which == "predictor.json":
        return {which: draw(broken_json(_model_json(model)))}
    with np.load(model / "predictor.npz", allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    how = draw(st.sampled_from(["bytes", "drop", "nan", "shape", "dtype", "coreset"]))
    key = draw(st.sampled_from(sorted(arrays)))
    if how == "bytes":
        data = (model / "predictor.npz").read_bytes()
        cut = draw(st.integers(0, len(data) - 1))
        return {which: data[:cut] if draw(st.booleans()) else data[:cut] + bytes([data[cut] ^ 0x55]) + data[cut + 1:]}
    if how == "drop":
        del arrays[key]
    elif how == "nan":
        arrays[key] = arrays[key].astype(float)
        arrays[key].flat[0] = np.nan
    elif how == "shape":
        arrays[key] = arrays[key].reshape(-1)[: max(arrays[key].size - 1, 0)]
    elif how == "dtype":
        arrays[key] = arrays[key].astype(str)
    else:
        arrays["coreset"] = np.asarray(draw(st.lists(st.integers(-3, N_QUESTIONS + 3), min_size=0, max_size=BUDGET)))
    return {which: _npz(**arrays)}


@FUZZ
@given(data=st.data())
def test_fuzz_effbench_predictor_folders(data, effbench_model, scratch, capsys):
    model, S = effbench_model
    changes = data.draw(broken_model(model))
    with tempfile.TemporaryDirectory(dir=scratch) as name:
        copy_dir = Path(name) / "model"
        shutil.copytree(model, copy_dir)
        for file, body in changes.items():
            (copy_dir / file).unlink()
            if body is None:
                (copy_dir / file).mkdir()
            else:
                (copy_dir / file).write_bytes(body)
        answers = Path(name) / "answers.npz"
        np.savez(answers, x=S[:3])
        rc, out, err = _call(["effbench", "predict", "--model", str(copy_dir), "--answers", str(answers)], capsys)
        if rc == 0:
            assert len(out.splitlines()) == 3
        else:
            _assert_refused(rc, out, err, "neurips26 effbench: error: ")


def test_effbench_predictor_json_that_is_a_list_and_mi_k_out_of_range(effbench_model, scratch, capsys):
    model, S = effbench_model
    shutil.copytree(model, scratch / "m")
    (scratch / "m" / "predictor.json").write_text("[1]")
    np.savez(scratch / "a.npz", x=S[:2])
    rc, out, err = _call(["effbench", "predict", "--model", str(scratch / "m"), "--answers", str(scratch / "a.npz")],
                         capsys)
    _assert_refused(rc, out, err, "neurips26 effbench: error: --model: ")
    assert "must hold a JSON object, got list" in err
    np.savez(scratch / "src.npz", x=S)
    rc, out, err = _call(["effbench", "select", "--matrix", str(scratch / "src.npz"), "--budget", "3", "--out",
                          str(scratch / "o"), "--mi-k", "1000"], capsys)
    _assert_refused(rc, out, err, "neurips26 effbench: error: --mi-k must lie in [1, 23]")


# ---------------------------------------------------------------------------------------------------
# data: cached files

ARRAYS = {"x": np.arange(300, dtype=np.int64), "y": np.linspace(0.0, 1.0, 200)}
GOOD_NPZ = _npz(**ARRAYS)
GOOD_JSON = json.dumps([{"name": "a", "n": 2, "coords": [[0.0, 1.0], [2.0, 3.0]]}]).encode()


def _same_arrays(body: bytes) -> bool:
    from neurips26.data.integrity import arrays_sha256

    try:
        with np.load(io.BytesIO(body), allow_pickle=False) as archive:
            return arrays_sha256({k: archive[k] for k in archive.files}) == arrays_sha256(ARRAYS)
    except Exception:  # noqa: BLE001 - any failure to decode means: not the same arrays
        return False


@st.composite
def broken_bytes(draw, good: bytes) -> bytes | None:
    """Damaged bytes of ``good`` (``None``: a folder in its place)."""
    how = draw(st.sampled_from(["truncate", "flip", "append", "empty", "folder", "junk", "same"]))
    if how == "truncate":
        return good[: draw(st.integers(0, len(good) - 1))]
    if how == "flip":
        at = draw(st.integers(0, len(good) - 1))
        return good[:at] + bytes([good[at] ^ draw(st.integers(1, 255))]) + good[at + 1:]
    if how == "append":
        return good + draw(st.binary(min_size=1, max_size=8))
    if how == "empty":
        return b""
    if how == "folder":
        return None
    if how == "junk":
        return draw(st.binary(max_size=64))
    return good


@FUZZ
@given(kind=st.sampled_from(["npz", "json"]), data=st.data())
def test_fuzz_cached_data_files(kind, data, scratch, capsys):
    from neurips26.data import registry, resolve
    from neurips26.data.errors import CorruptDataError
    from neurips26.data.integrity import arrays_sha256
    from neurips26.data.spec import Dataset, FileSpec

    good = GOOD_NPZ if kind == "npz" else GOOD_JSON
    body = data.draw(broken_bytes(good))
    relpath = f"fuzz/file.{kind}"
    digest = hashlib.sha256(good).hexdigest()
    entry = Dataset("fuzz/file", relpath, "made by the fuzzer", "none", digest,
                    files=(FileSpec(relpath, digest, len(good), arrays_sha256(ARRAYS) if kind == "npz" else None),))
    with tempfile.TemporaryDirectory(dir=scratch) as name, pytest.MonkeyPatch.context() as mp:
        root = Path(name)
        for var, value in (("NEURIPS26_DATA", root / "env"), ("XDG_CACHE_HOME", root / "xdg")):
            mp.setenv(var, str(value))
        mp.setenv("NEURIPS26_NO_SHARED", "1")
        mp.setenv("NEURIPS26_OFFLINE", "1")
        mp.setitem(registry.DATASETS, entry.name, entry)
        target = root / "env" / relpath
        target.parent.mkdir(parents=True)
        if body is None:
            target.mkdir()
        else:
            target.write_bytes(body)
        # a damaged zip header can leave every array intact: accepted by its array digest, by design
        intact = body == good or (kind == "npz" and body is not None and _same_arrays(body))
        before = _listing(root)

        rc, out, err = _call(["data", "verify"], capsys)
        lines = out.splitlines()
        assert rc == (0 if intact else 1) and err == "" and len(lines) == len(registry.DATASETS)
        line = next(line for line in lines if line.startswith("fuzz/file: "))
        assert (f"ok {target}" in line) if intact else line.startswith(f"fuzz/file: CORRUPT {target} is corrupt")

        rc, out, err = _call(["data", "list"], capsys)
        assert rc == 0 and err == "" and "fuzz/file" in out

        rc, out, err = _call(["data", "path", "fuzz/file"], capsys)
        if intact:
            assert rc == 0 and out.strip() == str(target)
        else:
            assert rc == 1 and out == "" and err.count("\n") == 1 and "data fetch fuzz/file --force" in err

        decode = (lambda p: dict(np.load(p, allow_pickle=False))) if kind == "npz" else \
            (lambda p: json.loads(p.read_text(encoding="utf-8")))
        if intact:
            resolve.read_dataset("fuzz/file", decode)
        else:
            with pytest.raises(CorruptDataError) as info:
                resolve.read_dataset("fuzz/file", decode)
            assert info.value.path == target and info.value.fix == "neurips26 data fetch fuzz/file --force"
            rc, out, err = _call(["data", "fetch", "fuzz/file"], capsys)  # no source: fails, changes nothing
            assert rc == 1 and err.count("\n") == 1
        assert _listing(root) == before  # no command wrote anything


def test_fuzzers_leave_no_files_behind(scratch):
    assert os.listdir(scratch) == []
