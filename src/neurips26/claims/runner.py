"""Run claim checks: one record per paper, decided by the claims' pre-registered rules."""

from __future__ import annotations

import functools
import json
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
    cpu_seconds,
    device_description,
    git_commit,
    library_versions,
    load_average,
    machine_description,
    mark_in_progress,
    monotonic,
    new_run_dir,
    source_digest,
    utc_now,
    write_json_atomic,
)
from .registry import load_paper
from .seeds import (
    Failure,
    Measured,
    SeedMeasurements,
    SeedMergeError,
    _merge_details,
    measure_claim,
    measure_seed,
    merge_seeds,
)
from .spec import (
    SCALE_BUDGET_S,
    SCALES,
    CheckContext,
    Claim,
    Evidence,
    Paper,
    Precondition,
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
                  preconditions: list[dict[str, Any]] | None = None, error: str | None = None,
                  traceback_text: str | None = None, fix: str | None = None) -> dict[str, Any]:
    record = {"id": claim.id, "kind": claim.kind, "statement": claim.statement, "paper_value": claim.paper_value,
              "metric": claim.metric, "criterion": claim.criterion, "measured": _evidence_record(evidence),
              "preconditions": preconditions or [], "verdict": verdict.label, "reason": verdict.reason}
    if claim.compares_trained:
        record["tuning"] = claim.tuning
    if evidence is not None and evidence.missing:
        record["missing"] = list(evidence.missing)
    if error is not None:
        record["error"] = error
        record["traceback"] = traceback_text
    if fix is not None:
        record["fix"] = fix
    return record


