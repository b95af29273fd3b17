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
    assert done.returncode == 0, f"{path.name} failed:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{path.name} printed nothing a user could read"
