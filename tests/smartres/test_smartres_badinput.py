"""smartres' error contract (issue 16): every public entry point refuses bad input by name (NaN included),
never hangs, and a failed call leaves the modules exactly as they were."""

import math

import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.smartres import (
    FusionLM,
    MiniGroundingMLLM,
    MLLMConfig,
    ResolutionRouter,
    SmartRes,
    SyntheticEgoGrounding,
    ViT,
    bce_routing_loss,
    bipartite_merge,
    box_iou,
    build_order_preserving_sequence,
    fastv_prune,
    focal_routing_loss,
    foreground_recall_at_k,
    grounding_accuracy,
    margin_routing_loss,
    paired_iou,
    region_labels,
    run_fastv,
    run_full,
    run_global_selector,
    run_low,
    run_smartres,
    run_sparsevlm,
    run_tome,
    run_visionzip,
    select_regions,
    sparsevlm_prune,
    token_centres,
    tome_merge,
    visionzip_compress,
)

pytestmark = pytest.mark.timeout(30)
NAN = math.nan
CFG = MLLMConfig(image_size=32, patch=8, dim=16, heads=2, vit_blocks=1, lm_blocks=2, region_px=16)


def _model():
    torch.manual_seed(0)
    return MiniGroundingMLLM(CFG)


def _smartres(model):
    torch.manual_seed(1)
    return SmartRes(model, ResolutionRouter(CFG.dim, 2 * CFG.dim, hidden=8), region_px=16)


IMG = torch.rand(2, 3, 32, 32)
IMG_NAN = IMG.clone()
IMG_NAN[0, 0, 0, 0] = NAN
Q = torch.tensor([[3, 1], [7, 0]])

IMAGE_CASES = [
    BadInput("img-nan", (IMG_NAN, Q), names="images"),
    BadInput("img-size", (torch.rand(2, 3, 16, 16), Q), names="images"),
    BadInput("img-3d", (IMG[0], Q), names="images"),
    BadInput("img-int", (IMG.long(), Q), names="images"),
    BadInput("img-list", (IMG.tolist(), Q), names="images"),
    BadInput("q-digit", (IMG, torch.tensor([[10, 1], [7, 0]])), names="query"),
    BadInput("q-colour", (IMG, torch.tensor([[3, -1], [7, 0]])), names="query"),
    BadInput("q-shape", (IMG, Q[:, :1]), names="query"),
    BadInput("q-rows", (IMG, Q[:1]), names="query"),
    BadInput("q-float", (IMG, Q.float()), names="query"),
    BadInput("q-list", (IMG, [[3, 1], [7, 0]]), names="query"),
]

RUNS = {
    "full": lambda m, *a, **k: run_full(m, *a, **k),
    "low": lambda m, *a, **k: run_low(m, *a, **k),
    "smartres": lambda m, *a, **k: run_smartres(_smartres(m), *a, **k),
    "fastv": lambda m, *a, **k: run_fastv(m, *a, keep=8, **k),
    "sparsevlm": lambda m, *a, **k: run_sparsevlm(m, *a, keep=6, recycle=2, **k),
    "visionzip": lambda m, *a, **k: run_visionzip(m, *a, n_dominant=6, n_contextual=2, **k),
    "tome": lambda m, *a, **k: run_tome(m, *a, target=10, **k),
    "global": lambda m, *a, **k: run_global_selector(m, *a, threshold=0.5, **k),
}


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.parametrize("case", IMAGE_CASES, ids=lambda c: c.id)
def test_methods_refuse_bad_images_and_queries(run, case):
    model = _model()
    check_bad_inputs(lambda *a: RUNS[run](model, *a), case, target=model)


