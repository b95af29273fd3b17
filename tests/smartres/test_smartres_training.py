"""Backbone training plumbing: the dense attribute targets against a per-token loop, the guard, the curve."""

import pytest
import torch

from neurips26.nn.train import NonFiniteLossError
from neurips26.smartres import MiniGroundingMLLM, MLLMConfig, SyntheticEgoGrounding
from neurips26.smartres.data import N_COLOURS, N_DIGITS
from neurips26.smartres.training import attribute_targets, make_pool, train_backbone

CFG = MLLMConfig(image_size=64, patch=8, dim=16, heads=2, vit_blocks=1, lm_blocks=1, region_px=16)


def test_attribute_targets_match_a_loop():
    pool = make_pool(SyntheticEgoGrounding(6, size=64, seed=3))
    pos = torch.rand(6, 40, 2) * 64
    digit, colour = attribute_targets(pos, pool.objects)
    for b in range(6):
        for t in range(40):
            x, y = pos[b, t].tolist()
            want = (N_DIGITS, N_COLOURS)
            for o in pool.objects[b].tolist():
                if o[4] >= 0 and o[0] <= x < o[2] and o[1] <= y < o[3]:
                    want = (int(o[4]), int(o[5]))
                    break
            assert (int(digit[b, t]), int(colour[b, t])) == want
    # the target is object 0 and its centre is labelled with the query
    centre = ((pool.boxes[:, :2] + pool.boxes[:, 2:]) / 2)[:, None]
    d, c = attribute_targets(centre, pool.objects)
    assert torch.equal(torch.stack([d[:, 0], c[:, 0]], 1), pool.query)


def test_attribute_targets_label_every_object_with_footprints():
    """With token footprints, the token holding each object's centre is labelled even when no token centre falls
    inside the (small) box; the balanced loss weighs object and background tokens equally."""
    from neurips26.smartres.model import token_centres
    from neurips26.smartres.training import _attribute_loss

    pos = token_centres(8, 8, 8.0)[None]                                              # centres at 4 + 8k
    fp = torch.full((1, 64), 8.0)
    objects = torch.tensor([[[9.0, 9.0, 11.0, 11.0, 7, 2]]])                          # 2-px box, no centre inside
    d0, _ = attribute_targets(pos, objects)
    d1, c1 = attribute_targets(pos, objects, fp)
    assert int((d0 < N_DIGITS).sum()) == 0
    assert (d1 < N_DIGITS).nonzero()[:, 1].tolist() == [1 * 8 + 1] and int(c1[0, 9]) == 2

    class Seq:
        tokens, valid, footprint = torch.zeros(1, 64, 4), torch.ones(1, 64, dtype=torch.bool), fp
    Seq.pos = pos
    probe = torch.nn.Linear(4, N_DIGITS + 1 + N_COLOURS + 1)
    torch.nn.init.zeros_(probe.weight)
    torch.nn.init.zeros_(probe.bias)
    # uniform logits: CE = log(11) + log(5) on both the object and the background mean
    expect = 2 * (torch.log(torch.tensor(11.0)) + torch.log(torch.tensor(5.0)))
    assert torch.allclose(_attribute_loss(probe, Seq, objects), expect)


def test_train_backbone_curve_and_guard():
    pool = make_pool(SyntheticEgoGrounding(16, size=64, seed=0))
    torch.manual_seed(0)
    model = MiniGroundingMLLM(CFG)
    log = train_backbone(model, pool, steps=4, batch=4, evaluate=lambda m: 0.5, eval_every=2, attribute_weight=1.0)
    assert [s for s, _ in log.curve] == [2, 4] and not model.training
    before = {k: v.clone() for k, v in model.state_dict().items()}
    bad = make_pool(SyntheticEgoGrounding(16, size=64, seed=0))
    bad.images = bad.images.clone()
    with pytest.raises(NonFiniteLossError):
        train_backbone(model, bad, steps=3, batch=4, lr=1e30, attribute_weight=1.0)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
