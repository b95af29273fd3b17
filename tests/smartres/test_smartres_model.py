"""Order-preserving sequences, full-resolution positions, SmartRes encode, baselines' counts and merges."""

import pytest
import torch

from neurips26.smartres import (
    MiniGroundingMLLM,
    MLLMConfig,
    ResolutionRouter,
    SmartRes,
    build_order_preserving_sequence,
    fastv_prune,
    run_fastv,
    run_full,
    run_global_selector,
    run_low,
    run_smartres,
    run_sparsevlm,
    run_tome,
    run_visionzip,
    sparsevlm_prune,
    token_centres,
    tome_merge,
    visionzip_compress,
)
from neurips26.smartres.baselines import bipartite_merge, tome_schedule
from neurips26.smartres.sequence import GLOBAL_ID, PAD_ID, SCALE_FULL, SCALE_LOW

TINY = MLLMConfig(image_size=32, patch=4, dim=16, heads=2, vit_blocks=2, lm_blocks=2, region_px=8)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = MiniGroundingMLLM(TINY).eval()
    images = torch.rand(3, 3, 32, 32)
    query = torch.tensor([[1, 0], [2, 3], [9, 1]])
    return model, images, query


def _full_centres():
    return token_centres(TINY.full_grid, TINY.full_grid, TINY.patch)               # [64, 2]


def test_token_centres_are_pixel_centres():
    c = token_centres(2, 3, 8.0, x0=16, y0=0)
    assert c.tolist() == [[20, 4], [28, 4], [36, 4], [20, 12], [28, 12], [36, 12]]


