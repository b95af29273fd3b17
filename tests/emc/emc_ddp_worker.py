"""emc's three training loops (``train_source_gnn``, ``TentGraph.adapt``, ``GCAL.adapt``) on a tiny stream; shared
by the 2-process test and its 1-process reference.

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/emc/emc_ddp_worker.py OUT.json ddp|fsdp

Every loop is full-graph (node classification on one graph per domain): every rank forwards the whole graph
and takes its share ``rank::world`` of the nodes in the loss, weighted so the ranks' mean is the all-node mean.
41 nodes and 20 labelled source nodes give the ranks unequal shares on the target graphs (21 / 20), which the
weighting makes exact. Dropout and GCAL's Gumbel/reparameterisation noise (and its VGAE's BatchNorm) stay on:
every rank runs the same full-graph computation from the same seed, so the draws and the batch statistics agree
across ranks. The source model has no BatchNorm here: a convolution bias right before a BatchNorm has a gradient
that is zero in exact arithmetic, and Adam turns its round-off (1e-9, different in the two runs) into full
lr-sized steps of random sign, so those biases (and the running means they shift) cannot be compared. GCAL's
VGAE memory is not data-parallel (its step is the same computation on every rank, from the synchronised model);
its layers before BatchNorm have the same zero-gradient directions, so it is compared loosely with one process
and exactly between the two ranks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from neurips26.emc import GCAL, SourceGNN, TentGraph, csbm_stream, train_source_gnn
from neurips26.nn.train import full_state_dict


def _flat(state: dict) -> dict:
    return {k: v.detach().double().flatten().tolist() for k, v in state.items() if v.is_floating_point()}


def _source_ce(model: torch.nn.Module, g) -> float:
    with torch.no_grad():
        return float(F.cross_entropy(model(g.x, g.edge_index)[g.train_mask], g.y[g.train_mask]))


def run(mode: str = "auto") -> dict:
    stream = csbm_stream(n_domains=2, n_nodes=41, n_classes=3, dim=6, p_in=0.15, p_out=0.02, seed=0)
    src = stream[0]
    torch.manual_seed(0)
    untrained = SourceGNN(6, 3, hidden=8).eval()  # the same initial weights as seed 0 below
    model = train_source_gnn(src, hidden=8, epochs=6, lr=0.05, seed=0, distributed=mode)
    out = {"n_train": int(src.train_mask.sum()), "ce_before": _source_ce(untrained, src),
           "ce_after": _source_ce(model, src), "source": _flat(full_state_dict(model))}
    base = train_source_gnn(src, hidden=8, epochs=6, lr=0.05, seed=0, distributed="off")
    out["base"] = _flat(base.state_dict())
    tent = TentGraph(base, params="all", steps=3, lr=0.02, diversity_weight=0.3, distributed=mode)
    out["tent_pred"] = [tent.adapt(g).tolist() for g in stream[1:]]
    out["tent"] = _flat(full_state_dict(tent.model))
    if mode in ("auto", "ddp"):  # GCAL: DDP only (its memory step reads the weights outside forward)
        gcal = GCAL(base, epochs=3, warmup_epochs=1, distributed=mode)
        out["gcal_pred"] = [gcal.adapt(g).tolist() for g in stream[1:]]
        out["gcal"] = _flat(gcal.model.state_dict())
        out["gcal_vgae"] = _flat(gcal.vgae.state_dict())
    return out


def _two_process_run(args: list[str]) -> dict:
    """The 2-process run, plus whether GCAL's memory model (its VGAE) came out the same on both ranks."""
    import torch.distributed as dist

    result = run(args[0])
    vgaes = [None] * dist.get_world_size()
    dist.all_gather_object(vgaes, result.get("gcal_vgae"))
    result["gcal_vgae_ranks_equal"] = all(v == vgaes[0] for v in vgaes)
    return result


if __name__ == "__main__":
    from _torchrun import worker_main

    worker_main(_two_process_run)
