"""DASA: Dynamics-Aware Sparse Attention for autoregressive video diffusion (P15, NeurIPS 2026).

Paper: abstract only (arXiv id, body and code not found). Headline: 2.16× faster autoregressive video
generation on VBench "while preserving high visual fidelity".

Why: chunk-wise AR video diffusion transformers (Self-Forcing, CausVid, MAGI-1) attend from every token of the
chunk being generated to a KV cache of every earlier token, although motion is confined to small areas.

How (codec-style; every formula below the abstract's words is **inferred**, see the README):

* (A) :mod:`.dynamics` scores each token's change against the previous frame,
  $s = \\lVert \\hat x_f - \\hat x_{f-1} \\rVert / (\\lVert \\hat x_{f-1} \\rVert + \\epsilon)$, keeps the top-ρ
  per frame and dilates the mask;
* (B) :class:`DynamicKVCache` stores only the dynamic tokens of each generated chunk (keyframes in full);
  a static token is stood for by the latest entry at its position, with a count bias $\\log n$;
* (C) :func:`dasa_attention`: queries of dynamic regions (predicted from the previous chunk) attend to the
  compressed cache and the chunk, static regions to the chunk and the latest keyframe (a per-sequence gather
  + SDPA); :func:`dasa_attention_flex` is the same attention as one ``flex_attention`` call with a
  ``BlockMask`` (queries and keys sorted so empty tiles are skipped; forward, for inference);
* (D) :func:`dynamics_guided_distill`: the DASA student matches the dense teacher with weights $1 + \\lambda\\hat s$.

:mod:`.baselines` has the dense cache, Self-Forcing's rolling window, sink + window, random drop,
a TempCache-style merge and Sparse-VideoGen head masks; :mod:`.model` the tiny pixel-space AR DiT;
:mod:`.video` the moving-sprite videos, PSNR, SSIM and a mini-VBench; :mod:`.diffusers_hook` an attention
processor in diffusers' shape that puts any cache policy behind a diffusers Wan transformer's self-attention.
"""

from .attention import (
    FlexPlan,
    dasa_attention,
    dasa_attention_flex,
    dasa_attention_reference,
    plan_flex,
)
from .baselines import (
    DenseKVCache,
    RandomDropKVCache,
    SinkWindowKVCache,
    TempCacheMerge,
    WindowKVCache,
    svg_head_mask,
)
from .cache import BaseKVCache, DynamicKVCache, KVCachePolicy
from .diffusers_hook import DASAAttnProcessor, DASAStream, attach_dasa, detach_dasa
from .distill import copy_model, dynamics_guided_distill, train_teacher
from .dynamics import DASAConfig, dilate, region_mask, region_scores, token_dynamics, token_mask
from .model import ARVideoDiT, VideoDiTConfig, frame_positions, patchify, unpatchify
from .video import REGIMES, MovingSprites, SpriteVideo, mini_vbench, moving_sprites, psnr, ssim

__all__ = [
    "ARVideoDiT", "BaseKVCache", "DASAAttnProcessor", "DASAStream", "attach_dasa", "detach_dasa",
    "FlexPlan", "dasa_attention_flex", "plan_flex",
    "DASAConfig", "DenseKVCache", "DynamicKVCache", "KVCachePolicy", "MovingSprites",
    "REGIMES", "RandomDropKVCache", "SinkWindowKVCache", "SpriteVideo", "TempCacheMerge", "VideoDiTConfig",
    "WindowKVCache", "copy_model", "dasa_attention", "dasa_attention_reference", "dilate", "dynamics_guided_distill",
    "frame_positions", "mini_vbench", "moving_sprites", "patchify", "psnr", "region_mask", "region_scores", "ssim",
    "svg_head_mask", "token_dynamics", "token_mask", "train_teacher", "unpatchify",
]
