"""Run claim checks: one record per paper, decided by the claims' pre-registered rules."""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import CatalogEntry
from .records import (
    RECORD_SCHEMA,
    device_description,
    library_versions,
    mark_in_progress,
    monotonic,
    new_run_dir,
    utc_now,
    write_json_atomic,
)
from .registry import load_paper
from .spec import (
    SCALE_BUDGET_S,
    SCALES,
    CheckContext,
    CheckOutput,
    Claim,
    Evidence,
    Paper,
    ScaleRefused,
    Verdict,
    _tqdm_log,
)


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

    @property
    def claim_errors(self) -> int:
        """Claims whose measurement or decision raised (data misses are skips, not errors)."""
        return sum(1 for claim in self.record.get("claims", []) if claim.get("error"))


def _claim_record(claim: Claim, evidence: Evidence | None, verdict: Verdict, *,
                  error: str | None = None, traceback_text: str | None = None,
                  fix: str | None = None) -> dict[str, Any]:
    record = {"id": claim.id, "statement": claim.statement, "paper_value": claim.paper_value,
              "metric": claim.metric, "criterion": claim.criterion, "measured": _evidence_record(evidence),
              "verdict": verdict.label, "reason": verdict.reason}
    if error is not None:
        record["error"] = error
        record["traceback"] = traceback_text
    if fix is not None:
        record["fix"] = fix
    return record


def _decide_one(claim: Claim, evidence: Evidence | None, scale: str) -> dict[str, Any]:
    """Apply one claim's fixed rule to its evidence; missing evidence is ``inconclusive``."""
    if scale not in claim.scales:
        verdict = Verdict("inconclusive", f"not decided at scale {scale!r} (decided at {claim.scales})")
    elif evidence is None or evidence.n == 0:
        verdict = Verdict("inconclusive", "no evidence produced by this run")
    else:
        try:
            verdict = claim.decide(evidence)
        except Exception as exc:  # a broken rule costs this claim only
            return _failed_claim(claim, exc, evidence)
    return _claim_record(claim, evidence, verdict)


def _failed_claim(claim: Claim, exc: BaseException, evidence: Evidence | None = None) -> dict[str, Any]:
    """The record of a claim whose measurement raised: skipped for absent data, else inconclusive."""
    if _is_data_miss(exc):
        fix = getattr(exc, "fix", None)
        reason = f"data not available: {exc}"
        return _claim_record(claim, evidence, Verdict("skipped", reason), fix=fix)
    text = f"{type(exc).__name__}: {exc}"
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return _claim_record(claim, evidence, Verdict("inconclusive", f"the measurement failed: {text}"),
                         error=text, traceback_text=tb)


def _is_data_miss(exc: BaseException) -> bool:
    try:
        from neurips26.data import DatasetNotFoundError
    except ImportError:  # a broken data package must not hide the claim's own error
        return False
    return isinstance(exc, DatasetNotFoundError)


def decide_claims(paper: Paper, output: CheckOutput, scale: str) -> list[dict[str, Any]]:
    """v1: apply each claim's fixed rule to the evidence a ``run()`` returned."""
    unknown = set(output.evidence) - {claim.id for claim in paper.claims}
    if unknown:
        raise ValueError(f"{paper.slug}: evidence for undeclared claims {sorted(unknown)}")
    return [_decide_one(claim, output.evidence.get(claim.id), scale) for claim in paper.claims]


