"""Router loss, selection and pooling against per-image loops and brute force."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from neurips26.smartres import (
    ResolutionRouter,
    bce_routing_loss,
    foreground_recall_at_k,
    margin_routing_loss,
    select_regions,
)
from neurips26.smartres.router import pool_regions


def _loop_loss(logits, fg, margin, lam, h, pos_weight):
    """The issue's definition, image by image, pair by pair."""
    total = 0.0
    for l, y in zip(logits, fg):
        pos, neg = l[y], l[~y]
        w = (len(neg) / len(pos)) if pos_weight == "auto" else pos_weight
        bce = torch.stack([(-w * F.logsigmoid(v)) if t else -F.logsigmoid(-v) for v, t in zip(l, y)]).mean()
        hard = sorted(neg, key=lambda v: -float(v.detach()))[:min(h, len(neg))]
        pairs = [torch.clamp(margin - (p - n), min=0) for p in pos for n in hard]
        total = total + bce + lam * torch.stack(pairs).mean()
    return total / len(logits)


def _case(seed, b=5, r=16):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, r, generator=g, dtype=torch.float64) * 2
    fg = torch.zeros(b, r, dtype=torch.bool)
    for i in range(b):
        k = int(torch.randint(1, r // 2, (1,), generator=g))
        fg[i, torch.randperm(r, generator=g)[:k]] = True
    return logits, fg


@pytest.mark.parametrize("seed,margin,lam,h,pw", [(0, 2.0, 1.0, 4, "auto"), (1, 0.5, 0.3, 1, 2.0),
                                                  (2, 3.0, 2.0, 20, "auto"), (3, 0.0, 1.0, 3, 1.0)])
def test_margin_loss_matches_loop_value_and_gradient(seed, margin, lam, h, pw):
    logits, fg = _case(seed)
    a = logits.clone().requires_grad_(True)
    b = logits.clone().requires_grad_(True)
    fast = margin_routing_loss(a, fg, margin=margin, lam=lam, hard_negatives=h, pos_weight=pw)
    ref = _loop_loss(b, fg, margin, lam, h, pw)
    fast.backward()
    ref.backward()
    assert torch.allclose(fast, ref, atol=1e-10)
    assert torch.allclose(a.grad, b.grad, atol=1e-10)


def test_no_margin_term_when_separated():
    fg = torch.tensor([[True, False, False, False], [False, True, True, False]])
    logits = torch.tensor([[5.0, 2.9, 0.0, -1.0], [-3.0, 4.0, 4.5, 1.0]])       # gaps >= 2 everywhere
    assert torch.allclose(margin_routing_loss(logits, fg, margin=2.0), bce_routing_loss(logits, fg))
    assert not torch.allclose(margin_routing_loss(logits, fg, margin=2.2), bce_routing_loss(logits, fg))


def _brute_select(logits, tau, k_min, k_max):
    out = []
    for row in logits:
        r = len(row)
        passing = {j for j in range(r) if torch.sigmoid(row[j]) > tau}
        n = max(len(passing), k_min)
        n = min(n, k_max) if k_max is not None else n
        # the n-subset with the largest logit sum = the n highest logits (distinct values)
        best = max(itertools.combinations(range(r), n), key=lambda s: sum(float(row[j]) for j in s))
        out.append(sorted(best))
    return out


@pytest.mark.parametrize("tau,k_min,k_max", [(0.5, 1, None), (0.7, 2, 3), (0.2, 0, 2), (0.9, 3, 3), (0.5, 0, None)])
def test_select_regions_matches_brute_force(tau, k_min, k_max):
    logits = torch.randn(6, 8, generator=torch.Generator().manual_seed(4)) * 2
    got = select_regions(logits, tau, k_min, k_max)
    assert [g.tolist() for g in got] == _brute_select(logits, tau, k_min, k_max)
    assert all(g.dtype == torch.long for g in got)


def test_pool_regions_matches_loop():
    x = torch.randn(2, 8 * 8, 3)
    got = pool_regions(x, (8, 8), (4, 4))
    grid = x.reshape(2, 8, 8, 3)
    for gy in range(4):
        for gx in range(4):
            ref = grid[:, 2 * gy:2 * gy + 2, 2 * gx:2 * gx + 2].reshape(2, -1, 3).mean(1)
            assert torch.allclose(got[:, gy * 4 + gx], ref, atol=1e-6)


def test_router_shape_and_query_dependence():
    torch.manual_seed(0)
    r = ResolutionRouter(8, 6, hidden=16)
    low = torch.randn(3, 16, 8)
    q = torch.randn(3, 6)
    out = r(low, (4, 4), q, (2, 2))
    assert out.shape == (3, 4)
    assert not torch.allclose(out, r(low, (4, 4), torch.randn(3, 6), (2, 2)))


def test_recall_at_k_matches_loop():
    logits, fg = _case(7, b=6, r=10)
    for k in (1, 2, 4):
        ref = []
        for l, y in zip(logits, fg):
            top = sorted(range(10), key=lambda j: -float(l[j]))[:k]
            ref.append(sum(bool(y[j]) for j in top) / min(k, int(y.sum())))
        assert foreground_recall_at_k(logits, fg, k) == pytest.approx(sum(ref) / len(ref))


@pytest.mark.parametrize("kwargs,fg_fix,match", [
    ({"margin": -1.0}, None, "margin"), ({"hard_negatives": 0}, None, "hard_negatives"),
    ({"lam": -0.5}, None, "lam"), ({"pos_weight": "x"}, None, "pos_weight"),
    ({}, "no_pos", "no positive"), ({}, "no_neg", "no negative"), ({}, "shape", "fg_mask")])
def test_loss_refuses_bad_input(kwargs, fg_fix, match):
    logits, fg = _case(0)
    if fg_fix == "no_pos":
        fg[1] = False
    elif fg_fix == "no_neg":
        fg[2] = True
    elif fg_fix == "shape":
        fg = fg[:, :-1]
    with pytest.raises(ValueError, match=match):
        margin_routing_loss(logits, fg, **kwargs)


@pytest.mark.parametrize("kwargs,match", [({"threshold": 0.0}, "threshold"), ({"threshold": 1.0}, "threshold"),
                                          ({"k_min": 9}, "k_min"), ({"k_min": 3, "k_max": 2}, "k_max")])
def test_select_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        select_regions(torch.zeros(2, 8), **kwargs)


def test_loss_refuses_nan():
    logits, fg = _case(0)
    logits[0, 0] = float("nan")
    with pytest.raises(ValueError, match="logits"):
        margin_routing_loss(logits, fg)
