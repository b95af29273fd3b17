"""snndelay's ``train_ctc`` is data-parallel under torchrun (``neurips26.nn.parallel.data_parallel``): 2 gloo
processes with half of each global batch end with the losses and weights of 1 process with the whole batch, for
DDP and for FSDP2 (``fully_shard`` of the whole model: the decoder reaches every weight through its forward).

The loss is comparable although training augments the data with noise: the noise is drawn for the *global* batch
from the seeded generator on every rank, before the rows are split, so both ranks see the one-process noise. The
decoder has no batch statistics (LayerNorm per bin) and no dropout; the CTC loss is a mean over sentences.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from _torchrun import two_processes

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def single():
    sys.path.insert(0, str(HERE))
    try:
        from snndelay_ddp_worker import fit_run
    finally:
        sys.path.remove(str(HERE))
    return fit_run()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_train_ctc_two_processes_equal_one_process(tmp_path, single, mode):
    out = tmp_path / f"{mode}.json"
    two = two_processes(HERE / "snndelay_ddp_worker.py", out, mode)
    assert two["world_size"] == 2
    assert two["losses"] == pytest.approx(single["losses"], rel=1e-5)
    assert two["params"].keys() == single["params"].keys()
    for key, values in single["params"].items():
        np.testing.assert_allclose(two["params"][key], values, rtol=1e-4, atol=1e-6, err_msg=key)
    assert single["losses"][-1] < single["losses"][0]  # it trained


def test_distributed_keyword_is_declared():
    from neurips26.snndelay import ResidualDelaySNN, synthetic_speech_bci, train_ctc

    data = synthetic_speech_bci(4, n_channels=2, seed=0, lexicon_size=5)
    model = ResidualDelaySNN(4, 4, 1, max_delay=1)
    with pytest.raises(ValueError, match="distributed"):
        train_ctc(model, data, steps=1, batch_size=2, distributed="mpi")
    with pytest.raises(ValueError, match="torchrun"):  # ddp/fsdp need torch.distributed with > 1 process
        train_ctc(model, data, steps=1, batch_size=2, distributed="ddp")
