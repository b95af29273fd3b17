"""The tiny AR video DiT: DASA at keep_ratio 1 reproduces the dense rollout; data and metrics; bad input."""

import math

import pytest
import torch

from neurips26.dasa import (
    ARVideoDiT,
    DASAConfig,
    DenseKVCache,
    DynamicKVCache,
    VideoDiTConfig,
    frame_positions,
    moving_sprites,
    patchify,
    psnr,
    ssim,
    unpatchify,
)


def _model():
    torch.manual_seed(0)
    m = ARVideoDiT(VideoDiTConfig(frame_size=32, patch=8, dim=48, depth=2, heads=2))
    for p in m.parameters():                         # untrained but non-trivial (adaLN gates not zero)
        torch.nn.init.normal_(p, std=0.1)
    return m.eval()


def test_keep_ratio_one_full_policy_reproduces_dense_rollout():
    m = _model()
    ctx = torch.rand(2, 2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    dense = m.generate(ctx, 8, policy=DenseKVCache(2), generator=torch.Generator().manual_seed(1))
    cfg = DASAConfig(keep_ratio=1.0, static_policy="full", region_size=(2, 2))
    ours = m.generate(ctx, 8, policy=DynamicKVCache(2, cfg), cfg=cfg, generator=torch.Generator().manual_seed(1))
    assert (ours - dense).abs().max() < 1e-5
    # threshold = -inf is the same as keeping everything
    cfg2 = DASAConfig(keep_ratio=None, threshold=-math.inf, static_policy="full", region_size=(2, 2))
    ours2 = m.generate(ctx, 8, policy=DynamicKVCache(2, cfg2), cfg=cfg2, generator=torch.Generator().manual_seed(1))
    assert (ours2 - dense).abs().max() < 1e-5


def test_cached_chunk_forward_matches_full_sequence_block_causal():
    """Chunk-by-chunk with a dense cache == one pass over all chunks with the block-causal mask (naive)."""
    m = _model()
    x = torch.rand(1, 4, 3, 32, 32)
    cache = DenseKVCache(2)
    outs = [m(x[:, 2 * c:2 * c + 2], 0.0, cache, 2 * c, write={"dyn_mask": None}) for c in range(2)]
    tok = patchify(x, 8)
    pos = frame_positions(0, 4, 4)
    chunk = torch.arange(64) // 32
    mask = chunk[None, :] <= chunk[:, None]
    full = m._run(tok, torch.zeros(1, 64), pos, lambda i: lambda q, k, v: torch.nn.functional.
                  scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert torch.allclose(torch.cat(outs, 1), unpatchify(full, 4, 8), atol=1e-5)


def test_patchify_roundtrip_and_metrics():
    x = torch.rand(2, 3, 3, 16, 16)
    assert torch.equal(unpatchify(patchify(x, 4), 3, 4), x)
    y = x + 0.1
    assert abs(psnr(y, x) - 20.0) < 1e-4                  # MSE 0.01 -> 20 dB
    assert abs(ssim(x, x) - 1.0) < 1e-6 and ssim(torch.rand(1, 3, 16, 16), x[0, :1]) < 0.5


def test_moving_sprites_regimes():
    sp, med = moving_sprites("sparse", 6, 64, 0), moving_sprites("medium", 6, 64, 0)
    assert sp.frames.shape == (6, 3, 64, 64) and 0 <= sp.frames.min() and sp.frames.max() <= 1
    assert sp.sprite_mask.float().mean() < med.sprite_mask.float().mean()
    assert torch.equal(moving_sprites("dense", 4, 32, 3).frames, moving_sprites("dense", 4, 32, 3).frames)


BAD_CFG = [({"keep_ratio": 0.0}, "keep_ratio"), ({"keep_ratio": 1.5}, "keep_ratio"),
           ({"keep_ratio": 0.3, "threshold": 0.1}, "keep_ratio"), ({"keep_ratio": None}, "threshold"),
           ({"dilation": -1}, "dilation"), ({"keyframe_every": 0}, "keyframe_every"),
           ({"region_size": (0, 4)}, "region_size"), ({"static_policy": "x"}, "static_policy")]


@pytest.mark.parametrize("kw,name", BAD_CFG)
def test_config_refuses_bad_values(kw, name):
    with pytest.raises(ValueError, match=name):
        DASAConfig(**kw)


def test_cache_refuses_bad_appends_without_changing_state():
    cache = DynamicKVCache(1)
    k = torch.randn(1, 2, 32, 8)
    cache.append(0, k, k, frame_positions(2, 2, 4), 2)
    before = cache.sizes(0)
    cases = [
        (dict(k=torch.randn(1, 3, 32, 8)), "k"),                             # heads disagree with the cache
        (dict(v=torch.randn(1, 2, 31, 8)), "v"),
        (dict(pos=frame_positions(4, 2, 4)[:, :2]), "pos"),
        (dict(frame_idx=0, pos=frame_positions(0, 2, 4)), "frame_idx"),      # going backwards
        (dict(k=torch.randn(1, 2, 24, 8), v=torch.randn(1, 2, 24, 8), pos=frame_positions(4, 2, 4)[:24]),
         "partial"),
        (dict(k=torch.full((1, 2, 32, 8), float("nan"))), "finite"),
        (dict(dyn_mask=torch.ones(1, 32)), "dyn_mask"),
    ]
    for over, msg in cases:
        args = dict(layer=0, k=k, v=k, pos=frame_positions(4, 2, 4), frame_idx=4, dyn_mask=None)
        args.update(over)
        with pytest.raises(ValueError, match=msg):
            cache.append(**args)
        assert cache.sizes(0) == before


def test_region_mask_refuses_non_dividing_region():
    from neurips26.dasa import region_mask
    with pytest.raises(ValueError, match="region_size"):
        region_mask(torch.rand(1, 36), (6, 6), DASAConfig(region_size=(4, 4)))


def test_generate_refuses_nan_context():
    with pytest.raises(ValueError, match="context"):
        _model().generate(torch.full((1, 2, 3, 32, 32), float("nan")), 4)
