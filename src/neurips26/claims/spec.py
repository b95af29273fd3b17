"""What a claim check declares before it runs, and what each claim's measurement hands back.

A paper's ``check.py`` builds one :class:`Paper` with its :class:`Claim` list at import time, so every
criterion is fixed in code before any experiment runs. Each claim carries a rule (from
:mod:`neurips26.claims.rules`, which also writes the criterion sentence) and a ``measure(ctx)`` that
returns its :class:`Evidence`. The framework, not the paper, runs each measurement on its own and
applies the rule. See ``docs/CHECK_TEMPLATE.md``.

    def measure_c1(ctx: CheckContext) -> Evidence:
        return Evidence(values=[speedup(seed) for seed in ctx.seeds], unit="x")

    CLAIMS = (Claim(id="C1", statement="...", paper_value="2.16x", metric="speed-up vs dense (x)",
                    rule=rules.threshold(">=", 2.0, min_n=3), measure=measure_c1),)
    PAPER = Paper(id="P15", slug="dasa", claims=CLAIMS, default_seeds={"smoke": 1, "quick": 3})
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np

SCALES: tuple[str, ...] = ("smoke", "quick", "full", "gpu")
#: Budget per paper and scale, in seconds: CPU seconds (user + system, every thread and child) for ``smoke``,
#: ``quick`` and ``full`` on 2 cores; wall seconds on one H200 for ``gpu``. A paper may declare a larger full
#: budget (at most :data:`MAX_FULL_BUDGET_CPU_S`) with its reason (:class:`Paper`).
SCALE_BUDGET_S: dict[str, int] = {"smoke": 30, "quick": 240, "full": 1800, "gpu": 480}
MAX_FULL_BUDGET_CPU_S = 3 * 3600
#: ``paper``: the paper's claim, counted in its tally. ``sanity``: a property true by construction or a check
#: of our implementation (planted structure, counted passes, closed forms), shown apart, never counted.
CLAIM_KINDS: tuple[str, ...] = ("paper", "sanity")
VerdictLabel = Literal["supported", "not supported", "inconclusive", "skipped"]
#: ``skipped`` is set by the framework only, when a claim's data cannot be had (never by a rule).
VERDICTS: tuple[str, ...] = ("supported", "not supported", "inconclusive", "skipped")

T = TypeVar("T")


@dataclass(frozen=True)
class Verdict:
    """The decision on one claim, with a one-sentence reason a reader can check against the numbers."""

    label: VerdictLabel
    reason: str

    def __post_init__(self) -> None:
        if self.label not in VERDICTS:
            raise ValueError(f"verdict label must be one of {VERDICTS}, got {self.label!r}")


def supported_if(condition: bool, reason: str, *, otherwise: VerdictLabel = "not supported") -> Verdict:
    """``supported`` when ``condition`` holds, else ``otherwise``; the same reason text for both (for
    :func:`neurips26.claims.rules.custom`)."""
    return Verdict("supported" if condition else otherwise, reason)


def inconclusive(reason: str) -> Verdict:
    return Verdict("inconclusive", reason)


@dataclass
class Evidence:
    """What a run measured for one claim.

    ``values`` holds one number per seed (or per cell; say which in ``unit``/``details``): any sequence
    of real numbers, numpy arrays included; the record reports their mean and spread. Non-finite values
    are refused (a NaN usually means a bug upstream) unless ``allow_missing=True``, where ``None``/NaN
    marks a value that could not be measured: it is kept in the record as ``null`` and left out of the
    statistics. ``details`` carries anything else the decision or a reader needs (per-dataset tables,
    counts), as JSON-serialisable data; :func:`neurips26.claims.rules.on` decides on one of its entries.
    ``missing`` names the cells (datasets, settings) the claim needed but could not measure because their data
    is absent: unless the claim is pre-registered per cell (``Claim(per_cell=True)``) the claim is then
    inconclusive and its reason names them (a verdict on the cells that happened to be present would not be
    the pre-registered one).
    """

    values: Sequence[float | None]
    unit: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    allow_missing: bool = False
    missing: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.missing, str) or not all(isinstance(m, str) and m for m in self.missing):
            raise TypeError(f"Evidence missing must be a sequence of cell names, got {self.missing!r}")
        self.missing = tuple(self.missing)
        raw = self.values
        if isinstance(raw, np.ndarray):
            raw = raw.ravel().tolist()
        if isinstance(raw, str | bytes) or not isinstance(raw, Iterable):
            raise TypeError(f"Evidence values must be a sequence of numbers, got {type(self.values).__name__}")
        clean: list[float | None] = []
        for i, value in enumerate(raw):
            if value is None and self.allow_missing:
                clean.append(None)
                continue
            if isinstance(value, bool) or not isinstance(value, int | float | np.number):
                raise TypeError(f"Evidence values[{i}] must be a real number, got {value!r}")
            number = float(value)
            if not math.isfinite(number):
                if not self.allow_missing:
                    raise ValueError(f"Evidence values[{i}] is {number}: non-finite values are refused "
                                     "(pass allow_missing=True where a value may be missing)")
                clean.append(None)
                continue
            clean.append(number)
        self.values = clean
        if not isinstance(self.details, dict):
            raise TypeError(f"Evidence details must be a dict, got {type(self.details).__name__}")

    @property
    def finite(self) -> list[float]:
        """The measured values, missing ones left out."""
        return [v for v in self.values if v is not None]

    @property
    def n(self) -> int:
        """How many values were measured (missing ones not counted)."""
        return len(self.finite)

    @property
    def mean(self) -> float:
        return float(np.mean(self.finite)) if self.finite else math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation (ddof=1); 0 for a single value."""
        return float(np.std(self.finite, ddof=1)) if self.n > 1 else 0.0

    @property
    def sem(self) -> float:
        """Standard error of the mean."""
        return self.std / math.sqrt(self.n) if self.n > 1 else 0.0

    def summary(self) -> str:
        if not self.finite:
            return "not measured"
        text = f"{self.mean:.4g}"
        if self.n > 1:
            text += f" ± {self.std:.2g}"
        if self.n > 2:  # several rules decide on the median; a skewed mean alone would mislead
            text += f", median {float(np.median(self.finite)):.4g}"
        if self.n > 1:
            text += f" (n={self.n})"
        missing = len(self.values) - self.n
        if missing:
            text += f", {missing} missing"
        return f"{text} {self.unit}".strip()


def _is_rule(rule: Any) -> bool:
    return callable(rule) and isinstance(getattr(rule, "criterion", None), str)


@dataclass(frozen=True)
class Precondition:
    """Something that must hold for a claim to be answerable at all, measured in the same run.

    A trained model must beat a trivial reference, a baseline must have converged, the task must have
    headroom, the signal the claim is about must exist. ``measure(ctx) -> Evidence`` measures it (share the
    expensive work with the claim through ``ctx.cache``); it is met when ``rule(evidence)`` is ``supported``.
    Any unmet precondition makes its claim ``inconclusive`` with "precondition not met: <name> (<value>,
    needs <criterion>)", whatever the claim's own rule says. Ready-made ones:
    :mod:`neurips26.claims.preconditions`.
    """

    name: str
    measure: Callable[[CheckContext], Evidence]
    rule: Any

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"Precondition name must be a non-empty string, got {self.name!r}")
        if not callable(self.measure):
            raise TypeError(f"precondition {self.name!r}: measure must be callable, got "
                            f"{type(self.measure).__name__}")
        if not _is_rule(self.rule):
            raise TypeError(f"precondition {self.name!r}: rule must come from neurips26.claims.rules, got "
                            f"{type(self.rule).__name__}")

    @property
    def criterion(self) -> str:
        return self.rule.criterion


@dataclass(frozen=True)
class Claim:
    """A claim of the paper, how it is measured, and the pre-registered rule that decides it.

    Attributes:
        id: short id, unique within the paper (``C1``).
        statement: what the paper says, in one or two sentences.
        paper_value: the paper's number, as text (with its unit and setting).
        metric: what we measure for it (with unit).
        rule: a rule from :mod:`neurips26.claims.rules`; it decides and renders the criterion sentence,
            so a threshold is written once. Fixed before the run.
        measure: ``measure(ctx) -> Evidence``, run by the framework on its own: an exception in it
            makes this claim inconclusive and leaves the others alone.
        context: optional words put before the rule's sentence in the criterion ("on every stream: ").
        scales: scales at which the claim is decided; elsewhere it is ``inconclusive`` ("not run").
        kind: ``"paper"`` (the paper's claim, counted) or ``"sanity"`` (true by construction, or a check of
            our implementation: shown apart as an implementation check and never counted in the tally).
        preconditions: :class:`Precondition` s measured beside the claim; any unmet one makes it inconclusive.
        compares_trained: the claim compares trained models (ours against baselines). Such a claim needs at
            least one precondition and a ``tuning`` statement.
        tuning: ``"equal"`` when every arm is tuned over the same-sized grid on a validation split with
            :func:`neurips26.claims.tune_arms` (the runner checks that the tuned arms were recorded), or the
            reason an arm is not tuned ("fixed by the paper: ...").
        per_cell: the rule is pre-registered per cell, so a verdict on the cells whose data is present is
            the pre-registered one (see ``Evidence.missing``).

    ``criterion`` (the sentence) and ``decide`` (the rule itself) are filled in from ``rule``.
    """

    id: str
    statement: str
    paper_value: str
    metric: str
    criterion: str = ""
    decide: Callable[[Evidence], Verdict] | None = None
    scales: tuple[str, ...] = SCALES
    rule: Any = None
    measure: Callable[[CheckContext], Evidence] | None = None
    context: str = ""
    kind: str = "paper"
    preconditions: tuple[Precondition, ...] = ()
    compares_trained: bool = False
    tuning: str = ""
    per_cell: bool = False

    def __post_init__(self) -> None:
        if self.rule is None:
            raise ValueError(f"claim {self.id}: a claim needs rule= (a rule from neurips26.claims.rules)")
        if self.decide is not None or self.criterion:
            raise ValueError(f"claim {self.id}: criterion and decide come from rule=; do not give them")
        if not _is_rule(self.rule):
            raise TypeError(f"claim {self.id}: rule must come from neurips26.claims.rules")
        object.__setattr__(self, "criterion", f"{self.context.rstrip()} {self.rule.criterion}".strip())
        object.__setattr__(self, "decide", self.rule)
        if self.measure is None:
            raise ValueError(f"claim {self.id}: a claim needs measure= (measure(ctx) -> Evidence)")
        if not callable(self.measure):
            raise TypeError(f"claim {self.id}: measure must be callable, got {type(self.measure).__name__}")
        bad = [s for s in self.scales if s not in SCALES]
        if bad:
            raise ValueError(f"claim {self.id}: unknown scales {bad}; scales are {SCALES}")
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {CLAIM_KINDS}, got {self.kind!r}")
        pre = tuple(self.preconditions) if isinstance(self.preconditions, list | tuple) else self.preconditions
        if not isinstance(pre, tuple) or not all(isinstance(p, Precondition) for p in pre):
            raise TypeError(f"claim {self.id}: preconditions must be a tuple of claims.Precondition, got "
                            f"{self.preconditions!r}")
        names = [p.name for p in pre]
        if len(set(names)) != len(names):
            raise ValueError(f"claim {self.id}: precondition names must be unique, got {names}")
        object.__setattr__(self, "preconditions", pre)
        for flag in ("compares_trained", "per_cell"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"claim {self.id}: {flag} must be a bool, got {getattr(self, flag)!r}")
        if not isinstance(self.tuning, str):
            raise TypeError(f"claim {self.id}: tuning must be a string, got {self.tuning!r}")
        if self.compares_trained:
            if not pre:
                raise ValueError(f"claim {self.id}: compares_trained=True needs at least one precondition "
                                 "(each arm converged, the model beats its trivial reference, ...)")
            if not self.tuning.strip():
                raise ValueError(f"claim {self.id}: compares_trained=True needs tuning='equal' (claims.tune_arms) "
                                 "or the reason an arm is untuned, e.g. tuning='fixed by the paper: lr 3e-4'")


class ScaleRefused(Exception):
    """Raised by a run function (or the framework) when a paper cannot run at the requested scale."""


def _tqdm_log(message: str) -> None:
    """Print a log line without breaking progress bars (tqdm.write moves them out of the way)."""
    from tqdm.auto import tqdm

    tqdm.write(message, file=sys.stderr)


@dataclass
class CheckContext:
    """What a claim's ``measure`` gets: scale, seeds, device, a private output folder, progress and
    logging helpers, a cache shared by the paper's claims, and places for metrics, notes and plots."""

    scale: str
    seeds: list[int]
    device: str
    out_dir: Path
    log: Callable[[str], None] = _tqdm_log
    show_progress: bool = True
    metrics: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    plots: list[dict[str, str]] = field(default_factory=list)
    tuning: list[dict[str, Any]] = field(default_factory=list)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def cache(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per run and key; later claims get the same object.

        A failed computation is remembered too: every claim that needs it fails with the same error
        (and the expensive step is not retried claim after claim).
        """
        if key not in self._cache:
            try:
                self._cache[key] = ("ok", compute())
            except Exception as err:
                self._cache[key] = ("error", err)
        status, value = self._cache[key]
        if status == "error":
            raise value
        return value

    def note(self, text: str) -> None:
        """A sentence for the record's notes (what a reader needs beside the verdicts)."""
        self.notes.append(str(text))

    def plot_path(self, name: str) -> Path:
        """A path inside this paper's folder of the run, for a figure (``name`` like ``loss.png``)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        return self.out_dir / name

    def figure(self, nrows: int = 1, ncols: int = 1, **subplots: Any) -> tuple[Any, Any]:
        """A new matplotlib ``(figure, axes)`` that needs no display and no backend choice.

        Built on ``matplotlib.figure.Figure`` (not pyplot), so a check never calls ``matplotlib.use`` and
        never leaks open figures; pass the result to :meth:`save_figure`. ``subplots`` go to
        ``Figure.subplots`` (``figsize`` to the figure).
        """
        from matplotlib.figure import Figure

        fig = Figure(figsize=subplots.pop("figsize", None))
        return fig, fig.subplots(nrows, ncols, **subplots)

    def save_figure(self, fig: Any, name: str, *, caption: str = "", dpi: int = 120) -> Path:
        """Lay out, save (``name`` like ``loss.png``) and close a matplotlib figure; the plot and its
        caption are added to the record. Returns its path."""
        path = self.plot_path(name)
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
        if "matplotlib.pyplot" in sys.modules:  # a pyplot figure stays registered until closed
            sys.modules["matplotlib.pyplot"].close(fig)
        self.plots.append({"path": str(path), "caption": caption})
        return path

    def progress(self, iterable: Iterable[T], desc: str, total: int | None = None) -> Iterator[T]:
        """Wrap a loop with a progress bar on stderr (plain per-step lines when not a terminal)."""
        from tqdm.auto import tqdm

        yield from tqdm(iterable, desc=desc, total=total, disable=not self.show_progress,
                        leave=False, mininterval=2.0)

    def pick(self, by_scale: Mapping[str, T]) -> T:
        """Choose a setting by scale: ``ctx.pick({"smoke": 2, "quick": 10, "full": 50})``.

        ``gpu`` falls back to ``full`` when not given.
        """
        if self.scale in by_scale:
            return by_scale[self.scale]
        if self.scale == "gpu" and "full" in by_scale:
            return by_scale["full"]
        raise KeyError(f"no setting for scale {self.scale!r} (have {sorted(by_scale)})")


@dataclass(frozen=True)
class Paper:
    """A paper's claim check, as registered by ``neurips26.<slug>.check.PAPER``.

    The paper declares itself here: the framework discovers every ``neurips26/<slug>/check.py`` and reads
    ``id``, ``slug``, ``method``, ``title`` and ``arxiv`` from this declaration (see
    :mod:`neurips26.claims.catalog`), so adding a paper needs no framework edit.

    Attributes:
        id, slug: ``P12``, ``effbench`` (the slug is the package's folder name).
        method, title, arxiv: the method's short name, the paper's title, its arXiv id (or None). Written as
            literals, so ``neurips26 list`` can read them without importing the paper.
        claims: declared before the run; ids unique. Each claim with a ``measure`` is measured on its own.
        default_seeds: number of seeds per scale, e.g. ``{"smoke": 1, "quick": 3, "full": 5}``.
        scales: scales the check supports; ``gpu`` additionally requires CUDA.
        full_budget_cpu_s, full_budget_reason: a full budget above the default 1800 CPU-seconds (at most
            3 CPU-hours), with the reason (e.g. a pre-training claim that needs a model past the unigram level).
        independent_seeds: every measurement on seeds ``[s0, s1, ...]`` is the concatenation, in seed order, of
            the same measurement on each seed alone (see :mod:`neurips26.claims.seeds`); with a parallel executor
            each seed then runs as its own task and the record is the one a sequential run writes.
    """

    id: str
    slug: str
    claims: tuple[Claim, ...]
    method: str = ""
    title: str = ""
    arxiv: str | None = None
    default_seeds: Mapping[str, int] = field(
        default_factory=lambda: {"smoke": 1, "quick": 3, "full": 5, "gpu": 5})
    scales: tuple[str, ...] = SCALES
    full_budget_cpu_s: int | None = None
    full_budget_reason: str = ""
    independent_seeds: bool = False

    def budget_s(self, scale: str) -> int:
        """The budget of ``scale`` (CPU seconds; wall seconds on ``gpu``)."""
        if scale == "full" and self.full_budget_cpu_s is not None:
            return self.full_budget_cpu_s
        return SCALE_BUDGET_S[scale]

    def __post_init__(self) -> None:
        if self.full_budget_cpu_s is not None:
            budget = self.full_budget_cpu_s
            if isinstance(budget, bool) or not isinstance(budget, int) or not 0 < budget <= MAX_FULL_BUDGET_CPU_S:
                raise ValueError(f"{self.slug}: full_budget_cpu_s must be an int in (0, {MAX_FULL_BUDGET_CPU_S}], "
                                 f"got {budget!r}")
            if budget > SCALE_BUDGET_S["full"] and not self.full_budget_reason.strip():
                raise ValueError(f"{self.slug}: a full budget above {SCALE_BUDGET_S['full']} CPU-s needs "
                                 "full_budget_reason")
        if not isinstance(self.independent_seeds, bool):
            raise TypeError(f"{self.slug}: independent_seeds must be a bool, got {self.independent_seeds!r}")
        ids = [claim.id for claim in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.slug}: claim ids must be unique, got {ids}")
        unmeasured = [claim.id for claim in self.claims if claim.measure is None]
        if unmeasured:
            raise ValueError(f"{self.slug}: claims {unmeasured} have no measure")
