"""Fixtures for the data tests: a local HTTP server on 127.0.0.1 (never any other host), an isolated
search path (no ``../shared``, an empty ``NEURIPS26_DATA``, a temporary user cache, no pip fetches)."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Handler(BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        if path.startswith("/truncated/"):
            body = self.files.get(path.removeprefix("/truncated"), b"x" * 1000)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if path.startswith("/slow/"):  # the body in 64 KiB pieces, 10 ms apart (a kill lands mid-transfer)
            body = self.files.get(path.removeprefix("/slow"), b"")
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for start in range(0, len(body), 1 << 16):
                    self.wfile.write(body[start:start + (1 << 16)])
                    self.wfile.flush()
                    time.sleep(0.01)
            except OSError:  # the client was killed
                pass
            return
        if path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            return
        body = self.files.get(path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if path.endswith("/") else "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class LocalServer:
    """``url(path)`` on 127.0.0.1; ``files[path] = bytes`` serves them (``/slow/<path>`` in timed pieces);
    ``silent_url`` never answers."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        handler = type("Handler", (_Handler,), {"files": self.files})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        # a listening socket that accepts connections (the kernel does) and never sends a byte
        self.silent = socket.socket()
        self.silent.bind(("127.0.0.1", 0))
        self.silent.listen(8)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    @property
    def silent_url(self) -> str:
        return f"http://127.0.0.1:{self.silent.getsockname()[1]}/file"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.silent.close()


@pytest.fixture(scope="module")
def server():
    srv = LocalServer()
    yield srv
    srv.close()


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Empty search path: NEURIPS26_DATA and the user cache are empty temporary folders, ../shared is
    hidden, pip fetches are off. Returns the user cache folder."""
    (tmp_path / "env").mkdir()
    monkeypatch.setenv("NEURIPS26_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("NEURIPS26_NO_SHARED", "1")
    monkeypatch.setenv("NEURIPS26_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "neurips26" / "data"
