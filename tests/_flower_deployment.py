"""Flower's deployment engine on 127.0.0.1, for tests: one SuperLink, N SuperNodes, ``flwr run`` against them.

When the context exits, every process started here and all its descendants (flwr starts its SuperExec and the
app processes in sessions of their own) are terminated, then killed if still alive. Ports are free ones picked at
start;
``FLWR_HOME`` is a private folder holding the SuperLink connection (``[superlink.deploy]``, insecure), so the
user's ``~/.flwr`` is never read or written. Runtime dependency installation is off: the apps run in this
interpreter's environment (which has ``neurips26[fl]``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"{proc.args[0]} did not listen on 127.0.0.1:{port} within {timeout} s:\n"
                       f"{log.read_text()[-3000:]}")


def _children() -> dict[int, list[int]]:
    """parent pid -> child pids, from /proc (Linux; empty elsewhere)."""
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        tree.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return tree


def _descendants(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class Federation:
    """``with Federation(tmp_path, n_nodes=2) as fed: fed.run(app_dir, {"out": "..."})``.

    SuperNode ``k`` gets ``--node-config "partition-id=k num-partitions=n_nodes"``."""

    def __init__(self, root: Path, n_nodes: int = 2, start_timeout: float = 90.0) -> None:
        self.root, self.n_nodes, self.start_timeout = Path(root), n_nodes, start_timeout
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        # the SuperLink and SuperNodes start flower-superexec (and it the app processes) through PATH
        path = os.pathsep.join([str(BIN), os.environ.get("PATH", "")])
        self.env = {**os.environ, "PATH": path, "FLWR_HOME": str(self.root / "flwr_home"), "OMP_NUM_THREADS": "1",
                    "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1", "PYTHONUNBUFFERED": "1",
                    # no host but 127.0.0.1: no telemetry events, no check of PyPI for a newer flwr
                    "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1"}

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(BIN / args[0]), *args[1:]], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=self.env, cwd=self.root, start_new_session=True)
        self.procs.append(proc)
        self.logs.append(log)
        return proc

    def __enter__(self) -> Federation:
        home = self.root / "flwr_home"
        home.mkdir(parents=True, exist_ok=True)
        try:
            self.port = free_port()
            (home / "config.toml").write_text(
                f'[superlink]\ndefault = "deploy"\n\n[superlink.deploy]\naddress = "127.0.0.1:{self.port}"\n'
                "insecure = true\n")
            link = self._start("superlink", ["flower-superlink", "--insecure",
                                             "--disable-runtime-dependency-installation",
                                             "--host", "127.0.0.1", "--port", str(self.port)])
            _wait_port(self.port, link, self.logs[-1], self.start_timeout)
            for k in range(self.n_nodes):
                node_port = free_port()
                node = self._start(f"supernode{k}", [
                    "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{self.port}", "--host", "127.0.0.1",
                    "--port", str(node_port), "--node-config", f"partition-id={k} num-partitions={self.n_nodes}"])
                _wait_port(node_port, node, self.logs[-1], self.start_timeout)
        except BaseException:
            self.close()
            raise
        return self

    def run(self, app_dir: Path, run_config: dict[str, object], timeout: float = 300.0) -> str:
        """``flwr run APP deploy --stream``; returns its output. Raises on a non-zero exit or a timeout."""
        overrides = " ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in run_config.items())
        cmd = [str(BIN / "flwr"), "run", str(app_dir), "deploy", "--stream", "--run-config", overrides]
        done = subprocess.run(cmd, env=self.env, cwd=self.root, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise RuntimeError(f"flwr run exited with {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
                               f"\n{self.tail()}")
        return done.stdout + done.stderr

    def tail(self, n: int = 2000) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-n:]}" for log in self.logs if log.exists())

    def close(self) -> None:
        """Stop every process started here and all their descendants (flwr starts its SuperExec and the app
        processes in sessions of their own, so a process group does not reach them)."""
        family = [p.pid for p in self.procs if p.poll() is None]
        family += [pid for p in self.procs for pid in _descendants(p.pid)]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in family:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + 10
            for proc in self.procs:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            family = [pid for pid in family if _alive(pid)]
            if not family:
                break
        self.procs.clear()

    def __exit__(self, *exc: object) -> None:
        self.close()
