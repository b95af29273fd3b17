r"""A deterministic virtual clock for asynchronous side-tuning (no sleeping, no barrier).

Device $j$ with speed $S_j$ (FLOP/s) and uplink $U_j$ (bit/s) forwards minibatch $k$ in $F_{jk}/S_j$ seconds and
goes straight on with the next one (non-blocking); its uploads queue on its link,

$$a_{jk} = \max(c_{jk}, a_{j,k-1}) + 8\,\mathrm{bytes}_{jk} / U_j, \qquad c_{jk} = c_{j,k-1} + F_{jk} / S_j,$$

and the server takes arrivals first-come first-served, each costing ``(1 + replay steps) * step_time_s``.
Events sit in one priority queue ordered by ``(time, device_id, seq)``, so ties resolve the same way in
every run. After the last arrival (all devices done) the server may go on replaying its cache.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from neurips26.constraints import Callable as CallableC
from neurips26.constraints import Instance, Int, Real, check_arguments, validate

from .device import DeviceClient
from .side import SideTuningServer

__all__ = ["DeviceProfile", "AsyncSimulator", "time_to_target"]


_POSITIVE = Real(low=0.0, closed="neither")


@dataclass(frozen=True)
class DeviceProfile:
    """A device's speeds: ``flops_per_s`` (FLOP/s), ``up_bps`` and ``down_bps`` (bit/s); all finite and > 0."""

    flops_per_s: float
    up_bps: float
    down_bps: float

    def __post_init__(self) -> None:
        check_arguments("DeviceProfile", dict.fromkeys(("flops_per_s", "up_bps", "down_bps"), _POSITIVE),
                        {"flops_per_s": self.flops_per_s, "up_bps": self.up_bps, "down_bps": self.down_bps})

    def compute_s(self, flops: float) -> float:
        return flops / self.flops_per_s

    def up_s(self, nbytes: float) -> float:
        return 8.0 * nbytes / self.up_bps

    def down_s(self, nbytes: float) -> float:
        return 8.0 * nbytes / self.down_bps


@validate(target=Real())  # finite: a NaN target would read as "never reached" (NaN compares False)
def time_to_target(curve, target: float) -> dict[str, float]:
    """The first row of an accuracy curve (``time_s``, ``accuracy``, ``bytes_up``, ``bytes_down``,
    ``device_flops``) with ``accuracy >= target``; all ``nan`` when never reached."""
    hit = curve[curve["accuracy"] >= target]
    if hit.empty:
        return {"time_s": math.nan, "bytes": math.nan, "device_flops": math.nan}
    row = hit.iloc[0]
    return {"time_s": float(row["time_s"]), "bytes": float(row["bytes_up"] + row["bytes_down"]),
            "device_flops": float(row["device_flops"])}


