"""Shared measurements for claim checks and benchmarks: timing, log-log slopes, memory.

Every paper times code the same way (:func:`timeit`), fits scaling exponents the same way
(:func:`loglog_slope`) and measures memory in one of three documented senses:

* :func:`saved_tensor_bytes`: bytes autograd keeps for backward (deterministic, allocator-free);
* :func:`peak_rss_subprocess`: the peak resident set of a fresh Python process running one function
  (what a user's machine must hold, interpreter and libraries included);
* :func:`cuda_peak_bytes`: the CUDA allocator's peak during a call.

Clocks: ``"process"`` is the CPU time of this process (all threads), robust to other load on a shared
machine but blind to waiting; ``"wall"`` is ``time.perf_counter``; ``"cuda"`` brackets the call with
synchronised CUDA events.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

CLOCKS = ("process", "wall", "cuda")


@dataclass(frozen=True)
class Timing:
    """Repeated timings of one call, in seconds."""

    values: tuple[float, ...]
    clock: str

    @property
    def median(self) -> float:
        return float(np.median(self.values))

    @property
    def min(self) -> float:
        return float(np.min(self.values))

    @property
    def iqr(self) -> float:
        """Interquartile range (75th minus 25th percentile), the spread reported beside the median."""
        q75, q25 = np.percentile(self.values, [75, 25])
        return float(q75 - q25)

    def summary(self) -> str:
        return f"{self.median * 1e3:.3g} ms (IQR {self.iqr * 1e3:.2g} ms, n={len(self.values)}, {self.clock})"


def _check_count(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _cuda_time(fn: Callable[[], Any]) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3


def time_once(fn: Callable[[], Any], clock: str = "wall") -> float:
    """Seconds one call of ``fn()`` takes on ``clock``."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    if clock == "cuda":
        return _cuda_time(fn)
    read = time.process_time if clock == "process" else time.perf_counter
    t0 = read()
    fn()
    return read() - t0


def timeit(fn: Callable[[], Any], *, warmup: int = 1, repeats: int = 5, clock: str = "process") -> Timing:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeats`` timed ones.

    Returns a :class:`Timing` (median, IQR, min). Use ratios of medians from the same run to compare
    methods; absolute times depend on the machine and its load.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    _check_count("warmup", warmup, 0)
    _check_count("repeats", repeats, 1)
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    if clock == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("clock='cuda' needs a CUDA device; use 'process' or 'wall' on CPU")
    for _ in range(warmup):
        fn()
    return Timing(tuple(time_once(fn, clock) for _ in range(repeats)), clock)


@dataclass(frozen=True)
class TimingComparison:
    """Two callables timed side by side: ``ratios[i] = time_b[i] / time_a[i]`` for the i-th interleaved pair,
    so a ratio above 1 means A is faster. ``ratio`` is their geometric mean, ``[lo, hi]`` its interval (t on
    the log ratios), ``load`` the 1-minute load average before and after (the machine's state beside the number).
    """

    a: Timing
    b: Timing
    ratios: tuple[float, ...]
    ratio: float
    lo: float
    hi: float
    level: float
    threads: int
    load: tuple[float, float]

    def summary(self) -> str:
        return (f"B/A {self.ratio:.3g}x [{self.lo:.3g}, {self.hi:.3g}] ({100 * self.level:.0f}%, "
                f"{len(self.ratios)} interleaved pairs, {self.threads} thread(s), {self.a.clock} clock, "
                f"load {self.load[0]:.2f}->{self.load[1]:.2f})")

    def record(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "lo": self.lo, "hi": self.hi, "ratios": list(self.ratios),
                "a_s": list(self.a.values), "b_s": list(self.b.values), "clock": self.a.clock,
                "threads": self.threads, "load": list(self.load)}

    def evidence(self, unit: str = "x (time B / time A per interleaved pair)") -> Any:
        """An :class:`~neurips26.claims.spec.Evidence` of the per-pair ratios, to decide with
        :func:`neurips26.claims.rules.ratio_at_least`; the timings and load go into its details."""
        from .spec import Evidence

        return Evidence(values=list(self.ratios), unit=unit, details={"timing": self.record()})


