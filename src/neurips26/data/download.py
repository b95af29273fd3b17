"""Download one file: bounded time-outs, progress bar, sha256 and size verified, atomic rename.

``download(url, dest, sha256=..., size=...)`` streams the response into a temporary file beside
``dest``, hashing as it goes; only a complete transfer whose length and digest match is renamed onto
``dest``. Every failure (HTTP error, a server that stops answering, a transfer cut short, a wrong
digest) raises :class:`DownloadError` or :class:`ChecksumError` and leaves nothing behind.

Time is bounded twice: ``timeout`` seconds for any single connect or read (a silent server), and
``deadline`` seconds for the whole transfer (a server that trickles bytes).
"""

from __future__ import annotations

import hashlib
import http.client
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .errors import ChecksumError, DownloadError
from .integrity import atomic_path

_CHUNK = 1 << 16
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
USER_AGENT = "neurips26-data/1 (+https://github.com; python urllib)"


def check_url(url: str) -> None:
    """Accept ``https://`` URLs, and plain ``http://`` only to the local machine (tests)."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname in _LOCAL_HOSTS:
        return
    raise DownloadError(f"refusing to download {url!r}: only https:// URLs (or http:// to 127.0.0.1) are allowed")


def download(url: str, dest: Path, *, sha256: str | None, size: int | None = None, timeout: float = 30.0,
             deadline: float = 900.0, progress: bool = True, desc: str | None = None) -> Path:
    """Fetch ``url`` into ``dest`` atomically and return ``dest``.

    Args:
        url: ``https://`` URL (``http://127.0.0.1`` allowed for tests).
        dest: final path; its folder is created.
        sha256: expected hex digest, or ``None`` to accept any bytes (only for upstream files whose
            converted result is pinned instead).
        size: expected length in bytes, or ``None``.
        timeout: seconds for the connection and for each read (> 0).
        deadline: seconds for the whole transfer (> 0).
        progress: show a tqdm bar (bytes).

    Raises:
        DownloadError: refused URL, HTTP error, time-out or a transfer shorter than announced.
        ChecksumError: the bytes arrived but their size or sha256 differ from the registered ones.
    """
    check_url(url)
    for arg, value in (("timeout", timeout), ("deadline", deadline)):
        if not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{arg} must be a positive number of seconds, got {value!r}")
    dest = Path(dest)
    start = time.monotonic()
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with atomic_path(dest) as tmp:
        try:
            response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 (scheme checked)
        except urllib.error.HTTPError as exc:
            raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise DownloadError(f"{url}: could not connect ({getattr(exc, 'reason', exc)})") from exc
        with response:
            announced = response.headers.get("Content-Length")
            announced = int(announced) if announced and announced.isdigit() else None
            digest, received = _stream(response, tmp, url=url, total=announced or size, start=start,
                                       deadline=deadline, progress=progress, desc=desc or dest.name)
        if announced is not None and received != announced:
            raise DownloadError(f"{url}: transfer cut short, {received} of {announced} bytes")
        if size is not None and received != size:
            raise ChecksumError(f"{url}: {received} bytes, the registered size is {size}")
        if sha256 is not None and digest != sha256:
            raise ChecksumError(f"{url}: sha256 {digest} does not match the registered {sha256}; refused")
    return dest


def _stream(response, tmp: Path, *, url: str, total: int | None, start: float, deadline: float,
            progress: bool, desc: str) -> tuple[str, int]:
    from tqdm.auto import tqdm

    digest = hashlib.sha256()
    received = 0
    with open(tmp, "wb") as out, tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc,
                                      disable=not progress, leave=False) as bar:
        while True:
            if time.monotonic() - start > deadline:
                raise DownloadError(f"{url}: gave up after the {deadline:g} s deadline ({received} bytes read)")
            try:
                chunk = response.read1(_CHUNK)  # what is there: the deadline is checked between reads
            except TimeoutError as exc:
                raise DownloadError(f"{url}: the server stopped answering (read time-out, {received} bytes "
                                    "read)") from exc
            except (OSError, http.client.HTTPException) as exc:  # reset connection, IncompleteRead
                raise DownloadError(f"{url}: transfer failed after {received} bytes ({exc!r})") from exc
            if not chunk:
                break
            out.write(chunk)
            digest.update(chunk)
            received += len(chunk)
            bar.update(len(chunk))
    return digest.hexdigest(), received
