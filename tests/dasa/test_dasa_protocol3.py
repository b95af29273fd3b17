"""Issue 44: the history precondition at small size, the flex path vs the gather path, all-or-nothing cache
writes, the training guards, grid-aware defaults and the occlusion regime."""

import pytest
import torch

from neurips26.claims import Evidence
from neurips26.dasa import (
    ARVideoDiT,
    DASAConfig,
    DenseKVCache,
    DynamicKVCache,
    RandomDropKVCache,
    SinkWindowKVCache,
    VideoDiTConfig,
    WindowKVCache,
    dasa_attention,
    dasa_attention_flex,
    dynamics_guided_distill,
    frame_positions,
    moving_sprites,
    plan_flex,
    psnr,
    train_teacher,
)
from neurips26.dasa.check import HISTORY
from neurips26.nn.train import NonFiniteLossError


def _model(random_weights: bool = True, size: int = 32, depth: int = 2) -> ARVideoDiT:
    torch.manual_seed(0)
    m = ARVideoDiT(VideoDiTConfig(frame_size=size, patch=8, dim=24, depth=depth, heads=2))
    if random_weights:                       # non-trivial attention (adaLN gates not zero)
        for p in m.parameters():
            torch.nn.init.normal_(p, std=0.2)
    return m.eval()


def _history_gap(model: ARVideoDiT, video: torch.Tensor) -> list[float]:
    """PSNR of previous-chunk-only vs dense rollouts, as the check measures it."""
    d, w = (model.generate(video[:, :2], video.shape[1], policy=pol, generator=torch.Generator().manual_seed(7))
            for pol in (DenseKVCache(model.config.depth), WindowKVCache(model.config.depth, 2)))
    return [psnr(w[i], d[i]) for i in range(video.shape[0])]


def test_history_precondition_separates_a_model_that_reads_history_from_one_that_cannot():
    video = torch.stack([moving_sprites("occlusion", 8, 32, s).frames for s in range(2)])
    # adaLN-Zero at initialisation: every block is the identity, the output cannot depend on the cache
    blind = _history_gap(_model(random_weights=False), video)
    reads = _history_gap(_model(random_weights=True), video)
    gap = HISTORY[0]
    assert min(blind) >= 99.0 and gap.rule(Evidence(values=blind)).label == "not supported"
    assert max(reads) < 35.0 and gap.rule(Evidence(values=reads)).label == "supported"


def test_occlusion_regime_hides_each_uncovered_column_for_two_chunks():
    v = moving_sprites("occlusion", 16, 64, 3)
    assert torch.equal(v.frames, moving_sprites("occlusion", 16, 64, 3).frames)
    dark = (v.frames.amax(1) < 0.06)                      # [T, S, S] bar pixels (sprites are brighter)
    cover = dark.float().mean((1, 2))
    # the bar is in the context frames (1/8 then 2/8 of the frame): a rollout knows where it is and its speed
    assert 0.1 < cover[0] < 0.15 and 0.23 < cover[1] < 0.28
    assert (cover[2:] > 0.1).all()
    # a band uncovered at frame 4 (first frame of chunk 2) was hidden in the whole previous chunk (frames 2-3)
    # and visible in the context (frame 0): only a cache reaching two chunks back holds it
    back = ~dark[4] & dark[2] & dark[3] & ~dark[0]
    assert back.float().mean() > 0.1


def _filled_cache(cls=DynamicKVCache, b=2, h=2, d=6, grid=4, chunks=4, **kw):
    torch.manual_seed(1)
    cfg = DASAConfig(keep_ratio=0.3, region_size=(2, 2), dilation=0)
    cache = cls(1, cfg=cfg, **kw) if cls is not DenseKVCache else cls(1)
    p = grid * grid
    for c in range(chunks):
        k, v = torch.randn(b, h, 2 * p, d), torch.randn(b, h, 2 * p, d)
        dyn = torch.rand(b, 2 * p) < torch.linspace(0.2, 0.6, b)[:, None]     # ragged: rows differ
        cache.append(0, k, v, frame_positions(2 * c, 2, grid), 2 * c, dyn, keyframe=c == 0)
    return cache, cfg


@pytest.mark.parametrize("policy", ["local", "skip", "full"])
@pytest.mark.parametrize("count_bias", [True, False])
def test_flex_path_equals_gather_path(policy, count_bias):
    cache, cfg = _filled_cache()                      # ragged over the batch, counts > 1, a keyframe
    cfg = DASAConfig(keep_ratio=0.3, region_size=(2, 2), dilation=0, static_policy=policy, count_bias=count_bias)
    cache.cfg = cfg
    assert len(set(cache.sizes(0))) > 1
    q, k, v = (torch.randn(2, 2, 32, 6) for _ in range(3))
    rm = torch.tensor([[True, False, False, True], [False, False, True, False]])
    for region in (rm, None):
        s1, s2 = {}, {}
        a = dasa_attention(q, k, v, cache, 0, region, cfg, stats=s1)
        b = dasa_attention_flex(q, k, v, cache, 0, region, cfg, stats=s2)
        assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()
        assert s1["pairs"] == s2["pairs"]
    plan = plan_flex(cache, 0, rm, cfg, 32)
    assert torch.allclose(dasa_attention_flex(q, k, v, cache, 0, rm, cfg, plan=plan),
                          dasa_attention(q, k, v, cache, 0, rm, cfg), atol=1e-5)


