"""Run claim checks: one record per paper, decided by the claims' pre-registered rules."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import CatalogEntry
from .records import (
    device_description,
    library_versions,
    monotonic,
    new_run_dir,
    utc_now,
    write_json_atomic,
)
from .registry import load_paper
from .spec import SCALE_BUDGET_S, SCALES, CheckContext, CheckOutput, Evidence, Paper, ScaleRefused, Verdict


def configure_threads() -> int:
    """Set torch's intra-op threads from ``OMP_NUM_THREADS`` (default 2); oversubscription on a
    2-core machine slows small models by an order of magnitude."""
    import torch

    raw = os.environ.get("OMP_NUM_THREADS", "2")
    try:
        threads = max(1, int(raw))
    except ValueError as err:
        raise ValueError(f"OMP_NUM_THREADS must be a positive integer, got {raw!r}") from err
    torch.set_num_threads(threads)
    return threads


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run a block on ``n`` torch intra-op threads, restoring the previous count afterwards.

    Tiny models and small graphs run faster on one thread when the other core is busy (a second
    OpenMP thread mostly spins); checks and solvers use ``with torch_threads(1): ...`` for them.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@dataclass
class PaperRun:
    """The outcome of one paper within a run: its record (as written) and where it lies."""

    entry: CatalogEntry
    status: str  # "ok" | "refused" | "error"
    record: dict[str, Any]
    path: Path


def decide_claims(paper: Paper, output: CheckOutput, scale: str) -> list[dict[str, Any]]:
    """Apply each claim's fixed rule to its evidence; missing evidence is ``inconclusive``."""
    results = []
    for claim in paper.claims:
        evidence = output.evidence.get(claim.id)
        if scale not in claim.scales:
            verdict = Verdict("inconclusive", f"not decided at scale {scale!r} (decided at {claim.scales})")
        elif evidence is None or not evidence.values:
            verdict = Verdict("inconclusive", "no evidence produced by this run")
        else:
            verdict = claim.decide(evidence)
        results.append({
            "id": claim.id,
            "statement": claim.statement,
            "paper_value": claim.paper_value,
            "metric": claim.metric,
            "criterion": claim.criterion,
            "measured": _evidence_record(evidence),
            "verdict": verdict.label,
            "reason": verdict.reason,
        })
    unknown = set(output.evidence) - {claim.id for claim in paper.claims}
    if unknown:
        raise ValueError(f"{paper.slug}: evidence for undeclared claims {sorted(unknown)}")
    return results


def _evidence_record(evidence: Evidence | None) -> dict[str, Any] | None:
    if evidence is None:
        return None
    return {"mean": evidence.mean, "std": evidence.std, "sem": evidence.sem, "n": evidence.n,
            "values": [float(v) for v in evidence.values], "unit": evidence.unit,
            "summary": evidence.summary(), "details": evidence.details, "note": evidence.note}


def run_paper(entry: CatalogEntry, *, scale: str, run_dir: Path, n_seeds: int | None,
              show_progress: bool = True) -> PaperRun:
    """Run one paper's check and write ``run_dir/<slug>.json``. Never raises for a failed check:
    a crash becomes a record with ``status: error`` and the traceback."""
    started, t0 = utc_now(), monotonic()
    record: dict[str, Any] = {"paper_id": entry.id, "slug": entry.slug, "title": entry.title,
                              "arxiv": entry.arxiv, "scale": scale, "start_time": started,
                              "budget_s": SCALE_BUDGET_S[scale]}
    status = "ok"
    try:
        paper = load_paper(entry.slug)
        seeds_n = n_seeds if n_seeds is not None else paper.default_seeds.get(scale, 1)
        seeds = list(range(seeds_n))
        record["seeds"] = seeds
        record["device"] = device_description()
        record["versions"] = library_versions()
        if scale not in paper.scales:
            raise ScaleRefused(f"{entry.slug} does not support scale {scale!r} (supports {paper.scales})")
        if scale == "gpu":
            import torch

            if not torch.cuda.is_available():
                raise ScaleRefused("scale 'gpu' needs a CUDA device and none is available here")
        ctx = CheckContext(scale=scale, seeds=seeds, device="cuda" if scale == "gpu" else "cpu",
                           out_dir=run_dir / entry.slug, show_progress=show_progress,
                           log=lambda msg: print(f"[{entry.slug}] {msg}", file=sys.stderr, flush=True))
        output = paper.run(ctx)
        if not isinstance(output, CheckOutput):
            raise TypeError(f"{entry.slug}: run() must return a CheckOutput, got {type(output).__name__}")
        record["claims"] = decide_claims(paper, output, scale)
        record["metrics"] = output.metrics
        record["notes"] = output.notes
        record["plots"] = [str(Path(p).relative_to(run_dir)) if Path(p).is_relative_to(run_dir) else str(p)
                           for p in output.plots]
    except ScaleRefused as refusal:
        status = "refused"
        record["refusal"] = str(refusal)
    except Exception as exc:  # a crash is recorded, then reported as a non-zero exit by the CLI
        status = "error"
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()
    record["status"] = status
    record["duration_s"] = round(monotonic() - t0, 3)
    path = write_json_atomic(run_dir / f"{entry.slug}.json", record)
    return PaperRun(entry=entry, status=status, record=record, path=path)


def run_checks(entries: list[CatalogEntry], *, scale: str = "quick", out_root: Path = Path("runs"),
               n_seeds: int | None = None, show_progress: bool = True) -> tuple[Path, list[PaperRun]]:
    """Run several papers into one new run folder; returns the folder and the per-paper outcomes."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if n_seeds is not None and n_seeds < 1:
        raise ValueError(f"seeds must be a positive integer, got {n_seeds}")
    configure_threads()
    run_dir = new_run_dir(Path(out_root), scale)
    runs = []
    for entry in entries:
        print(f"== {entry.id} {entry.slug}: running at scale {scale}", file=sys.stderr, flush=True)
        runs.append(run_paper(entry, scale=scale, run_dir=run_dir, n_seeds=n_seeds,
                              show_progress=show_progress))
    return run_dir, runs


def verdict_table(records: list[dict[str, Any]]) -> str:
    """A plain-text table: paper x claim x verdict x measured (one row per claim)."""
    rows = [("paper", "claim", "verdict", "measured", "paper value")]
    for record in records:
        label = f"{record['paper_id']} {record['slug']}"
        if record.get("status") != "ok":
            detail = record.get("refusal") or record.get("error") or "?"
            rows.append((label, "-", record.get("status", "?").upper(), _clip(detail, 60), ""))
            continue
        for claim in record["claims"]:
            measured = (claim["measured"] or {}).get("summary", "not measured")
            rows.append((label, claim["id"], claim["verdict"], _clip(measured, 40),
                         _clip(claim["paper_value"], 30)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"
