"""The trainers under torchrun: 2 gloo processes with half of each step's rows end with the weights of 1 process
with the whole step: the server (DDP, and FSDP2 with the side network and each aligner as units) and the
baselines' local training (DDP; they exchange full weights every round, so not FSDP)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from _torchrun import two_processes

HERE = Path(__file__).parent


def _single(mode: str) -> dict:
    sys.path.insert(0, str(HERE))
    try:
        from mobillm_ddp_worker import baselines_run, server_run
    finally:
        sys.path.remove(str(HERE))
    return baselines_run("off") if mode == "baselines" else server_run("off")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["ddp", "fsdp", "baselines"])
def test_trainer_two_processes_equal_one_process(tmp_path, mode):
    if mode == "baselines":
        pytest.importorskip("peft")
    single = _single(mode)
    out = tmp_path / "two.json"
    two = two_processes(HERE / "mobillm_ddp_worker.py", out, mode)
    assert two["world_size"] == 2
    assert two["steps"] == single["steps"] and two["flops"] == single["flops"]
    assert two["losses"] == pytest.approx(single["losses"], rel=1e-5)
    assert set(two["params"]) == set(single["params"])
    for key, values in single["params"].items():
        np.testing.assert_allclose(two["params"][key], values, rtol=1e-4, atol=1e-6, err_msg=key)
    if mode == "baselines":  # it trained: the LoRA weights and the side network moved from their initial weights
        assert single["moved"] > 1e-4
    else:
        assert np.mean(single["losses"][-3:]) < single["losses"][0]  # it trained