def _failed_claim(claim: Claim, failure: Failure, evidence: Evidence | None = None,
                  preconditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The record of a claim whose measurement raised: skipped for absent data, else inconclusive."""
    if failure.data_miss:
        reason = f"data not available: {failure.message}"
        return _claim_record(claim, evidence, Verdict("skipped", reason), preconditions=preconditions,
                             fix=failure.fix)
    return _claim_record(claim, evidence, Verdict("inconclusive", f"the measurement failed: {failure.text}"),
                         preconditions=preconditions, error=failure.text, traceback_text=failure.traceback)


def _precondition_record(pre: Precondition, evidence: Evidence | None, verdict: Verdict | None,
                         error: str | None = None) -> dict[str, Any]:
    return {"name": pre.name, "criterion": pre.criterion, "measured": _evidence_record(evidence),
            "met": verdict is not None and verdict.label == "supported",
            "reason": verdict.reason if verdict is not None else f"the measurement failed: {error}",
            **({"error": error} if error else {})}


def _unmet_text(pre: dict[str, Any]) -> str:
    value = (pre["measured"] or {}).get("summary", "not measured")
    return f"precondition not met: {pre['name']} ({value}, needs {pre['criterion']})"


def _qualify(claim: Claim, evidence: Evidence, verdict: Verdict, preconditions: list[dict[str, Any]],
             ctx: CheckContext) -> Verdict:
    """What the rule says, unless the claim cannot be answered by this run: data cells missing without a
    per-cell registration, an unmet precondition, or equal tuning declared but not recorded."""
    said = f"(the rule alone: {verdict.label}: {verdict.reason})"
    if evidence.missing and not claim.per_cell:
        return Verdict("inconclusive", f"measured without the cells {', '.join(evidence.missing)} (data absent) and "
                                       f"the rule is not pre-registered per cell {said}")
    unmet = [pre for pre in preconditions if not pre["met"]]
    if unmet:
        return Verdict("inconclusive", "; ".join(_unmet_text(pre) for pre in unmet) + f" {said}")
    if claim.compares_trained and claim.tuning == "equal" and ctx.scale != "smoke" and len(ctx.tuning) < 2:
        return Verdict("inconclusive", "tuning='equal' is declared but fewer than two tuned arms were recorded "
                                       f"(claims.tune_arms(..., ctx=ctx)) {said}")
    return verdict


def decide_measured(claim: Claim, measured: Measured, ctx: CheckContext) -> dict[str, Any]:
    """Decide one claim from its measurements (:func:`~neurips26.claims.seeds.measure_claim`, on one seed list
    or merged from seed tasks); every exception of a rule stays inside this claim."""
    if measured.not_run:
        return _claim_record(claim, None, Verdict(
            "inconclusive", f"not decided at scale {ctx.scale!r} (decided at {', '.join(claim.scales)})"))
    preconditions = []
    for pre, (evidence, failure) in zip(claim.preconditions, measured.preconditions, strict=False):
        if failure is not None and failure.data_miss:
            return _failed_claim(claim, failure, preconditions=preconditions)
        if failure is None:
            try:
                preconditions.append(_precondition_record(pre, evidence, pre.rule(evidence)))
                continue
            except Exception as exc:
                failure = Failure.of(exc)
                ctx.log(f"{claim.id} precondition {pre.name!r}: {failure.text}")
        preconditions.append(_precondition_record(pre, None, None, failure.text))
    if measured.failure is not None:
        return _failed_claim(claim, measured.failure, preconditions=preconditions)
    evidence = measured.evidence
    if evidence.n == 0:
        return _claim_record(claim, evidence, Verdict("inconclusive", "no evidence produced by this run"),
                             preconditions=preconditions)
    try:
        verdict = claim.decide(evidence)
    except Exception as exc:  # a broken rule costs this claim only
        return _failed_claim(claim, Failure.of(exc), evidence, preconditions)
    verdict = _qualify(claim, evidence, verdict, preconditions, ctx)
    record = _claim_record(claim, evidence, verdict, preconditions=preconditions)
    if ctx.scale not in claim.scales:
        record["verdict"] = "inconclusive"
        record["reason"] = f"smoke run: measured to exercise the pipeline; decided at {', '.join(claim.scales)}"
    return record


def _evaluate_claim(claim: Claim, ctx: CheckContext) -> dict[str, Any]:
    """Measure one claim and its preconditions and decide it; every exception stays inside this claim."""
    return decide_measured(claim, measure_claim(claim, ctx), ctx)


def measure_claims(paper: Paper, ctx: CheckContext) -> list[dict[str, Any]]:
    """Measure and decide claim by claim. An exception in one claim's ``measure`` (or one of its
    preconditions) makes that claim inconclusive (with the error and traceback) or skipped (data absent);
    the others keep their verdicts."""
    return [_evaluate_claim(claim, ctx) for claim in paper.claims]


def tally(claims: list[dict[str, Any]]) -> dict[str, int]:
    """Verdict counts of the paper's own claims (``kind == "paper"``), and how many sanity checks passed."""
    counts = {"supported": 0, "not supported": 0, "inconclusive": 0, "skipped": 0, "sanity": 0,
              "sanity_passed": 0}
    for claim in claims:
        if claim.get("kind", "paper") == "sanity":
            counts["sanity"] += 1
            counts["sanity_passed"] += claim["verdict"] == "supported"
        else:
            counts[claim["verdict"]] += 1
    return counts


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


def _record_head(entry: CatalogEntry, scale: str, started: str) -> dict[str, Any]:
    """The fields every record of one paper's run starts with (its identity, scale and default budget)."""
    return {"schema": RECORD_SCHEMA, "paper_id": entry.id, "slug": entry.slug, "title": entry.title,
            "arxiv": entry.arxiv, "scale": scale, "start_time": started, "budget_s": SCALE_BUDGET_S[scale],
            "budget_clock": "wall" if scale == "gpu" else "cpu"}


def _begin(entry: CatalogEntry, scale: str, n_seeds: int | None, record: dict[str, Any],
           loader: Any = None) -> Paper:
    """Load the paper and fill the record's provenance (sources, budget, seeds, versions); raises
    :class:`ScaleRefused` when the paper or this machine cannot run ``scale``."""
    record["git"] = git_commit(entry.slug)
    record["source_sha256"] = source_digest(entry.slug)
    paper = (loader or load_paper)(entry.slug)
    record["budget_s"] = paper.budget_s(scale)
    if scale == "full" and paper.full_budget_reason:
        record["budget_reason"] = paper.full_budget_reason
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
    return paper