@pytest.mark.parametrize("call,case", [
    (run_fastv, BadInput("keep-0", (IMG, Q), {"keep": 0}, names="keep")),
    (run_fastv, BadInput("keep-big", (IMG, Q), {"keep": 17}, names="keep")),
    (run_fastv, BadInput("layer", (IMG, Q), {"keep": 4, "layer": 5}, names="layer")),
    (run_sparsevlm, BadInput("recycle-neg", (IMG, Q), {"keep": 4, "recycle": -1}, names="recycle")),
    (run_sparsevlm, BadInput("keep+recycle", (IMG, Q), {"keep": 12, "recycle": 8}, names="keep")),
    (run_visionzip, BadInput("dominant-0", (IMG, Q), {"n_dominant": 0, "n_contextual": 2}, names="n_dominant")),
    (run_visionzip, BadInput("contextual-neg", (IMG, Q), {"n_dominant": 4, "n_contextual": -1},
                             names="n_contextual")),
    (run_tome, BadInput("target-0", (IMG, Q), {"target": 0}, names="target")),
    (run_tome, BadInput("target-big", (IMG, Q), {"target": 17}, names="target")),
    (run_global_selector, BadInput("threshold-nan", (IMG, Q), {"threshold": NAN}, names="threshold")),
    (run_global_selector, BadInput("threshold-inf", (IMG, Q), {"threshold": math.inf}, names="threshold")),
    (run_global_selector, BadInput("threshold-str", (IMG, Q), {"threshold": "0.5"}, names="threshold")),
], ids=lambda v: getattr(v, "id", getattr(v, "__name__", "")))
def test_method_budgets_refused(call, case):
    model = _model()
    check_bad_inputs(lambda *a, **k: call(model, *a, **k), case, target=model)


def test_run_smartres_and_smartres_refuse():
    model = _model()
    check_bad_inputs(run_smartres, BadInput("not-smartres", (model, IMG, Q), names="smartres"))
    router = ResolutionRouter(CFG.dim, 2 * CFG.dim, hidden=8)
    for kw, name in [({"lowres_scale": 0.25}, "lowres_scale"), ({"region_px": 32}, "region_px"),
                     ({"threshold": 1.0}, "threshold"), ({"k_min": 5}, "k_min"), ({"k_max": 0}, "k_max"),
                     ({"k_min": 3, "k_max": 2}, "k_max")]:
        check_bad_inputs(SmartRes, BadInput(name, (model, router), {"region_px": 16, **kw}, names=name),
                         targets=[model, router])
    check_bad_inputs(SmartRes, BadInput("encoder", ("vit", router), names="vision_encoder"))
    check_bad_inputs(SmartRes, BadInput("router", (model, "mlp"), names="router"))
    sr = _smartres(model)
    qe = model.lm.query_embedding(Q)
    for case in [BadInput("qe-nan", (IMG, torch.full_like(qe, NAN)), names="query_emb"),
                 BadInput("qe-width", (IMG, qe[:, :3]), names="query_emb"),
                 BadInput("img-nan", (IMG_NAN, qe), names="images")]:
        check_bad_inputs(sr.encode, case, target=sr)


# ------------------------------------------------------------------ model pieces
@pytest.mark.parametrize("kw,name", [
    ({"image_size": 0}, "image_size"), ({"patch": 3}, "patch"), ({"dim": 18}, "dim"), ({"heads": 0}, "heads"),
    ({"dim": 20, "heads": 3}, "heads"), ({"vit_blocks": 1.5}, "vit_blocks"), ({"lm_blocks": -1}, "lm_blocks"),
    ({"region_px": 12}, "region_px"), ({"lowres_scale": 0.0}, "lowres_scale"),
    ({"lowres_scale": NAN}, "lowres_scale"), ({"lowres_scale": 1.5}, "lowres_scale"),
], ids=str)
def test_config_refuses(kw, name):
    base = dict(image_size=32, patch=8, dim=16, heads=2, vit_blocks=1, lm_blocks=2, region_px=16)
    check_bad_inputs(MLLMConfig, BadInput(name, (), {**base, **kw}, names=name))


def test_module_constructors_refuse():
    for cls in (ViT, FusionLM, MiniGroundingMLLM):
        check_bad_inputs(cls, BadInput(cls.__name__, ({"dim": 16},), names="config"))
    for args, name in [((0, 4), "feat_dim"), ((4, 0), "query_dim"), ((4, 4, 0), "hidden"), ((4.0, 4), "feat_dim")]:
        check_bad_inputs(ResolutionRouter, BadInput(name, args, names=name))


