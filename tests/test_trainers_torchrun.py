"""Paper trainers built on ``nn.train.train_lm`` are data-parallel under torchrun for free: 2 gloo processes with
half of each global batch end with the weights of 1 process with the whole batch.

spherelatent's ``fit`` (tokenizer, denoisers, flow matching, consistency model) passes losses that call a model
method (``model.reconstruction_loss(x)``), not ``model(x)``; ``train_lm`` runs the whole loss inside DDP's forward
so such losses are synchronised too. (dynconv and the LMs use the default next-token loss:
``tests/nn/test_nn_train_ddp.py``.) A loss that draws noise (latent noise, diffusion times) draws it per rank,
so only deterministic losses are compared here.
"""

from pathlib import Path

import numpy as np
import pytest

from _torchrun import two_processes

TESTS = Path(__file__).parent


@pytest.mark.timeout(300)
def test_spherelatent_fit_two_processes_equal_one_process(tmp_path):
    from _torchrun_fit_worker import fit_run

    single = fit_run()
    out = tmp_path / "two.json"
    two = two_processes(TESTS / "_torchrun_fit_worker.py", out)
    assert two["world_size"] == 2
    assert two["losses"] == pytest.approx(single["losses"], rel=1e-5)
    assert len(two["evals"]) == 2 and two["evals"] == pytest.approx(single["evals"], rel=1e-5)
    for key, values in single["params"].items():
        np.testing.assert_allclose(two["params"][key], values, rtol=1e-4, atol=1e-6, err_msg=key)
    assert single["losses"][-1] < single["losses"][0]  # it trained