def test_sequence_order_and_positions(tiny):
    model, images, _ = tiny
    ids = [torch.tensor([5, 0]), torch.tensor([15]), torch.tensor([3, 12, 7])]
    seq = model.sequence_from_regions(images, ids)
    full = {tuple(p) for p in _full_centres().tolist()}
    n_l = TINY.low_grid ** 2
    for i, want in enumerate(ids):
        rid = seq.region_ids[i]
        assert (rid[:n_l] == GLOBAL_ID).all() and (seq.scale[i, :n_l] == SCALE_LOW).all()
        body = rid[n_l:][rid[n_l:] != PAD_ID]
        # regions in raster order, each region's tokens contiguous, then padding
        assert body.tolist() == [r for r in sorted(want.tolist()) for _ in range(TINY.region_tokens)]
        assert torch.equal(torch.sort(body).values, body)
        pos = seq.pos[i, n_l:n_l + len(body)]
        assert all(tuple(p) in full for p in pos.tolist())                         # on full-res token centres
        for j, r in enumerate(sorted(want.tolist())):                             # raster inside the region
            block = pos[j * TINY.region_tokens:(j + 1) * TINY.region_tokens]
            key = (block[:, 1] * 1000 + block[:, 0])
            assert torch.equal(key, key.sort().values)
            x0, y0 = (r % 4) * TINY.region_px, (r // 4) * TINY.region_px
            assert block[:, 0].min() == x0 + TINY.patch / 2 and block[:, 1].min() == y0 + TINY.patch / 2
    # the global tokens sit on the centres of 2x2 blocks of full-res tokens
    low = seq.pos[0, :n_l]
    assert torch.equal(low, token_centres(TINY.low_grid, TINY.low_grid, TINY.patch * 2))
    assert seq.n_vit_tokens == 3 * n_l + 6 * TINY.region_tokens


def test_region_tokens_equal_their_standalone_encoding(tiny):
    """A region's tokens are the ViT output of its crop (reference: encode the crop directly)."""
    model, images, _ = tiny
    rt, rp = model.encode_regions(images[:1], [torch.tensor([6])])
    x0, y0 = (6 % 4) * 8, (6 // 4) * 8
    crop = images[:1, :, y0:y0 + 8, x0:x0 + 8]
    pos = token_centres(2, 2, 4, x0, y0)
    ref, _, _, _ = model.vit(model.vit.embed(crop, pos, SCALE_FULL))
    assert torch.allclose(rt[0][0], ref[0], atol=1e-5)
    assert torch.equal(rp[0][0], pos)


def test_build_refuses_bad_region_ids():
    low, pos = torch.zeros(1, 4, 2), torch.zeros(4, 2)
    toks, rpos = [torch.zeros(2, 3, 2)], [torch.zeros(2, 3, 2)]
    with pytest.raises(ValueError, match="region_ids"):
        build_order_preserving_sequence(low, pos, toks, rpos, [torch.tensor([1, 1])])
    with pytest.raises(ValueError, match="region_ids"):
        build_order_preserving_sequence(low, pos, toks, rpos, [torch.tensor([0, 16])], n_regions=16)
    with pytest.raises(ValueError, match="region_ids"):
        build_order_preserving_sequence(low, pos, toks, rpos, [torch.tensor([-1, 2])])


@pytest.mark.parametrize("k_min,k_max", [(1, None), (2, 2), (1, 3)])
def test_smartres_encode_respects_k(tiny, k_min, k_max):
    model, images, query = tiny
    router = ResolutionRouter(TINY.dim, 2 * TINY.dim, hidden=8)
    sr = SmartRes(model, router, region_px=8, k_min=k_min, k_max=k_max)
    seq = sr.encode(images, model.lm.query_embedding(query))
    n_l = TINY.low_grid ** 2
    counts = (seq.valid.sum(1) - n_l) // TINY.region_tokens
    assert (counts >= k_min).all() and (k_max is None or (counts <= k_max).all())
    assert seq.n_vit_tokens == int(seq.valid.sum())


def test_smartres_refuses_mismatched_settings(tiny):
    model = tiny[0]
    router = ResolutionRouter(TINY.dim, 2 * TINY.dim)
    with pytest.raises(ValueError, match="region_px"):
        SmartRes(model, router, region_px=32)
    with pytest.raises(ValueError, match="k_max"):
        SmartRes(model, router, region_px=8, k_min=3, k_max=2)
    with pytest.raises(ValueError, match="k_min"):
        SmartRes(model, router, region_px=8, k_min=17)


def test_baselines_return_requested_counts(tiny):
    model, images, query = tiny
    b, full = 3, TINY.full_grid ** 2
    assert run_full(model, images, query).llm_tokens == b * full
    assert run_low(model, images, query).llm_tokens == b * TINY.low_grid ** 2
    for out, want in ((run_fastv(model, images, query, keep=24), 24),
                      (run_sparsevlm(model, images, query, keep=20, recycle=4), 24),
                      (run_visionzip(model, images, query, n_dominant=20, n_contextual=4), 24),
                      (run_tome(model, images, query, target=24), 24)):
        assert out.llm_tokens == b * want and out.vit_tokens == b * full and out.boxes.shape == (b, 4)
    sr = SmartRes(model, ResolutionRouter(TINY.dim, 2 * TINY.dim), region_px=8, k_min=2, k_max=2)
    out = run_smartres(sr, images, query)
    assert out.llm_tokens == b * (16 + 8) and out.vit_tokens == b * 24
    gs = run_global_selector(model, images, query, threshold=2.0)                 # everything at full res
    assert gs.llm_tokens == b * full
    with pytest.raises(ValueError, match="keep"):
        run_fastv(model, images, query, keep=full + 1)


def test_fastv_and_visionzip_pick_the_top_tokens():
    x = torch.arange(10.0)[None, :, None].repeat(2, 1, 3)
    score = torch.tensor([[0, 9, 1, 8, 2, 7, 3, 6, 4, 5], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]], dtype=torch.float)
    kept = fastv_prune(x, score, 4)
    assert kept[0, :, 0].tolist() == [1, 3, 5, 7] and kept[1, :, 0].tolist() == [0, 1, 2, 3]
    out = visionzip_compress(x, score, 4, 2)
    assert out.shape == (2, 6, 3) and out[0, :4, 0].tolist() == [1, 3, 5, 7]
    sv = sparsevlm_prune(x, torch.zeros(2, 2, 3), score[:, None].repeat(1, 2, 1), keep=3, recycle=2)
    assert sv.shape == (2, 5, 3) and sv[1, :3, 0].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="keep"):
        fastv_prune(x, score, 11)


def test_contextual_tokens_average_the_rest():
    """VisionZip's contextual tokens together hold exactly the non-dominant tokens (mean × count)."""
    torch.manual_seed(1)
    x = torch.randn(1, 12, 4)
    score = torch.randn(1, 12)
    out = visionzip_compress(x, score, 5, 1)                                       # one contextual token
    rest = torch.ones(12, dtype=torch.bool)
    rest[score[0].topk(5).indices] = False
    assert torch.allclose(out[0, 5], x[0, rest].mean(0), atol=1e-6)


def test_tome_keeps_size_weighted_mean_and_count():
    torch.manual_seed(2)
    x = torch.randn(2, 11, 5)
    size = torch.rand(2, 11) + 0.5
    merged, new_size = tome_merge(x, 4, size)
    assert merged.shape == (2, 7, 5) and new_size.shape == (2, 7)
    assert torch.allclose(new_size.sum(1), size.sum(1))
    assert torch.allclose((merged * new_size[..., None]).sum(1), (x * size[..., None]).sum(1), atol=1e-5)