def test_model_methods_refuse_and_keep_state():
    model = _model()
    seq = model.encode_full(IMG)
    ids = [torch.tensor([0, 3]), torch.tensor([1])]
    cases = [
        (model.encode_full, BadInput("nan", (IMG_NAN,), names="images")),
        (model.encode_low, BadInput("nan", (IMG_NAN,), names="images")),
        (model.full_inputs, BadInput("nan", (IMG_NAN,), names="images")),
        (model.low_sequence, BadInput("nan", (IMG_NAN,), names="images")),
        (model.encode_regions, BadInput("ids-out", (IMG, [torch.tensor([0, 4]), torch.tensor([1])]),
                                        names="region_ids")),
        (model.encode_regions, BadInput("ids-repeat", (IMG, [torch.tensor([1, 1]), torch.tensor([1])]),
                                        names="region_ids")),
        (model.encode_regions, BadInput("ids-count", (IMG, ids[:1]), names="region_ids")),
        (model.encode_regions, BadInput("ids-float", (IMG, [torch.tensor([0.0]), torch.tensor([1])]),
                                        names="region_ids")),
        (model.encode_regions, BadInput("img-nan", (IMG_NAN, ids), names="images")),
        (model.sequence_from_regions, BadInput("ids-out", (IMG, [torch.tensor([9]), torch.tensor([1])]),
                                               names="region_ids")),
        (model.ground, BadInput("q-digit", (seq, torch.tensor([[11, 0], [1, 1]])), names="query")),
        (model.ground, BadInput("seq", ("seq", Q), names="seq")),
        (model.ground, BadInput("q-rows", (seq, Q[:1]), names="query")),
        (model.loss, BadInput("boxes-nan", (seq, Q, torch.full((2, 4), NAN)), names="boxes")),
        (model.loss, BadInput("boxes-shape", (seq, Q, torch.zeros(2, 3)), names="boxes")),
        (model.loss, BadInput("boxes-rows", (seq, Q, torch.zeros(3, 4)), names="boxes")),
        (model.lm.query_tokens, BadInput("q-digit", (torch.tensor([[10, 0]]),), names="query")),
        (model.lm.query_embedding, BadInput("q-colour", (torch.tensor([[1, 99]]),), names="query")),
        (model.vit, BadInput("x-nan", (torch.full((1, 4, 16), NAN),), names="x")),
        (model.vit, BadInput("x-width", (torch.zeros(1, 4, 8),), names="x")),
        (model.vit, BadInput("tome_r-len", (torch.zeros(1, 4, 16),), {"tome_r": [1, 1]}, names="tome_r")),
        (model.vit, BadInput("tome_r-neg", (torch.zeros(1, 4, 16),), {"tome_r": [-1]}, names="tome_r")),
        (model.vit, BadInput("extra-shape", (torch.zeros(1, 4, 16),), {"tome_r": [1], "extra": torch.zeros(1, 3, 3)},
                             names="extra")),
        (model.vit.embed, BadInput("pixels-nan", (torch.full((1, 3, 8, 8), NAN), torch.zeros(1, 2), 0),
                                   names="pixels")),
        (model.vit.embed, BadInput("pos-len", (torch.zeros(1, 3, 8, 8), torch.zeros(2, 2), 0), names="pos")),
        (model.vit.embed, BadInput("scale", (torch.zeros(1, 3, 8, 8), torch.zeros(1, 2), 2), names="scale")),
    ]
    for call, case in cases:
        check_bad_inputs(call, case, target=model)


# ------------------------------------------------------------------ router, losses, selection
LOGITS = torch.randn(2, 4)
FG = torch.tensor([[1, 0, 0, 1], [0, 1, 0, 0]])
LOSS_CASES = [
    BadInput("nan", (torch.full((2, 4), NAN), FG), names="logits"),
    BadInput("shape", (LOGITS, FG[:, :3]), names="fg_mask"),
    BadInput("mask-2", (LOGITS, FG * 2), names="fg_mask"),
    BadInput("no-positive", (LOGITS, torch.tensor([[0, 0, 0, 0], [0, 1, 0, 0]])), names="fg_mask"),
    BadInput("no-negative", (LOGITS, torch.tensor([[1, 1, 1, 1], [0, 1, 0, 0]])), names="fg_mask"),
    BadInput("1-d", (LOGITS[0], FG[0]), names="logits"),
    BadInput("mask-list", (LOGITS, FG.tolist()), names="fg_mask"),
]


