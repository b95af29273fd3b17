"""A tiny train_lm run shared by the DDP and FSDP tests (launched with torchrun) and their single-process reference.

    torchrun --standalone --nproc_per_node 2 tests/nn/nn_ddp_worker.py OUT.json [ddp|fsdp]
"""

from __future__ import annotations

import torch

from neurips26.nn import Llama, LlamaConfig
from neurips26.nn.llama import Block
from neurips26.nn.train import full_state_dict, seeded_batches, train_lm

GLOBAL_BATCH, CONTEXT, STEPS = 4, 8, 4


def toy_run(mode: str = "auto") -> dict:
    torch.manual_seed(0)
    model = Llama(LlamaConfig(vocab_size=41, d_model=32, n_layers=2, n_heads=4, max_seq_len=16))
    tokens = torch.randint(0, 41, (3000,), generator=torch.Generator().manual_seed(1))
    result = train_lm(model, seeded_batches(tokens, GLOBAL_BATCH, CONTEXT, seed=2), steps=STEPS, lr=1e-2,
                      warmup_steps=1, grad_clip=1.0, distributed=mode,
                      fsdp_units=(Block,) if mode == "fsdp" else ())
    weights = list(full_state_dict(model).values())  # gathered shards under FSDP
    sharded = any(hasattr(p, "full_tensor") for p in model.parameters())
    return {"loss": result.losses, "tokens": result.tokens_seen, "grad_norms": result.grad_norms,
            "sharded": sharded, "params": [w.detach().double().flatten().tolist()[:50] for w in weights],
            "param_sum": float(sum(w.detach().double().sum() for w in weights))}


if __name__ == "__main__":
    from _torchrun import worker_main

    worker_main(lambda args: toy_run(args[0] if args else "auto"))
