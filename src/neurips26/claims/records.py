"""Run folders and result records: unique folders, atomic JSON writes, environment capture."""

from __future__ import annotations

import json
import math
import os
import platform
import secrets
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def new_run_dir(root: Path, scale: str) -> Path:
    """Create and return a fresh folder ``root/<UTC time>-<scale>-<random>``; never reuses one.

    ``mkdir(exist_ok=False)`` makes creation atomic: two runs started in the same second get
    different random suffixes, and a clash (vanishingly rare) is retried instead of overwritten.
    """
    root.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    for _ in range(100):
        candidate = root / f"{stamp}-{scale}-{secrets.token_hex(3)}"
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise RuntimeError(f"could not create a new run folder under {root}")


#: Version of the record layout; the contract test validates records against it.
#: 3 (claims v3): kinds, preconditions, tuning, missing cells, CPU seconds, load, commit and source digest.
RECORD_SCHEMA = 3
#: Written into a run folder when the run starts and removed when it ends: a killed run keeps it.
IN_PROGRESS = ".in-progress"


def mark_in_progress(run_dir: Path) -> Path:
    """Create the run's in-progress marker (pid and start time) and return its path."""
    marker = Path(run_dir) / IN_PROGRESS
    marker.write_text(json.dumps({"pid": os.getpid(), "started": utc_now()}) + "\n", encoding="utf-8")
    return marker


def strict_json(data: Any, *, _path: str = "$", _found: list[str] | None = None) -> tuple[Any, list[str]]:
    """A copy of ``data`` that strict JSON parsers accept: NaN and ±inf become ``None``.

    Returns the copy and the JSON paths of the values replaced, so the record can say which they were.
    """
    import numpy as np

    found = [] if _found is None else _found
    if isinstance(data, dict):
        return {str(k): strict_json(v, _path=f"{_path}.{k}", _found=found)[0] for k, v in data.items()}, found
    if isinstance(data, list | tuple):
        return [strict_json(v, _path=f"{_path}[{i}]", _found=found)[0] for i, v in enumerate(data)], found
    if isinstance(data, np.ndarray):
        return strict_json(data.tolist(), _path=_path, _found=found)
    if isinstance(data, np.generic):
        data = data.item()
    if isinstance(data, float) and not math.isfinite(data):
        found.append(f"{_path} = {data}")
        return None, found
    return data, found


def write_json_atomic(path: Path, data: Any, *, overwrite: bool = False) -> Path:
    """Write strict JSON to ``path`` via a temporary file and a rename (readers never see half a file).

    Non-finite numbers are written as ``null``; a dict gets a ``non_finite`` list naming them.
    With ``overwrite=False`` an existing file raises ``FileExistsError`` instead of being replaced.
    """
    data, replaced = strict_json(data)
    if replaced and isinstance(data, dict):
        data["non_finite"] = data.get("non_finite", []) + replaced
    path = Path(path)
    if not overwrite and path.exists():
        raise FileExistsError(f"refusing to overwrite the existing record {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp creates 0600; records are meant to be shared and read
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, default=_json_default, allow_nan=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        if not overwrite:
            # os.link fails if the target appeared meanwhile: no silent overwrite even under a race.
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def library_versions() -> dict[str, str]:
    """Versions of Python, the platform and the libraries that shape numbers."""
    from importlib import metadata

    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("neurips26", "torch", "numpy", "scipy", "scikit-learn", "torch-geometric", "flwr",
                 "transformers", "triton", "pot"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def device_description() -> str:
    import torch

    if torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return f"cpu ({os.cpu_count()} cores visible, torch threads {torch.get_num_threads()})"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def monotonic() -> float:
    return time.perf_counter()


def package_root(slug: str) -> Path:
    """The folder of the installed paper package ``neurips26.<slug>`` (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("neurips26")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / slug
        if candidate.is_dir():
            return candidate
    raise LookupError(f"no package folder neurips26/{slug}")


def source_digest(slug: str) -> str:
    """sha256 over the paper package's ``.py`` sources (relative path and bytes of each, in path order).

    The README is left out on purpose: its verdict table is generated from the records that carry this digest.
    """
    import hashlib

    root = package_root(slug)
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def repository_root() -> Path | None:
    """The git checkout this package runs from (``src/neurips26`` two levels down), or None when installed
    elsewhere."""
    here = Path(__file__).resolve().parents[3]
    return here if (here / ".git").exists() and (here / "src" / "neurips26").is_dir() else None


def git_commit(slug: str | None = None) -> dict[str, Any] | None:
    """``{"commit": sha, "dirty": bool}`` of the checkout (dirty: the paper's ``.py`` sources differ from the commit),
    or None outside a git checkout."""
    import subprocess

    root = repository_root()
    if root is None:
        return None
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        paths = [f"src/neurips26/{slug}"] if slug else []
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", *paths],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # dirty means what the source digest covers: the paper's .py files (its README is generated from records)
    changed = [line for line in status.splitlines() if line.rstrip().endswith(".py")]
    return {"commit": sha, "dirty": bool(changed)}


def machine_description() -> dict[str, Any]:
    """CPU model, visible cores and memory: what a reader needs to compare a timing with their own."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = None
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError):
        pass
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": memory_gib}


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children, all threads."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None
