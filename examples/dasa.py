"""Dynamics-Aware Sparse Attention on an autoregressive video model: attend to fewer past keys, compare with dense.

    .venv/bin/python examples/dasa.py             # ~10 s on a CPU

The model is untrained (the claim check trains a teacher first), so the PSNR line only shows the mechanics: an
adaLN-Zero model at initialisation ignores its history, and any cache policy reproduces it. The sparsity lines
are what DASA saves with its defaults (keep ratio 0.3; region size and dilation chosen from the 8×8 token grid).
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
model = ARVideoDiT(VideoDiTConfig(frame_size=64, dim=48, depth=2, heads=2)).eval()   # 8×8 tokens per frame
cfg = DASAConfig(keep_ratio=0.3)                        # region_size / dilation: None = from the token grid
print("resolved for the 8x8 grid:", cfg.for_grid((8, 8)).region_size, "regions, dilation",
      cfg.for_grid((8, 8)).dilation)
context = moving_sprites("sparse", 2, 64, seed=0).frames[None]        # [1, 2, 3, 64, 64]: two context frames
cache, stats, dense_stats = DynamicKVCache(2, cfg), {}, {}
sparse = model.generate(context, 16, policy=cache, cfg=cfg, stats=stats, generator=torch.Generator().manual_seed(0))
dense = model.generate(context, 16, policy=DenseKVCache(2), stats=dense_stats,
                       generator=torch.Generator().manual_seed(0))
print(f"query-key pairs attended: DASA {stats['pairs']:,} vs dense {dense_stats['pairs']:,} "
      f"({dense_stats['pairs'] / stats['pairs']:.2f}x fewer)")
print(f"KV tokens cached per layer: DASA {cache.num_tokens} of {16 * 64} ({cache.num_tokens / (16 * 64):.0%})")
print(f"PSNR of the DASA video against the dense one: {float(psnr(sparse, dense)):.1f} dB (untrained model)")