def _context(entry: CatalogEntry, scale: str, seeds: list[int], out_dir: Path, show_progress: bool) -> CheckContext:
    return CheckContext(scale=scale, seeds=seeds, device="cuda" if scale == "gpu" else "cpu", out_dir=out_dir,
                        show_progress=show_progress, log=lambda msg: _tqdm_log(f"[{entry.slug}] {msg}"))


def _finish(entry: CatalogEntry, record: dict[str, Any], status: str, scale: str, run_dir: Path, t0: float,
            cpu_s: float) -> PaperRun:
    """Close the record (status, clocks, load, budget) and write it atomically as ``run_dir/<slug>.json``."""
    record["status"] = status
    record["duration_s"] = round(monotonic() - t0, 3)
    record["cpu_s"] = round(cpu_s, 3)
    record["load"]["end"] = load_average()
    spent = record["duration_s"] if scale == "gpu" else record["cpu_s"]
    record["over_budget"] = spent > record["budget_s"]
    path = write_json_atomic(run_dir / f"{entry.slug}.json", record)
    return PaperRun(entry=entry, status=status, record=record, path=path)


def run_paper(entry: CatalogEntry, *, scale: str, run_dir: Path, n_seeds: int | None,
              show_progress: bool = True) -> PaperRun:
    """Run one paper's check and write ``run_dir/<slug>.json``. Never raises for a failed check:
    a failure to load the paper becomes a record with ``status: error`` and the traceback, a failure
    inside one claim becomes that claim's error."""
    started, t0, cpu0 = utc_now(), monotonic(), cpu_seconds()
    record = _record_head(entry, scale, started)
    record.update({"load": {"start": load_average()}, "machine": machine_description()})
    status = "ok"
    try:
        paper = _begin(entry, scale, n_seeds, record)
        ctx = _context(entry, scale, record["seeds"], run_dir / entry.slug, show_progress)
        record["claims"] = measure_claims(paper, ctx)
        record["tally"] = tally(record["claims"])
        record["tuning"] = ctx.tuning
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
    return _finish(entry, record, status, scale, run_dir, t0, cpu_seconds() - cpu0)


# ------------------------------------------------------------------------------------------ seeds as tasks
def _seed_split(entry: CatalogEntry, scale: str, n_seeds: int | None, loader: Any = None) -> list[int] | None:
    """The seeds to run as separate tasks when the paper declares them independent (and there are several),
    else None (the paper runs as one task; a paper that fails to load does so too and records why)."""
    try:
        paper = (loader or load_paper)(entry.slug)
    except Exception:
        return None
    n = n_seeds if n_seeds is not None else paper.default_seeds.get(scale, 1)
    if not paper.independent_seeds or n < 2 or scale not in paper.scales:
        return None
    return list(range(n))


def _measure_seed_in_worker(entry: CatalogEntry, scale: str, run_dir: Path, seed: int, threads: int,
                            loader: Any = None) -> SeedMeasurements:
    """One seed of one paper in a worker (local pool or Ray task): every claim measured, nothing decided."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    configure_threads()
    cpu0 = cpu_seconds()
    paper = (loader or load_paper)(entry.slug)
    if scale == "gpu":
        import torch

        if not torch.cuda.is_available():
            raise ScaleRefused("scale 'gpu' needs a CUDA device and none is available here")
    ctx = _context(entry, scale, [seed], run_dir / entry.slug / f"seed{seed}", False)
    out = measure_seed(paper, ctx)
    out.seed, out.cpu_s = seed, cpu_seconds() - cpu0
    return out


def _merge_side_products(parts: list[SeedMeasurements], run_dir: Path) -> dict[str, Any]:
    """Metrics, notes, plots and tuning records of the seed tasks, as one record's (seed order)."""
    try:
        metrics = _merge_details([p.metrics for p in parts], "metrics")
    except SeedMergeError:  # free-form metrics that differ per seed: kept per seed, not merged
        metrics = {f"seed {p.seed}": p.metrics for p in parts}
    return {"tuning": [t for p in parts for t in p.tuning], "metrics": metrics,
            "notes": list(dict.fromkeys(n for p in parts for n in p.notes)),
            "plots": _relative_plots([q for p in parts for q in p.plots], run_dir)}


