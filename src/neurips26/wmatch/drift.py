"""Distribution-drift monitoring with a dynamic matcher: W_p between a reference window and a sliding
window of a stream, updated with one delete and one insert per new point instead of a full solve."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neurips26.constraints import Callable as IsCallable
from neurips26.constraints import Int, Optional, validate

from ._validate import _check_range, check_points, coordinate_limit
from .grid import DynamicWassersteinMatcher


@dataclass
class DriftResult:
    """``steps[t]``: stream index at which ``estimate[t]`` (maintained cost) and ``matching_cost[t]``
    (true cost of the materialised matching, or NaN when not evaluated) were read; costs are
    normalised by the window size (an average transport cost per point)."""

    steps: np.ndarray
    estimate: np.ndarray
    matching_cost: np.ndarray

    def plot(self, path: str | Path, *, title: str = "Wasserstein drift") -> Path:
        from matplotlib.figure import Figure  # no pyplot: no backend choice, no global figure registry

        fig = Figure(figsize=(6, 3.2))
        ax = fig.subplots()
        ax.plot(self.steps, self.estimate, label="maintained estimate")
        ok = np.isfinite(self.matching_cost)
        if ok.any():
            ax.plot(self.steps[ok], self.matching_cost[ok], "o", ms=3, label="true cost of matching")
        ax.set_xlabel("stream position")
        ax.set_ylabel("W_p / window")
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        return Path(path)


@validate(window=Int(low=1), every=Int(low=1), exact_every=Int(low=0), matcher_factory=Optional(IsCallable()))
def wasserstein_drift(stream: object, window: int, *, reference: object | None = None, every: int = 1,
                      exact_every: int = 0,
                      matcher_factory: Callable[[int], DynamicWassersteinMatcher] | None = None) -> DriftResult:
    """Track W_p between ``reference`` (default: the first ``window`` points of the stream) and the last
    ``window`` points of ``stream: [T, d]``.

    Args:
        stream: points in arrival order, ``[T, d]``.
        window: sliding-window length (and reference size when ``reference`` is None).
        reference: ``[window, d]`` reference sample (side A).
        every: record a reading every ``every`` points.
        exact_every: also materialise the matching and record its true cost every this many readings
            (0 = never).
        matcher_factory: ``dim -> matcher``; default ``DynamicWassersteinMatcher(dim)``.
    """
    X = check_points(stream, None, "stream")
    _check_range(X, "stream", coordinate_limit(X.shape[1]))
    window, every, exact_every = int(window), int(every), int(exact_every)
    if reference is None:
        ref = X[:window]
    else:
        ref = check_points(reference, X.shape[1], "reference", limit=coordinate_limit(X.shape[1]))
        if len(ref) != window:
            raise ValueError(f"reference must hold window={window} points, got {len(ref)}")
    start = window if reference is None else 0
    if len(X) < start + window:
        raise ValueError(f"stream needs at least {start + window} points for window={window}, got {len(X)}")
    matcher = (matcher_factory or (lambda dim: DynamicWassersteinMatcher(dim)))(X.shape[1])
    missing = [m for m in ("insert", "insert_many", "delete", "cost", "matching_cost")
               if not callable(getattr(matcher, m, None))]
    if missing:
        raise TypeError(f"matcher_factory returned {type(matcher).__name__}, which lacks {missing} of the "
                        "matcher API (insert, insert_many, delete, cost, matching_cost)")
    matcher.insert_many(ref, "A")
    live = deque(matcher.insert_many(X[start:start + window], "B"))
    steps, estimates, exact = [], [], []
    scale = 1.0 / len(ref)
    for t in range(start + window, len(X) + 1):
        if (t - start - window) % every == 0:
            steps.append(t)
            estimates.append(matcher.cost() * scale)
            reading = len(steps) - 1
            exact.append(matcher.matching_cost() * scale if exact_every and reading % exact_every == 0 else np.nan)
        if t < len(X):
            matcher.delete(live.popleft())
            live.append(matcher.insert(X[t], "B"))
    return DriftResult(np.asarray(steps), np.asarray(estimates), np.asarray(exact))
