"""dasa's trainers data-parallel under torchrun: 2 gloo processes with half of each global batch end with the
weights of 1 process with the whole batch, for DDP and FSDP2.

Both losses draw noise per row (diffusion levels and Gaussian noise; the distillation also draws the rollout and
its chunk). The trainers draw them for the whole global batch from the seeded generator, then shard them by row
with the data (:meth:`ARVideoDiT.teacher_forcing_noise`, the distillation's per-rollout level and noise), so the
stochastic losses themselves are compared, not a deterministic stand-in. FSDP applies to both: the distillation
reaches the student's weights through ``ARVideoDiT.forward`` (units: the blocks, then the root); the teacher fit's
block-causal loss runs the layers without the root's forward, so every weight-holding layer is its own unit there
(``distill.TEACHER_FSDP_UNITS``). Equality is to float round-off: a rank's attention runs over its rows' caches,
padded to a different length than one process's batch.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from _torchrun import two_processes

WORKER = Path(__file__).with_name("dasa_ddp_worker.py")


def _worker():
    spec = importlib.util.spec_from_file_location("dasa_ddp_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(300)
def test_dasa_trainers_two_processes_equal_one_process(tmp_path):
    single = _worker().run("off")
    out = tmp_path / "two.json"
    two = two_processes(WORKER, out, "ddp", "fsdp")
    assert two["world_size"] == 2
    for mode in ("ddp", "fsdp"):
        got = two[mode]
        for what in ("teacher", "distill"):
            assert got[f"{what}_losses"] == pytest.approx(single[f"{what}_losses"], rel=1e-5), (mode, what)
        for net in ("teacher", "student"):
            for key, values in single[net].items():
                np.testing.assert_allclose(got[net][key], values, rtol=1e-4, atol=1e-6, err_msg=f"{mode} {net} {key}")
    # it trained: the weights moved, and the teacher's loss fell
    for net in ("teacher", "student"):
        moved = max(np.abs(np.subtract(single[net][k], single[f"{net}_start"][k])).max() for k in single[net])
        assert moved > 1e-3, net
    assert single["teacher_losses"][-1] < single["teacher_losses"][0]