def assemble_seeded(entry: CatalogEntry, scale: str, run_dir: Path, n_seeds: int | None,
                    parts: list[SeedMeasurements | BaseException], started: str, t0: float,
                    loader: Any = None) -> PaperRun:
    """The record of a paper run as seed tasks: each claim decided once on the seeds' merged evidence (the
    decision of a sequential run on the same measurements), ``seed_tasks`` naming how many tasks ran."""
    record = _record_head(entry, scale, started)
    record.update({"load": {"start": load_average()}, "machine": machine_description()})
    status, cpu = "ok", sum(p.cpu_s for p in parts if isinstance(p, SeedMeasurements))
    try:
        paper = _begin(entry, scale, n_seeds, record, loader)
        record["seed_tasks"] = len(parts)
        lost = next((p for p in parts if isinstance(p, BaseException)), None)
        if lost is not None:
            raise lost
        ctx = _context(entry, scale, record["seeds"], run_dir / entry.slug, False)
        ctx.tuning.extend(t for p in parts for t in p.tuning)  # what _qualify reads (equal tuning recorded)
        record["claims"] = [decide_measured(claim, merge_seeds(claim, [p.claims[i] for p in parts]), ctx)
                            for i, claim in enumerate(paper.claims)]
        record["tally"] = tally(record["claims"])
        record.update(_merge_side_products(parts, run_dir))
    except ScaleRefused as refusal:
        status = "refused"
        record["refusal"] = str(refusal)
    except Exception as exc:
        status = "error"
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return _finish(entry, record, status, scale, run_dir, t0, cpu)


EXECUTORS: tuple[str, ...] = ("sequential", "local", "ray")


def makespan_minutes(minutes: list[float], workers: int) -> float:
    """Wall time of papers taking ``minutes`` each on ``workers`` workers, longest first onto the least busy
    worker (what a pool handed them in that order does); the ETA ``check`` prints."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    loads = [0.0] * min(workers, max(1, len(minutes)))
    for m in sorted(minutes, reverse=True):
        loads[loads.index(min(loads))] += m
    return max(loads)


def _run_paper_in_worker(entry: CatalogEntry, scale: str, run_dir: Path, n_seeds: int | None,
                         threads: int) -> PaperRun:
    """One paper in a worker process (local pool or Ray task): its own thread count, no progress bars."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    configure_threads()
    return run_paper(entry, scale=scale, run_dir=run_dir, n_seeds=n_seeds, show_progress=False)


def _lost_worker_run(entry: CatalogEntry, scale: str, run_dir: Path, executor: str, exc: BaseException) -> PaperRun:
    """The record of a paper whose worker died (killed, out of memory, a crashed interpreter) before it could
    write its own: ``status: error`` with the reason, so the run keeps every other paper's record. A record the
    worker did write before dying is kept as it is."""
    path = run_dir / f"{entry.slug}.json"
    if path.exists():
        record = json.loads(path.read_text(encoding="utf-8"))
        return PaperRun(entry=entry, status=record.get("status", "error"), record=record, path=path)
    text = f"{type(exc).__name__}: {exc}".strip()
    record = _record_head(entry, scale, utc_now())
    record.update({"status": "error", "claims": [],
                   "error": f"the {executor} worker running {entry.slug} died before writing its record ({text})",
                   "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
                   "duration_s": 0.0, "cpu_s": 0.0, "over_budget": False})
    path = write_json_atomic(path, record)
    return PaperRun(entry=entry, status="error", record=record, path=path)


