"""A tiny supervised run shared by the DDP test (launched with torchrun) and its single-process reference.

    torchrun --standalone --nproc_per_node 2 tests/routing/routing_ddp_worker.py OUT.json
"""

from __future__ import annotations

import json
import sys

import torch

from neurips26.routing import DecoderConfig, TSPDecoderOnly, make_tsp_instances, solve_tsp_reference, train_supervised


def toy_run() -> dict:
    torch.manual_seed(0)
    model = TSPDecoderOnly(DecoderConfig(d_model=16, n_layers=2)).double()
    X = make_tsp_instances(32, 7, seed=1)
    tours = solve_tsp_reference(X, "exact")
    res = train_supervised(model, X, tours, steps=5, batch_size=8, lr=1e-2, seed=3)
    return {"loss": res.losses, "samples": res.samples, "world": res.world_size,
            "params": [float(p.detach().double().sum()) for p in model.parameters()]}


if __name__ == "__main__":
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    out = toy_run()
    if dist.get_rank() == 0:
        with open(sys.argv[1], "w") as fh:
            json.dump(out, fh)
    dist.barrier()  # leave together: tearing gloo down while the peer still talks can abort
    dist.destroy_process_group()
