"""One paper's seeds as separate tasks, for a check that declares its seeds independent.

A paper declares ``Paper(independent_seeds=True)`` when every measurement of its claims and preconditions, run on
the seeds ``[s0, s1, ...]``, equals the concatenation, in seed order, of the same measurement run on each seed
alone: the ``values`` one per seed (or one block per seed), every list in ``details`` likewise, everything else in
``details`` the same on every seed. Then ``neurips26 check ... --executor local|ray`` runs each seed as its own task
(:func:`measure_seed`: every claim measured, nothing decided) and the driver merges the seeds' evidence
(:func:`merge_evidence`) and decides each claim once on the merged evidence (:func:`decide_measured`), so the record
is the one a sequential run writes. A measurement that breaks the declaration (a detail that differs between
seeds and is not a list) makes its claim inconclusive with an error saying so, never a silently wrong verdict.

Seed tasks do not share ``ctx.cache``: work shared by the claims *of one seed* is shared as before (one task runs
all claims of its seed); work shared *across* seeds (a dataset download, a tuned learning rate) is repeated per
task, which is the price of the fan-out.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any

from .spec import CheckContext, Claim, Evidence, Paper

__all__ = ["Failure", "Measured", "SeedMeasurements", "SeedMergeError", "measure_claim", "measure_seed",
           "merge_evidence", "merge_seeds", "runs_here"]


class SeedMergeError(ValueError):
    """The seeds' evidence cannot be merged: the paper declared ``independent_seeds`` but a measurement's
    details differ between seeds in a way that concatenation cannot express."""


@dataclass
class Failure:
    """An exception of a measurement, in a form that crosses process boundaries (text, traceback, data miss)."""

    text: str  # "TypeName: message"
    traceback: str
    message: str = ""  # str(exc)
    data_miss: bool = False
    fix: str | None = None

    @classmethod
    def of(cls, exc: BaseException) -> Failure:
        return cls(text=f"{type(exc).__name__}: {exc}", message=str(exc),
                   traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
                   data_miss=_is_data_miss(exc), fix=getattr(exc, "fix", None))


def _is_data_miss(exc: BaseException) -> bool:
    try:
        from neurips26.data import DatasetNotFoundError
    except ImportError:  # a broken data package must not hide the claim's own error
        return False
    return isinstance(exc, DatasetNotFoundError)


def _measure(fn: Any, what: str, ctx: CheckContext) -> Evidence:
    evidence = fn(ctx)
    if not isinstance(evidence, Evidence):
        raise TypeError(f"measure of {what} must return an Evidence, got {type(evidence).__name__}")
    return evidence


def runs_here(claim: Claim, scale: str) -> bool:
    """Whether ``scale`` measures ``claim``: its decided scales, and smoke for every claim but GPU-only ones
    (smoke exists to exercise every claim's pipeline, CI runs it; such claims stay inconclusive there)."""
    return scale in claim.scales or (scale == "smoke" and set(claim.scales) != {"gpu"})


@dataclass
class Measured:
    """One claim's measurements before any decision: each precondition's evidence (or failure), then the claim's;
    ``not_run``: this scale does not measure the claim (:func:`runs_here`)."""

    preconditions: list[tuple[Evidence | None, Failure | None]] = field(default_factory=list)
    evidence: Evidence | None = None
    failure: Failure | None = None
    not_run: bool = False


@dataclass
class SeedMeasurements:
    """What one seed's task hands back: every claim's :class:`Measured`, and the context's side products."""

    seed: int
    claims: list[Measured]
    metrics: dict[str, Any]
    notes: list[str]
    plots: list[dict[str, str]]
    tuning: list[dict[str, Any]]
    cpu_s: float = 0.0


def measure_claim(claim: Claim, ctx: CheckContext) -> Measured:
    """Measure one claim and its preconditions on ``ctx.seeds`` without deciding; exceptions are kept.

    Mirrors the measuring half of the runner's claim evaluation: a precondition whose data is absent stops
    the claim (it will be skipped), any other failure is kept for the decision."""
    if not runs_here(claim, ctx.scale):
        return Measured(not_run=True)
    out = Measured()
    for pre in claim.preconditions:
        try:
            out.preconditions.append((_measure(pre.measure, f"{claim.id} precondition {pre.name!r}", ctx), None))
        except Exception as exc:
            failure = Failure.of(exc)
            out.preconditions.append((None, failure))
            if failure.data_miss:
                return out
            ctx.log(f"{claim.id} precondition {pre.name!r}: {failure.text}")
    try:
        out.evidence = _measure(claim.measure, claim.id, ctx)
    except Exception as exc:
        out.failure = Failure.of(exc)
        ctx.log(f"{claim.id}: {out.failure.text}")
    return out


def measure_seed(paper: Paper, ctx: CheckContext) -> SeedMeasurements:
    """Every claim of ``paper`` measured on ``ctx.seeds`` (one seed, in a seed task)."""
    claims = [measure_claim(claim, ctx) for claim in paper.claims]
    return SeedMeasurements(seed=ctx.seeds[0] if len(ctx.seeds) == 1 else -1, claims=claims, metrics=ctx.metrics,
                            notes=ctx.notes, plots=ctx.plots, tuning=ctx.tuning)


def _merge_details(parts: list[dict[str, Any]], what: str) -> dict[str, Any]:
    keys = list(parts[0])
    if any(list(p) != keys for p in parts[1:]):
        raise SeedMergeError(f"{what}: the seeds' details have different keys ({[sorted(p) for p in parts]})")
    merged: dict[str, Any] = {}
    for key in keys:
        values = [p[key] for p in parts]
        if all(isinstance(v, list) for v in values):
            merged[key] = [item for v in values for item in v]
        elif all(v == values[0] for v in values[1:]):
            merged[key] = values[0]
        else:
            raise SeedMergeError(f"{what}: details[{key!r}] differs between seeds and is not a list, so the "
                                 "seeds cannot be merged (independent_seeds does not hold for this measurement)")
    return merged


def merge_evidence(parts: list[Evidence], what: str = "evidence") -> Evidence:
    """The evidence of all seeds from each seed's: values and list details concatenated in seed order, the rest
    required equal (:class:`SeedMergeError` otherwise)."""
    if not parts:
        raise ValueError(f"{what}: nothing to merge")
    first = parts[0]
    for name in ("unit", "note", "allow_missing"):
        if any(getattr(p, name) != getattr(first, name) for p in parts[1:]):
            raise SeedMergeError(f"{what}: the seeds' evidence has different {name!r}")
    missing = list(dict.fromkeys(m for p in parts for m in p.missing))
    return Evidence(values=[v for p in parts for v in p.values], unit=first.unit,
                    details=_merge_details([p.details for p in parts], what), note=first.note,
                    allow_missing=first.allow_missing, missing=missing)


def merge_seeds(claim: Claim, per_seed: list[Measured]) -> Measured:
    """One claim's measurements on all seeds from each seed's (seed order): the first seed's failure wins (with
    its seed named), evidence is merged with :func:`merge_evidence`."""
    if per_seed[0].not_run:  # not run at this scale: the same on every seed
        return per_seed[0]
    out = Measured()
    n_pre = max(len(m.preconditions) for m in per_seed)
    for i in range(n_pre):
        entries = [m.preconditions[i] if i < len(m.preconditions) else (None, None) for m in per_seed]
        failed = next((f for _, f in entries if f is not None), None)
        if failed is not None:
            out.preconditions.append((None, failed))
            if failed.data_miss:
                return out
            continue
        try:
            pre_name = claim.preconditions[i].name
            out.preconditions.append((merge_evidence([e for e, _ in entries], f"{claim.id} precondition "
                                                                                f"{pre_name!r}"), None))
        except SeedMergeError as err:
            out.preconditions.append((None, Failure(text=f"SeedMergeError: {err}", traceback="", message=str(err))))
    failed = next((m.failure for m in per_seed if m.failure is not None), None)
    if failed is not None:
        out.failure = failed
        return out
    try:
        out.evidence = merge_evidence([m.evidence for m in per_seed], claim.id)
    except SeedMergeError as err:
        out.failure = Failure(text=f"SeedMergeError: {err}", traceback="", message=str(err))
    return out
