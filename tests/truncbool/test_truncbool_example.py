"""The example program runs and prints what it promises."""

import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "truncbool.py"


def test_example_runs(capsys):
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "ℓ∞ error: ours" in out and "log10 μ(S) = -19.0" in out
