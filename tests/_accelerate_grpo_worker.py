"""Stock ``trl.GRPOTrainer`` and ``DualKVGRPOTrainer`` trained for two steps each, one after the other, from the
same seed and model; each rank writes what it trained on and the weights it ended with to ``OUT/rank<k>.json``.

    accelerate launch --multi_gpu --num_processes 2 tests/_accelerate_grpo_worker.py OUT
(``--multi_gpu`` is accelerate's torch.distributed launcher; on a CPU machine the trainers run on gloo.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import datasets
import torch
import trl

from _tiny_grpo import a_fraction_reward, char_tokenizer, tiny_qwen3
from neurips26.dualkv.trl import DualKVGRPOTrainer

PROMPTS = ["abcab", "zz", "qrstu", "ab"]



def recording(cls):
    """``cls`` that also records the prompts of every batch it generates for (this rank's share)."""

    class Recorded(cls):
        def _generate_and_score_completions(self, inputs):
            self.seen_prompts.append([x["prompt"] for x in inputs])
            return super()._generate_and_score_completions(inputs)

    return Recorded


def train(cls, out_dir: Path, **extra) -> dict:
    args = trl.GRPOConfig(output_dir=str(out_dir), per_device_train_batch_size=4, num_generations=4,
                          max_completion_length=6, learning_rate=1e-2, logging_steps=1, report_to=[],
                          save_strategy="no", use_cpu=True, seed=0, beta=0.0, bf16=False, dataloader_num_workers=0,
                          disable_tqdm=True, max_steps=2, ddp_backend="gloo")
    trainer = recording(cls)(model=tiny_qwen3(), reward_funcs=a_fraction_reward, args=args,
                             train_dataset=datasets.Dataset.from_dict({"prompt": PROMPTS}),
                             processing_class=char_tokenizer(), **extra)
    trainer.seen_prompts = []
    trainer.train()
    return {"world_size": int(args.world_size), "rank": int(args.process_index), "steps": trainer.state.global_step,
            "prompts": trainer.seen_prompts,
            "params": {k: v.detach().double().flatten().tolist() for k, v in trainer.model.state_dict().items()}}


if __name__ == "__main__":
    torch.set_num_threads(1)
    out = Path(sys.argv[1])
    result = {"stock": train(trl.GRPOTrainer, out / "stock"),
              "dualkv": train(DualKVGRPOTrainer, out / "dualkv", dualkv_backend="torch")}
    (out / f"rank{result['stock']['rank']}.json").write_text(json.dumps(result))
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
