"""A tiny supervised run shared by the DDP/FSDP tests (launched with torchrun) and their single-process reference
(FSDP on the model without ReZero scalars: FSDP2's ``fully_shard`` refuses 0-d parameters).

    torchrun --standalone --nproc_per_node 2 tests/routing/routing_ddp_worker.py OUT.json [ddp|fsdp]
"""

from __future__ import annotations

import torch

from neurips26.nn.train import full_state_dict
from neurips26.routing import DecoderConfig, TSPDecoderOnly, make_tsp_instances, solve_tsp_reference, train_supervised


def toy_run(mode: str = "auto", rezero: bool = True) -> dict:
    """``rezero=False`` (the LEHD-style ablation) for FSDP: FSDP2 refuses 0-d parameters, the ReZero scalars."""
    torch.manual_seed(0)
    model = TSPDecoderOnly(DecoderConfig(d_model=16, n_layers=2, rezero=rezero)).double()
    X = make_tsp_instances(32, 7, seed=1)
    tours = solve_tsp_reference(X, "exact")
    res = train_supervised(model, X, tours, steps=5, batch_size=8, lr=1e-2, seed=3, distributed=mode)
    weights = full_state_dict(model)  # the shards gathered under FSDP (a collective: every rank calls it)
    sharded = any(hasattr(p, "full_tensor") for p in model.parameters())
    return {"loss": res.losses, "samples": res.samples, "world": res.world_size, "sharded": sharded,
            "params": {k: v.detach().double().flatten().tolist() for k, v in weights.items()}}


if __name__ == "__main__":
    from _torchrun import worker_main

    worker_main(lambda args: toy_run(args[0] if args else "auto", rezero=args[:1] != ["fsdp"]))
