"""The error contract for dasa's public API, on the shared harness: a clear error naming the argument, and the
object the call was made on (cache, model) unchanged after the failed call."""

from __future__ import annotations

import pytest
import torch

from _badinput import BadInput, check_bad_inputs  # tests/ is on sys.path (conftest)
from neurips26.dasa import (
    ARVideoDiT,
    DASAConfig,
    DenseKVCache,
    DynamicKVCache,
    RandomDropKVCache,
    SinkWindowKVCache,
    TempCacheMerge,
    VideoDiTConfig,
    WindowKVCache,
    dasa_attention,
    dilate,
    dynamics_guided_distill,
    frame_positions,
    mini_vbench,
    moving_sprites,
    patchify,
    psnr,
    region_mask,
    ssim,
    svg_head_mask,
    token_dynamics,
    token_mask,
    train_teacher,
    unpatchify,
)

NAN = float("nan")
G = 4  # token grid 4×4 at 32² frames with patch 8


def _model() -> ARVideoDiT:
    torch.manual_seed(0)
    return ARVideoDiT(VideoDiTConfig(frame_size=32, dim=24, depth=1, heads=2))


def _kv(n=32, h=2, d=8, fill=None):
    k = torch.randn(1, h, n, d)
    return k if fill is None else torch.full_like(k, fill)


# ------------------------------------------------------------------ functional ops
FUNCTION_CASES = [
    (token_dynamics, BadInput("prev-nan", args=(torch.full((1, 16, 4), NAN), torch.rand(1, 16, 4)), names="prev")),
    (token_dynamics, BadInput("shapes-differ", args=(torch.rand(1, 16, 4), torch.rand(1, 15, 4)), names="prev")),
    (token_dynamics, BadInput("kind", args=(torch.rand(1, 16, 4), torch.rand(1, 16, 4), "l1"), names="kind")),
    (token_dynamics, BadInput("not-tensor", args=([[0.0]], torch.rand(1, 16, 4)), names="prev")),
    (token_mask, BadInput("scores-nan", args=(torch.full((1, 16), NAN), (G, G), DASAConfig()), names="scores")),
    (token_mask, BadInput("grid-mismatch", args=(torch.rand(1, 16), (3, 5), DASAConfig()), names="grid_hw")),
    (token_mask, BadInput("grid-type", args=(torch.rand(1, 16), 16, DASAConfig()), names="grid_hw")),
    (region_mask, BadInput("region-not-dividing", args=(torch.rand(1, 36), (6, 6), DASAConfig(region_size=(4, 4))),
                           names="region_size")),
    (region_mask, BadInput("scores-1d", args=(torch.rand(16), (G, G), DASAConfig()), names="scores")),
    (dilate, BadInput("radius-negative", args=(torch.zeros(1, 4, 4, dtype=torch.bool), -1), names="radius")),
    (frame_positions, BadInput("frames-0", args=(0, 0, G), names="frames")),
    (frame_positions, BadInput("start-negative", args=(-1, 2, G), names="start")),
    (patchify, BadInput("patch-not-dividing", args=(torch.rand(1, 2, 3, 30, 30), 8), names="patch")),
    (patchify, BadInput("nan", args=(torch.full((1, 2, 3, 32, 32), NAN), 8), names="x")),
    (unpatchify, BadInput("tokens-not-frames", args=(torch.rand(1, 33, 192), 2, 8), names="tokens")),
    (psnr, BadInput("shape", args=(torch.rand(3, 8, 8), torch.rand(3, 8, 9)), names="ref")),
    (psnr, BadInput("nan", args=(torch.full((3, 8, 8), NAN), torch.rand(3, 8, 8)), names="x")),
    (psnr, BadInput("range-0", args=(torch.rand(3, 8, 8), torch.rand(3, 8, 8)), kwargs={"data_range": 0.0},
                    names="data_range")),
    (ssim, BadInput("nan", args=(torch.rand(3, 16, 16), torch.full((3, 16, 16), NAN)), names="ref")),
    (ssim, BadInput("sigma-0", args=(torch.rand(3, 16, 16), torch.rand(3, 16, 16)), kwargs={"sigma": 0.0},
                    names="sigma")),
    (mini_vbench, BadInput("mask-shape", args=(torch.rand(4, 3, 32, 32), torch.ones(31, 32, dtype=torch.bool),
                                               torch.rand(3, 32, 32)), names="static_mask")),
    (mini_vbench, BadInput("video-nan", args=(torch.full((4, 3, 32, 32), NAN), torch.ones(32, 32, dtype=torch.bool),
                                              torch.rand(3, 32, 32)), names="video")),
    (moving_sprites, BadInput("regime", args=("fast", 4), names="regime")),
    (moving_sprites, BadInput("frames-1", args=("sparse", 1), names="num_frames")),
    (moving_sprites, BadInput("size-small", args=("sparse", 4, 8), names="size")),
    (svg_head_mask, BadInput("kind", args=(frame_positions(0, 1, G), frame_positions(0, 1, G), "diagonal"),
                             names="kind")),
    (svg_head_mask, BadInput("pos-shape", args=(torch.zeros(16, 2, dtype=torch.long), frame_positions(0, 1, G),
                                                "spatial"), names="pos_q")),
]


