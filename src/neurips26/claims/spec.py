"""What a claim check declares before it runs, and what it hands back.

A paper's ``check.py`` builds one :class:`Paper` with its :class:`Claim` list at import time, so every
criterion is fixed in code before any experiment runs. The run function receives a
:class:`CheckContext` and returns a :class:`CheckOutput`: metrics, plots and one :class:`Evidence`
per claim. The framework (not the paper) then applies each claim's ``decide`` to its evidence.

    CLAIMS = [Claim(id="C1", statement="...", paper_value="2.34 pp", metric="RMSE (pp)",
                    criterion="mean RMSE of A below B by more than 1 SE",
                    decide=lambda ev: supported_if(ev.mean < 0, "...")), ...]
    PAPER = Paper(id="P12", slug="effbench", claims=CLAIMS, run=run, default_seeds={...})
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np

SCALES: tuple[str, ...] = ("smoke", "quick", "full", "gpu")
#: Wall-clock budget per paper and scale, in seconds (2 CPU cores; ``gpu``: one H200).
SCALE_BUDGET_S: dict[str, int] = {"smoke": 30, "quick": 120, "full": 900, "gpu": 480}
VerdictLabel = Literal["supported", "not supported", "inconclusive"]
VERDICTS: tuple[str, ...] = ("supported", "not supported", "inconclusive")

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
    """``supported`` when ``condition`` holds, else ``otherwise``; the same reason text for both."""
    return Verdict("supported" if condition else otherwise, reason)


def inconclusive(reason: str) -> Verdict:
    return Verdict("inconclusive", reason)


@dataclass
class Evidence:
    """What a run measured for one claim.

    ``values`` holds one number per seed (or per cell; say which in ``unit``/``details``); the
    record reports their mean and spread. ``details`` carries anything else the decision or a reader
    needs (per-dataset tables, counts), as JSON-serialisable data.
    """

    values: Sequence[float]
    unit: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation (ddof=1); 0 for a single value."""
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0

    @property
    def sem(self) -> float:
        """Standard error of the mean."""
        return self.std / math.sqrt(self.n) if self.n > 1 else 0.0

    def summary(self) -> str:
        if not self.values:
            return "not measured"
        text = f"{self.mean:.4g}"
        if self.n > 1:
            text += f" ± {self.std:.2g} (n={self.n})"
        return f"{text} {self.unit}".strip()


@dataclass(frozen=True)
class Claim:
    """A claim of the paper and the pre-registered rule that decides it.

    Attributes:
        id: short id, unique within the paper (``C1``).
        statement: what the paper says, in one or two sentences.
        paper_value: the paper's number, as text (with its unit and setting).
        metric: what we measure for it (with unit).
        criterion: the decision rule in words; ``decide`` implements exactly this.
        decide: maps the run's :class:`Evidence` to a :class:`Verdict`. Fixed before the run.
        scales: scales at which the claim is decided; elsewhere it is ``inconclusive`` ("not run").
    """

    id: str
    statement: str
    paper_value: str
    metric: str
    criterion: str
    decide: Callable[[Evidence], Verdict]
    scales: tuple[str, ...] = SCALES


@dataclass
class CheckOutput:
    """What a paper's run function returns."""

    evidence: dict[str, Evidence]
    metrics: dict[str, Any] = field(default_factory=dict)
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class ScaleRefused(Exception):
    """Raised by a run function (or the framework) when a paper cannot run at the requested scale."""


@dataclass
class CheckContext:
    """What a run function gets: scale, seeds, device, a private output folder and progress helpers."""

    scale: str
    seeds: list[int]
    device: str
    out_dir: Path
    log: Callable[[str], None] = print
    show_progress: bool = True

    def plot_path(self, name: str) -> Path:
        """A path inside this paper's folder of the run, for a figure (``name`` like ``loss.png``)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        return self.out_dir / name

    def save_figure(self, fig: Any, name: str, *, dpi: int = 120) -> Path:
        """Lay out, save (``name`` like ``loss.png``) and close a matplotlib figure; returns its path."""
        import matplotlib.pyplot as plt

        path = self.plot_path(name)
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
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

    Attributes:
        id, slug: must match the catalog (``P12``, ``effbench``).
        claims: declared before the run; ids unique.
        run: ``run(ctx) -> CheckOutput``.
        default_seeds: number of seeds per scale, e.g. ``{"smoke": 1, "quick": 3, "full": 5}``.
        scales: scales the check supports; ``gpu`` additionally requires CUDA.
    """

    id: str
    slug: str
    claims: tuple[Claim, ...]
    run: Callable[[CheckContext], CheckOutput]
    default_seeds: Mapping[str, int] = field(
        default_factory=lambda: {"smoke": 1, "quick": 3, "full": 5, "gpu": 5})
    scales: tuple[str, ...] = SCALES

    def __post_init__(self) -> None:
        ids = [claim.id for claim in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.slug}: claim ids must be unique, got {ids}")
