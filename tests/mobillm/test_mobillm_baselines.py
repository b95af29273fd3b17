"""Baselines: FedAvg-LoRA's barrier and weighted mean by hand, FedAsync's staleness weights, PEFT LoRA freezes the
backbone, the side-network baselines run on the same devices."""

import math

import pytest
import torch
from _mobillm_fed import PROFILES, federation
from _mobillm_models import tiny_llama

from neurips26.mobillm import (
    FeatureAligner,
    FedAsyncLoRABaseline,
    FedAvgLoRABaseline,
    LoRAClassifier,
    SideNetwork,
    SyncSideTuningBaseline,
    local_only,
    planted_task,
    subset,
)

pytest.importorskip("peft")


def _parts(n=240, seed=0):
    data = planted_task(n, seed=seed)
    return [subset(data, torch.arange(j, n, 4)) for j in range(4)], planted_task(120, seed=seed + 7)


def test_lora_classifier_trains_only_adapters_and_head():
    base = tiny_llama()
    before = {k: v.clone() for k, v in base.state_dict().items()}
    model = LoRAClassifier(base, rank=4, positions="mean")
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n or n.startswith("head.") for n in names)
    # r (d_in + d_out) per adapted q/v projection, 3 layers x 2, + head
    d = base.config.d_model
    assert model.n_trainable() == 3 * 2 * 4 * (d + d) + (d * 2 + 2)
    data = planted_task(16)
    logits = model(data["input_ids"], data["attention_mask"])
    logits.sum().backward()
    assert all(p.grad is None for n, p in model.named_parameters() if not p.requires_grad)
    for k, v in base.state_dict().items():  # the caller's backbone is untouched (deep copy)
        assert torch.equal(v, before[k])


def test_fedavg_barrier_and_weighted_mean_by_hand():
    parts, test = _parts()
    fed = FedAvgLoRABaseline(tiny_llama(), parts, PROFILES, test, rounds=2, fraction=1.0, rank=2)
    sizes = [int(p["labels"].shape[0]) for p in parts]
    keys = list(fed.trainer.model.trainable_state())
    calls = []

    def fake(state, data, key):  # device j returns every tensor filled with j + 1, and 1e9 (j + 1) FLOPs
        j = next(i for i, p in enumerate(parts) if p is data)
        calls.append(j)
        return {k: torch.full_like(state[k], float(j + 1)) for k in keys}, 1e9 * (j + 1)

    fed.trainer.train_local = fake
    curve = fed.run()
    want = sum(n * (j + 1) for j, n in enumerate(sizes)) / sum(sizes)
    for v in fed.trainer.model.trainable_state().values():
        torch.testing.assert_close(v, torch.full_like(v, want))
    nb = fed.exchange_nbytes
    round_s = max(p.down_s(nb) + p.compute_s(1e9 * (j + 1)) + p.up_s(nb) for j, p in enumerate(PROFILES))
    assert curve["round_s"].iloc[1] == pytest.approx(round_s)  # the slowest device sets the round
    assert curve["time_s"].iloc[-1] == pytest.approx(2 * round_s)
    assert curve["bytes_up"].iloc[-1] == curve["bytes_down"].iloc[-1] == 2 * 4 * nb
    assert curve["device_flops"].iloc[-1] == pytest.approx(2 * 1e9 * 10)
    assert calls == [0, 1, 2, 3, 0, 1, 2, 3]


def test_fedasync_mixes_with_staleness_discount():
    parts, test = _parts()
    fed = FedAsyncLoRABaseline(tiny_llama(), parts, PROFILES, test, max_updates=6, mix=0.5, rank=2, eval_every=3)
    curve = fed.run()
    assert fed.staleness[0] == 0 and len(fed.staleness) == 6
    assert max(fed.staleness) >= 1  # fast devices return while slow ones still train on old versions
    assert (curve["time_s"].diff().dropna() >= 0).all() and curve["updates"].iloc[-1] == 6


@pytest.mark.timeout(120)
def test_fedavg_lora_learns_the_planted_task():
    parts, test = _parts(n=320)
    fed = FedAvgLoRABaseline(tiny_llama(), parts, PROFILES, test, rounds=6, fraction=1.0, local_epochs=2,
                             rank=4, lr=1e-2, seed=1)
    curve = fed.run()
    assert curve["accuracy"].iloc[-1] > max(0.65, curve["accuracy"].iloc[0] + 0.1)


def test_sync_side_tuning_and_local_only_run_on_the_devices():
    clients, _, _, test_feats = federation()

    def side_fn():
        torch.manual_seed(0)
        return SideNetwork(d_side=16, n_layers=3)

    def aligner_fn(btype):
        torch.manual_seed(1)
        return FeatureAligner(3, 32 if btype == "llama" else 24, 3, 16, window=1)

    sync = SyncSideTuningBaseline(clients, PROFILES, side_fn, aligner_fn, test_feats, rounds=6, fraction=1.0,
                                  local_epochs=2)
    curve = sync.run()
    assert curve["accuracy"].iloc[-1] > 0.75
    assert sum(c.samples_seen for c in clients) == 0  # features came from the device forward, once per sample
    flops_fwd = sum(c.flops for c in clients)
    assert flops_fwd > 0
    assert curve["device_flops"].iloc[-1] > flops_fwd  # plus the on-device side-network training
    solo = local_only(clients, side_fn, aligner_fn, test_feats, epochs=5)
    assert 0.0 <= solo["accuracy_min"] <= solo["accuracy_mean"] <= 1.0 and math.isfinite(solo["device_flops_mean"])


def test_fedavg_eval_every_writes_rows_only_at_evaluations_and_the_end():
    parts, test = _parts()
    fed = FedAvgLoRABaseline(tiny_llama(), parts, PROFILES, test, rounds=5, fraction=0.5, rank=2, eval_every=2)
    curve = fed.run()
    assert curve["round"].tolist() == [0, 2, 4, 5]  # the start, every 2nd round, the last
    assert (curve["time_s"].diff().iloc[1:] > 0).all() and len(fed.participants) == 5
    with pytest.raises(ValueError, match="eval_every"):
        FedAvgLoRABaseline(tiny_llama(), parts, PROFILES, test, rounds=2, eval_every=0)