@pytest.mark.parametrize("loss", [bce_routing_loss, focal_routing_loss, margin_routing_loss],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", LOSS_CASES, ids=lambda c: c.id)
def test_routing_losses_refuse(loss, case):
    check_bad_inputs(loss, case)


@pytest.mark.parametrize("fn,kw,name", [
    (bce_routing_loss, {"pos_weight": 0.0}, "pos_weight"), (bce_routing_loss, {"pos_weight": "balanced"}, "pos_weight"),
    (bce_routing_loss, {"pos_weight": NAN}, "pos_weight"), (focal_routing_loss, {"gamma": -1.0}, "gamma"),
    (focal_routing_loss, {"alpha": 1.5}, "alpha"), (focal_routing_loss, {"alpha": NAN}, "alpha"),
    (margin_routing_loss, {"margin": -0.5}, "margin"), (margin_routing_loss, {"lam": NAN}, "lam"),
    (margin_routing_loss, {"hard_negatives": 0}, "hard_negatives"),
], ids=str)
def test_routing_loss_parameters_refused(fn, kw, name):
    check_bad_inputs(fn, BadInput(name, (LOGITS, FG), kw, names=name))


@pytest.mark.parametrize("case", [
    BadInput("nan", (torch.full((2, 4), NAN),), names="logits"),
    BadInput("threshold-0", (LOGITS, 0.0), names="threshold"),
    BadInput("threshold-1", (LOGITS, 1.0), names="threshold"),
    BadInput("k_min-big", (LOGITS, 0.5, 5), names="k_min"),
    BadInput("k_max<k_min", (LOGITS, 0.5, 3, 2), names="k_max"),
    BadInput("k_max-0", (LOGITS, 0.5, 0, 0), names="k_max"),
], ids=lambda c: c.id)
def test_select_regions_refuses(case):
    check_bad_inputs(select_regions, case)


@pytest.mark.parametrize("case", [
    BadInput("k-0", (LOGITS, FG, 0), names="k"), BadInput("k-big", (LOGITS, FG, 5), names="k"),
    BadInput("no-fg", (LOGITS, torch.zeros(2, 4, dtype=torch.long), 1), names="fg_mask"),
    BadInput("nan", (torch.full((2, 4), NAN), FG, 1), names="logits"),
], ids=lambda c: c.id)
def test_recall_refuses(case):
    check_bad_inputs(foreground_recall_at_k, case)


def test_router_forward_refuses_and_keeps_state():
    router = ResolutionRouter(16, 32, hidden=8)
    tok, qe = torch.randn(2, 4, 16), torch.randn(2, 32)
    for case in [BadInput("tokens-nan", (torch.full((2, 4, 16), NAN), (2, 2), qe, (2, 2)), names="low_tokens"),
                 BadInput("tokens-width", (tok[..., :8], (2, 2), qe, (2, 2)), names="low_tokens"),
                 BadInput("grid-mismatch", (tok, (3, 3), qe, (1, 1)), names="low_grid"),
                 BadInput("grid-zero", (tok, (2, 2), qe, (0, 0)), names="region_grid"),
                 BadInput("grid-undivisible", (tok, (2, 2), qe, (3, 1)), names="region_grid"),
                 BadInput("grid-type", (tok, 4, qe, (2, 2)), names="low_grid"),
                 BadInput("qe-rows", (tok, (2, 2), qe[:1], (2, 2)), names="query_emb"),
                 BadInput("qe-inf", (tok, (2, 2), torch.full((2, 32), math.inf), (2, 2)), names="query_emb")]:
        check_bad_inputs(router, case, target=router)


# ------------------------------------------------------------------ token reduction primitives
X3 = torch.randn(2, 8, 4)


@pytest.mark.parametrize("case", [
    BadInput("x-nan", (torch.full((2, 8, 4), NAN), 2), names="x"),
    BadInput("x-2d", (X3[0], 2), names="x"),
    BadInput("r-big", (X3, 5), names="r"),
    BadInput("r-neg", (X3, -1), names="r"),
    BadInput("size-shape", (X3, 2, torch.ones(2, 7)), names="size"),
    BadInput("size-zero", (X3, 2, torch.zeros(2, 8)), names="size"),
    BadInput("size-nan", (X3, 2, torch.full((2, 8), NAN)), names="size"),
    BadInput("size-list", (X3, 2, [[1.0] * 8] * 2), names="size"),
], ids=lambda c: c.id)
def test_tome_merge_refuses(case):
    check_bad_inputs(tome_merge, case)


@pytest.mark.parametrize("case", [
    BadInput("metric-nan", (torch.full((2, 8, 3), NAN), X3, torch.ones(2, 8), 2), names="metric"),
    BadInput("metric-rows", (torch.randn(2, 7, 3), X3, torch.ones(2, 8), 2), names="metric"),
    BadInput("x-nan", (torch.randn(2, 8, 3), torch.full((2, 8, 4), NAN), torch.ones(2, 8), 2), names="x"),
    BadInput("size-shape", (torch.randn(2, 8, 3), X3, torch.ones(8), 2), names="size"),
    BadInput("size-neg", (torch.randn(2, 8, 3), X3, -torch.ones(2, 8), 2), names="size"),
    BadInput("r-float", (torch.randn(2, 8, 3), X3, torch.ones(2, 8), 1.5), names="r"),
    BadInput("extra-shape", (torch.randn(2, 8, 3), X3, torch.ones(2, 8), 2, torch.zeros(2, 7, 3)), names="extra"),
    BadInput("extra-nan", (torch.randn(2, 8, 3), X3, torch.ones(2, 8), 2, torch.full((2, 8, 3), NAN)),
             names="extra"),
], ids=lambda c: c.id)
def test_bipartite_merge_refuses(case):
    check_bad_inputs(bipartite_merge, case)


@pytest.mark.parametrize("fn,case", [
    (fastv_prune, BadInput("nan", (torch.full((2, 8, 4), NAN), torch.rand(2, 8), 2), names="hidden")),
    (fastv_prune, BadInput("attn-nan", (X3, torch.full((2, 8), NAN), 2), names="attn_from_query")),
    (fastv_prune, BadInput("keep-big", (X3, torch.rand(2, 8), 9), names="keep")),
    (fastv_prune, BadInput("attn-shape", (X3, torch.rand(2, 7), 2), names="attn_from_query")),
    (sparsevlm_prune, BadInput("attn-shape", (X3, torch.randn(2, 3, 4), torch.rand(2, 3, 7), 2), names="attn")),
    (sparsevlm_prune, BadInput("text-nan", (X3, torch.full((2, 3, 4), NAN), torch.rand(2, 3, 8), 2), names="text")),
    (sparsevlm_prune, BadInput("recycle", (X3, torch.randn(2, 3, 4), torch.rand(2, 3, 8), 6, 3), names="recycle")),
    (visionzip_compress, BadInput("cls-nan", (X3, torch.full((2, 8), NAN), 2, 2), names="cls_attn")),
    (visionzip_compress, BadInput("ctx", (X3, torch.rand(2, 8), 6, 3), names="n_contextual")),
    (visionzip_compress, BadInput("dom-0", (X3, torch.rand(2, 8), 0, 3), names="n_dominant")),
], ids=lambda v: getattr(v, "id", getattr(v, "__name__", "")))
def test_pruning_primitives_refuse(fn, case):
    check_bad_inputs(fn, case)


# ------------------------------------------------------------------ boxes and metrics
BOX = torch.tensor([[0.0, 0.0, 4.0, 4.0], [1.0, 1.0, 3.0, 5.0]])


@pytest.mark.parametrize("fn", [box_iou, paired_iou, grounding_accuracy], ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", [
    BadInput("x2<x1", (torch.tensor([[4.0, 0, 1, 4], [0, 0, 1, 1]]), BOX), names="a"),
    BadInput("nan", (torch.full((2, 4), NAN), BOX), names=("a", "pred")),
    BadInput("shape", (BOX[:, :3], BOX), names=("a", "pred")),
    BadInput("list", (BOX.tolist(), BOX), names=("a", "pred")),
], ids=lambda c: c.id)
def test_box_metrics_refuse(fn, case):
    names = case.names if case.id != "x2<x1" else ("a", "pred")
    check_bad_inputs(fn, BadInput(case.id, case.args, names=names))


