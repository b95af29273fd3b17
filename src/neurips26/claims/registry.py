"""Load the papers the catalog discovered: ``neurips26.<slug>.check.PAPER``."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from .catalog import CATALOG, CatalogEntry, lookup
from .spec import Paper


def _check_module_name(slug: str) -> str:
    return f"neurips26.{slug}.check"


def is_implemented(entry: CatalogEntry) -> bool:
    """True when the paper's package ships a ``check`` module.

    Looks for the file instead of calling ``find_spec`` on the submodule, which would import the paper
    package (and its heavy dependencies) just to list it.
    """
    package = importlib.util.find_spec("neurips26")
    locations = package.submodule_search_locations if package else None
    return any((Path(location) / entry.slug / "check.py").is_file() for location in (locations or []))


def load_paper(name: str) -> Paper:
    """Import and validate the :class:`Paper` of a slug or id; clear error when not implemented."""
    entry = lookup(name)
    if not is_implemented(entry):
        raise LookupError(f"{entry.id} {entry.slug} is not implemented yet (no neurips26.{entry.slug}.check)")
    module = importlib.import_module(_check_module_name(entry.slug))
    paper = getattr(module, "PAPER", None)
    if not isinstance(paper, Paper):
        raise TypeError(f"neurips26.{entry.slug}.check must define PAPER as a claims.Paper, got {type(paper)}")
    declared = (paper.id, paper.slug, paper.method, paper.title, paper.arxiv)
    if declared != (entry.id, entry.slug, entry.method, entry.title, entry.arxiv):
        raise ValueError(f"{entry.slug}: the imported PAPER says {declared}, its declaration was read as "
                         f"{(entry.id, entry.slug, entry.method, entry.title, entry.arxiv)}")
    return paper


def implemented() -> list[CatalogEntry]:
    return [entry for entry in CATALOG if is_implemented(entry)]


def resolve(names: list[str]) -> list[CatalogEntry]:
    """Expand ``["all"]`` to every implemented paper; validate each other name."""
    if not names or names == ["all"]:
        return implemented()
    if "all" in names:
        raise ValueError(f"papers: 'all' cannot be combined with other names, got {names}")
    return [lookup(name) for name in names]
