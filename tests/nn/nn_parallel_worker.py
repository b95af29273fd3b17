"""A hand-written loop (Adam, a loss that calls a model *method*, a per-step mean over ranks) made data-parallel
with ``nn.parallel.data_parallel``; shared by the 2-process test and its 1-process reference.

    torchrun --standalone --nproc_per_node 2 tests/nn/nn_parallel_worker.py OUT.json ddp|fsdp
"""

from __future__ import annotations

import torch
from torch import nn

from neurips26.nn.parallel import data_parallel
from neurips26.nn.train import full_state_dict


class TwoLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # a method, not forward: DDP must see it
        return nn.functional.cross_entropy(self(x), y)


def loop(distributed: str = "auto", steps: int = 5) -> dict:
    torch.manual_seed(0)
    model = TwoLayer()
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 6, generator=g), torch.randint(0, 3, (64,), generator=g)
    dp = data_parallel(model, lambda m, xb, yb: m.loss(xb, yb), distributed=distributed)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    with dp.guard(model, opt, where="loop") as guard:
        for step in range(steps):
            rows = torch.arange(16 * step, 16 * step + 16) % 64  # the same global batch on every rank
            xb, yb = dp.shard(x[rows], y[rows])
            loss = dp(xb, yb)
            guard.check_loss(loss, step=step)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(dp.mean(float(loss.detach())))
    state = full_state_dict(model)
    return {"losses": losses, "mode": dp.mode, "world": dp.world_size,
            "params": {k: v.detach().double().flatten().tolist() for k, v in state.items()}}


if __name__ == "__main__":
    from _torchrun import worker_main

    worker_main(lambda args: loop(args[0]))
