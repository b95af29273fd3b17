"""A tiny TST run shared by the DDP test (launched with torchrun) and its single-process reference.

    torchrun --standalone --nproc_per_node 2 tests/tst/tst_ddp_worker.py OUT.json
"""

from __future__ import annotations

import json
import os
import sys

import torch

from neurips26.nn import Llama, LlamaConfig, TokenWindows
from neurips26.tst import TSTSchedule, TSTTrainer

GLOBAL_BATCH, L, STEPS, S, R = 4, 8, 4, 2, 0.5


def toy_run(rank: int = 0, world_size: int = 1, ddp: bool = False) -> dict:
    torch.manual_seed(0)
    tie = os.environ.get("TST_DDP_UNTIED") != "1"
    model = Llama(LlamaConfig(vocab_size=53, d_model=32, n_layers=2, n_heads=4, max_seq_len=16, tie_embeddings=tie))
    tokens = torch.randint(0, 53, (2000,), generator=torch.Generator().manual_seed(1))
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    trainer = TSTTrainer(model, opt, TSTSchedule(STEPS, S, R), context_len=L)
    data = TokenWindows(tokens, batch_size=GLOBAL_BATCH, rank=rank, world_size=world_size)
    hist = trainer.fit(data)
    base = model.module if ddp else model
    return {"loss": [h["loss"] for h in hist], "phase": [h["phase"] for h in hist],
            "raw_tokens": [h["raw_tokens"] for h in hist],
            "param_sum": float(sum(p.detach().double().sum() for p in base.parameters())),
            "param_abs": float(sum(p.detach().double().abs().sum() for p in base.parameters()))}


if __name__ == "__main__":
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    out = toy_run(dist.get_rank(), dist.get_world_size(), ddp=True)
    if dist.get_rank() == 0:
        with open(sys.argv[1], "w") as fh:
            json.dump(out, fh)
    # both ranks leave together: tearing gloo down while the peer still talks aborts at random
    # ("terminate called without an active exception", about 1 run in 8 without the barrier)
    dist.barrier()
    dist.destroy_process_group()