@pytest.mark.parametrize("fn, case", FUNCTION_CASES, ids=lambda v: getattr(v, "id", getattr(v, "__name__", "")))
def test_functions_refuse_bad_input(fn, case):
    check_bad_inputs(fn, case)


# ------------------------------------------------------------------ cache policies: append leaves them unchanged
POLICIES = {
    "dynamic": lambda: DynamicKVCache(1, DASAConfig(region_size=(2, 2))),
    "dense": lambda: DenseKVCache(1),
    "window": lambda: WindowKVCache(1, 2),
    "sink_window": lambda: SinkWindowKVCache(1, 2, sink_frames=1),
    "random": lambda: RandomDropKVCache(1, 0.5, seed=0, cfg=DASAConfig(region_size=(2, 2))),
    "tempcache": lambda: TempCacheMerge(1, 0.5),
}

APPEND_CASES = [
    BadInput("layer-out-of-range", kwargs={"layer": 1}, names="layer"),
    BadInput("heads-disagree", kwargs={"k": _kv(h=3), "v": _kv(h=3)}, names="k"),
    BadInput("v-shape", kwargs={"v": _kv(n=31)}, names="v"),
    BadInput("k-nan", kwargs={"k": _kv(fill=NAN)}, names="k"),
    BadInput("v-inf", kwargs={"v": _kv(fill=float("inf"))}, names="v"),
    BadInput("pos-shape", kwargs={"pos": frame_positions(4, 2, G)[:, :2]}, names="pos"),
    BadInput("frames-backwards", kwargs={"frame_idx": 0, "pos": frame_positions(0, 2, G)}, names="frame_idx"),
    BadInput("partial-chunk", kwargs={"k": _kv(n=24), "v": _kv(n=24), "pos": frame_positions(4, 2, G)[:24]},
             names=("partial", "k")),
    BadInput("dyn-mask-dtype", kwargs={"dyn_mask": torch.ones(1, 32)}, names="dyn_mask"),
    BadInput("dyn-mask-shape", kwargs={"dyn_mask": torch.ones(1, 31, dtype=torch.bool)}, names="dyn_mask"),
]


def _filled(name):
    cache = POLICIES[name]()
    k = torch.randn(1, 2, 32, 8, generator=torch.Generator().manual_seed(1))
    cache.append(0, k, k.clone(), frame_positions(2, 2, G), 2, keyframe=True)
    return cache


