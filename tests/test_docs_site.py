"""The documentation site builds in strict mode (skipped when the `docs` extra is not installed)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
pytest.importorskip("material", reason="mkdocs-material is not installed: pip install -e '.[docs]'")
pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed: pip install -e '.[docs]'")


def test_docs_site_builds_strict(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "docs" / "build_pages.py")], check=True, cwd=ROOT)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    slugs = [p.stem for p in (ROOT / "docs" / "papers").glob("*.md")]
    assert len(slugs) == 19
    for slug in slugs:
        html = (tmp_path / "site" / "papers" / slug / "index.html").read_text(encoding="utf-8")
        assert "doc-object" in html or "doc doc-" in html, f"{slug}: no API reference rendered"
    shutil.rmtree(tmp_path / "site")
