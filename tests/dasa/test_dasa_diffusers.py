"""The diffusers attention-processor hook on a WanTransformer3DModel built from a tiny config."""

import pytest
import torch

diffusers = pytest.importorskip("diffusers")

from neurips26.dasa import DASAConfig, DenseKVCache, DynamicKVCache  # noqa: E402
from neurips26.dasa.diffusers_hook import attach_dasa, detach_dasa, wan_rope  # noqa: E402


def _wan(layers: int):
    torch.manual_seed(0)
    return diffusers.WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=4, out_channels=4,
        text_dim=8, freq_dim=8, ffn_dim=16, num_layers=layers, rope_max_seq_len=32).eval()


def _inputs(frames: int = 4, batch: int = 1):
    g = torch.Generator().manual_seed(1)
    return (torch.randn(batch, 4, frames, 8, 8, generator=g), torch.full((batch,), 500),
            torch.randn(batch, 5, 8, generator=g))


def _call(model, x, t, text):
    return model(hidden_states=x, timestep=t, encoder_hidden_states=text, return_dict=False)[0]


def test_rope_offset_zero_matches_wan():
    model = _wan(1)
    x, _, _ = _inputs()
    cos, sin = model.rope(x)
    c2, s2 = wan_rope(model.rope, 0, 4, (4, 4))
    assert torch.equal(cos, c2) and torch.equal(sin, s2)


@torch.no_grad()
def test_cached_chunk_equals_full_forward_one_layer():
    """One block: chunk 1 over the dense cache of chunk 0 = the native forward of both chunks (frames 2-3),
    which needs the absolute RoPE positions of the cached keys."""
    model = _wan(1)
    x, t, text = _inputs()
    full = _call(model, x, t, text)
    stream = attach_dasa(model, DenseKVCache(1))
    stream.begin(0, write=True)
    _call(model, x[:, :, :2], t, text)
    assert stream.policy.num_tokens == 2 * 16
    stream.begin(2)
    out = _call(model, x[:, :, 2:], t, text)
    assert (out - full[:, :, 2:]).abs().max() < 1e-5
    detach_dasa(model, stream)
    assert torch.equal(_call(model, x, t, text), full)


@torch.no_grad()
def test_dasa_keep_all_equals_dense_and_compresses():
    model = _wan(2)
    x, t, text = _inputs(frames=6, batch=2)
    outs, sizes = {}, {}
    for name, policy, cfg in (("dense", DenseKVCache(2), None),
                              ("keep_all", DynamicKVCache(2, DASAConfig(keep_ratio=1.0)), DASAConfig(keep_ratio=1.0)),
                              ("dasa", DynamicKVCache(2, DASAConfig(keep_ratio=0.3)), DASAConfig(keep_ratio=0.3))):
        stream = attach_dasa(model, policy, cfg)
        stream.begin(0, write=True, keyframe=True)
        _call(model, x[:, :, :2], t, text)
        for start in (2, 4):
            chunk = x[:, :, start:start + 2]
            out = _call(model, (stream.begin(start) or chunk), t, text)
            stream.begin(start, write=True, dyn_mask=stream.dynamic_mask(chunk, x[:, :, start - 1]))
            _call(model, chunk, t, text)
        outs[name], sizes[name] = out, policy.num_tokens
        detach_dasa(model, stream)
    assert (outs["keep_all"] - outs["dense"]).abs().max() < 1e-5
    assert sizes["dense"] == sizes["keep_all"] == 6 * 16
    assert sizes["dasa"] < sizes["dense"] and torch.isfinite(outs["dasa"]).all()


@torch.no_grad()
def test_region_path_and_failed_forward_writes_nothing():
    model = _wan(2)
    x, t, text = _inputs()
    cfg = DASAConfig(keep_ratio=0.3)
    policy = DynamicKVCache(2, cfg)
    stream = attach_dasa(model, policy, cfg)
    stream.begin(0, write=True, keyframe=True)
    _call(model, x[:, :, :2], t, text)
    before = [policy.get(i)[0].clone() for i in range(2)]
    stream.begin(2, write=True)
    with pytest.raises(RuntimeError):
        _call(model, x[:, :, 2:], t, text[..., :5])          # wrong text width: fails in block 0's attn2
    assert all(torch.equal(policy.get(i)[0], b) for i, b in enumerate(before))
    # the region path: the grid-aware default on the 4x4 token grid is 1x1 regions; half of them dynamic
    region = (torch.arange(16) % 2 == 0)[None]
    stream.begin(2, region=region)
    stream.stats.clear()
    out = _call(model, x[:, :, 2:], t, text)
    assert torch.isfinite(out).all() and stream.stats["pairs"] > 0
    stream.begin(2, write=True)                               # the retry works
    _call(model, x[:, :, 2:], t, text)
    assert policy.num_tokens == 4 * 16
