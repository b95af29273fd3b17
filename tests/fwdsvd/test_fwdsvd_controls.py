"""Weight-only controls (sigma-tail share, Marchenko-Pastur noise share) and the activation-dispersion plant."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.fwdsvd import (
    WeightSpectrumSearch,
    marchenko_pastur_edge,
    mp_noise_share,
    sigma_tail_share,
    weight_scores,
)
from neurips26.fwdsvd.check import _planted_activation_dispersion


def test_sigma_tail_share_by_hand():
    s = torch.tensor([3.0, 2.0, 1.0, 1.0])
    assert sigma_tail_share(s, rho_min=0.25) == pytest.approx((4 + 1 + 1) / 15)   # k0 = 1
    assert sigma_tail_share(s, rho_min=0.0) == pytest.approx(1.0)
    assert sigma_tail_share(torch.zeros(3)) == 0.0
    with pytest.raises(ValueError, match="descending"):
        sigma_tail_share(torch.tensor([1.0, 2.0]))


def test_mp_median_matches_sampled_noise_and_edge_finds_planted_rank():
    g = torch.Generator().manual_seed(0)
    m, n = 400, 200
    noise = torch.randn(m, n, generator=g, dtype=torch.float64) * 0.5
    s = torch.linalg.svdvals(noise)
    edge, rank = marchenko_pastur_edge(s, (m, n))
    # pure noise: the edge sits at the largest singular value (to within a few %), rank ~ 0
    assert edge == pytest.approx(0.5 * (math.sqrt(m) + math.sqrt(n)), rel=0.03)
    assert rank <= 2
    u, _ = torch.linalg.qr(torch.randn(m, 3, generator=g, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(n, 3, generator=g, dtype=torch.float64))
    signal = (u * torch.tensor([60.0, 40.0, 30.0], dtype=torch.float64)) @ v.T
    s2 = torch.linalg.svdvals(noise + signal)
    assert marchenko_pastur_edge(s2, (m, n))[1] == 3
    share = mp_noise_share(s2, (m, n))
    assert share == pytest.approx(float((s2[3:] ** 2).sum() / (s2 ** 2).sum()), rel=1e-9)
    assert mp_noise_share(s, (m, n)) > 0.95 > share
    with pytest.raises(ValueError, match="201"):
        marchenko_pastur_edge(s, (m, n + 1))


def _bank(seed=0):
    g = torch.Generator().manual_seed(seed)
    model = nn.Sequential(*(nn.Linear(8, 8, bias=False).double() for _ in range(3)))
    with torch.no_grad():
        for i, lin in enumerate(model):
            u, _ = torch.linalg.qr(torch.randn(8, 8, generator=g, dtype=torch.float64))
            sigma = torch.tensor([4.0, 2.0] + [0.5 * (i + 1)] * 6, dtype=torch.float64).sort(descending=True).values
            lin.weight.copy_((u * sigma) @ u.T)
    return model


def test_weight_spectrum_search_picks_the_heaviest_tail_and_runs_the_grid():
    model = _bank()
    before = [lin.weight.detach().clone() for lin in model]
    scores = weight_scores(model, "all", "sigma_tail", rho_min=0.25)
    assert max(scores, key=scores.get) == "2"
    calls = []
    search = WeightSpectrumSearch("all", "sigma_tail", rho_grid=(0.25, 0.5), rho_min=0.25).fit(
        model, lambda m: calls.append(1) or float(len(calls)))
    assert search.module_ == "2" and [t[:2] for t in search.result_.trials] == [("2", 0.25), ("2", 0.5)]
    assert search.result_.reduction.module == "2" and len(calls) == 3          # base + 2 trials
    assert all(torch.equal(lin.weight, b) for lin, b in zip(model, before))   # every trial undone
    mp = WeightSpectrumSearch("all", "mp_noise", rho_grid=(0.5,)).fit(model, lambda m: 0.0)
    assert set(mp.mp_rank_) == {"0", "1", "2"} and mp.result_.reduction is None  # nothing beats base: kept


def test_weight_spectrum_search_breaks_ties_by_seed_not_order():
    model = nn.Sequential(*(nn.Linear(4, 4, bias=False).double() for _ in range(4)))
    with torch.no_grad():
        for lin in model:
            lin.weight.copy_(torch.eye(4, dtype=torch.float64))
    picks = {WeightSpectrumSearch("all", "sigma_tail", rho_grid=(0.5,), seed=s).fit(model, lambda m: 0.0).module_
             for s in range(12)}
    assert len(picks) > 1


@pytest.mark.parametrize("seed", range(3))
def test_activation_plant_is_found_by_dispersion_and_invisible_to_the_spectrum(seed):
    d_hit, sigma_hit, mp_hit, planted = _planted_activation_dispersion(seed)
    assert d_hit == 1


def test_weight_only_scores_are_at_chance_on_the_plant():
    rows = [_planted_activation_dispersion(s) for s in range(12)]
    assert np.mean([r[1] for r in rows]) < 0.5 and np.mean([r[2] for r in rows]) < 0.5
