"""State guarantees of the server and the task helpers: a refused call changes nothing (issue 41)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from neurips26.mobillm import DeviceClient, FeatureAligner, SideNetwork, SideTuningServer, encode_texts, time_to_target


def _server(width: int = 32) -> SideTuningServer:
    torch.manual_seed(0)
    return SideTuningServer(SideNetwork(d_side=8, n_layers=2, block="transformer"),
                            {"l": FeatureAligner(2, width, 2, 8)}, lr=1e-2, cache=True, replay_ratio=1.0)


def _snapshot(server: SideTuningServer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in server.trainable.state_dict().items()}


def _all_payload(llama, batch):
    return DeviceClient(llama, [1, 3], positions="all", quant_bits=8, backbone_type="l", device_id=1).step(batch)


def test_refused_token_mask_changes_no_server_state(llama, batch):
    server = _server(llama.d_model)
    server.receive(_all_payload(llama, batch))  # one good arrival, so the running statistics are non-trivial
    before, steps, cached = _snapshot(server), server.steps, server.cached_samples
    bad = _all_payload(llama, {**batch, "sample_ids": batch["sample_ids"] + 100})
    bad.seq += 1
    bad.token_mask = bad.token_mask[:, :-1]  # one token short
    for _ in range(5):
        with pytest.raises(ValueError, match="token_mask"):
            server.receive(bad)
    after = _snapshot(server)
    assert all(torch.equal(before[k], after[k]) for k in before)  # running mean/var and weights untouched
    assert server.steps == steps and server.cached_samples == cached and len(server.processed) == 1


def test_failed_step_restores_running_statistics(llama, batch):
    """Independent of the payload check: a step whose forward raises puts the buffers back."""
    server = _server(llama.d_model)
    before = _snapshot(server)
    x = torch.randn(4, 2, llama.d_model)
    with pytest.raises((RuntimeError, IndexError)):  # labels outside [0, 2): cross-entropy fails after the forward
        server._step([("l", x, torch.full((4,), 5, dtype=torch.long), None)])
    assert int(server.aligners["l"].batches_seen) == 0
    after = _snapshot(server)
    assert all(torch.equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("training", [True, False])
def test_predict_logits_keeps_mode_on_failure(training):
    server = _server()
    server.trainable.train(training)
    with pytest.raises(ValueError, match="features"):
        server.predict_logits(torch.randn(3, 5, 7), "l")
    assert all(m.training == training for m in server.trainable.modules())
    server.predict_logits(torch.randn(3, 2, 32), "l")  # and on success
    assert all(m.training == training for m in server.trainable.modules())


def test_non_finite_features_are_refused_before_the_statistics_move():
    a = FeatureAligner(2, 6, 2, 4).train()
    a(torch.randn(8, 2, 6))
    mean, var, seen = a.running_mean.clone(), a.running_var.clone(), int(a.batches_seen)
    h = torch.randn(8, 2, 6)
    h[3, 1, 2] = math.nan
    with pytest.raises(ValueError, match="finite values"):
        a(h)
    assert torch.equal(a.running_mean, mean) and torch.equal(a.running_var, var) and int(a.batches_seen) == seen
    assert torch.isfinite(a(torch.randn(4, 2, 6))).all()  # later outputs stay finite


def test_predict_logits_refuses_non_finite_features():
    server = _server()
    x = torch.randn(3, 2, 32)
    x[0, 0, 0] = math.inf
    with pytest.raises(ValueError, match="finite values"):
        server.predict_logits(x, "l")


class _WordTokenizer:
    def encode(self, text: str) -> list[int]:
        return [len(w) for w in text.split()]


def test_encode_texts_refuses_mismatched_texts_and_labels():
    with pytest.raises(ValueError, match="3 texts and 2 labels"):
        encode_texts(_WordTokenizer(), ["a b", "c", "d e f"], np.array([0, 1]))
    out = encode_texts(_WordTokenizer(), ["a b", "ccc"], np.array([1, 0]))
    assert out["input_ids"].tolist() == [[1, 1], [3, 0]] and out["labels"].tolist() == [1, 0]


def test_time_to_target_refuses_nan_target():
    curve = pd.DataFrame({"time_s": [0.0, 1.0], "accuracy": [0.5, 0.9], "bytes_up": [0, 10], "bytes_down": [0, 0],
                          "device_flops": [0.0, 5.0]})
    with pytest.raises(ValueError, match="target"):
        time_to_target(curve, math.nan)
    assert time_to_target(curve, 0.8)["time_s"] == 1.0
