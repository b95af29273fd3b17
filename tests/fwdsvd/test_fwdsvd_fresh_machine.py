"""A fresh machine: no data folder, no shared cache, no network. The quick check must skip what needs the model
or the plays (naming the command that fetches them), never crash, and exit 0."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neurips26.data import DatasetNotFoundError
from neurips26.fwdsvd.experiment import memory_probe, read_probe


@pytest.fixture
def empty_data(tmp_path, monkeypatch):
    env = {"NEURIPS26_DATA": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "NEURIPS26_NO_SHARED": "1", "NEURIPS26_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    (tmp_path / "data").mkdir()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def test_memory_probe_turns_a_data_miss_into_a_record_not_a_crash(empty_data, tmp_path):
    out = tmp_path / "probe.json"
    memory_probe("forward", "quick", "0", str(out))           # returns normally
    assert "missing" in json.loads(out.read_text())
    with pytest.raises(DatasetNotFoundError) as err:
        read_probe(out)
    assert "neurips26 data fetch" in err.value.fix


def test_quick_check_with_an_empty_data_folder_skips_with_the_fix(empty_data, tmp_path):
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "neurips26.cli", "check", "fwdsvd", "--scale", "quick",
                           "--out", str(runs), "--no-progress"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **empty_data}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(next(Path(runs).glob("*/fwdsvd.json")).read_text())
    verdicts = {c["id"]: c for c in record["claims"]}
    for cid in ("C2", "C3", "C4"):
        assert verdicts[cid]["verdict"] == "skipped" and "neurips26 data fetch" in verdicts[cid]["fix"]
    assert verdicts["C5"]["verdict"] == "supported"
    assert "neurips26 data fetch" in done.stdout