def measure_claims(paper: Paper, ctx: CheckContext) -> list[dict[str, Any]]:
    """Measure and decide claim by claim. An exception in one claim's ``measure`` makes that claim
    inconclusive (with the error and traceback) or skipped (data absent); the others keep their verdicts.
    A v1 ``run()`` measures the claims without a ``measure`` in one go, isolated the same way."""
    legacy: dict[str, Evidence] = {}
    legacy_error: BaseException | None = None
    if paper.run is not None and any(c.measure is None and ctx.scale in c.scales for c in paper.claims):
        try:
            output = paper.run(ctx)
            if not isinstance(output, CheckOutput):
                raise TypeError(f"{paper.slug}: run() must return a CheckOutput, got {type(output).__name__}")
            unknown = set(output.evidence) - {claim.id for claim in paper.claims}
            if unknown:
                raise ValueError(f"{paper.slug}: evidence for undeclared claims {sorted(unknown)}")
            legacy = output.evidence
            ctx.metrics.update(output.metrics)
            ctx.notes.extend(output.notes)
            ctx.plots.extend({"path": str(path), "caption": ""} for path in output.plots)
        except Exception as exc:
            legacy_error = exc
    results = []
    for claim in paper.claims:
        # smoke exists to exercise every claim's pipeline (CI runs it), so it measures claims that are
        # decided only at larger scales too, and leaves them inconclusive.
        # (GPU-only claims excepted: their measurements need a CUDA device)
        exercised = ctx.scale == "smoke" and claim.measure is not None and set(claim.scales) != {"gpu"}
        if ctx.scale not in claim.scales and not exercised:
            results.append(_decide_one(claim, None, ctx.scale))
        elif claim.measure is None:
            results.append(_failed_claim(claim, legacy_error) if legacy_error is not None
                           else _decide_one(claim, legacy.get(claim.id), ctx.scale))
        else:
            try:
                evidence = claim.measure(ctx)
                if not isinstance(evidence, Evidence):
                    raise TypeError(f"measure of {claim.id} must return an Evidence, got {type(evidence).__name__}")
            except Exception as exc:
                ctx.log(f"{claim.id}: {type(exc).__name__}: {exc}")
                results.append(_failed_claim(claim, exc))
                continue
            results.append(_decide_one(claim, evidence, ctx.scale))
            if ctx.scale not in claim.scales:
                results[-1]["reason"] = (f"smoke run: measured to exercise the pipeline; decided at "
                                         f"{', '.join(claim.scales)}")
    return results


def _evidence_record(evidence: Evidence | None) -> dict[str, Any] | None:
    if evidence is None:
        return None
    return {"mean": evidence.mean, "std": evidence.std, "sem": evidence.sem, "n": evidence.n,
            "values": list(evidence.values), "unit": evidence.unit,
            "summary": evidence.summary(), "details": evidence.details, "note": evidence.note}


def _relative_plots(plots: list[dict[str, str]], run_dir: Path) -> list[dict[str, str]]:
    out = []
    for plot in plots:
        path = Path(plot["path"])
        rel = path.relative_to(run_dir) if path.is_relative_to(run_dir) else path
        out.append({"path": str(rel), "caption": plot.get("caption", "")})
    return out


def run_paper(entry: CatalogEntry, *, scale: str, run_dir: Path, n_seeds: int | None,
              show_progress: bool = True) -> PaperRun:
    """Run one paper's check and write ``run_dir/<slug>.json``. Never raises for a failed check:
    a failure to load the paper becomes a record with ``status: error`` and the traceback, a failure
    inside one claim becomes that claim's error."""
    started, t0 = utc_now(), monotonic()
    record: dict[str, Any] = {"schema": RECORD_SCHEMA, "paper_id": entry.id, "slug": entry.slug,
                              "title": entry.title, "arxiv": entry.arxiv, "scale": scale,
                              "start_time": started, "budget_s": SCALE_BUDGET_S[scale]}
    status = "ok"
    try:
        paper = load_paper(entry.slug)
        seeds_n = n_seeds if n_seeds is not None else paper.default_seeds.get(scale, 1)
        record["seeds"] = list(range(seeds_n))
        record["device"] = device_description()
        record["versions"] = library_versions()
        if scale not in paper.scales:
            raise ScaleRefused(f"{entry.slug} does not support scale {scale!r} (supports {paper.scales})")
        if scale == "gpu":
            import torch

            if not torch.cuda.is_available():
                raise ScaleRefused("scale 'gpu' needs a CUDA device and none is available here")
        ctx = CheckContext(scale=scale, seeds=record["seeds"], device="cuda" if scale == "gpu" else "cpu",
                           out_dir=run_dir / entry.slug, show_progress=show_progress,
                           log=lambda msg: _tqdm_log(f"[{entry.slug}] {msg}"))
        record["claims"] = measure_claims(paper, ctx)
        record["metrics"] = ctx.metrics
        record["notes"] = ctx.notes
        record["plots"] = _relative_plots(ctx.plots, run_dir)
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
    # A run killed half-way keeps this marker, so `report` can say the run is incomplete.
    marker = mark_in_progress(run_dir)
    runs = []
    for entry in entries:
        _tqdm_log(f"== {entry.id} {entry.slug}: running at scale {scale}")
        runs.append(run_paper(entry, scale=scale, run_dir=run_dir, n_seeds=n_seeds,
                              show_progress=show_progress))
    marker.unlink()
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
            if claim.get("error"):
                measured = f"error: {claim['error']}"
            elif claim["verdict"] == "skipped":
                measured = f"fix: {claim.get('fix') or claim['reason']}"
            rows.append((label, claim["id"], claim["verdict"], _clip(measured, 40),
                         _clip(claim["paper_value"], 30)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"