def _longest_first(entries: list[CatalogEntry], scale: str) -> list[int]:
    """Submission order: the papers whose last record of record at ``scale`` took longest first (so the pool
    does not end waiting on one long paper started last); papers without a record keep their place after them."""
    from .of_record import expected_minutes

    minutes = []
    for entry in entries:
        try:
            minutes.append(expected_minutes(entry.slug, scale) if scale != "smoke" else None)
        except (OSError, ValueError, KeyError, TypeError):
            minutes.append(None)
    return sorted(range(len(entries)), key=lambda i: (minutes[i] is None, -(minutes[i] or 0.0), i))


def _gather(entries: list[CatalogEntry], units: list[tuple[int, Any, tuple]], submit: Any, result_of: Any, *,
            scale: str, run_dir: Path, n_seeds: int | None, executor: str, loader: Any = None) -> list[PaperRun]:
    """Submit every task (``submit(fn, *args)`` -> a handle), the papers that took longest first, then collect
    them (``result_of(handle)``) in entry order. A unit is ``(entry index, fn, args)``: a whole paper
    (:func:`_run_paper_in_worker`, returns its :class:`PaperRun`) or one seed of a paper that declares its seeds
    independent (:func:`_measure_seed_in_worker`, returns its measurements; the driver decides the claims).
    A task whose worker died becomes that paper's error record."""
    order = {i: rank for rank, i in enumerate(_longest_first(entries, scale))}
    started = {i: (utc_now(), monotonic()) for i in range(len(entries))}
    handles = [(i, fn, submit(fn, *args)) for i, fn, args in sorted(units, key=lambda u: order[u[0]])]
    runs = []
    for i, entry in enumerate(entries):
        mine = [(fn, h) for j, fn, h in handles if j == i]
        if mine[0][0] is not _measure_seed_in_worker:
            try:
                runs.append(result_of(mine[0][1]))
            except Exception as exc:
                runs.append(_lost_worker_run(entry, scale, run_dir, executor, exc))
            continue
        parts: list[SeedMeasurements | BaseException] = []
        for _, handle in mine:
            try:
                parts.append(result_of(handle))
            except Exception as exc:  # ScaleRefused, or the worker died: the paper's record says so
                parts.append(exc)
        runs.append(assemble_seeded(entry, scale, run_dir, n_seeds, parts, *started[i], loader=loader))
    return runs