def test_tome_merges_the_most_similar_pair():
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.05]]])      # A = {0, 2}, B = {1, 3}
    merged, size = tome_merge(x, 1)
    # A token 2 equals B token 1 exactly: it is the one merged; A token 0 stays
    assert size.tolist() == [[1.0, 2.0, 1.0]]
    assert torch.allclose(merged[0, 0], x[0, 0])


def test_tome_schedule_reaches_target():
    rs = tome_schedule(256, 96, 3)
    assert sum(rs) == 160 and len(rs) == 3
    with pytest.raises(ValueError, match="target"):
        tome_schedule(10, 11, 2)


def test_bipartite_merge_extra_follows_tokens():
    x = torch.randn(1, 8, 3)
    extra = torch.arange(8.0)[None, :, None]
    _, size, e = bipartite_merge(x, x, torch.ones(1, 8), 3, extra)
    assert torch.allclose((e[..., 0] * size).sum(), extra.sum())


def test_head_targets_decode_to_the_true_box():
    """Perfect head outputs (one-hot objectness on the finest token holding the centre, exact offsets) decode to
    the ground-truth box and give zero L1 and GIoU loss (reference: the box itself)."""
    from neurips26.smartres.model import box_targets, decode_boxes, grounding_loss

    pos = torch.cat([token_centres(2, 2, 16.0), token_centres(4, 4, 8.0)])[None]     # low (16 px) + full (8 px)
    fp = torch.cat([torch.full((4,), 16.0), torch.full((16,), 8.0)])[None]
    box = torch.tensor([[17.0, 3.0, 23.0, 9.0]])                                       # centre (20, 6)
    centre_tok = 4 + 0 * 4 + 2                                                         # full-res token (row 0, col 2)
    obj = torch.full((1, 20), -10.0)
    obj[0, centre_tok] = 10.0
    off = box_targets(box, pos, fp)
    assert torch.allclose(decode_boxes(obj, off, pos, fp), box, atol=1e-5)
    loss = grounding_loss(obj, off, pos, fp, box)
    assert loss.item() < 1e-3                                                          # CE ≈ 0, L1 = 0, GIoU = 1
    # a wrong size costs more: the L1 on log size and 1 - GIoU
    assert grounding_loss(obj, off + torch.tensor([0.0, 0.0, 0.5, 0.5]), pos, fp, box).item() > 0.5


def test_box_loss_weighs_images_equally():
    """A small box (one regressing token) and a large one (many) contribute equally to the box loss: doubling the
    error of the small image's only token moves the loss as much as doubling every token's error of the large."""
    from neurips26.smartres.model import box_targets, grounding_loss, regression_tokens

    pos = token_centres(8, 8, 8.0)[None].expand(2, -1, -1)
    fp = torch.full((2, 64), 8.0)
    boxes = torch.tensor([[9.0, 9.0, 15.0, 15.0], [16.0, 16.0, 48.0, 48.0]])          # 1 vs 16 + tokens
    _, regress = regression_tokens(pos, fp, boxes, torch.ones(2, 64, dtype=torch.bool))
    assert regress[0].sum() == 1 and regress[1].sum() >= 16
    obj = torch.zeros(2, 64)
    exact = box_targets(boxes, pos, fp)
    bump = torch.tensor([0.0, 0.0, 0.2, 0.2])
    small_off, large_off = exact.clone(), exact.clone()
    small_off[0] += bump
    large_off[1] += bump
    base = grounding_loss(obj, exact, pos, fp, boxes, giou_weight=0.0)
    d_small = grounding_loss(obj, small_off, pos, fp, boxes, giou_weight=0.0) - base
    d_large = grounding_loss(obj, large_off, pos, fp, boxes, giou_weight=0.0) - base
    assert torch.allclose(d_small, d_large, atol=1e-5) and d_small.item() > 0.1


def test_generalized_iou_hand_cases():
    from neurips26.smartres.model import generalized_iou

    a = torch.tensor([[0.0, 0.0, 2.0, 2.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 2.0, 2.0]])
    b = torch.tensor([[0.0, 0.0, 2.0, 2.0], [2.0, 0.0, 3.0, 1.0], [1.0, 0.0, 3.0, 2.0]])
    # identical: 1; disjoint, hull 3 x 1, union 2: 0 - 1/3; overlap 2 of union 6, hull 6: 1/3
    assert torch.allclose(generalized_iou(a, b), torch.tensor([1.0, -1 / 3, 1 / 3]))