class AsyncSimulator:
    """Run devices and the server on the virtual clock.

    Args:
        server: a :class:`SideTuningServer`.
        clients: :class:`DeviceClient` objects with local ``data`` (``device_id`` must be unique).
        profiles: one :class:`DeviceProfile` per client.
        eval_fn: ``eval_fn(server) -> accuracy`` in [0, 1].
        time_budget_s: virtual seconds; later events are dropped.
        eval_every: evaluate after this many server updates (and at the end).
        idle_replay_steps: replay steps the server may take after the last arrival (within the budget).
        deploy_download: count each device's one-off download of its exported model in ``bytes_down``
            (default off: training traffic only, uploads; with server-assisted inference nothing is downloaded).
    """

    @validate(server=Instance(SideTuningServer), eval_fn=CallableC(), time_budget_s=_POSITIVE, eval_every=Int(low=1),
              idle_replay_steps=Int(low=0))
    def __init__(self, server: SideTuningServer, clients: Sequence[DeviceClient], profiles: Sequence[DeviceProfile],
                 eval_fn: Callable[[SideTuningServer], float], time_budget_s: float, *, eval_every: int = 10,
                 idle_replay_steps: int = 0, deploy_download: bool = False) -> None:
        if not clients or not all(isinstance(c, DeviceClient) for c in clients):
            raise TypeError("clients must be a non-empty list of DeviceClient")
        if len(profiles) != len(clients) or not all(isinstance(p, DeviceProfile) for p in profiles):
            raise ValueError(f"profiles must hold one DeviceProfile per client ({len(clients)}), got {len(profiles)}")
        ids = [c.device_id for c in clients]
        if len(set(ids)) != len(ids):
            raise ValueError(f"clients' device_id must be unique, got {ids}")
        missing = sorted({c.backbone_type for c in clients} - set(server.aligners))
        if missing:
            raise ValueError(f"clients have backbone types {missing} the server has no aligner for")
        self.server, self.clients, self.profiles, self.eval_fn = server, list(clients), list(profiles), eval_fn
        self.time_budget_s, self.eval_every = float(time_budget_s), eval_every
        self.idle_replay_steps, self.deploy_download = idle_replay_steps, deploy_download
        self.events = None  # pandas DataFrame after run(): one row per processed arrival
        self.sent: list[tuple[int, int, float]] = []  # (device_id, seq, arrival time) of every upload in budget

    def _totals(self) -> tuple[int, float]:
        return sum(c.bytes_up for c in self.clients), sum(c.flops for c in self.clients)

    def run(self):
        """Simulate; returns a pandas DataFrame, one row per evaluation: ``time_s``, ``updates`` (server steps),
        ``arrivals``, ``accuracy``, ``bytes_up``, ``bytes_down``, ``device_flops``, ``server_flops``."""
        import pandas as pd

        heap: list[tuple[float, int, int, str, object]] = []
        link_free = [0.0] * len(self.clients)

        def compute_next(j: int, t: float) -> None:
            batch = self.clients[j].next_batch()
            if batch is None:
                return
            before = self.clients[j].flops
            payload = self.clients[j].step(batch)
            done = t + self.profiles[j].compute_s(self.clients[j].flops - before)
            if done <= self.time_budget_s:
                heapq.heappush(heap, (done, self.clients[j].device_id, payload.seq, "computed", (j, payload)))

        for j in range(len(self.clients)):
            compute_next(j, 0.0)
        rows, events = [], []
        server_free, arrivals = 0.0, 0
        # each device downloads its type's aligner + side network once, to use it (counted on every row)
        per_type = {b: self.server.download_nbytes(b) for b in {c.backbone_type for c in self.clients}}
        deploy = sum(per_type[c.backbone_type] for c in self.clients) if self.deploy_download else 0

        def evaluate(t: float) -> None:
            up, flops = self._totals()
            rows.append({"time_s": t, "updates": self.server.steps, "arrivals": arrivals,
                         "accuracy": float(self.eval_fn(self.server)), "bytes_up": up, "bytes_down": deploy,
                         "device_flops": flops, "server_flops": self.server.server_flops})

        evaluate(0.0)
        while heap:
            t, dev, seq, kind, item = heapq.heappop(heap)
            j, payload = item
            if kind == "computed":
                # the device hands the payload to its link and immediately starts the next batch
                start = max(t, link_free[j])
                arrive = start + self.profiles[j].up_s(payload.nbytes)
                link_free[j] = arrive
                if arrive <= self.time_budget_s:
                    heapq.heappush(heap, (arrive, dev, seq, "arrive", item))
                    self.sent.append((dev, seq, arrive))
                compute_next(j, t)
                continue
            begin = max(t, server_free)
            if begin > self.time_budget_s:
                continue
            metrics = self.server.receive(payload)
            server_free = begin + metrics["server_steps"] * self.server.step_time_s
            arrivals += 1
            events.append({"time_s": t, "start_s": begin, "end_s": server_free, "device_id": dev, "seq": seq,
                           "backbone_type": payload.backbone_type, "loss": metrics["loss"],
                           "replay_steps": metrics["replay_steps"]})
            if arrivals % self.eval_every == 0:
                evaluate(server_free)
        idle = 0
        while idle < self.idle_replay_steps and self.server.cache \
                and server_free + self.server.step_time_s <= self.time_budget_s:
            self.server.replay_step()
            server_free += self.server.step_time_s
            idle += 1
            if idle % self.eval_every == 0:
                evaluate(server_free)
        if not rows or rows[-1]["updates"] != self.server.steps:
            evaluate(server_free)
        self.events = pd.DataFrame(events, columns=["time_s", "start_s", "end_s", "device_id", "seq",
                                                    "backbone_type", "loss", "replay_steps"])
        return pd.DataFrame(rows)
