"""The catalog of papers, discovered: every ``neurips26/<slug>/check.py`` that declares a ``PAPER``.

A paper registers itself by declaring ``PAPER = Paper(id=..., slug=..., method=..., title=..., arxiv=...,
claims=...)`` in its package's ``check.py``. The catalog reads those five literals from the file's syntax tree
(nothing is imported, so ``neurips26 list`` stays fast and a paper with a heavy or broken import still lists);
:func:`neurips26.claims.registry.load_paper` imports the module when a check runs and verifies that the
imported ``PAPER`` says the same. Adding paper 20 is adding its folder: the framework is not edited.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CatalogEntry:
    """One paper of the project: id (``P01``), package slug, method name, title, arXiv id."""

    id: str
    slug: str
    method: str
    title: str
    arxiv: str | None = None


_FIELDS = ("id", "slug", "method", "title", "arxiv")


def _package_dirs() -> list[Path]:
    spec = importlib.util.find_spec("neurips26")
    return [Path(location) for location in (spec.submodule_search_locations or [])] if spec else []


def read_declaration(check_file: Path) -> CatalogEntry:
    """The catalog entry a ``check.py`` declares in its ``PAPER = Paper(...)`` (literal keywords only)."""
    tree = ast.parse(Path(check_file).read_text(encoding="utf-8"), filename=str(check_file))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if (any(isinstance(t, ast.Name) and t.id == "PAPER" for t in targets)
                and isinstance(getattr(node, "value", None), ast.Call)):
            found = {}
            for keyword in node.value.keywords:
                if keyword.arg in _FIELDS:
                    try:
                        found[keyword.arg] = ast.literal_eval(keyword.value)
                    except ValueError as err:
                        raise ValueError(f"{check_file}: PAPER {keyword.arg}= must be a literal") from err
            missing = [name for name in ("id", "slug", "method", "title") if not found.get(name)]
            if missing:
                raise ValueError(f"{check_file}: PAPER must declare {', '.join(missing)} as literals")
            if found["slug"] != check_file.parent.name:
                raise ValueError(f"{check_file}: PAPER slug {found['slug']!r} is not its folder "
                                 f"{check_file.parent.name!r}")
            return CatalogEntry(found["id"], found["slug"], found["method"], found["title"], found.get("arxiv"))
    raise ValueError(f"{check_file}: no top-level PAPER = Paper(...) declaration")


def discover() -> tuple[tuple[CatalogEntry, ...], dict[str, str]]:
    """Every paper whose package ships a readable ``check.py`` declaration, in id order, and the folders whose
    declaration could not be read (slug -> why). One broken declaration leaves the other papers usable;
    ``neurips26 list`` and the contract test show it. Ids and slugs must be unique."""
    entries, errors = [], {}
    for root in _package_dirs():
        for path in sorted(root.glob("*/check.py")):
            try:
                entries.append(read_declaration(path))
            except (OSError, SyntaxError, ValueError) as err:
                errors[path.parent.name] = f"{type(err).__name__}: {err}"
    entries.sort(key=lambda entry: entry.id)
    for attr in ("id", "slug"):
        values = [getattr(entry, attr) for entry in entries]
        duplicates = sorted({v for v in values if values.count(v) > 1})
        if duplicates:
            raise ValueError(f"two papers declare the same {attr}: {duplicates}")
    return tuple(entries), errors


CATALOG: tuple[CatalogEntry, ...]
#: Paper folders whose ``check.py`` declaration could not be read: slug -> the reason.
DISCOVERY_ERRORS: dict[str, str]
CATALOG, DISCOVERY_ERRORS = discover()
_BY_SLUG = {entry.slug: entry for entry in CATALOG}
_BY_ID = {entry.id: entry for entry in CATALOG}


def lookup(name: str) -> CatalogEntry:
    """Find a paper by slug (``effbench``) or id (``P12``, case-insensitive)."""
    if not isinstance(name, str):
        raise ValueError(f"a paper is named by a slug or an id, got {name!r}")
    if name in _BY_SLUG:
        return _BY_SLUG[name]
    if name.upper() in _BY_ID:
        return _BY_ID[name.upper()]
    if name in DISCOVERY_ERRORS:
        raise ValueError(f"paper {name!r} cannot be registered: {DISCOVERY_ERRORS[name]}")
    known = ", ".join(entry.slug for entry in CATALOG)
    raise ValueError(f"unknown paper {name!r}: expected a slug or an id {CATALOG[0].id}..{CATALOG[-1].id} "
                     f"(slugs: {known})")