def test_flex_backend_rollout_equals_gather_rollout():
    m = _model()
    ctx = moving_sprites("occlusion", 2, 32, 0).frames[None]
    cfg = DASAConfig(keep_ratio=0.3)
    a, b = (m.generate(ctx, 6, policy=DynamicKVCache(2, cfg), cfg=cfg, backend=be,
                       generator=torch.Generator().manual_seed(0)) for be in ("gather", "flex"))
    assert (a - b).abs().max() < 1e-4


def test_failed_forward_writes_nothing_into_any_layer():
    m = _model()
    cache = DenseKVCache(2)
    x = torch.rand(1, 2, 3, 32, 32)
    m(x, 0.0, cache, 0, write={"dyn_mask": None, "keyframe": True})
    before = [cache.sizes(i) for i in range(2)]
    orig = m.blocks[1].forward

    def boom(*a, **k):
        raise RuntimeError("layer 1 fails")

    m.blocks[1].forward = boom
    with pytest.raises(RuntimeError, match="layer 1 fails"):
        m(x, 0.0, cache, 2, write={"dyn_mask": None})
    assert [cache.sizes(i) for i in range(2)] == before
    m.blocks[1].forward = orig
    m(x, 0.0, cache, 2, write={"dyn_mask": None})          # the retry works (no "frame_idx goes backwards")
    assert cache.sizes(0) == cache.sizes(1) == [64]
    # a write refused by validation (bad dyn_mask) also leaves every layer untouched
    with pytest.raises(ValueError, match="dyn_mask"):
        m(x, 0.0, cache, 4, write={"dyn_mask": torch.ones(1, 3, dtype=torch.bool)})
    assert cache.sizes(0) == cache.sizes(1) == [64]


def test_train_teacher_stops_on_non_finite_loss_and_restores_weights_and_mode():
    m = _model(random_weights=False)
    clips = torch.stack([moving_sprites("sparse", 4, 32, s).frames for s in range(2)])
    before = {k: v.clone() for k, v in m.state_dict().items()}
    m.eval()
    with pytest.raises(NonFiniteLossError):
        train_teacher(m, clips, steps=60, batch=2, lr=1e6)
    assert not m.training and all(torch.equal(before[k], v) for k, v in m.state_dict().items())


def test_distill_guard_restores_student():
    teacher = _model(depth=1)
    student = _model(depth=1)
    ctx = torch.stack([moving_sprites("medium", 2, 32, s).frames for s in range(2)])
    before = {k: v.clone() for k, v in student.state_dict().items()}
    calls = []

    def nan_on_third_training_forward(module, inputs, output):
        if torch.is_grad_enabled():
            calls.append(1)
            if len(calls) >= 3:                   # two optimizer steps have changed the weights by then
                return output * float("nan")
        return output

    hook = student.out.register_forward_hook(nan_on_third_training_forward)
    with pytest.raises(NonFiniteLossError, match="step 2"):
        dynamics_guided_distill(student, teacher, ctx, DASAConfig(), steps=10, lr=1e-2, num_frames=4)
    hook.remove()
    assert not student.training and all(torch.equal(before[k], v) for k, v in student.state_dict().items())
    res = dynamics_guided_distill(student, teacher, ctx, DASAConfig(), steps=3, num_frames=4)
    assert len(res["losses"]) == 3 and not student.training


@pytest.mark.parametrize("grid,region,dil", [((8, 8), (2, 2), 0), ((16, 16), (4, 4), 0), ((30, 52), (3, 4), 1),
                                             ((4, 4), (1, 1), 0), ((64, 64), (4, 4), 1)])
def test_grid_aware_defaults(grid, region, dil):
    cfg = DASAConfig().for_grid(grid)
    assert cfg.region_size == region and cfg.dilation == dil
    fixed = DASAConfig(region_size=(4, 4), dilation=1)
    assert fixed.for_grid(grid) is fixed


def test_default_config_leaves_real_sparsity_on_an_8x8_grid():
    """The issue's README case: the defaults must not mark (nearly) the whole frame dynamic."""
    m = _model(size=64)
    ctx = moving_sprites("sparse", 2, 64, 0).frames[None]
    cfg = DASAConfig(keep_ratio=0.3)
    pol, st, sd = DynamicKVCache(2, cfg), {}, {}
    m.generate(ctx, 16, policy=pol, cfg=cfg, stats=st, generator=torch.Generator().manual_seed(0))
    m.generate(ctx, 16, policy=DenseKVCache(2), stats=sd, generator=torch.Generator().manual_seed(0))
    assert sd["pairs"] / st["pairs"] > 1.8 and pol.num_tokens < 0.6 * 16 * 64


def test_random_region_policy_keeps_the_region_count_and_sink_window_exposes_its_sink():
    m = _model()
    ctx = moving_sprites("medium", 2, 32, 0).frames[None]
    cfg = DASAConfig(keep_ratio=0.3, region_size=(1, 1))
    sd, sr = {}, {}
    m.generate(ctx, 6, policy=DynamicKVCache(2, cfg), cfg=cfg, stats=sd, generator=torch.Generator().manual_seed(0))
    m.generate(ctx, 6, policy=RandomDropKVCache(2, 0.3, cfg=cfg), cfg=cfg, stats=sr, region_policy="random",
               generator=torch.Generator().manual_seed(0))
    assert abs(sr["pairs"] / sd["pairs"] - 1) < 0.25
    sink = SinkWindowKVCache(1, 2, sink_frames=2)
    for c in range(3):
        sink.append(0, torch.randn(1, 2, 32, 6), torch.randn(1, 2, 32, 6), frame_positions(2 * c, 2, 4), 2 * c)
    assert sink.keyframe_mask(0).sum() == 32 and sink.sizes(0) == [64]
    with pytest.raises(ValueError, match="region_policy"):
        m.generate(ctx, 4, region_policy="nope")
