"""emc's training loops under torchrun (issue 36): 2 gloo processes end where 1 process with the whole graph does.

``train_source_gnn``, ``TentGraph.adapt`` and ``GCAL.adapt`` train on one whole graph at a time (node
classification), so the "batch" that is sharded is the graph's nodes in the loss, not a list of graphs: every rank
forwards the whole graph (message passing needs all of it) and takes its nodes ``rank::world``, the loss weighted
by ``world / n`` so that the mean over ranks is the all-node mean for any ``n`` (the target graphs have 41 nodes:
shares of 21 and 20). DDP for all three; FSDP2 for the source trainer and Tent (their model reaches its weights
through ``forward``). GCAL refuses ``"fsdp"``: its memory step reads the model through ``model.embed`` and takes
``torch.autograd.grad`` of the parameters, outside ``forward``, where FSDP2 would hand it shards. See
``emc_ddp_worker.py`` for why the source model has no BatchNorm here and why GCAL's VGAE is compared loosely.
"""

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

from _torchrun import two_processes

HERE = Path(__file__).parent


@functools.lru_cache(maxsize=1)
def _single() -> dict:
    sys.path.insert(0, str(HERE))
    try:
        from emc_ddp_worker import run
    finally:
        sys.path.remove(str(HERE))
    return run("auto")


def _close(two: dict, one: dict, *, rtol: float, atol: float) -> None:
    assert two.keys() == one.keys()
    for key, values in one.items():
        np.testing.assert_allclose(two[key], values, rtol=rtol, atol=atol, err_msg=key)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_emc_trainers_two_processes_equal_one_process(tmp_path, mode):
    single = _single()
    out = tmp_path / "two.json"
    two = two_processes(HERE / "emc_ddp_worker.py", out, mode, cwd=tmp_path)
    assert two["world_size"] == 2
    # train_source_gnn: the loss it reaches and its weights
    assert two["ce_after"] == pytest.approx(single["ce_after"], rel=1e-5)
    _close(two["source"], single["source"], rtol=1e-4, atol=1e-6)
    assert single["ce_after"] < 0.8 * single["ce_before"]  # it trained
    # Tent over two domains (entropy of the node shares, the diversity term whole)
    assert two["tent_pred"] == single["tent_pred"]
    _close(two["tent"], single["tent"], rtol=1e-4, atol=1e-6)
    assert any(not np.allclose(single["tent"][k], single["base"][k]) for k in single["base"])  # it adapted
    if mode == "ddp":  # GCAL: the adapted model (data-parallel); its VGAE memory is replicated on every rank
        assert two["gcal_pred"] == single["gcal_pred"]
        _close(two["gcal"], single["gcal"], rtol=1e-4, atol=1e-6)
        assert two["gcal_vgae_ranks_equal"]
        _close(two["gcal_vgae"], single["gcal_vgae"], rtol=0.0, atol=5e-2)
    else:
        assert "gcal" not in two


def test_distributed_keyword_is_declared():
    from neurips26.emc import GCAL, TentGraph, csbm_stream, train_source_gnn

    g = csbm_stream(n_domains=1, n_nodes=30, n_classes=3, dim=4, seed=0)[0]
    model = train_source_gnn(g, hidden=4, epochs=1, distributed="off")
    with pytest.raises(ValueError, match="distributed"):
        train_source_gnn(g, epochs=1, distributed="dp")
    with pytest.raises(ValueError, match="torchrun"):  # required, but no process group
        TentGraph(model, distributed="ddp")
    with pytest.raises(ValueError, match="distributed must be one of"):
        GCAL(model, distributed="fsdp")