def test_accuracy_and_pairs_refuse():
    for t in (0.0, 1.5, NAN, "0.5"):
        check_bad_inputs(grounding_accuracy, BadInput(f"t={t!r}", (BOX, BOX, t), names="thresh"))
    check_bad_inputs(paired_iou, BadInput("rows", (BOX, BOX[:1]), names="pred"))
    check_bad_inputs(grounding_accuracy, BadInput("empty", (BOX[:0], BOX[:0]), names="pred"))


@pytest.mark.parametrize("case", [
    BadInput("boxes-nan", (torch.full((1, 4), NAN), 32, (2, 2)), names="boxes"),
    BadInput("size-0", (BOX, 0, (2, 2)), names="image_size"),
    BadInput("size-float", (BOX, 32.0, (2, 2)), names="image_size"),
    BadInput("grid-0", (BOX, 32, (0, 2)), names="region_grid"),
    BadInput("grid-int", (BOX, 32, 2), names="region_grid"),
], ids=lambda c: c.id)
def test_region_labels_refuses(case):
    check_bad_inputs(region_labels, case)


@pytest.mark.parametrize("case", [
    BadInput("rows-0", (0, 2, 8.0), names="rows"), BadInput("cols-float", (2, 2.0, 8.0), names="cols"),
    BadInput("footprint-nan", (2, 2, NAN), names="footprint"),
    BadInput("footprint-0", (2, 2, 0.0), names="footprint"),
    BadInput("x0-inf", (2, 2, 8.0, math.inf), names="x0"), BadInput("y0-nan", (2, 2, 8.0, 0.0, NAN), names="y0"),
], ids=lambda c: c.id)
def test_token_centres_refuses(case):
    check_bad_inputs(token_centres, case)