@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.parametrize("case", APPEND_CASES, ids=lambda c: c.id)
def test_append_refuses_bad_input_and_keeps_the_cache(name, case):
    cache = _filled(name)
    good = dict(layer=0, k=_kv(), v=_kv(), pos=frame_positions(4, 2, G), frame_idx=4, dyn_mask=None)
    call_case = BadInput(case.id, kwargs={**good, **case.kwargs}, exc=case.exc, names=case.names)
    check_bad_inputs(cache.append, call_case, target=cache)


@pytest.mark.parametrize("name", ["window", "sink_window", "random", "tempcache"])
def test_policy_constructors_refuse_bad_budgets(name):
    bad = {"window": lambda: WindowKVCache(1, 0), "sink_window": lambda: SinkWindowKVCache(1, 2, sink_frames=-1),
           "random": lambda: RandomDropKVCache(1, 1.5), "tempcache": lambda: TempCacheMerge(1, NAN)}[name]
    with pytest.raises(ValueError):
        bad()


# ------------------------------------------------------------------ attention and model
def test_attention_refuses_bad_input():
    cache = _filled("dynamic")
    q = torch.randn(1, 2, 32, 8)
    cfg = DASAConfig(region_size=(2, 2))
    cases = [
        BadInput("q-nan", args=(torch.full_like(q, NAN), q, q, cache, 0, None, cfg), names="q"),
        BadInput("k-shape", args=(q, q[:, :, :31], q, cache, 0, None, cfg), names="k_chunk"),
        BadInput("region-mask-shape", args=(q, q, q, cache, 0, torch.ones(1, 3, dtype=torch.bool), cfg),
                 names="region_mask"),
        BadInput("layer", args=(q, q, q, cache, 5, None, cfg), names="layer"),
    ]
    for case in cases:
        check_bad_inputs(dasa_attention, case, target=cache)


def test_generate_refuses_bad_input_and_keeps_the_model():
    model = _model().eval()
    ctx = moving_sprites("sparse", 2, 32, 0).frames[None]
    cases = [
        BadInput("context-nan", args=(torch.full_like(ctx, NAN), 4), names="context"),
        BadInput("context-size", args=(torch.rand(1, 2, 3, 24, 24), 4), names="context"),
        BadInput("num-frames-partial", args=(ctx, 5), names="num_frames"),
        BadInput("steps-0", args=(ctx, 4), kwargs={"steps": 0}, names="steps"),
    ]
    for case in cases:
        check_bad_inputs(model.generate, case, target=model)


def test_training_entry_points_refuse_bad_input_and_keep_the_model():
    model = _model()
    clips = torch.stack([moving_sprites("sparse", 4, 32, s).frames for s in range(2)])
    for case in [BadInput("steps-0", args=(model, clips), kwargs={"steps": 0}, names="steps"),
                 BadInput("clips-nan", args=(model, torch.full_like(clips, NAN)), kwargs={"steps": 1},
                          names="clips"),
                 BadInput("lr-negative", args=(model, clips), kwargs={"steps": 1, "lr": -1.0}, names="lr"),
                 BadInput("distributed", args=(model, clips), kwargs={"steps": 1, "distributed": "mpi"},
                          names="distributed")]:
        check_bad_inputs(train_teacher, case, target=model)
    student, teacher = _model(), _model()
    ctxs = clips[:, :2]
    for case in [BadInput("steps-0", args=(student, teacher, ctxs, DASAConfig(region_size=(2, 2))),
                          kwargs={"steps": 0}, names="steps"),
                 BadInput("lambda-nan", args=(student, teacher, ctxs, DASAConfig(region_size=(2, 2))),
                          kwargs={"steps": 1, "weight_lambda": NAN}, names="weight_lambda"),
                 BadInput("contexts-nan", args=(student, teacher, torch.full_like(ctxs, NAN),
                                                DASAConfig(region_size=(2, 2))), kwargs={"steps": 1},
                          names="contexts"),
                 BadInput("batch-0", args=(student, teacher, ctxs, DASAConfig(region_size=(2, 2))),
                          kwargs={"steps": 1, "batch": 0}, names="batch")]:
        check_bad_inputs(dynamics_guided_distill, case, target=student)
