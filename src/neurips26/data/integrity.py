"""Checksums and atomic writes.

* :func:`sha256_file`: the sha256 of a file's bytes (memoised on path, size and mtime).
* :func:`npz_content_sha256`: a digest of the *arrays* in an ``.npz``, independent of the zip container
  (numpy versions write different zip headers for the same arrays). For every array, in name order,
  it hashes ``name``, ``dtype.str``, ``shape`` and the C-order bytes:
  $h = \\mathrm{sha256}(\\Vert_k\\ [k,\\ \\mathrm{dtype}_k,\\ \\mathrm{shape}_k,\\ \\mathrm{bytes}_k])$.
* :func:`atomic_path`: a context manager yielding a temporary path in the destination's folder that is
  renamed onto the destination only when the block succeeds; on any error it is deleted, so readers
  never see half a file and an interrupted write leaves nothing behind. A write killed outright
  (SIGKILL skips every ``finally``) leaves its temporary, whose name carries the writer's pid:
  :func:`clean_stale_temporaries` removes those of dead writers, and every writer calls it on its next start.
* :data:`DECODE_ERRORS`: what reading a damaged file raises (a zip that is not one, a cut stream, a bad
  pickle, bad UTF-8 or JSON); the registry turns each into :class:`~neurips26.data.errors.CorruptDataError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import shutil
import struct
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import ChecksumError

_CHUNK = 1 << 20

#: Everything decoding a damaged cached file raises: ``OSError`` (short reads), ``ValueError`` (numpy's
#: header checks, ``json.JSONDecodeError``, ``UnicodeDecodeError``), ``zipfile.BadZipFile`` and ``zlib.error``
#: (neither of the first two), ``EOFError``, pickle errors, ``struct.error``, the ``KeyError``/``IndexError``/
#: ``TypeError`` a parser raises on a structure cut in the middle, and ``RuntimeError`` (``torch.load``'s
#: "PytorchStreamReader failed reading zip archive").
DECODE_ERRORS: tuple[type[BaseException], ...] = (
    OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, pickle.UnpicklingError, struct.error,
    KeyError, IndexError, TypeError, OverflowError, MemoryError, RuntimeError)


@lru_cache(maxsize=256)
def _sha256_cached(path: str, mtime_ns: int, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of the file at ``path``."""
    stat = os.stat(path)
    return _sha256_cached(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def arrays_sha256(arrays: dict[str, np.ndarray]) -> str:
    """Container-independent digest of named arrays (see the module docstring)."""
    digest = hashlib.sha256()
    for key in sorted(arrays):
        array = np.ascontiguousarray(arrays[key])
        if array.dtype.hasobject:
            raise ValueError(f"arrays: {key!r} has an object dtype, which has no stable byte form")
        header = f"{key}\0{array.dtype.str}\0{array.shape}\0".encode()
        digest.update(len(header).to_bytes(8, "little") + header)
        digest.update(array.nbytes.to_bytes(8, "little"))
        digest.update(array.tobytes())
    return digest.hexdigest()


def npz_content_sha256(path: str | os.PathLike) -> str:
    """Digest of the arrays stored in the ``.npz`` at ``path`` (read with ``allow_pickle=False``)."""
    with np.load(path, allow_pickle=False) as archive:
        return arrays_sha256({key: archive[key] for key in archive.files})


def _mismatch(path: Path, reason: str, *, expected: str | None, actual: str | None) -> ChecksumError:
    """A :class:`ChecksumError` carrying ``path``, ``reason``, ``expected`` and ``actual`` sha256 as attributes."""
    err = ChecksumError(f"{path}: {reason}; expected sha256 {expected or '(any)'}, actual sha256 "
                        f"{actual or '(unreadable)'}")
    err.path, err.reason, err.expected, err.actual = path, reason, expected, actual
    return err


def verify_file(path: Path, *, sha256: str | None, size: int | None = None,
                content_sha256: str | None = None) -> None:
    """Raise :class:`ChecksumError` unless ``path`` has the registered size and digest.

    For an ``.npz`` with a registered ``content_sha256`` a byte-level mismatch is still accepted when
    the arrays match (the same data written by another numpy version). The error carries ``path``,
    ``reason``, ``expected`` and ``actual`` (sha256, ``None`` when unreadable); a file that cannot be read
    or decoded is a mismatch too, whatever the decoder raised.
    """
    path = Path(path)
    try:
        actual_size = path.stat().st_size
        actual = sha256_file(path)
    except OSError as exc:
        raise _mismatch(path, f"unreadable ({type(exc).__name__}: {exc.strerror or exc})", expected=sha256,
                        actual=None) from exc
    if sha256 and actual == sha256 and (size is None or actual_size == size):
        return
    if content_sha256:
        try:
            arrays = npz_content_sha256(path)
        except DECODE_ERRORS as exc:  # a damaged zip raises BadZipFile, zlib.error, EOFError, ...
            raise _mismatch(path, f"not a readable .npz ({type(exc).__name__}: {_first_line(exc)}; "
                            f"{actual_size} bytes, registered {size})", expected=sha256, actual=actual) from exc
        if arrays == content_sha256:
            return
        raise _mismatch(path, f"its arrays do not match the registered array digest {content_sha256} "
                        "(a different version or damaged data)", expected=sha256, actual=actual)
    if sha256 or size is not None:
        raise _mismatch(path, f"{actual_size} bytes, registered {size if size is not None else '(any)'}; "
                        "truncated, damaged or a different version", expected=sha256, actual=actual)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else "no message"


#: ``.<name>.<pid>.<random>.part`` / ``.old`` (atomic_path), ``.fetch-<pid>-<random>`` / ``.pip-<pid>-...``
_TEMP_NAME = re.compile(r"^\.(?:.+\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.(?:part|old)|(?:fetch|pip)-(?P<pid2>\d+)-.*)$")
#: untagged temporaries (written before names carried a pid) older than this are removed too (seconds)
_UNTAGGED_MAX_AGE_S = 24 * 3600.0


def temp_prefix(name: str) -> str:
    """Prefix of this process's temporary sibling of a file called ``name`` (see :data:`_TEMP_NAME`)."""
    return f".{name}.{os.getpid()}."


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is still running (ours, or another user's); the owner test of every temporary file."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's live process
        return True
    except (ProcessLookupError, OverflowError):  # gone, or a number no pid can be
        return False
    return True


def clean_stale_temporaries(folder: Path) -> list[Path]:
    """Delete the temporaries of writers that died in ``folder`` (not recursive); return what was removed.

    A temporary is stale when the pid in its name is not a live process (a live writer's files are left
    alone), or, for an untagged ``.*.part`` file, when it is older than a day. Errors are ignored: the
    cleanup must never stop the write that follows.
    """
    removed: list[Path] = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match:
            stale = not pid_alive(int(match.group("pid") or match.group("pid2")))
        elif entry.name.startswith(".") and entry.name.endswith((".part", ".old")):
            try:
                stale = now - entry.lstat().st_mtime > _UNTAGGED_MAX_AGE_S
            except OSError:
                continue
        else:
            continue
        if not stale:
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
        except OSError:
            continue
    return removed


@contextlib.contextmanager
def atomic_path(dest: Path, *, is_dir: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of ``dest``; rename it onto ``dest`` if the block succeeds, else delete it.

    ``is_dir=True`` yields a temporary folder (replaced as a whole; an existing ``dest`` folder is
    moved aside first and removed after the rename). Stale temporaries of killed writers beside ``dest``
    are removed first (:func:`clean_stale_temporaries`).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(dest.parent)
    prefix = temp_prefix(dest.name)
    if is_dir:
        tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=".part", dir=dest.parent))
    else:
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=".part", dir=dest.parent)
        os.close(fd)
        tmp = Path(name)
    try:
        yield tmp
        if is_dir:
            old = None
            if dest.exists():
                old = Path(tempfile.mkdtemp(prefix=prefix, suffix=".old", dir=dest.parent))
                os.replace(dest, old / "x")
            os.replace(tmp, dest)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        else:
            os.chmod(tmp, 0o644)
            os.replace(tmp, dest)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise
