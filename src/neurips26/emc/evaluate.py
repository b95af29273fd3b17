"""Continual evaluation: the accuracy matrix, average accuracy, forgetting, time and peak memory.

For a stream of target domains ``G_1..G_T`` the method adapts to each in turn (seeing only ``x`` and
``edge_index``, through :class:`~neurips26.emc.graph.UnlabeledGraph`); after adapting to ``G_t`` it is
scored on every domain seen so far, giving ``R[t, j]`` for ``j <= t`` (NaN above the diagonal):

* average accuracy ``AP = mean_j R[T, j]`` (final row), adaptation accuracy ``mean_t R[t, t]``;
* forgetting ``AF = mean_{j<T} (max_{j<=t<T} R[t, j] - R[T, j])`` (GCAL's protocol).

Time: wall (CUDA events on a GPU) and process CPU seconds of each ``adapt`` call, through
:func:`neurips26.claims.measure.time_once`. Peak memory (``track_memory=True``) is measured
in a *separate shadow pass* on a deep copy of the method (RNG state restored afterwards), so the tracking
overhead never enters the timings: on CUDA ``torch.cuda.max_memory_allocated`` above the baseline; on
CPU the peak of live tensor storage bytes allocated during ``adapt`` (every op's outputs tracked by a
``TorchDispatchMode``, freed storages released by weak-reference finalisers) plus the Python-heap peak
from ``tracemalloc`` (numpy, Python objects) reported separately.
"""

from __future__ import annotations

import copy
import tracemalloc
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from neurips26.claims import measure
from neurips26.constraints import Choice, Int, Optional, check_arguments, validate
from neurips26.constraints import Tensor as TensorOf

from .graph import UnlabeledGraph, unpack_graph

__all__ = ["ContinualResult", "TensorMemoryTracker", "continual_eval"]


class TensorMemoryTracker(TorchDispatchMode):
    """Peak bytes of tensor storage allocated inside the ``with`` block (any device, any op).

    Storages that existed before the block (parameters, inputs) are not counted unless an op returns
    them again. ``peak_bytes`` and ``current_bytes`` are updated as ops run.
    """

    def __init__(self) -> None:
        super().__init__()
        self._live: dict[tuple[int, str], list[int]] = {}
        self.current_bytes = 0
        self.peak_bytes = 0

    def _release(self, key: tuple[int, str]) -> None:
        entry = self._live.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.current_bytes -= entry[0]
            del self._live[key]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, Tensor):
                storage = t.untyped_storage()
                key = (storage.data_ptr(), storage.device.type)
                entry = self._live.get(key)
                if entry is None:
                    entry = self._live[key] = [storage.nbytes(), 0]
                    self.current_bytes += entry[0]
                    self.peak_bytes = max(self.peak_bytes, self.current_bytes)
                entry[1] += 1
                weakref.finalize(t, self._release, key)
        return out


@dataclass
class ContinualResult:
    """What :func:`continual_eval` measured.

    Attributes:
        accuracy: ``R`` ``[T, T]``, ``R[t, j]`` = accuracy on domain ``j`` after adapting to ``t``; NaN for
            ``j > t``.
        average_accuracy: ``AP``, mean of the final row.
        forgetting: ``AF``, mean drop from each domain's best to its final accuracy (0 when ``T = 1``).
        adapt_accuracy: mean of the diagonal.
        time_s: ``[T]`` wall seconds of each ``adapt`` call.
        cpu_time_s: ``[T]`` CPU seconds of this process (all threads) during each ``adapt`` call; less
            sensitive than wall time to other jobs on a shared machine.
        peak_bytes: ``[T]`` peak tensor bytes allocated during each ``adapt`` (NaN if not tracked).
        peak_python_bytes: ``[T]`` ``tracemalloc`` peak of each ``adapt`` (CPU shadow pass; NaN if not).
    """

    accuracy: np.ndarray
    average_accuracy: float
    forgetting: float
    adapt_accuracy: float
    time_s: list[float]
    peak_bytes: list[float]
    cpu_time_s: list[float] = field(default_factory=list)
    peak_python_bytes: list[float] = field(default_factory=list)

    @property
    def total_time_s(self) -> float:
        return float(sum(self.time_s))

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (``R`` with ``None`` above the diagonal)."""
        r = [[None if np.isnan(v) else float(v) for v in row] for row in self.accuracy]
        return {"R": r, "AP": self.average_accuracy, "AF": self.forgetting, "adapt": self.adapt_accuracy,
                "time_s": self.time_s, "cpu_time_s": self.cpu_time_s, "peak_bytes": self.peak_bytes,
                "peak_python_bytes": self.peak_python_bytes}


def _measure_peak(method: Any, view: UnlabeledGraph) -> tuple[float, float]:
    shadow = copy.deepcopy(method)
    cpu_rng = torch.random.get_rng_state()
    cuda = view.x.is_cuda
    try:
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            cuda_rng = torch.cuda.get_rng_state()
            shadow.adapt(view)
            torch.cuda.synchronize()
            torch.cuda.set_rng_state(cuda_rng)
            return float(torch.cuda.max_memory_allocated() - base), float("nan")
        tracker = TensorMemoryTracker()
        tracemalloc.start()
        try:
            with tracker:
                shadow.adapt(view)
            _, py_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return float(tracker.peak_bytes), float(py_peak)
    finally:
        torch.random.set_rng_state(cpu_rng)
        del shadow


def _timed_once(fn: Any, *, cuda: bool) -> tuple[float, float]:
    """``(wall seconds, process CPU seconds)`` of one call of ``fn()``, both from the same call (an
    ``adapt`` changes the method's state, so it cannot be repeated); on CUDA the first is the
    synchronised CUDA-event time."""
    cpu: list[float] = []
    outer = measure.time_once(lambda: cpu.append(measure.time_once(fn, clock="process")),
                              clock="cuda" if cuda else "wall")
    return outer, cpu[0]


@validate(metric=Choice("acc"), memory_domains=Optional(Int(low=0)))
def continual_eval(method: Any, stream: list[Any], *, metric: str = "acc", track_memory: bool = True,
                   memory_domains: int | None = None, n_classes: int | None = None) -> ContinualResult:
    """Run ``method`` over ``stream`` (target domains only, in order) and score it continually.

    Args:
        method: an object with ``adapt(graph) -> [n]`` predictions and ``predict(graph) -> [n]``
            (:class:`~neurips26.emc.EMC` or any baseline), already fitted on the source.
        stream: PyG ``Data`` target graphs with labels ``y`` (``-1`` = unlabeled, ignored in scores);
            the method only ever sees an :class:`UnlabeledGraph` view.
        metric: ``"acc"`` (node classification accuracy, fraction in [0, 1]).
        track_memory: measure peak memory per domain in a shadow pass (roughly doubles the run time).
        memory_domains: track memory only on the first this many domains (NaN after); None = all.
        n_classes: if given, labels ``>= n_classes`` raise (class count mismatch).
    """
    if not callable(getattr(method, "adapt", None)) or not callable(getattr(method, "predict", None)):
        raise TypeError(f"method: expected an object with adapt(graph) and predict(graph), got "
                        f"{type(method).__name__}")
    if not isinstance(stream, (list, tuple)) or len(stream) == 0:
        raise ValueError(f"stream: expected a non-empty list of target graphs, got {type(stream).__name__} "
                         f"of length {len(stream) if hasattr(stream, '__len__') else '?'}")
    views, labels = [], []
    for j, g in enumerate(stream):
        x, ei, w = unpack_graph(g, name=f"stream[{j}]", return_weight=True)
        y = getattr(g, "y", None)
        labels_of = {"x": TensorOf("N _", finite=False), f"stream[{j}].y": TensorOf("N", finite=False)}
        check_arguments("continual_eval", labels_of, {"x": x, f"stream[{j}].y": y})  # labels [n] for scoring
        if n_classes is not None and int(y.max()) >= n_classes:
            raise ValueError(f"stream[{j}].y: labels go up to {int(y.max())} but n_classes={n_classes} "
                             f"(class count mismatch)")
        views.append(UnlabeledGraph(x, ei, w))
        labels.append(y.long())

    def score(pred: Tensor, y: Tensor) -> float:
        known = y >= 0
        return float((pred.cpu()[known.cpu()] == y.cpu()[known.cpu()]).float().mean())

    n_dom = len(views)
    acc = np.full((n_dom, n_dom), np.nan)
    times, cpu_times, peaks, py_peaks = [], [], [], []
    for t, view in enumerate(views):
        if track_memory and (memory_domains is None or t < memory_domains):
            peak, py_peak = _measure_peak(method, view)
        else:
            peak, py_peak = float("nan"), float("nan")
        wall, cpu = _timed_once(lambda: method.adapt(view), cuda=view.x.is_cuda)  # noqa: B023
        times.append(wall)
        cpu_times.append(cpu)
        peaks.append(peak)
        py_peaks.append(py_peak)
        for j in range(t + 1):
            acc[t, j] = score(method.predict(views[j]), labels[j])
    final = acc[-1]
    forgetting = (float(np.mean([np.nanmax(acc[j:-1, j]) - final[j] for j in range(n_dom - 1)]))
                  if n_dom > 1 else 0.0)
    return ContinualResult(accuracy=acc, average_accuracy=float(np.mean(final)), forgetting=forgetting,
                           adapt_accuracy=float(np.mean(np.diag(acc))), time_s=times, peak_bytes=peaks,
                           cpu_time_s=cpu_times, peak_python_bytes=py_peaks)
