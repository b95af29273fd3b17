"""DASA caches and attention against independent references (dense attention, brute force, scipy)."""

import math

import numpy as np
import pytest
import torch
from scipy.ndimage import binary_dilation

from neurips26.dasa import (
    DASAConfig,
    DenseKVCache,
    DynamicKVCache,
    RandomDropKVCache,
    SinkWindowKVCache,
    TempCacheMerge,
    WindowKVCache,
    dasa_attention,
    dasa_attention_reference,
    dilate,
    frame_positions,
    region_mask,
    svg_head_mask,
    token_mask,
)

G, P, H, D = 4, 16, 2, 8


def _chunk(frames, gen):
    return torch.randn(2, H, frames * P, D, generator=gen)


def test_compressed_cache_with_copied_keys_equals_dense_attention():
    """Dropped K/V copy their representative exactly -> count-biased attention equals dense attention over
    the full history; B = 2 with different masks (ragged); counts sum to the history length."""
    gen = torch.Generator().manual_seed(0)
    cfg = DASAConfig(static_policy="full")
    dyn, dense = DynamicKVCache(1, cfg), DenseKVCache(1)
    latest_k = torch.randn(2, H, P, D, generator=gen)
    latest_v = torch.randn(2, H, P, D, generator=gen)
    frames = 0
    for c in range(4):
        ks, vs, masks = [], [], []
        for _ in range(2):                              # 2 frames per chunk
            m = torch.rand(2, P, generator=gen) < (0.3 if c else 1.0)
            new_k, new_v = torch.randn(2, H, P, D, generator=gen), torch.randn(2, H, P, D, generator=gen)
            latest_k = torch.where(m[:, None, :, None], new_k, latest_k)
            latest_v = torch.where(m[:, None, :, None], new_v, latest_v)
            ks.append(latest_k.clone()), vs.append(latest_v.clone()), masks.append(m)
        k, v, mask = torch.cat(ks, 2), torch.cat(vs, 2), torch.cat(masks, 1)
        pos = frame_positions(frames, 2, G)
        dyn.append(0, k, v, pos, frames, dyn_mask=mask, keyframe=c == 0)
        dense.append(0, k, v, pos, frames)
        frames += 2
    assert len(set(dyn.sizes(0))) == 2                  # ragged
    assert all(float(c.sum()) == frames * P for c in dyn.counts(0))
    q, kx, vx = (torch.randn(2, H, 2 * P, D, generator=gen) for _ in range(3))
    ours = dasa_attention(q, kx, vx, dyn, 0, None, cfg)
    kd, vd, _, _ = dense.get(0)
    # independent reference: plain softmax over the full dense history and the chunk
    keys, vals = torch.cat([kd, kx], 2), torch.cat([vd, vx], 2)
    ref = torch.softmax(q @ keys.transpose(-1, -2) / math.sqrt(D), -1) @ vals
    assert torch.allclose(ours, ref, atol=1e-5)


def test_all_static_video_grows_only_at_keyframes_and_keeps_positions():
    cfg = DASAConfig(keyframe_every=2)
    cache = DynamicKVCache(2, cfg)
    gen = torch.Generator().manual_seed(1)
    sizes = []
    for c in range(6):
        k, v = _chunk(2, gen), _chunk(2, gen)
        pos = frame_positions(2 * c, 2, G)
        for layer in range(2):
            cache.append(layer, k, v, pos, 2 * c, dyn_mask=torch.zeros(2, 2 * P, dtype=torch.bool),
                         keyframe=c % 2 == 0)
        sizes.append(cache.num_tokens)
        if c % 2 == 0:
            _, _, stored, _ = cache.get(0)
            assert torch.equal(stored[0, -2 * P:], pos)          # original positions, never re-based
    assert sizes == [2 * P, 2 * P, 4 * P, 4 * P, 6 * P, 6 * P]


def test_stored_positions_equal_originals():
    cache = DynamicKVCache(1)
    gen = torch.Generator().manual_seed(2)
    allpos, kept = [], []
    for c in range(3):
        m = torch.rand(2, 2 * P, generator=gen) < 0.4
        pos = frame_positions(2 * c, 2, G)
        cache.append(0, _chunk(2, gen), _chunk(2, gen), pos, 2 * c, dyn_mask=m, keyframe=c == 0)
        allpos.append(pos), kept.append(torch.ones_like(m) if c == 0 else m)
    _, _, stored, logc = cache.get(0)
    pos, keep = torch.cat(allpos), torch.cat(kept, 1)
    for b in range(2):
        n = int(torch.isfinite(logc[b]).sum())
        assert torch.equal(stored[b, :n], pos[keep[b]])


