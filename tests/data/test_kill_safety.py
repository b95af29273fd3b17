"""Kill safety of every writer: a writer SIGKILLed at several moments never leaves a file that loads as
valid but partial, and the temporaries it leaves are removed on the next start.

Writers: :func:`neurips26.data.integrity.atomic_path` (what every data write goes through), ``data fetch``
from a (local, slow) server, :func:`neurips26.claims.records.write_json_atomic` (run records, cleaned when the
next ``check`` starts) and :func:`neurips26.claims.report.write_report`. SIGKILL skips every ``finally``, so
only the rename discipline and the cleanup on the next start keep the folder sound."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: seconds after the writer says it is about to write; ``"temp+S"``: S seconds after its first temporary file
#: appears (so that some kills land mid-write whatever the machine's speed); ``None``: let it finish
KILL_AFTER = (0.0, 0.03, "temp+0", "temp+0.01", 0.25, None)

_ATOMIC = """
import sys, time
from pathlib import Path
from neurips26.data.integrity import atomic_path
chunk = bytes(range(256)) * 1024
print("ready", flush=True)
with atomic_path(Path(sys.argv[1])) as tmp:
    with open(tmp, "wb") as handle:
        for _ in range(40):
            handle.write(chunk)
            handle.flush()
            time.sleep(0.005)
"""
ATOMIC_BODY = bytes(range(256)) * 1024 * 40

_FETCH = """
import sys
from pathlib import Path
from neurips26.data import fetch, registry
from neurips26.data.spec import Dataset, FileSpec, Upstream
url, sha, size, root = sys.argv[1:5]
registry.DATASETS["fake/big"] = Dataset("fake/big", "fake/big.bin", "test", "none", sha,
    files=(FileSpec("fake/big.bin", sha, int(size)),), upstream=Upstream({"fake/big.bin": url}, {"fake/big.bin": sha}))
print("ready", flush=True)
fetch("fake/big", root=Path(root), progress=False, force=True)
"""

_RECORD = """
import sys
from pathlib import Path
from neurips26.claims.records import write_json_atomic
record = {"paper_id": "P07", "slug": "groupshift", "values": list(range(int(sys.argv[2])))}
print("ready", flush=True)
write_json_atomic(Path(sys.argv[1]), record, overwrite=True)
"""

_REPORT = """
import sys
from pathlib import Path
from neurips26.claims.report import write_report
print("ready", flush=True)
write_report(Path(sys.argv[1]))
"""


def _kill_at(script: str, args: list[str], delay: float | str | None, watch: Path | None = None) -> int:
    """Run ``script``; SIGKILL it ``delay`` seconds after it printed ``ready`` (``"temp+S"``: S seconds after a
    temporary file appeared under ``watch``; ``None``: let it finish). Returns its exit code (``-SIGKILL``
    when it was killed)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NEURIPS26_NO_SHARED": "1", "NEURIPS26_OFFLINE": "1"}
    child = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, text=True)
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        if delay is None:
            assert child.wait(timeout=60) == 0, child.stderr.read()
            return 0
        if isinstance(delay, str):
            assert watch is not None
            while child.poll() is None and not _temporaries(watch):
                time.sleep(0.0005)
            delay = float(delay.removeprefix("temp+"))
        time.sleep(delay)
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        return child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _temporaries(folder: Path) -> list[Path]:
    # polled while a live writer creates and removes its temporary folders: a folder can vanish mid-walk
    for _ in range(100):
        try:
            return [p for p in folder.rglob(".*") if p.name.endswith((".part", ".old", ".tmp")) or p.name.startswith(
                (".fetch-", ".pip-"))]
        except FileNotFoundError:
            continue
    raise RuntimeError(f"{folder} kept changing under the walk")


def test_atomic_path_killed_at_any_moment_leaves_the_old_file_or_the_new_one(tmp_path):
    from neurips26.data.integrity import atomic_path, clean_stale_temporaries

    dest = tmp_path / "data" / "file.bin"
    dest.parent.mkdir()
    dest.write_bytes(b"old version")
    killed_mid_write = 0
    for delay in KILL_AFTER:
        rc = _kill_at(_ATOMIC, [str(dest)], delay, dest.parent)
        assert dest.read_bytes() in (b"old version", ATOMIC_BODY), delay  # never a partial file
        left = _temporaries(dest.parent)
        killed_mid_write += rc == -signal.SIGKILL and bool(left)
        # the next start (any atomic write into the folder) removes the dead writer's temporaries
        clean_stale_temporaries(dest.parent)
        assert _temporaries(dest.parent) == [], left
        dest.write_bytes(b"old version")
    assert killed_mid_write >= 2  # the test did kill writers in the middle
    # a live writer's temporary is left alone: only dead pids are stale
    with atomic_path(tmp_path / "data" / "other.bin") as tmp:
        tmp.write_bytes(b"x")
        assert clean_stale_temporaries(dest.parent) == [] and tmp.exists()
    assert (tmp_path / "data" / "other.bin").read_bytes() == b"x"


