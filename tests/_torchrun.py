"""The two halves of every "2 gloo processes equal 1 process" test: launching a worker under torchrun, and the
worker's ``__main__`` (process group up, one thread, rank 0 writes the JSON, everyone leaves together).

    # in the test                                        # in the worker script
    two = two_processes(HERE / "w.py", tmp_path / "o.json", "ddp")      if __name__ == "__main__":
                                                                            worker_main(lambda args: run(*args))

The worker's command line is ``WORKER OUT.json [args...]``; ``produce(args)`` runs inside the process group and
returns the JSON-able dict (``world_size`` is added when it does not set one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent


def two_processes(worker: Path, out: Path, *args: str, timeout: float = 240, cwd: Path | None = None) -> dict:
    """Run ``worker out args...`` on 2 gloo processes (``torch.distributed.run --standalone``, 1 thread each) and
    return what rank 0 wrote; fails the test with the tail of stderr when the run fails."""
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(worker),
           str(out), *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(Path(out).read_text())


def worker_main(produce: Callable[[list[str]], dict[str, Any]]) -> None:
    """A worker's ``__main__``: ``produce(argv[2:])`` inside a gloo process group on 1 thread; rank 0 writes the
    result to ``argv[1]``."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    out = produce(sys.argv[2:])
    out.setdefault("world_size", dist.get_world_size())
    if dist.get_rank() == 0:
        with open(sys.argv[1], "w") as fh:
            json.dump(out, fh)
    dist.barrier()  # leave together: tearing gloo down while the peer still talks can abort
    dist.destroy_process_group()
