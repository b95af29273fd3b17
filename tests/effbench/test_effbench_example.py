"""The example program runs and prints what it promises."""

import runpy
from pathlib import Path

from neurips26.data.testing import require_dataset

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "effbench.py"


def test_example_runs(capsys):
    require_dataset("effbench/correctness")
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "mRMR++: 57 questions" in out and "Random++: 57 questions" in out and "missing" in out