def load_average() -> float:
    """The 1-minute load average (``nan`` where the platform has none)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return float("nan")


@contextmanager
def limited_threads(threads: int | None) -> Iterator[None]:
    """Inside: torch's intra-op threads and numpy's BLAS/OpenMP pools (``threadpoolctl``, when installed) at
    ``threads``; both restored afterwards. ``None`` leaves them as they are."""
    if threads is None:
        yield
        return
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with ExitStack() as stack:
            try:  # numpy's pools too (scikit-learn's dependency): torch's setting does not reach them
                from threadpoolctl import threadpool_limits

                stack.enter_context(threadpool_limits(threads))  # __exit__ restores the previous limits
            except ImportError:
                pass
            yield
    finally:
        torch.set_num_threads(previous)


def timeit_pair(fn_a: Callable[[], Any], fn_b: Callable[[], Any], *, repeats: int = 7, warmup: int = 1,
                threads: int | None = 1, clock: str = "process", alpha: float = 0.05) -> TimingComparison:
    """Time A against B in this process: ``warmup`` untimed calls of each, then ``repeats`` pairs run
    A, B, A, B, ... so slow drifts of the machine hit both sides alike.

    Args:
        threads: torch intra-op threads and numpy's BLAS/OpenMP threads (``threadpoolctl``) for the measurement,
            restored afterwards; 1 by default, because a second thread on a shared 2-core machine measures the
            neighbour. ``None`` leaves them as they are.
        clock: ``"process"`` (CPU time of this process, robust to other load), ``"wall"`` or ``"cuda"``.
    Returns:
        a :class:`TimingComparison`; decide claims on its interval (``.evidence()`` +
        ``rules.ratio_at_least``), never on one median.
    """
    from .stats import log_ratio_interval

    for name, fn in (("fn_a", fn_a), ("fn_b", fn_b)):
        if not callable(fn):
            raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    _check_count("repeats", repeats, 2)
    _check_count("warmup", warmup, 0)
    if threads is not None:
        _check_count("threads", threads, 1)
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    import torch

    previous = torch.get_num_threads()
    load_before = load_average()
    with limited_threads(threads):
        for _ in range(warmup):
            fn_a()
            fn_b()
        times_a, times_b = [], []
        for _ in range(repeats):
            times_a.append(time_once(fn_a, clock))
            times_b.append(time_once(fn_b, clock))
    floor = 1e-9  # a call faster than the clock's resolution would give a zero division
    ratios = tuple(max(b, floor) / max(a, floor) for a, b in zip(times_a, times_b))
    interval = log_ratio_interval(ratios, method="t", alpha=alpha)
    return TimingComparison(Timing(tuple(times_a), clock), Timing(tuple(times_b), clock), ratios,
                            interval.estimate, interval.low, interval.high, interval.level,
                            threads if threads is not None else previous, (load_before, load_average()))


@dataclass(frozen=True)
class SlopeFit:
    """Least-squares fit ``log y = intercept + slope * log x`` (natural logs) and its R²."""

    slope: float
    intercept: float
    r2: float
    n: int

    def predict(self, x: float | np.ndarray) -> float | np.ndarray:
        return np.exp(self.intercept) * np.asarray(x, dtype=float) ** self.slope


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> SlopeFit:
    """Scaling exponent of ``y`` in ``x``: the slope of ``log y`` against ``log x``.

    Args:
        x, y: equal-length sequences of positive finite numbers, at least two distinct ``x``.
    """
    xa, ya = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    if xa.size < 2:
        raise ValueError(f"need at least 2 points for a slope, got {xa.size}")
    for name, arr in (("x", xa), ("y", ya)):
        if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError(f"{name} must be positive and finite for a log-log fit, got {arr.tolist()}")
    lx, ly = np.log(xa), np.log(ya)
    if np.ptp(lx) == 0:
        raise ValueError("x must take at least two distinct values")
    slope, intercept = np.polyfit(lx, ly, 1)
    residual = ly - (intercept + slope * lx)
    total = float(np.sum((ly - ly.mean()) ** 2))
    r2 = 1.0 - float(np.sum(residual ** 2)) / total if total > 0 else 1.0
    return SlopeFit(float(slope), float(intercept), r2, int(xa.size))


def saved_tensor_bytes(fn: Callable[[], Any]) -> int:
    """Bytes of the tensors autograd saves for backward while ``fn()`` runs (each storage once).

    This is the activation memory a training step must hold, independent of the allocator and of
    other processes; it does not count parameters, gradients or temporaries freed in the forward.
    """
    import torch

    storages: dict[tuple[Any, int], int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[(tensor.device, storage.data_ptr())] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn()
    return int(sum(storages.values()))


def peak_rss_subprocess(target: str, *args: str, timeout_s: float = 600.0,
                        env: dict[str, str] | None = None) -> int:
    """Peak resident memory (bytes) of a fresh Python process that runs ``module.function(*args)``.

    Args:
        target: ``"package.module:function"``; the function gets ``args`` as strings.
        timeout_s: the child is killed after this many seconds (``TimeoutError``).
    Raises:
        RuntimeError: the child failed; its stderr is in the message.
    """
    if not isinstance(target, str) or target.count(":") != 1:
        raise ValueError(f"target must look like 'package.module:function', got {target!r}")
    module, function = target.split(":")
    if not module or not function.isidentifier():
        raise ValueError(f"target must look like 'package.module:function', got {target!r}")
    if not all(isinstance(a, str) for a in args):
        raise TypeError("args must be strings (they are passed on a command line)")
    if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a positive number, got {timeout_s!r}")
    # VmHWM (Linux) belongs to the new process image; ru_maxrss would also count the pages of the
    # (large) parent that the child shared between fork and exec.
    code = ("import importlib, resource, sys\n"
            f"fn = getattr(importlib.import_module({module!r}), {function!r})\n"
            "fn(*sys.argv[1:])\n"
            "try:\n"
            "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
            "    peak = int(hwm.split()[1]) * 1024\n"
            "except (OSError, IndexError):\n"
            "    raw = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "    peak = raw if sys.platform == 'darwin' else raw * 1024\n"
            "print('PEAK_RSS', peak)\n")
    try:
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                              timeout=timeout_s, env={**os.environ, **(env or {})}, check=False)
    except subprocess.TimeoutExpired as err:
        raise TimeoutError(f"{target} did not finish within {timeout_s} s") from err
    if done.returncode != 0:
        raise RuntimeError(f"{target} failed with exit code {done.returncode}: {done.stderr.strip()[-2000:]}")
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("PEAK_RSS "):
            return int(line.split()[1])
    raise RuntimeError(f"{target} printed no PEAK_RSS line; stdout: {done.stdout[-500:]!r}")


def cuda_peak_bytes(fn: Callable[[], Any], device: Any = None) -> int:
    """Peak bytes the CUDA caching allocator held during ``fn()`` (statistics reset first)."""
    import torch

    if not torch.cuda.is_available():
        raise ValueError("cuda_peak_bytes needs a CUDA device; use saved_tensor_bytes or peak_rss_subprocess")
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device))


__all__ = ["CLOCKS", "SlopeFit", "Timing", "TimingComparison", "cuda_peak_bytes", "limited_threads", "load_average",
           "loglog_slope", "peak_rss_subprocess", "saved_tensor_bytes", "time_once", "timeit", "timeit_pair"]
