"""train_lm under torchrun (DDP and FSDP2): two processes with half the batch each equal one process with the
whole batch."""

import sys
from pathlib import Path

import numpy as np
import pytest

from _torchrun import two_processes

HERE = Path(__file__).parent


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_data_parallel_two_processes_equal_one_process(tmp_path, mode):
    sys.path.insert(0, str(HERE))
    from nn_ddp_worker import toy_run

    single = toy_run()
    out = tmp_path / f"{mode}.json"
    ddp = two_processes(HERE / "nn_ddp_worker.py", out, mode, timeout=300)
    assert ddp["sharded"] == (mode == "fsdp") and not single["sharded"]
    assert ddp["grad_norms"] == pytest.approx(single["grad_norms"], rel=1e-4)
    assert ddp["tokens"] == single["tokens"]
    assert ddp["loss"] == pytest.approx(single["loss"], rel=1e-5)
    for a, b in zip(ddp["params"], single["params"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_ddp_is_refused_without_a_process_group():
    import torch

    from neurips26.nn import Llama, LlamaConfig
    from neurips26.nn.train import seeded_batches, train_lm

    model = Llama(LlamaConfig(vocab_size=11, d_model=16, n_layers=1, n_heads=2, max_seq_len=8))
    before = [p.detach().clone() for p in model.parameters()]
    batches = seeded_batches(torch.randint(0, 11, (200,)), 2, 4, seed=0)
    for kwargs, err, match in (({"distributed": "ddp"}, ValueError, "torchrun"),
                               ({"distributed": "fsdp"}, ValueError, "torchrun"),
                               ({"distributed": "zero3"}, ValueError, "distributed must be one of"),
                               ({"distributed": "fsdp", "optimizer": torch.optim.SGD(model.parameters(), lr=1.0)},
                                ValueError, "optimizer"),
                               ({"fsdp_units": [torch.nn.Linear]}, TypeError, "fsdp_units")):
        with pytest.raises(err, match=match):
            train_lm(model, batches, steps=1, lr=1e-3, **kwargs)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