def _fan_out(entries: list[CatalogEntry], *, scale: str, run_dir: Path, n_seeds: int | None, executor: str,
             jobs: int, worker: Any = None, loader: Any = None) -> list[PaperRun]:
    """Run the papers as independent tasks, and the seeds of a paper that declares them independent
    (``Paper(independent_seeds=True)``) as tasks of their own; records land in the same run folder, returned
    in entry order.

    A worker that dies costs its own paper (an error record saying so), never the run. ``worker`` replaces
    :func:`_run_paper_in_worker` (tests; it must be importable by the workers); ``loader(slug) -> Paper``
    replaces :func:`~neurips26.claims.registry.load_paper` for seed tasks (tests: a synthetic paper)."""
    worker = worker or _run_paper_in_worker
    threads = max(1, int(os.environ.get("OMP_NUM_THREADS", "2")) // jobs)
    units: list[tuple[int, Any, tuple]] = []
    for i, entry in enumerate(entries):
        seeds = _seed_split(entry, scale, n_seeds, loader) if worker is _run_paper_in_worker else None
        if seeds is None:
            units.append((i, worker, (entry, scale, run_dir, n_seeds, threads)))
        else:
            units.extend((i, _measure_seed_in_worker, (entry, scale, run_dir, s, threads, loader)) for s in seeds)
    gather = functools.partial(_gather, entries, units, scale=scale, run_dir=run_dir, n_seeds=n_seeds,
                               executor=executor, loader=loader)
    if executor == "local":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: a forked torch with live OpenMP threads can deadlock in the child
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            # BrokenProcessPool when the pool lost a worker
            return gather(pool.submit, lambda future: future.result())
    try:
        import ray
    except ImportError as err:
        raise ValueError("executor 'ray' needs ray (installed with the 'fl' extra: pip install -e '.[fl]')") from err
    started_here = not ray.is_initialized()
    if started_here:
        # RAY_ADDRESS joins an existing cluster; otherwise a local one with `jobs` CPUs
        ray.init(address=os.environ.get("RAY_ADDRESS") or None,
                 num_cpus=None if os.environ.get("RAY_ADDRESS") else jobs, include_dashboard=False,
                 log_to_driver=False)
    try:
        # max_retries=0: a paper is not rerun behind the user's back (its record would mix two attempts).
        # At scale gpu each task holds a whole GPU (Ray hides the GPUs from tasks that ask for none); on a
        # cluster without GPUs the tasks run anyway and each paper refuses the scale with its reason.
        gpus = 1 if scale == "gpu" and ray.cluster_resources().get("GPU", 0) >= 1 else 0
        remote = {fn: ray.remote(num_cpus=1, num_gpus=gpus, max_retries=0)(fn) for _, fn, _ in units}
        # WorkerCrashedError, RayTaskError, ... when a task's worker died
        runs = gather(lambda fn, *args: remote[fn].remote(*args), ray.get)
        for run in runs:
            # on a multi-node cluster the worker wrote to its own node's disk: the driver's run folder gets the
            # record too (where the folder is shared, the worker's file is already there)
            path = run_dir / f"{run.entry.slug}.json"
            run.path = path if path.exists() else write_json_atomic(path, run.record)
        return runs
    finally:
        if started_here:
            ray.shutdown()


def run_checks(entries: list[CatalogEntry], *, scale: str = "quick", out_root: Path = Path("runs"),
               n_seeds: int | None = None, show_progress: bool = True, executor: str = "sequential",
               jobs: int = 1) -> tuple[Path, list[PaperRun]]:
    """Run several papers into one new run folder; returns the folder and the per-paper outcomes.

    ``executor``: ``"sequential"`` (one after another in this process), ``"local"`` (``jobs`` worker processes
    on this machine) or ``"ray"`` (Ray tasks on a local cluster of ``jobs`` CPUs, or the cluster at
    ``$RAY_ADDRESS``). The records are the same whichever runs them; with several workers each gets
    ``OMP_NUM_THREADS // jobs`` torch threads, so wall and CPU seconds differ from a sequential run.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if n_seeds is not None and n_seeds < 1:
        raise ValueError(f"seeds must be a positive integer, got {n_seeds}")
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    configure_threads()
    run_dir = new_run_dir(Path(out_root), scale)
    # A run killed half-way keeps this marker, so `report` can say the run is incomplete.
    marker = mark_in_progress(run_dir)
    if executor == "sequential" or len(entries) <= 1:
        runs = []
        for entry in entries:
            _tqdm_log(f"== {entry.id} {entry.slug}: running at scale {scale}")
            runs.append(run_paper(entry, scale=scale, run_dir=run_dir, n_seeds=n_seeds,
                                  show_progress=show_progress))
    else:
        _tqdm_log(f"== {len(entries)} papers at scale {scale} on {executor} with {jobs} worker(s)")
        runs = _fan_out(entries, scale=scale, run_dir=run_dir, n_seeds=n_seeds, executor=executor, jobs=jobs)
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
            cid = claim["id"] + ("*" if claim.get("kind") == "sanity" else "")
            rows.append((label, cid, claim["verdict"], _clip(measured, 40),
                         _clip(claim["paper_value"], 30)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    if any(c.get("kind") == "sanity" for r in records for c in r.get("claims", [])):
        lines.append("* implementation check (kind sanity): not counted among the paper's verdicts")
    return "\n".join(lines)


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"
