"""Whole-model helpers: calibration capture (pads left out), budgets, in-place swap, the mask hook."""

import pytest
import torch
from torch import nn

from neurips26.dyra import (
    DyRALinear,
    apply_dyra,
    budget_rank,
    collect_linear_inputs,
    dense_flops,
    dyra_budget_rank,
    flops_per_token,
    replace_linears,
    static_budget_rank,
)


class Tiny(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        torch.manual_seed(0)
        self.up = nn.Linear(d, 64)
        self.down = nn.Linear(64, d)
        self.head = nn.Linear(d, 3)

    def forward(self, x, attention_mask=None):
        return self.head(self.down(torch.relu(self.up(x))))


def _batch(lengths=(7, 4), T=8, d=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(len(lengths), T, d, generator=g)
    mask = torch.zeros(len(lengths), T, dtype=torch.long)
    for b, t in enumerate(lengths):
        mask[b, :t] = 1
    return x, mask


def test_collect_linear_inputs_skips_pads_and_caps_tokens():
    model = Tiny()
    x, mask = _batch()
    got = collect_linear_inputs(model, [{"x": x, "attention_mask": mask}], max_tokens=100)
    assert set(got) == {"up", "down", "head"}
    torch.testing.assert_close(got["up"], x[mask.bool()])
    torch.testing.assert_close(got["down"], torch.relu(model.up(x))[mask.bool()].detach())
    capped = collect_linear_inputs(model, [(x, mask), (x, mask)], max_tokens=15, filter=lambda n, m: n == "up")
    assert list(capped) == ["up"] and capped["up"].shape == (15, 32)
    torch.testing.assert_close(capped["up"][11:], x[mask.bool()][:4])


def test_budget_ranks_fit_the_budget():
    m, n = 96, 64
    for beta in (0.25, 0.35, 0.5):
        dense = dense_flops(m, n)
        r = budget_rank(m, n, beta)
        assert 2 * r * (m + n) + m <= beta * dense < 2 * (r + 1) * (m + n) + m
        rs = static_budget_rank(m, n, beta, 4)
        assert 2 * rs * (m + n) + m + 2 * 4 * (m + n) + m <= beta * dense + m
        rd = dyra_budget_rank(m, n, beta, 4, n_tokens=500)
        assert rd < rs  # the sketch and QR cost something


def test_apply_dyra_swaps_in_place_within_budget_and_masks_pads():
    model = Tiny()
    x, mask = _batch(lengths=(64, 40), T=64)
    ref = model(x)
    mods = apply_dyra(model, lambda n, m: n != "head", flop_budget=0.6, correction_rank=2, oversample=2,
                      n_tokens=64, group="sample", residual_dtype=torch.float32)
    assert set(mods) == {"up", "down"} and isinstance(model.up, DyRALinear) and isinstance(model.head, nn.Linear)
    for name, mod in mods.items():
        lin = {"up": (64, 32), "down": (32, 64)}[name]
        assert flops_per_token(mod, 64) <= 0.6 * dense_flops(*lin) + 1e-9
    out = model(x, mask)
    assert torch.isfinite(out).all() and out.shape == ref.shape
    # the hook hands the mask to every DyRALinear: pad contents cannot change real outputs
    x2 = x.clone()
    x2[1, 40:] = 1e3
    torch.testing.assert_close(model(x2, attention_mask=mask)[1, :40], out[1, :40])
    assert mods["up"].token_mask is None  # cleared after the forward
    mods.remove_hooks()


def test_replace_linears_error_leaves_model_unchanged():
    model = Tiny()

    def make(name, lin):
        if name == "down":
            raise ValueError("boom")
        return nn.Identity()

    with pytest.raises(ValueError, match="boom"):
        replace_linears(model, make)
    assert isinstance(model.up, nn.Linear)
    with pytest.raises(ValueError, match="no nn.Linear"):
        replace_linears(model, make, filter=lambda n, m: False)


def test_apply_dyra_bad_arguments():
    with pytest.raises(ValueError, match="flop_budget"):
        apply_dyra(Tiny(), flop_budget=1.5)
    with pytest.raises(ValueError, match="calib_inputs"):
        apply_dyra(Tiny(), structure="whitened_svd")
    with pytest.raises(ValueError, match="structure"):
        apply_dyra(Tiny(), structure="blockdiag")
    with pytest.raises(ValueError, match="cannot hold"):
        apply_dyra(Tiny(), flop_budget=0.01, n_tokens=4)
    with pytest.raises(ValueError, match="n_tokens"):
        flops_per_token(DyRALinear(nn.Linear(8, 8), __import__("neurips26.dyra").dyra.StructuredLinear.from_linear(
            nn.Linear(8, 8), rank=2), rank=2))
