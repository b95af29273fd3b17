"""Stand-in workers for the executor tests (importable by spawned processes and Ray workers, which cannot
import a test module under --import-mode=importlib)."""

import os
import time

from neurips26.claims.records import RECORD_SCHEMA, write_json_atomic
from neurips26.claims.runner import PaperRun


def die_for_fwdsvd(entry, scale, run_dir, n_seeds, threads):
    """fwdsvd's worker dies hard (as an out-of-memory kill would); any other paper gets a trivial record."""
    if entry.slug == "fwdsvd":
        time.sleep(4.0)  # let the other paper finish first
        os._exit(3)
    record = {"schema": RECORD_SCHEMA, "paper_id": entry.id, "slug": entry.slug, "title": entry.title,
              "scale": scale, "status": "ok", "claims": [], "start_time": "-", "duration_s": 0.0, "cpu_s": 0.0}
    path = write_json_atomic(run_dir / f"{entry.slug}.json", record)
    return PaperRun(entry=entry, status="ok", record=record, path=path)
