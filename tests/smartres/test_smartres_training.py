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
