r"""The one benchmark harness: side-by-side ratios with intervals, the machine's limit beside every number.

Every ``benchmarks/<slug>_bench.py`` builds a :class:`Bench`, adds comparisons, and writes
``results/<slug>/bench.json`` (committed like the claim records; the README's performance table is
generated from it by ``neurips26 report --readme``)::

    bench = Bench("dyra", description="DyRA vs dense at 35 % of dense FLOPs", argv=sys.argv[1:])
    bench.compare("forward, N=1608", ours=lambda: dyra(x), peer=lambda: dense(x), peer_name="nn.Linear",
                  peer_kind="real", flops=dyra_flops)
    bench.count("gradient calls to tolerance", ours=412, peer=1650, peer_name="cooper ExtraSGD", peer_kind="real",
                unit="calls")
    bench.scaling("update time in n", sizes=[1e3, 2e3, 4e3], time_of=run_at, claimed="O(n log n) -> slope 1")
    bench.write()

What it fixes for every benchmark (so two benchmarks are measured alike):

* **Threads**: 1 by default (``--threads N`` to change it, recorded). On a shared 2-core machine a second
  thread measures the neighbour.
* **Clock**: the process CPU clock for CPU work (robust to other load; blind to waiting, which CPU work does
  not do), CUDA events on a GPU.
* **Repeats**: warm-up, then ``--repeats`` interleaved pairs ours, peer, ours, peer, ...; the ratio
  :math:`t_\text{peer}/t_\text{ours}` per pair and its t-interval on the log scale
  (:func:`neurips26.claims.measure.timeit_pair`).
* **The machine's limit**: :func:`machine_probe` measures one-thread ``torch.mm`` GFLOP/s, ``conv1d``
  GFLOP/s and copy GB/s once; a comparison given its FLOP (or byte) count also reports ours / limit, the
  factor by which our time exceeds the FLOP-bound (or bandwidth-bound) time.
* **Provenance**: load average before and after, library versions, the machine, commit and source digest.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .claims import measure
from .claims.of_record import render_bench_table
from .claims.records import (
    git_commit,
    library_versions,
    load_average,
    machine_description,
    source_digest,
    utc_now,
    write_json_atomic,
)

PEER_KINDS = ("real", "ours", "published")
#: which probed rate bounds a FLOP count: dense GEMM (``torch.mm``) or a dense ``conv1d`` (oneDNN)
FLOP_RATES = {"mm": "mm_gflops", "conv1d": "conv1d_gflops"}
_PROBE: dict[int, dict[str, float]] = {}


def machine_probe(threads: int = 1, *, refresh: bool = False) -> dict[str, float]:
    """One-thread (or ``threads``) peak rates of this machine, measured once per process:
    ``mm_gflops`` (fp32 ``torch.mm`` 1024²), ``conv1d_gflops`` (fp32, 64 channels, kernel 7) and ``copy_gbs``
    (a 64 MiB tensor copy, read + write bytes); the best of 10 calls each, on the process clock at one thread (a
    neighbour's load slows the wall clock, not this process's CPU time), on the wall clock with more threads.
    ``refresh=True`` probes again and keeps the best rate of every probe so far (``probes`` counts them): on a
    machine whose cores are shared (hyper-threads) a neighbour also slows this process's CPU time, and a rate
    measured in a quiet moment is closer to the limit."""
    if threads in _PROBE and not refresh:
        return _PROBE[threads]
    import torch
    import torch.nn.functional as F

    clock = "process" if threads == 1 else "wall"
    with measure.limited_threads(threads):
        a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
        mm = measure.timeit(lambda: torch.mm(a, b), warmup=2, repeats=10, clock=clock).min
        x, w = torch.randn(8, 64, 4096), torch.randn(64, 64, 7)
        conv = measure.timeit(lambda: F.conv1d(x, w, padding=3), warmup=2, repeats=10, clock=clock).min
        src = torch.randn(16 * 2**20)
        dst = torch.empty_like(src)
        copy = measure.timeit(lambda: dst.copy_(src), warmup=2, repeats=10, clock=clock).min
    probe = {"mm_gflops": 2 * 1024**3 / mm / 1e9, "conv1d_gflops": 2 * 8 * 64 * 64 * 7 * 4096 / conv / 1e9,
             "copy_gbs": 2 * src.numel() * 4 / copy / 1e9, "threads": threads, "probes": 1}
    old = _PROBE.get(threads)
    if old is not None:
        probe = {**{k: max(probe[k], old[k]) for k in ("mm_gflops", "conv1d_gflops", "copy_gbs")},
                 "threads": threads, "probes": old.get("probes", 1) + 1}
    _PROBE[threads] = probe
    return probe


@dataclass
class Bench:
    """A benchmark run of one paper: comparisons, scaling fits, and the record written to ``bench.json``.

    Args:
        slug: the paper (``results/<slug>/bench.json``).
        description: one line: what is compared with what, on which setting.
        argv: command-line arguments (``--threads``, ``--repeats``, ``--no-write``, ``--out``); ``None``
            parses nothing and keeps the defaults.
    """

    slug: str
    description: str
    argv: Sequence[str] | None = None
    threads: int = 1
    repeats: int = 7
    clock: str = "process"
    rows: list[dict[str, Any]] = field(default_factory=list)
    scalings: list[dict[str, Any]] = field(default_factory=list)
    out: str | None = None
    write_record: bool = True

    def __post_init__(self) -> None:
        if self.argv is not None:
            parser = argparse.ArgumentParser(description=self.description)
            parser.add_argument("--threads", type=int, default=self.threads, help="torch threads (default 1)")
            parser.add_argument("--repeats", type=int, default=self.repeats, help="interleaved pairs (default 7)")
            parser.add_argument("--clock", default=self.clock, choices=measure.CLOCKS,
                                help="process (CPU work, default), wall, or cuda (CUDA events, on a GPU)")
            parser.add_argument("--out", default=None, help="bench.json path (default results/<slug>/bench.json)")
            parser.add_argument("--no-write", action="store_true", help="print only")
            args, _ = parser.parse_known_args(list(self.argv))
            self.threads, self.repeats, self.out, self.clock = args.threads, args.repeats, args.out, args.clock
            self.write_record = not args.no_write
        for name in ("threads", "repeats"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "threads" else 2):
                raise ValueError(f"Bench: {name} must be an int >= {1 if name == 'threads' else 2}, got {value!r}")
        if self.clock not in measure.CLOCKS:
            raise ValueError(f"Bench: clock must be one of {measure.CLOCKS}, got {self.clock!r}")
        self._load_start = load_average()
        self._started = utc_now()

    def compare(self, name: str, *, ours: Callable[[], Any], peer: Callable[[], Any], peer_name: str,
                peer_kind: str, flops: float | None = None, bytes_moved: float | None = None,
                flop_rate: str = "mm", note: str = "") -> dict[str, Any]:
        """Time ``ours`` against ``peer`` (interleaved, this harness's threads and clock) and add a row.

        Args:
            peer_kind: ``"real"`` (the peer's own package), ``"ours"`` (our re-implementation of the peer) or
                ``"published"`` (not runnable here; use :meth:`published` instead).
            flops, bytes_moved: the work of one call of ``ours``, for ours / limit (the larger of the FLOP-bound
                and the bandwidth-bound time).
            flop_rate: the probed rate that bounds ``flops``: ``"mm"`` (dense GEMM, default) or ``"conv1d"``.
        Returns: the row: ``speedup`` (peer time / ours) with ``lo``/``hi``, medians, ours / limit.
        """
        if peer_kind not in ("real", "ours"):
            raise ValueError(f"compare: peer_kind must be 'real' or 'ours' (published numbers: .published()), "
                             f"got {peer_kind!r}")
        if flop_rate not in FLOP_RATES:
            raise ValueError(f"compare: flop_rate must be one of {sorted(FLOP_RATES)}, got {flop_rate!r}")
        result = measure.timeit_pair(ours, peer, repeats=self.repeats, threads=self.threads, clock=self.clock)
        row = {"name": name, "peer": peer_name, "peer_kind": peer_kind, "speedup": result.ratio,
               "lo": result.lo, "hi": result.hi, "ours_s": result.a.median, "peer_s": result.b.median,
               "pairs": len(result.ratios), "threads": result.threads, "clock": result.a.clock,
               "load": list(result.load), "note": note}
        row.update(self._limits(result.a.median, flops, bytes_moved, flop_rate))
        self.rows.append(row)
        print(f"{name}: ours {row['ours_s'] * 1e3:.3g} ms, {peer_name} ({peer_kind}) {row['peer_s'] * 1e3:.3g} ms, "
              f"speed-up {row['speedup']:.3g}x [{row['lo']:.3g}, {row['hi']:.3g}]"
              + (f", ours/limit {row['ours_over_limit']:.2f}" if "ours_over_limit" in row else ""))
        return row

    def count(self, name: str, *, ours: float, peer: float, peer_name: str, peer_kind: str, unit: str,
              lower_is_better: bool = True, note: str = "") -> dict[str, Any]:
        """A deterministic cost or quality of one run, ours beside the peer's (no clock): oracle calls, rounds,
        FLOPs counted in closed form, bytes, an approximation ratio. Where a timing measures interpreter
        overhead more than the method (tiny vectors), the count is the sound comparison.

        Args:
            ours, peer: finite non-negative numbers in ``unit`` (e.g. ``"max-agent gradient calls"``).
            lower_is_better: the direction of ``unit``; the row's ``ratio`` is peer / ours either way.
        Returns: the row (``ratio`` = peer / ours; 1 when both are 0). ``ours`` = 0 with a non-zero peer is refused
        (an infinite ratio does not survive strict JSON).
        """
        if peer_kind not in ("real", "ours"):
            raise ValueError(f"count: peer_kind must be 'real' or 'ours', got {peer_kind!r}")
        for arg, value in (("ours", ours), ("peer", peer)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"count: {arg} must be a finite number >= 0, got {value!r}")
        if not isinstance(unit, str) or not unit:
            raise ValueError(f"count: unit must be a non-empty string, got {unit!r}")
        if ours == 0 and peer != 0:  # strict JSON has no inf: the record would hold null and the table break
            raise ValueError(f"count: ours is 0 and the peer {peer!r}, so peer / ours is infinite; give ours at its "
                             f"measurement resolution (and say so in note), or count in other units")
        ratio = float(peer) / float(ours) if ours else 1.0
        row = {"kind": "count", "name": name, "peer": peer_name, "peer_kind": peer_kind, "ours": float(ours),
               "peer_value": float(peer), "unit": unit, "ratio": ratio, "lower_is_better": bool(lower_is_better),
               "note": note}
        self.rows.append(row)
        print(f"{name}: ours {ours:.4g}, {peer_name} ({peer_kind}) {peer:.4g} {unit}; peer / ours {ratio:.3g}")
        return row

    def published(self, name: str, *, peer_name: str, value: str, source: str, ours: str = "") -> None:
        """A peer that cannot run here: its published number on the same setting, labelled as such."""
        self.rows.append({"name": name, "peer": peer_name, "peer_kind": "published", "published": value,
                          "source": source, "ours": ours})
        print(f"{name}: {peer_name} (published, {source}): {value}; ours {ours}")

    def _limits(self, seconds: float, flops: float | None, bytes_moved: float | None,
                flop_rate: str = "mm") -> dict[str, Any]:
        out: dict[str, Any] = {}
        if flops is None and bytes_moved is None:
            return out
        probe = machine_probe(self.threads)
        out.update({"flops": flops, "bytes_moved": bytes_moved})
        bound = 0.0
        if flops is not None:
            bound = max(bound, flops / (probe[FLOP_RATES[flop_rate]] * 1e9))
            out["gflops"] = flops / seconds / 1e9
            out["flop_rate"] = flop_rate
        if bytes_moved is not None:
            bound = max(bound, bytes_moved / (probe["copy_gbs"] * 1e9))
            out["gbs"] = bytes_moved / seconds / 1e9
        out["limit_s"] = bound
        out["ours_over_limit"] = seconds / bound if bound > 0 else math.nan
        return out

    def time(self, fn: Callable[[], Any], repeats: int | None = None) -> float:
        """Median seconds of ``fn`` on this harness (its threads and clock, one warm-up call, ``repeats`` calls,
        default the bench's): the ``time_of`` of :meth:`scaling`, or one side's time where no pair exists."""
        with self.limit_threads():
            return measure.timeit(fn, warmup=1, repeats=repeats or self.repeats, clock=self.clock).median

    def limit_threads(self) -> Any:
        """Context: torch's and numpy's BLAS/OpenMP pools at this harness's threads (restored afterwards), for
        work timed outside :meth:`compare` and :meth:`time` (e.g. a method's own per-step timings)."""
        return measure.limited_threads(self.threads)

    def scaling(self, name: str, *, sizes: Sequence[float], time_of: Callable[[float], float],
                claimed: str) -> dict[str, Any]:
        """Fit the log-log slope of ``time_of(size)`` (seconds; e.g. :meth:`time` of one call) over ``sizes``,
        run under this harness's thread limit, and record it beside the complexity the paper claims
        (``claimed``, text, e.g. ``"O(T) -> slope 1"``)."""
        if len(sizes) < 2:
            raise ValueError(f"scaling: needs at least 2 sizes, got {list(sizes)!r}")
        with self.limit_threads():
            times = [float(time_of(size)) for size in sizes]
        fit = measure.loglog_slope(list(sizes), times)
        row = {"name": name, "sizes": list(sizes), "seconds": times, "slope": fit.slope, "r2": fit.r2,
               "claimed": claimed}
        self.scalings.append(row)
        print(f"{name}: slope {fit.slope:.3g} (R² {fit.r2:.3f}); claimed {claimed}")
        return row

    def record(self) -> dict[str, Any]:
        try:
            digest = source_digest(self.slug)
        except LookupError:
            digest = None
        return {"kind": "bench", "slug": self.slug, "description": self.description, "start_time": self._started,
                "end_time": utc_now(), "threads": self.threads, "repeats": self.repeats, "clock": self.clock,
                "load": {"start": self._load_start, "end": load_average()}, "machine": machine_description(),
                "probe": machine_probe(self.threads) if any("limit_s" in r for r in self.rows) else None,
                "versions": library_versions(), "git": git_commit(self.slug), "source_sha256": digest,
                "rows": self.rows, "scalings": self.scalings}

    def write(self) -> Any:
        """Write ``results/<slug>/bench.json`` (or ``--out``) atomically, replacing the previous benchmark
        record; returns the path (None with ``--no-write``)."""
        if not self.write_record:
            return None
        from pathlib import Path

        from .claims.of_record import results_root

        path = Path(self.out) if self.out else results_root() / self.slug / "bench.json"
        self.refresh_limits()
        return write_json_atomic(path, self.record(), overwrite=True)

    def refresh_limits(self) -> None:
        """Probe the machine once more (best rate of all probes, :func:`machine_probe`) and recompute every row's
        ours / limit from it; called by :meth:`write`, so a probe taken under a neighbour's burst does not put
        ours / limit below 1."""
        limited = [row for row in self.rows if "limit_s" in row]
        if not limited:
            return
        machine_probe(self.threads, refresh=True)
        for row in limited:
            row.update(self._limits(row["ours_s"], row.get("flops"), row.get("bytes_moved"),
                                    row.get("flop_rate", "mm")))
            print(f"{row['name']}: ours/limit {row['ours_over_limit']:.2f} (best of "
                  f"{machine_probe(self.threads)['probes']} probes)")


def timed(fn: Callable[[], Any]) -> float:
    """Process-clock seconds of one call (for :meth:`Bench.scaling`'s ``time_of``)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


__all__ = ["Bench", "FLOP_RATES", "PEER_KINDS", "machine_probe", "render_bench_table", "timed"]
