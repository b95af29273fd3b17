"""A tiny TSTHFTrainer run shared by the 2-process test (launched with torchrun) and its 1-process reference.

    torchrun --standalone --nproc_per_node 2 tests/tst/tst_hf_ddp_worker.py OUT_DIR OUT.json
"""

from __future__ import annotations

import json
import sys

import torch
import transformers

from neurips26.tst import TSTSchedule
from neurips26.tst.hf import TSTHFTrainer

V, L, T, GLOBAL_BATCH = 64, 6, 6, 4
SCHEDULE = TSTSchedule(T, 2, 0.5)  # steps 0-2 on bags of 2, 3-5 next-token prediction


def hf_run(out_dir: str, world_size: int = 1, accum: int = 1) -> dict:
    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                   max_position_embeddings=64, tie_word_embeddings=False)
    model = transformers.Qwen3ForCausalLM(cfg).float()
    tokens = torch.randint(0, V, (4000,), generator=torch.Generator().manual_seed(1))
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)  # SGD: a wrong gradient scale shows
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / (2 * T))
    args = transformers.TrainingArguments(
        out_dir, max_steps=T, per_device_train_batch_size=GLOBAL_BATCH // (world_size * accum),
        gradient_accumulation_steps=accum, max_grad_norm=5.0, use_cpu=True, report_to=[], logging_steps=1,
        save_strategy="no", dataloader_num_workers=0, disable_tqdm=True, seed=0,
        **({"ddp_backend": "gloo"} if world_size > 1 else {}))
    trainer = TSTHFTrainer(model=model, args=args, optimizers=(opt, sched), train_tokens=tokens, schedule=SCHEDULE,
                           context_len=L, stream_block_len=256, stream_seed=3)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "learning_rate" in h]
    return {"world_size": int(args.world_size),
            "mce_loss": [h.get("mce_loss") for h in logs], "ntp_loss": [h.get("ntp_loss") for h in logs],
            "params": {k: v.detach().double().flatten()[:64].tolist() for k, v in model.state_dict().items()},
            "param_sum": float(sum(p.detach().double().sum() for p in model.parameters())),
            "param_abs": float(sum(p.detach().double().abs().sum() for p in model.parameters()))}


if __name__ == "__main__":
    import torch.distributed as dist

    torch.set_num_threads(1)
    out = hf_run(sys.argv[1], world_size=2)
    if dist.get_rank() == 0:
        with open(sys.argv[2], "w") as fh:
            json.dump(out, fh)
    dist.barrier()  # both ranks leave together (see tst_ddp_worker.py)
    dist.destroy_process_group()
