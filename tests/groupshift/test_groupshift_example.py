"""The example runs end to end (its own asserts check the certificate and the re-partition)."""

import runpy
from pathlib import Path


def test_example_runs(capsys):
    runpy.run_path(str(Path(__file__).parents[2] / "examples" / "groupshift.py"), run_name="__main__")
    assert "by statistic" in capsys.readouterr().out