def test_a_killed_fetch_leaves_no_partial_dataset_and_the_next_fetch_cleans_up(tmp_path, server, monkeypatch):
    from neurips26 import data
    from neurips26.data import registry
    from neurips26.data.spec import Dataset, FileSpec, Upstream

    body = os.urandom(1 << 21)  # 32 pieces of 64 KiB, 10 ms apart
    sha = hashlib.sha256(body).hexdigest()
    server.files["/big.bin"] = body
    url = server.url("/slow/big.bin")
    root = tmp_path / "cache"
    target = root / "fake" / "big.bin"
    killed_mid_write = 0
    for delay in KILL_AFTER[:-1]:  # all killed: the next fetch below is the one that finishes
        rc = _kill_at(_FETCH, [url, sha, str(len(body)), str(root)], delay, root)
        assert not target.exists() or hashlib.sha256(target.read_bytes()).hexdigest() == sha, delay
        killed_mid_write += rc == -signal.SIGKILL and bool(_temporaries(root))
    assert killed_mid_write >= 2
    entry = Dataset("fake/big", "fake/big.bin", "test", "none", sha, files=(FileSpec("fake/big.bin", sha, len(body)),),
                    upstream=Upstream({"fake/big.bin": server.url("/big.bin")}, {"fake/big.bin": sha}))
    monkeypatch.setitem(registry.DATASETS, entry.name, entry)
    assert data.fetch("fake/big", root=root, progress=False, force=True) == target
    assert target.read_bytes() == body
    assert _temporaries(root) == [] and sorted(p.name for p in root.rglob("*")) == ["big.bin", "fake"]


def test_a_killed_record_write_never_leaves_half_a_record_and_check_cleans_up(tmp_path):
    from neurips26.cli import _clean_stale_temp_files

    run = tmp_path / "runs" / "20261201-000000-quick-abcdef"
    run.mkdir(parents=True)
    dest = run / "groupshift.json"
    n = 400_000  # a few MB of JSON: the dump takes a while
    expected = {"paper_id": "P07", "slug": "groupshift", "values": list(range(n))}
    dest.write_text(json.dumps({"paper_id": "P07", "slug": "groupshift", "values": []}))
    killed_mid_write = 0
    for delay in KILL_AFTER:
        rc = _kill_at(_RECORD, [str(dest), str(n)], delay, run)
        loaded = json.loads(dest.read_text())  # always complete JSON: the old record or the new one
        assert loaded["values"] in ([], expected["values"]), delay
        killed_mid_write += rc == -signal.SIGKILL and bool(_temporaries(run))
        _clean_stale_temp_files(tmp_path / "runs")  # what the next `check --out runs` does first
        assert _temporaries(run) == []
        dest.write_text(json.dumps({"paper_id": "P07", "slug": "groupshift", "values": []}))
    assert killed_mid_write >= 2


@pytest.mark.parametrize("delay", [0.0, "temp+0", "temp+0.002"])
def test_a_killed_report_leaves_each_file_whole_and_the_next_report_cleans_up(delay, tmp_path):
    from neurips26.claims.report import load_records, render_markdown, write_report

    run = tmp_path / "run"
    run.mkdir()
    claims = [{"id": f"C{i}", "kind": "paper", "statement": "s" * 200, "paper_value": "1", "metric": "m",
               "criterion": "c", "measured": {"summary": "x"}, "verdict": "supported", "reason": "r" * 200}
              for i in range(3000)]
    (run / "groupshift.json").write_text(json.dumps({
        "paper_id": "P07", "slug": "groupshift", "scale": "smoke", "status": "ok", "start_time": "t",
        "duration_s": 1.0, "claims": claims}))
    _kill_at(_REPORT, [str(run)], delay, run)
    if (run / "report.md").exists():
        assert (run / "report.md").read_text() == render_markdown(load_records(run), run)
    if (run / "report.html").exists():
        assert (run / "report.html").read_text().endswith("</body></html>")
    write_report(run)  # the next start
    assert _temporaries(run) == [] and sorted(p.name for p in run.iterdir()) == ["groupshift.json", "report.html",
                                                                                 "report.md"]


def test_the_tokenizer_cache_cleans_dead_writers_and_rebuilds_a_damaged_file(tmp_path):
    from neurips26.nn.tokenizer import train_bpe_tokenizer

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".bpe-x.json.{int(dead.stdout)}.abc123.part"
    stale.write_text("{half a tokenizer")
    text = "to be or not to be, that is the question " * 50
    first = train_bpe_tokenizer(text, vocab_size=300, cache_dir=tmp_path)
    assert not stale.exists() and first.path.is_file() and _temporaries(tmp_path) == []
    first.path.write_text('{"version": "1.0", "trunc')  # damaged on disk
    again = train_bpe_tokenizer(text, vocab_size=300, cache_dir=tmp_path)
    assert again.path == first.path and again.encode("to be") == first.encode("to be")
    assert json.loads(again.path.read_text())["model"]["type"] == "BPE"
