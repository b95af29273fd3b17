"""The virtual clock: event order vs a sort, each payload processed once, devices interleave, determinism,
and the smoke task learns."""

import pytest
from _mobillm_fed import PROFILES, federation

from neurips26.mobillm import AsyncSimulator, time_to_target


@pytest.fixture(scope="module")
def run():
    clients, server, eval_fn, _ = federation()
    sim = AsyncSimulator(server, clients, PROFILES, eval_fn, time_budget_s=1e4, eval_every=4, idle_replay_steps=60)
    curve = sim.run()
    return sim, curve, clients, server


def test_events_are_processed_in_time_order(run):
    sim, _, _, _ = run
    ev = sim.events
    keys = list(zip(ev["time_s"], ev["device_id"], ev["seq"]))
    assert keys == sorted(keys)  # (time, device, seq): the order of an independent sort
    assert (ev["start_s"] >= ev["time_s"]).all() and (ev["end_s"] > ev["start_s"]).all()
    assert (ev["start_s"].iloc[1:].values >= ev["end_s"].iloc[:-1].values - 1e-12).all()  # one server, FIFO


def test_each_payload_is_processed_exactly_once(run):
    sim, _, clients, server = run
    sent = sorted((d, s) for d, s, _ in sim.sent)
    assert sorted(server.processed) == sent and len(set(server.processed)) == len(server.processed)
    per_device = {c.device_id: c.seq for c in clients}
    assert sent == sorted((d, s) for d, n in per_device.items() for s in range(n))  # nothing lost in the budget
    assert sum(c.samples_seen for c in clients) == 400  # one pass: each sample forwarded once


def test_devices_interleave_without_a_barrier(run):
    sim, _, _, _ = run
    order = sim.events["device_id"].tolist()
    # the fast device 2 finishes all its uploads before the 10x-slower device 3 has sent half of its own
    last_fast = max(i for i, d in enumerate(order) if d == 2)
    slow_before = sum(1 for d in order[:last_fast] if d == 3)
    assert slow_before < order.count(3) / 2
    switches = sum(a != b for a, b in zip(order, order[1:]))
    assert switches >= len(set(order))  # not one device's block after another's


def test_the_smoke_task_learns_and_counters_match(run):
    _, curve, clients, server = run
    assert curve["accuracy"].iloc[0] < 0.7
    assert curve["accuracy"].iloc[-1] > 0.8
    assert curve["bytes_up"].iloc[-1] == sum(c.bytes_up for c in clients)
    assert curve["device_flops"].iloc[-1] == sum(c.flops for c in clients)
    assert (curve["time_s"].diff().dropna() >= 0).all()
    hit = time_to_target(curve, 0.75)
    assert hit["time_s"] <= curve["time_s"].iloc[-1]


def test_a_rerun_gives_the_same_numbers(run):
    _, curve, _, _ = run
    clients, server, eval_fn, _ = federation()
    again = AsyncSimulator(server, clients, PROFILES, eval_fn, time_budget_s=1e4, eval_every=4,
                           idle_replay_steps=60).run()
    assert curve.equals(again)


def test_budget_cuts_and_no_cache_devices_loop():
    clients, server, eval_fn, _ = federation(cache=False, passes=None)
    sim = AsyncSimulator(server, clients, PROFILES, eval_fn, time_budget_s=2.0, eval_every=8)
    curve = sim.run()
    assert sim.events["start_s"].max() <= 2.0  # nothing starts after the budget (the last update may end after)
    assert curve["time_s"].max() <= 2.0 + 2 * server.step_time_s
    assert sum(c.samples_seen for c in clients) > 0 and server.cached_samples == 0
