"""Sub-path sampling (property checks), training lowers the loss, 2-process DDP and FSDP equal 1 process."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from _torchrun import two_processes
from neurips26.routing import (
    DecoderConfig,
    SubpathSampler,
    TSPDecoderOnly,
    make_tsp_instances,
    solve_tsp_reference,
    subpath_loss,
    train_supervised,
)


def test_sampler_targets_are_tour_neighbours():
    X = make_tsp_instances(20, 9, seed=0)
    tours = solve_tsp_reference(X, "exact")
    sampler = SubpathSampler(X, tours, seed=1)
    seen_dirs = set()
    for _ in range(30):
        b = sampler.sample(16)
        assert b.remaining.shape == (16, 9 - b.t)
        for k in range(16):
            tour = tours[int(b.index[k])].tolist()
            pos = {c: i for i, c in enumerate(tour)}
            nxt = int(b.remaining[k, b.target[k]])
            first, last = int(b.first[k]), int(b.last[k])
            # the visited arc runs first -> last along the tour (either direction), t nodes long,
            # the target continues it, and the remaining nodes are exactly the rest
            step = (pos[nxt] - pos[last]) % 9
            assert step in (1, 8)
            direction = 1 if step == 1 else -1
            arc = [tour[(pos[first] + direction * i) % 9] for i in range(b.t)]
            assert arc[-1] == last
            assert sorted(set(range(9)) - set(arc)) == b.remaining[k].tolist()
            seen_dirs.add(direction)
    assert seen_dirs == {1, -1}


def test_sampler_is_seeded():
    X = make_tsp_instances(10, 6, seed=0)
    tours = solve_tsp_reference(X, "exact")
    a, b = SubpathSampler(X, tours, seed=5).sample(8), SubpathSampler(X, tours, seed=5).sample(8)
    assert torch.equal(a.remaining, b.remaining) and torch.equal(a.target, b.target)


def test_150_steps_lower_the_loss_by_20_percent():
    torch.manual_seed(0)
    X = make_tsp_instances(512, 10, seed=0)
    tours = solve_tsp_reference(X, "exact")
    model = TSPDecoderOnly(DecoderConfig(d_model=32, n_layers=2))
    before = subpath_loss(model, X, tours)
    res = train_supervised(model, X, tours, steps=150, batch_size=64, lr=2e-3, seed=0)
    after = subpath_loss(model, X, tours)
    assert len(res.losses) == 150 and res.samples == 150 * 64
    assert after <= 0.8 * before, (before, after)


def test_train_bad_input():
    model = TSPDecoderOnly(DecoderConfig(d_model=16, n_layers=1))
    X = make_tsp_instances(4, 5, seed=0)
    tours = solve_tsp_reference(X, "exact")
    with pytest.raises(ValueError, match="steps"):
        train_supervised(model, X, tours, steps=0, batch_size=4, lr=1e-3)
    with pytest.raises(ValueError, match="lr"):
        train_supervised(model, X, tours, steps=1, batch_size=4, lr=float("nan"))
    with pytest.raises(ValueError, match="permutations"):
        train_supervised(model, X, np.zeros_like(tours), steps=1, batch_size=4, lr=1e-3)
    with pytest.raises(ValueError, match="finite"):
        train_supervised(model, X * np.nan, tours, steps=1, batch_size=4, lr=1e-3)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_data_parallel_two_processes_equal_one_process(tmp_path, mode):
    sys.path.insert(0, str(Path(__file__).parent))
    from routing_ddp_worker import toy_run

    single = toy_run(rezero=mode != "fsdp")  # FSDP2 cannot shard the 0-d ReZero scalars: the LEHD-style ablation
    out = tmp_path / f"{mode}.json"
    two = two_processes(Path(__file__).parent / "routing_ddp_worker.py", out, mode)
    assert two["world"] == 2 and single["world"] == 1
    assert two["sharded"] == (mode == "fsdp") and not single["sharded"]
    assert two["samples"] == single["samples"]
    # half the batch each (rows rank::2), gradients averaged: the one-process run on the whole batch, to
    # float64 round-off of the all-reduce (amplified by the ReZero scalars' 30x learning rate)
    np.testing.assert_allclose(two["loss"], single["loss"], rtol=1e-5)
    assert two["params"].keys() == single["params"].keys()
    for key, values in single["params"].items():
        np.testing.assert_allclose(two["params"][key], values, rtol=1e-4, atol=1e-9, err_msg=key)
    assert single["loss"][-1] < single["loss"][0]  # it trained


def test_distributed_is_refused_without_torchrun():
    model = TSPDecoderOnly(DecoderConfig(d_model=16, n_layers=1))
    X = make_tsp_instances(4, 5, seed=0)
    tours = solve_tsp_reference(X, "exact")
    before = [p.detach().clone() for p in model.parameters()]
    for mode, match in (("ddp", "torchrun"), ("fsdp", "torchrun"), ("zero3", "distributed must be one of")):
        with pytest.raises(ValueError, match=match):
            train_supervised(model, X, tours, steps=1, batch_size=4, lr=1e-3, distributed=mode)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
