"""Downloads against a local server: good and bad checksums, a cut transfer, a silent server."""

import hashlib
import time

import pytest

from neurips26.data.download import download
from neurips26.data.errors import ChecksumError, DownloadError

BODY = bytes(range(256)) * 400  # 102,400 bytes


def _left_behind(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_good_checksum_writes_the_file(server, tmp_path):
    server.files["/data.bin"] = BODY
    dest = tmp_path / "out" / "data.bin"
    got = download(server.url("/data.bin"), dest, sha256=hashlib.sha256(BODY).hexdigest(), size=len(BODY),
                   progress=False)
    assert got == dest and dest.read_bytes() == BODY
    assert _left_behind(dest.parent) == ["data.bin"]  # no temporary file remains


def test_bad_checksum_is_refused_and_nothing_is_left(server, tmp_path):
    server.files["/data.bin"] = BODY
    dest = tmp_path / "out" / "data.bin"
    with pytest.raises(ChecksumError, match="does not match"):
        download(server.url("/data.bin"), dest, sha256="0" * 64, progress=False)
    assert _left_behind(dest.parent) == []


def test_wrong_size_is_refused(server, tmp_path):
    server.files["/data.bin"] = BODY
    with pytest.raises(ChecksumError, match="registered size"):
        download(server.url("/data.bin"), tmp_path / "d.bin", sha256=None, size=len(BODY) + 1, progress=False)
    assert _left_behind(tmp_path) == []


def test_existing_file_survives_a_failed_download(server, tmp_path):
    dest = tmp_path / "data.bin"
    dest.write_bytes(b"old")
    server.files["/data.bin"] = BODY
    with pytest.raises(ChecksumError):
        download(server.url("/data.bin"), dest, sha256="1" * 64, progress=False)
    assert dest.read_bytes() == b"old" and _left_behind(tmp_path) == ["data.bin"]


def test_truncated_transfer_is_refused(server, tmp_path):
    server.files["/data.bin"] = BODY
    with pytest.raises(DownloadError, match="cut short|transfer failed"):
        download(server.url("/truncated/data.bin"), tmp_path / "d.bin", sha256=hashlib.sha256(BODY).hexdigest(),
                 progress=False)
    assert _left_behind(tmp_path) == []


def test_silent_server_times_out_quickly(server, tmp_path):
    start = time.monotonic()
    with pytest.raises(DownloadError, match="stopped answering|could not connect"):
        download(server.silent_url, tmp_path / "d.bin", sha256=None, timeout=0.5, progress=False)
    assert time.monotonic() - start < 10
    assert _left_behind(tmp_path) == []


def test_trickling_server_hits_the_deadline(server, tmp_path):
    start = time.monotonic()
    with pytest.raises(DownloadError, match="deadline"):
        download(server.url("/trickle"), tmp_path / "d.bin", sha256=None, timeout=5, deadline=0.6, progress=False)
    assert time.monotonic() - start < 5
    assert _left_behind(tmp_path) == []


def test_http_error_and_refused_urls(server, tmp_path):
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(server.url("/missing"), tmp_path / "d.bin", sha256=None, progress=False)
    for url in ("http://example.com/x", "file:///etc/passwd", "ftp://127.0.0.1/x"):
        with pytest.raises(DownloadError, match="refusing"):
            download(url, tmp_path / "d.bin", sha256=None, progress=False)
    with pytest.raises(ValueError, match="timeout"):
        download(server.url("/missing"), tmp_path / "d.bin", sha256=None, timeout=0)
    assert _left_behind(tmp_path) == []
