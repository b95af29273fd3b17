"""``nn.parallel.data_parallel``: bit-identical to the bare loss in one process; under torchrun, 2 gloo processes
with half of each global batch end with the weights of 1 process with the whole batch, for DDP and FSDP2, with a
hand-written Adam loop whose loss calls a model method (not ``forward``)."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from neurips26.nn.parallel import DataParallel, data_parallel

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from nn_parallel_worker import TwoLayer, loop  # noqa: E402

from _torchrun import two_processes  # noqa: E402


def test_one_process_is_the_bare_loss():
    model = TwoLayer()
    x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
    dp = data_parallel(model, lambda m, xb, yb: m.loss(xb, yb))
    assert isinstance(dp, DataParallel) and (dp.mode, dp.rank, dp.world_size, dp.is_main) == ("off", 0, 1, True)
    assert torch.equal(dp(x, y), model.loss(x, y))
    xs, ys = dp.shard(x, y)
    assert xs is x and ys is y and dp.shard(x) is x  # nothing copied, nothing sliced
    assert dp.mean(1.25) == 1.25 and dp.unwrap() is model


def test_one_process_loop_is_unchanged_by_the_wrapper():
    """The worker's loop through data_parallel equals the same loop written without it, bit for bit."""
    wrapped = loop("off")
    torch.manual_seed(0)
    model = TwoLayer()
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 6, generator=g), torch.randint(0, 3, (64,), generator=g)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for step in range(5):
        rows = torch.arange(16 * step, 16 * step + 16) % 64
        loss = model.loss(x[rows], y[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert wrapped["losses"] == losses
    for k, v in model.state_dict().items():
        assert wrapped["params"][k] == v.double().flatten().tolist()


@pytest.mark.parametrize("bad, match", [({"model": object()}, "model must be a torch.nn.Module"),
                                        ({"loss_fn": 3}, "loss_fn must be callable"),
                                        ({"distributed": "zero3"}, "distributed must be one of"),
                                        ({"distributed": "ddp"}, "torchrun"),
                                        ({"fsdp_units": [torch.nn.Linear]}, "fsdp_units"),
                                        ({"find_unused_parameters": 1}, "find_unused_parameters")])
def test_bad_arguments_are_refused(bad, match):
    args = {"model": TwoLayer(), "loss_fn": lambda m, x: m(x)} | bad
    with pytest.raises((TypeError, ValueError), match=match):
        data_parallel(**args)


def test_shard_refuses_what_it_cannot_split_evenly():
    dp = DataParallel(TwoLayer(), lambda m, x: m(x), mode="ddp-like", rank=1, world_size=2,
                      find_unused_parameters=False)  # the slicing logic alone, no process group
    x = torch.arange(8)
    assert dp.shard(x).tolist() == [1, 3, 5, 7] and dp.shard([0, 1, 2, 3]) == [1, 3]
    with pytest.raises(ValueError, match="divide by the world size"):
        dp.shard(torch.arange(7))
    with pytest.raises(ValueError, match="same number of rows"):
        dp.shard(torch.arange(8), torch.arange(6))
    with pytest.raises(TypeError, match="item 0"):
        dp.shard(3.0)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_processes_equal_one_process(tmp_path, mode):
    single = loop("off")
    out = tmp_path / "two.json"
    two = two_processes(HERE / "nn_parallel_worker.py", out, mode)
    assert (two["mode"], two["world"]) == (mode, 2)
    assert two["losses"] == pytest.approx(single["losses"], rel=1e-5)
    for key, values in single["params"].items():
        np.testing.assert_allclose(two["params"][key], values, rtol=1e-4, atol=1e-6, err_msg=key)
    assert single["losses"][-1] < single["losses"][0]  # it trained
