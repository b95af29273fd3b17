"""Dynamics-Aware Sparse Attention on an autoregressive video model: attend to fewer past keys, compare with dense.

    .venv/bin/python examples/dasa.py             # ~10 s on a CPU (an untrained toy model: the numbers show
                                                  # the mechanics; the claim check trains a teacher first)
"""

import torch

from neurips26.dasa import (
    ARVideoDiT,
    DASAConfig,
    DenseKVCache,
    DynamicKVCache,
    VideoDiTConfig,
    moving_sprites,
    psnr,
)

torch.manual_seed(0)
model = ARVideoDiT(VideoDiTConfig(frame_size=32, dim=48, depth=2, heads=4)).eval()
cfg = DASAConfig(keep_ratio=0.3, region_size=(4, 4), keyframe_every=4, static_policy="local", count_bias=True)
context = moving_sprites("sparse", 2, 32, seed=0).frames[None]          # [1, 2, 3, 32, 32]: two context frames
stats: dict = {}
sparse = model.generate(context, 8, policy=DynamicKVCache(2, cfg), cfg=cfg, stats=stats,
                        generator=torch.Generator().manual_seed(0))
dense_stats: dict = {}
dense = model.generate(context, 8, policy=DenseKVCache(2), stats=dense_stats,
                       generator=torch.Generator().manual_seed(0))
print(f"query-key pairs attended: DASA {stats['pairs']:,} vs dense {dense_stats.get('pairs', 0):,}")
# an untrained model barely reads its history, so the two videos agree closely; a trained one needs the
# history, which is what the claim check's precondition ("the teacher needs its history") measures
print(f"PSNR of the DASA video against the dense one: {float(psnr(sparse, dense)):.1f} dB")
