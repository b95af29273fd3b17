"""Checksums and atomic writes.

* :func:`sha256_file`: the sha256 of a file's bytes (memoised on path, size and mtime).
* :func:`npz_content_sha256`: a digest of the *arrays* in an ``.npz``, independent of the zip container
  (numpy versions write different zip headers for the same arrays). For every array, in name order,
  it hashes ``name``, ``dtype.str``, ``shape`` and the C-order bytes:
  $h = \\mathrm{sha256}(\\Vert_k\\ [k,\\ \\mathrm{dtype}_k,\\ \\mathrm{shape}_k,\\ \\mathrm{bytes}_k])$.
* :func:`atomic_path`: a context manager yielding a temporary path in the destination's folder that is
  renamed onto the destination only when the block succeeds; on any error it is deleted, so readers
  never see half a file and an interrupted write leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import ChecksumError

_CHUNK = 1 << 20


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


def verify_file(path: Path, *, sha256: str | None, size: int | None = None,
                content_sha256: str | None = None) -> None:
    """Raise :class:`ChecksumError` unless ``path`` has the registered size and digest.

    For an ``.npz`` with a registered ``content_sha256`` a byte-level mismatch is still accepted when
    the arrays match (the same data written by another numpy version).
    """
    actual_size = path.stat().st_size
    if sha256 and sha256_file(path) == sha256 and (size is None or actual_size == size):
        return
    if content_sha256:
        try:
            if npz_content_sha256(path) == content_sha256:
                return
        except (OSError, ValueError) as exc:  # not a readable npz
            raise ChecksumError(f"{path}: not a readable .npz ({exc}); expected arrays with digest "
                                f"{content_sha256}") from exc
        raise ChecksumError(f"{path}: its arrays do not match the registered digest {content_sha256}; "
                            "the file is corrupt or a different version")
    if sha256 or size is not None:
        got = f"sha256 {sha256_file(path)}, {actual_size} bytes"
        want = f"sha256 {sha256 or '(any)'}, {size if size is not None else '(any)'} bytes"
        raise ChecksumError(f"{path}: {got} does not match the registered {want}; "
                            "the file is corrupt, truncated or a different version")


@contextlib.contextmanager
def atomic_path(dest: Path, *, is_dir: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of ``dest``; rename it onto ``dest`` if the block succeeds, else delete it.

    ``is_dir=True`` yields a temporary folder (replaced as a whole; an existing ``dest`` folder is
    moved aside first and removed after the rename).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{dest.name}."
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
