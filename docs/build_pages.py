"""Write the generated pages of the documentation site (run before `mkdocs build`).

docs/papers/<slug>.md  -- the paper's README followed by its API reference block
docs/index.md          -- the top-level README
Both are git-ignored; the sources of truth are the READMEs and the docstrings.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "neurips26"
DOCS = ROOT / "docs"


def _fix_links(text: str, base: str) -> str:
    """Links relative to a README point into the repository, not the site: turn them into plain text."""

    def sub(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if target.startswith(("http://", "https://", "#", "mailto:")):
            return m.group(0)
        return f"{label} (`{base}{target}`)"

    return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", sub, text)


def paper_slugs() -> list[str]:
    return sorted(p.parent.name for p in PKG.glob("*/README.md") if (p.parent / "__init__.py").exists()
                  and p.parent.name not in {"claims", "data", "nn"})


def main() -> int:
    out = DOCS / "papers"
    out.mkdir(parents=True, exist_ok=True)
    slugs = paper_slugs()
    for slug in slugs:
        text = (PKG / slug / "README.md").read_text(encoding="utf-8")
        text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)  # plots live in the repository, not in the site
        text = _fix_links(text, f"src/neurips26/{slug}/")
        page = f"{text.rstrip()}\n\n## API reference\n\n::: neurips26.{slug}\n"
        (out / f"{slug}.md").write_text(page, encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    readme = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", readme)
    (DOCS / "index.md").write_text(_fix_links(readme, ""), encoding="utf-8")
    print(f"wrote {len(slugs)} paper pages and docs/index.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