@pytest.mark.parametrize("radius", [0, 1, 2])
def test_dilation_matches_scipy(radius):
    rng = np.random.default_rng(radius)
    m = rng.random((3, 7, 9)) < 0.1
    ours = dilate(torch.from_numpy(m), radius).numpy()
    for b in range(3):
        ref = m[b] if radius == 0 else binary_dilation(m[b], np.ones((3, 3), bool), iterations=radius)
        assert (ours[b] == ref).all()


def test_token_and_region_masks_are_topk_then_dilated():
    scores = torch.zeros(1, 64)
    scores[0, 27] = 5.0                      # (3, 3) on an 8x8 grid
    cfg = DASAConfig(keep_ratio=1 / 64, dilation=1, region_size=(2, 2))
    m = token_mask(scores, (8, 8), cfg).view(8, 8)
    assert m.sum() == 9 and m[2:5, 2:5].all()
    r = region_mask(scores, (8, 8), DASAConfig(keep_ratio=1 / 16, dilation=0, region_size=(2, 2)))
    assert r.sum() == 1 and r[0, 1 * 4 + 1]


@pytest.mark.parametrize("policy", ["local", "skip"])
def test_fast_path_matches_reference_with_regions(policy):
    gen = torch.Generator().manual_seed(3)
    cfg = DASAConfig(static_policy=policy, region_size=(2, 2), keyframe_every=2)
    cache = DynamicKVCache(1, cfg)
    for c in range(3):
        m = torch.rand(2, 2 * P, generator=gen) < 0.3
        cache.append(0, _chunk(2, gen), _chunk(2, gen), frame_positions(2 * c, 2, G), 2 * c, dyn_mask=m,
                     keyframe=c % 2 == 0)
    q, k, v = (_chunk(2, gen) for _ in range(3))
    rm = torch.tensor([[True, False, False, True], [False, False, True, False]])
    stats = {}
    ours = dasa_attention(q, k, v, cache, 0, rm, cfg, stats=stats)
    ref = dasa_attention_reference(q, k, v, cache, 0, rm, cfg)
    assert torch.allclose(ours, ref, atol=1e-5)
    assert stats["pairs"] < 2 * 2 * P * (max(cache.sizes(0)) + 2 * P)


def _fill(cache, chunks=5, seed=4):
    gen = torch.Generator().manual_seed(seed)
    for c in range(chunks):
        k = _chunk(2, gen)
        cache.append(0, k, k.clone(), frame_positions(2 * c, 2, G), 2 * c,
                     dyn_mask=torch.rand(2, 2 * P, generator=gen) < 0.25, keyframe=c == 0)
    return cache


def test_policies_respect_budgets():
    assert _fill(DenseKVCache(1)).num_tokens == 10 * P
    assert _fill(WindowKVCache(1, 3)).num_tokens == 3 * P
    sw = _fill(SinkWindowKVCache(1, 3, sink_frames=2))
    assert sw.num_tokens == 5 * P
    _, _, pos, _ = sw.get(0)
    assert set(pos[0, :, 0].tolist()) == {0, 1, 7, 8, 9}
    # random drop / merge: first chunk full, then ceil(rho * P) per frame
    rd = _fill(RandomDropKVCache(1, 0.25, seed=1))
    assert rd.num_tokens == 2 * P + 8 * math.ceil(0.25 * P)
    tm = _fill(TempCacheMerge(1, 0.25))             # no keyframes: only the very first frame in full
    assert tm.num_tokens == P + 9 * math.ceil(0.25 * P)
    assert all(float(c.sum()) == 10 * P for c in (tm._stores[0].count[b] for b in range(2)))
    dyn = _fill(DynamicKVCache(1))
    assert dyn.nbytes == 2 * H * D * 4 * sum(dyn.sizes(0))


def test_tempcache_merge_is_running_mean():
    cache = TempCacheMerge(1, 1 / P)
    k0 = torch.randn(1, H, P, D)
    cache.append(0, k0, k0.clone(), frame_positions(0, 1, G), 0)
    k1 = k0 + 0.01 * torch.randn(1, H, P, D)
    cache.append(0, k1, k1.clone(), frame_positions(1, 1, G), 1)
    k, _, _, logc = cache.get(0)
    merged = torch.isclose(logc[0], torch.tensor(math.log(2)))
    assert int(merged.sum()) == P - 1
    idx = merged.nonzero().squeeze(1)
    assert torch.allclose(k[0][:, idx], (k0[0][:, idx] + k1[0][:, idx]) / 2, atol=1e-6)


def test_svg_masks_match_brute_force():
    pq, pk = frame_positions(2, 1, 3), frame_positions(0, 3, 3)
    sp, tp = svg_head_mask(pq, pk, "spatial"), svg_head_mask(pq, pk, "temporal")
    for i in range(len(pq)):
        for j in range(len(pk)):
            assert bool(sp[i, j]) == (pq[i, 0] == pk[j, 0])
            assert bool(tp[i, j]) == bool((pq[i, 1:] == pk[j, 1:]).all())
