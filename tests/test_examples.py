"""Every program in examples/ runs to the end (a user's first contact with a paper must work)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path, tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    if done.returncode and "DatasetNotFoundError" in done.stderr and not os.environ.get("NEURIPS26_REQUIRE_DATA"):
        # a clone without ../shared or a data folder: like the data tests, skip with the fix (CI, which has the
        # data, sets NEURIPS26_REQUIRE_DATA and so still fails here)
        pytest.skip(f"{path.name} needs data that is absent here: {done.stderr.strip().splitlines()[-1][:300]}")
    assert done.returncode == 0, f"{path.name} failed:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{path.name} printed nothing a user could read"
