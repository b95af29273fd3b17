"""smartres' two trainers on a tiny mini-MLLM, shared by the 2-process test (launched with torchrun) and its
1-process reference: :func:`train_backbone` under DDP, :func:`train_router` under DDP and FSDP2.

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/smartres/smartres_ddp_worker.py OUT.json
"""

from __future__ import annotations

import torch

from neurips26.nn.train import full_state_dict
from neurips26.smartres import MiniGroundingMLLM, MLLMConfig, ResolutionRouter, SyntheticEgoGrounding
from neurips26.smartres.data import region_labels
from neurips26.smartres.training import ROUTER_LOSSES, low_features, make_pool, train_backbone, train_router

CFG = MLLMConfig(image_size=64, patch=8, dim=16, heads=2, vit_blocks=1, lm_blocks=1, region_px=16)


def _setup() -> tuple[MiniGroundingMLLM, object]:
    torch.manual_seed(0)
    return MiniGroundingMLLM(CFG), make_pool(SyntheticEgoGrounding(16, size=64, seed=0))


def _flat(state: dict) -> dict:
    return {k: v.detach().double().flatten().tolist() for k, v in state.items()}


def backbone_run(distributed: str = "auto") -> dict:
    """Six steps of 4 rows: with seed 4 the mixture draws every kind (full, low, regions with their per-row draws)."""
    model, pool = _setup()
    log = train_backbone(model, pool, steps=6, batch=4, lr=2e-3, seed=4, distributed=distributed)
    return {"losses": log.losses, "modes": log.modes, "params": _flat(model.state_dict())}


def router_run(distributed: str = "auto") -> dict:
    """The margin routing loss (per-image positive weight and hard negatives) on frozen low-view features."""
    model, pool = _setup()
    feats, qe = low_features(model, pool)
    router = train_router(model, feats, qe, pool.boxes, loss="margin", steps=6, batch=8, lr=1e-2, seed=0,
                          hidden=16, distributed=distributed)
    sharded = any(hasattr(p, "full_tensor") for p in router.parameters())  # before a forward: FSDP2 keeps the root
    c = model.config                                                         # unsharded after its forward
    fg = region_labels(pool.boxes, c.image_size, c.region_grid)
    with torch.no_grad():
        after = float(ROUTER_LOSSES["margin"](router(feats, (c.low_grid,) * 2, qe, c.region_grid), fg))
        torch.manual_seed(0)                                                       # the router train_router starts from
        start = ResolutionRouter(feats.shape[2], qe.shape[1], hidden=16)
        before = float(ROUTER_LOSSES["margin"](start(feats, (c.low_grid,) * 2, qe, c.region_grid), fg))
    return {"before": before, "after": after, "sharded": sharded, "params": _flat(full_state_dict(router))}


if __name__ == "__main__":
    from _torchrun import worker_main

    worker_main(lambda args: {"backbone_ddp": backbone_run("ddp"), "router_ddp": router_run("ddp"),
                              "router_fsdp": router_run("fsdp")})
