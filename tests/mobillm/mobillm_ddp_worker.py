"""mobillm's server trainer (``SideTuningServer``) on a tiny two-type federation; shared by the 2-process test
and its 1-process reference.

    torchrun --standalone --nproc_per_node 2 tests/mobillm/mobillm_ddp_worker.py OUT.json [ddp|fsdp|baselines]

``baselines``: the LoRA baselines' and the side-network baselines' local training under DDP (FedAvg-LoRA on a tiny
Llama, 2 rounds; ``_train_side_local`` with ``norm="layer"``), every batch of an even size.

Deterministic loss: ``norm="layer"`` aligners (no running statistics) and ``moment_weight=0`` (no statistic
across rows); the PCA init runs on the whole first arrival of each type on every rank. Payloads of 4 rows, replay
steps of 4 rows drawn from the cache (often both types in one step: the step's rows are split across ranks
counted over its groups, so a rank may see one type only).
"""

from __future__ import annotations

import torch

from neurips26.mobillm import ActivationPayload, FeatureAligner, SideNetwork, SideTuningServer
from neurips26.mobillm.payload import quantize_absmax
from neurips26.nn.train import full_state_dict


def _payloads() -> list[ActivationPayload]:
    g = torch.Generator().manual_seed(3)
    out = []
    for seq in range(3):
        for dev, (btype, k, d) in enumerate((("a", 2, 12), ("b", 3, 10))):
            y = torch.randint(2, (4,), generator=g)
            x = torch.randn(4, k, d, generator=g) + y[:, None, None].float()  # learnable: the label shifts x
            out.append(ActivationPayload(parts=quantize_absmax(x, 32), shape=(4, k, d), quant_bits=32, labels=y,
                                         sample_ids=torch.arange(4) + 4 * seq, backbone_type=btype,
                                         device_id=dev, seq=seq))
    return out


def server_run(distributed: str = "off") -> dict:
    torch.manual_seed(0)
    side = SideNetwork(d_side=8, n_layers=2, block="mlp")
    aligners = {"a": FeatureAligner(2, 12, 2, 8, window=1, norm="layer"),
                "b": FeatureAligner(3, 10, 2, 8, window=1, norm="layer")}
    server = SideTuningServer(side, aligners, lr=1e-2, cache=True, replay_ratio=1.0, replay_batch=4, seed=0,
                              distributed=distributed)
    losses = []
    for _ in range(2):  # two passes: the second one only replays
        for p in _payloads() if not losses else []:
            m = server.receive(p)
            losses += [m["loss"], m["replay_loss"]]
        for _ in range(3):
            losses.append(server.replay_step(4))
    state = full_state_dict(server.trainable)
    return {"losses": losses, "steps": server.steps, "flops": server.server_flops,
            "params": {k: v.detach().double().flatten().tolist() for k, v in state.items()}}


def baselines_run(distributed: str = "off") -> dict:
    from _mobillm_models import tiny_llama

    from neurips26.mobillm import DeviceProfile, FedAvgLoRABaseline, planted_task, subset
    from neurips26.mobillm.baselines import _train_side_local

    data, test = planted_task(160, seed=0), planted_task(40, seed=7)
    parts = [subset(data, torch.arange(j, 160, 4)) for j in range(4)]  # 40 rows each: batches of 16, 16, 8
    profiles = [DeviceProfile(1e8 * (j + 1), 1e6, 2e6) for j in range(4)]
    fed = FedAvgLoRABaseline(tiny_llama(), parts, profiles, test, rounds=2, fraction=0.5, rank=2, lr=1e-2,
                             distributed=distributed)
    start = fed.trainer.model.trainable_state()
    curve = fed.run()
    moved = [float((v - start[k]).abs().max()) for k, v in fed.trainer.model.trainable_state().items()]
    torch.manual_seed(0)
    side = SideNetwork(d_side=8, n_layers=2)
    side_start = {k: v.clone() for k, v in side.state_dict().items()}
    aligner = FeatureAligner(3, 10, 2, 8, window=1, norm="layer", init="random")
    g = torch.Generator().manual_seed(5)
    y = torch.randint(2, (24,), generator=g)
    x = torch.randn(24, 3, 10, generator=g) + y[:, None, None].float()
    flops = _train_side_local(aligner, side, x, y, epochs=2, batch_size=8, lr=1e-2, g=g, distributed=distributed)
    state = {**{f"lora.{k}": v for k, v in fed.trainer.model.trainable_state().items()},
             **{f"side.{k}": v for k, v in side.state_dict().items()},
             **{f"aligner.{k}": v for k, v in aligner.state_dict().items()}}
    moved += [float((v - side_start[k]).abs().max()) for k, v in side.state_dict().items()]
    return {"losses": [float(a) for a in curve["accuracy"]] + [flops], "steps": len(curve), "flops": flops,
            "moved": min(max(moved[:-len(side_start)]), max(moved[-len(side_start):])),
            "params": {k: v.detach().double().flatten().tolist() for k, v in state.items()}}


if __name__ == "__main__":
    from _torchrun import worker_main

    mode_of = lambda args: args[0] if args else "ddp"  # noqa: E731
    worker_main(lambda args: baselines_run("ddp") if mode_of(args) == "baselines" else server_run(mode_of(args)))
