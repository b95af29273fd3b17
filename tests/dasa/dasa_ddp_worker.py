"""dasa's two trainers (:func:`train_teacher`, :func:`dynamics_guided_distill`) on a tiny network, shared by the
2-process test and its 1-process reference.

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/dasa/dasa_ddp_worker.py OUT.json MODE...

MODE: ``ddp`` or ``fsdp`` (one result per mode in OUT.json, written by rank 0).
"""

from __future__ import annotations

import torch

from neurips26.dasa import (
    ARVideoDiT,
    DASAConfig,
    VideoDiTConfig,
    dynamics_guided_distill,
    moving_sprites,
    train_teacher,
)
from neurips26.nn.train import full_state_dict

CONFIG = dict(frame_size=16, patch=4, dim=12, depth=1, heads=1)
DASA = dict(keep_ratio=0.3, region_size=(1, 1), static_policy="skip")   # a student that differs from dense


def _model(seed: int) -> ARVideoDiT:
    torch.manual_seed(seed)
    return ARVideoDiT(VideoDiTConfig(**CONFIG))


def _params(model: ARVideoDiT) -> dict:
    return {k: v.detach().double().flatten().tolist() for k, v in full_state_dict(model).items()}


def run(distributed: str = "off") -> dict:
    clips = torch.stack([moving_sprites("medium", 6, 16, s).frames for s in range(4)])
    model = _model(0)
    start = _params(model)
    teacher_losses = train_teacher(model, clips[:, :4], steps=3, batch=4, lr=1e-2, seed=0, distributed=distributed)
    teacher, student = _model(0), _model(1)          # a fixed teacher (the trained one may be FSDP-sharded)
    student_start = _params(student)
    res = dynamics_guided_distill(student, teacher, clips[:, :2], DASAConfig(**DASA), steps=3, lr=1e-2,
                                  num_frames=6, batch=2, seed=0, distributed=distributed)
    return {"teacher_losses": teacher_losses, "teacher_start": start, "teacher": _params(model),
            "distill_losses": res["losses"], "student_start": student_start, "student": _params(student)}


if __name__ == "__main__":
    from _torchrun import worker_main

    worker_main(lambda modes: {mode: run(mode) for mode in modes})