def test_build_sequence_refuses():
    low, pos = torch.randn(2, 4, 16), torch.rand(4, 2)
    rt, rp = [torch.randn(1, 4, 16), torch.randn(2, 4, 16)], [torch.rand(1, 4, 2), torch.rand(2, 4, 2)]
    ids = [torch.tensor([0]), torch.tensor([2, 1])]
    cases = [
        BadInput("low-nan", (torch.full((2, 4, 16), NAN), pos, rt, rp, ids), names="low_tokens"),
        BadInput("pos-nan", (low, torch.full((4, 2), NAN), rt, rp, ids), names="low_pos"),
        BadInput("tokens-nan", (low, pos, [torch.full((1, 4, 16), NAN), rt[1]], rp, ids), names="region_tokens"),
        BadInput("tokens-type", (low, pos, ["a", rt[1]], rp, ids), names="region_tokens"),
        BadInput("rpos-nan", (low, pos, rt, [torch.full((1, 4, 2), NAN), rp[1]], ids), names="region_pos"),
        BadInput("ids-repeat", (low, pos, rt, rp, [ids[0], torch.tensor([1, 1])]), names="region_ids"),
        BadInput("ids-out", (low, pos, rt, rp, ids), {"n_regions": 2}, names="region_ids"),
        BadInput("ids-neg", (low, pos, rt, rp, [torch.tensor([-1]), ids[1]]), names="region_ids"),
        BadInput("lists", (low, pos, rt[:1], rp, ids), names="region_tokens"),
        BadInput("footprint-nan", (low, pos, rt, rp, ids), {"low_footprint": NAN}, names="low_footprint"),
        BadInput("footprint-neg", (low, pos, rt, rp, ids), {"region_footprint": -1.0}, names="region_footprint"),
    ]
    for case in cases:
        check_bad_inputs(build_order_preserving_sequence, case)


def test_dataset_refuses():
    for kw, name in [({"n": 0}, "n"), ({"n": 2, "size": 40}, "size"), ({"n": 2, "size": 16}, "size"),
                     ({"n": 2, "small_frac": 1.5}, "small_frac"), ({"n": 2, "small_frac": NAN}, "small_frac"),
                     ({"n": 2, "seed": -1}, "seed")]:
        check_bad_inputs(SyntheticEgoGrounding, BadInput(name, (), kw, names=name))
    ds = SyntheticEgoGrounding(3, size=32)
    check_bad_inputs(ds.scene, BadInput("out", (3,), exc=IndexError, names="index"), target=ds)
    check_bad_inputs(ds.scene, BadInput("float", (1.0,), exc=IndexError, names="index"), target=ds)
    check_bad_inputs(ds.batch, BadInput("empty", ([],), names="indices"), target=ds)
    check_bad_inputs(ds.batch, BadInput("out", ([0, 5],), exc=IndexError, names="index"), target=ds)
