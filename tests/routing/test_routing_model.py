"""The decoder-only model: closed-form parameters and FLOPs, ReZero identity, order equivariance."""

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from neurips26.routing import (
    DecoderConfig,
    POMOLightDecoder,
    TSPDecoderOnly,
    count_params,
    decoder_step_flops,
    equal_param_pairs,
    greedy_construct,
    make_tsp_instances,
    scaling_grid,
    tour_length,
)


@pytest.mark.parametrize("gated, rezero", [(True, True), (False, False), (True, False), (False, True)])
@pytest.mark.parametrize("d, L, ff", [(32, 2, 4), (48, 3, 2), (16, 1, 4)])
def test_param_count_closed_form(gated, rezero, d, L, ff):
    cfg = DecoderConfig(d_model=d, n_layers=L, ff_mult=ff, gated_attention=gated, rezero=rezero)
    model = TSPDecoderOnly(cfg)
    assert model.num_params() == count_params(cfg)
    if gated and rezero and ff == 4:
        # 13 d^2 per block + O(d): the paper's count
        assert count_params(cfg) == L * (13 * d * d + 7 * d + 2) + 2 * d * d + 6 * d + 1


def test_grid_pairs_within_ten_percent():
    grid = scaling_grid((32, 64, 128), (2, 8))
    pairs = {(a.label, b.label) for a, b in equal_param_pairs(grid)}
    assert pairs == {("32x8", "64x2"), ("64x8", "128x2")}
    smoke = {(a.label, b.label) for a, b in equal_param_pairs(scaling_grid((16, 32), (1, 4)))}
    assert smoke == {("16x4", "32x1")}


def test_step_flops_match_flop_counter():
    cfg = DecoderConfig(d_model=32, n_layers=2)
    model = TSPDecoderOnly(cfg)
    X = torch.rand(3, 9, 2)
    emb = model.encode(X)
    rem = torch.arange(2, 9).repeat(3, 1)
    with FlopCounterMode(display=False) as counter:
        model.score(emb, torch.zeros(3, dtype=torch.long), torch.ones(3, dtype=torch.long), rem)
    # the counter has no formula for CPU SDPA; count softmax(QK^T)V's two matmuls explicitly instead
    B, h, T, hd = 3, cfg.n_heads, 9, cfg.head_dim
    with FlopCounterMode(display=False) as attn_counter:
        q = torch.rand(B, h, T, hd)
        torch.matmul(torch.softmax(q @ q.transpose(-1, -2), -1), q)
    total = counter.get_total_flops() + cfg.n_layers * attn_counter.get_total_flops()
    assert total == B * decoder_step_flops(cfg, 7)


def test_bad_config():
    with pytest.raises(ValueError, match="divisible by head_dim"):
        DecoderConfig(d_model=40, n_layers=2)
    with pytest.raises(ValueError, match="n_layers"):
        DecoderConfig(d_model=32, n_layers=0)
    with pytest.raises(TypeError, match="DecoderConfig"):
        TSPDecoderOnly({"d_model": 32})


def test_rezero_starts_as_identity():
    # alpha = 0: every block is the identity, so logits are the scorer applied to the raw embeddings
    model = TSPDecoderOnly(DecoderConfig(d_model=32, n_layers=3)).double()
    X = torch.rand(2, 6, 2, dtype=torch.float64)
    rem = torch.tensor([[1, 2, 4], [0, 3, 5]])
    logits = model(X, torch.tensor([0, 1]), torch.tensor([3, 2]), rem)
    emb = model.embed(X)
    ref = model.scorer(torch.gather(emb, 1, rem[:, :, None].expand(-1, -1, 32))).squeeze(-1)
    torch.testing.assert_close(logits, ref)


def _trained_like(cfg, seed=0):
    torch.manual_seed(seed)
    model = TSPDecoderOnly(cfg).double()
    with torch.no_grad():  # move ReZero scalars off 0 so the blocks matter
        for block in model.blocks:
            if block.alpha_attn is not None:
                block.alpha_attn.fill_(0.7)
                block.alpha_ffn.fill_(0.5)
    return model


@pytest.mark.parametrize("gated, rezero", [(True, True), (False, False)])
def test_scores_equivariant_to_order_of_remaining(gated, rezero):
    model = _trained_like(DecoderConfig(d_model=32, n_layers=2, gated_attention=gated, rezero=rezero))
    X = torch.rand(1, 8, 2, dtype=torch.float64)
    rem = torch.tensor([[1, 2, 3, 5, 6, 7]])
    perm = torch.tensor([4, 0, 5, 2, 1, 3])
    a = model(X, torch.tensor([0]), torch.tensor([4]), rem)
    b = model(X, torch.tensor([0]), torch.tensor([4]), rem[:, perm])
    torch.testing.assert_close(b, a[:, perm])


def test_greedy_tours_are_permutations_with_consistent_lengths():
    model = _trained_like(DecoderConfig(d_model=32, n_layers=2)).float()
    X = make_tsp_instances(7, 11, seed=5)
    tours, lengths = greedy_construct(model, X, start=3)
    assert tours.dtype == torch.int64 and tours.shape == (7, 11)
    assert (tours[:, 0] == 3).all()
    assert (torch.sort(tours, 1).values == torch.arange(11)).all()
    np.testing.assert_allclose(lengths.numpy(), tour_length(X, tours.numpy()), rtol=1e-5)


def test_greedy_batched_equals_one_by_one():
    model = _trained_like(DecoderConfig(d_model=32, n_layers=2))
    X = make_tsp_instances(4, 9, seed=8)
    tours, _ = greedy_construct(model, X)
    for b in range(4):
        torch.testing.assert_close(greedy_construct(model, X[b:b + 1])[0][0], tours[b])


@pytest.mark.parametrize("kind", ["decoder", "pomo"])
def test_relabelling_nodes_relabels_the_tour(kind):
    # X'[i] = X[p[i]]: the tour from the same start city visits the same cities in the same order
    torch.manual_seed(1)
    model = _trained_like(DecoderConfig(d_model=32, n_layers=2)) if kind == "decoder" else \
        POMOLightDecoder(d_model=32, n_layers=2).double()
    rng = np.random.default_rng(0)
    X = make_tsp_instances(3, 10, seed=9).astype(np.float64)
    p = rng.permutation(10)
    Xp = X[:, p]
    start_p = int(np.flatnonzero(p == 0)[0])  # city 0 of X is city start_p of X'
    tours, _ = greedy_construct(model, X, start=0)
    tours_p, _ = greedy_construct(model, Xp, start=start_p)
    np.testing.assert_array_equal(p[tours_p.numpy()], tours.numpy())


def test_greedy_bad_input():
    model = TSPDecoderOnly(DecoderConfig(d_model=16, n_layers=1))
    X = make_tsp_instances(2, 5, seed=0)
    with pytest.raises(ValueError, match="start"):
        greedy_construct(model, X, start=5)
    with pytest.raises(ValueError, match="finite"):
        greedy_construct(model, np.full((1, 5, 2), np.inf))
    with pytest.raises(ValueError, match=r"\[B, n, 2\]"):
        greedy_construct(model, X[0])
    with pytest.raises(TypeError, match="encode"):
        greedy_construct(torch.nn.Linear(2, 2), X)
