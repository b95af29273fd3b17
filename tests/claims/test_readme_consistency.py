"""The top-level README states the project's status honestly: its paper table matches the catalog and
which papers are implemented, and its test command is the one CI runs."""

import re
from pathlib import Path

from neurips26.claims import CATALOG, is_implemented

ROOT = Path(__file__).resolve().parents[2]


def _paper_rows() -> dict[str, list[str]]:
    rows = {}
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and re.fullmatch(r"P\d\d", cells[0]):
            rows[cells[0]] = cells
    return rows


def test_readme_table_lists_every_paper_with_its_true_status():
    rows = _paper_rows()
    assert sorted(rows) == [entry.id for entry in CATALOG]
    for entry in CATALOG:
        row = rows[entry.id]
        assert f"`{entry.slug}`" in row[2], row
        status = row[3]
        assert status == ("implemented" if is_implemented(entry) else "not implemented yet"), (entry.slug, status)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = ".venv/bin/python -m pytest -q"
    assert command in readme and command in ci
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]'" in readme
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]'" in ci
