"""Structured linears vs naive constructions; whitened SVD vs the Eckart–Young output bound; bad input."""

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.dyra import StructuredLinear, damped_cholesky, gram, svd_rank
from neurips26.dyra.baselines import best_rank_k, relative_output_error, weight_svd, whitened_svd


def _layer(m=48, n=32, seed=0, bias=True):
    torch.manual_seed(seed)
    lin = nn.Linear(n, m, bias=bias, dtype=torch.float64)
    return lin


def _aniso_inputs(n=32, N=400, seed=1):
    g = torch.Generator().manual_seed(seed)
    scales = torch.logspace(1, -2, n, dtype=torch.float64)
    return torch.randn(N, n, generator=g, dtype=torch.float64) * scales


@pytest.mark.parametrize("structure", ["svd", "whitened_svd", "blockdiag", "monarch"])
def test_forward_is_x_times_weight_plus_bias(structure):
    lin = _layer()
    X = _aniso_inputs()
    s = StructuredLinear.from_linear(lin, structure, 0.25, 4, gram(X))
    W = s.weight()
    x = torch.randn(3, 5, 32, dtype=torch.float64)
    torch.testing.assert_close(s(x), x @ W.T + lin.bias.detach())


def test_svd_matches_numpy_truncation():
    lin = _layer(bias=False)
    r = svd_rank(48, 32, 0.3)
    assert r == int(0.3 * 48 * 32 / 80)
    U, S, Vt = np.linalg.svd(lin.weight.detach().numpy())
    expect = (U[:, :r] * S[:r]) @ Vt[:r]
    np.testing.assert_allclose(StructuredLinear.from_linear(lin, "svd", 0.3).weight().numpy(), expect, atol=1e-10)
    lowrank = weight_svd(lin, r, method="lowrank").weight().numpy()
    W = lin.weight.detach().numpy()
    # randomized SVD: near-optimal weight error (a flat random spectrum is its hardest case)
    assert np.linalg.norm(W - lowrank) <= 1.05 * np.linalg.norm(W - expect)


def test_blockdiag_keeps_exactly_the_diagonal_blocks():
    lin = _layer()
    W = lin.weight.detach().numpy()
    expect = np.zeros_like(W)
    for i in range(4):
        expect[i * 12:(i + 1) * 12, i * 8:(i + 1) * 8] = W[i * 12:(i + 1) * 12, i * 8:(i + 1) * 8]
    np.testing.assert_allclose(StructuredLinear.from_linear(lin, "blockdiag", blocks=4).weight().numpy(), expect)


def test_monarch_blocks_are_best_rank_s_of_each_block():
    lin = _layer()
    W = lin.weight.detach().numpy()
    s = StructuredLinear.from_linear(lin, "monarch", blocks=4, rank=2)
    Ws = s.weight().numpy()
    for i in range(4):
        for j in range(4):
            blk = W[i * 12:(i + 1) * 12, j * 8:(j + 1) * 8]
            U, S, Vt = np.linalg.svd(blk)
            np.testing.assert_allclose(Ws[i * 12:(i + 1) * 12, j * 8:(j + 1) * 8], (U[:, :2] * S[:2]) @ Vt[:2],
                                       atol=1e-10)
    # one block (b = 1) is plain truncated SVD
    np.testing.assert_allclose(StructuredLinear.from_linear(lin, "monarch", blocks=1, rank=3).weight().numpy(),
                               weight_svd(lin, 3).weight().numpy(), atol=1e-10)


def test_flops_per_token_formulas():
    lin = _layer()
    assert StructuredLinear.from_linear(lin, "svd", rank=5).flops_per_token() == 2 * 5 * 80 + 48
    assert StructuredLinear.from_linear(lin, "blockdiag", blocks=4).flops_per_token() == 2 * 48 * 32 / 4 + 48
    assert StructuredLinear.from_linear(lin, "monarch", blocks=4, rank=2).flops_per_token() == 2 * 4 * 2 * 80 + 48


def test_whitened_svd_beats_svd_and_reaches_the_output_bound_on_calibration():
    lin = _layer(bias=False)
    X = _aniso_inputs()
    Y = X @ lin.weight.detach().T
    for r in (2, 6, 12):
        e_svd = relative_output_error(weight_svd(lin, r)(X), Y)
        e_w = relative_output_error(whitened_svd(lin, r, gram(X))(X), Y)
        # X has full column rank, so min over rank-r W_s of ||Y - X W_sᵀ|| is ||Y - [Y]_r|| (Eckart–Young)
        bound = relative_output_error(best_rank_k(Y, r), Y)
        assert e_w < e_svd
        assert bound - 1e-12 <= e_w <= 1.05 * bound


def test_damped_cholesky_handles_singular_gram():
    X = torch.randn(3, 10, dtype=torch.float64)  # rank 3 < 10: singular Gram
    L = damped_cholesky(gram(X))
    G = gram(X)
    torch.testing.assert_close(L @ L.T, G + 1e-2 * torch.diagonal(G).mean() * torch.eye(10))


@pytest.mark.parametrize("kwargs, match", [
    ({"structure": "lowrank"}, "structure"),
    ({"rank_ratio": 0.0}, "rank_ratio"),
    ({"rank_ratio": 1.5}, "rank_ratio"),
    ({"rank": 32}, "rank"),
    ({"rank": 0}, "rank"),
    ({"structure": "blockdiag", "blocks": 5}, "blocks"),
    ({"structure": "monarch", "blocks": 3}, "blocks"),
    ({"structure": "whitened_svd"}, "calib_gram"),
    ({"structure": "whitened_svd", "calib_gram": torch.ones(5, 5)}, "calib_gram"),
    ({"structure": "whitened_svd", "calib_gram": torch.full((32, 32), float("nan"))}, "finite"),
    ({"structure": "whitened_svd", "calib_gram": torch.triu(torch.ones(32, 32))}, "symmetric"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        StructuredLinear.from_linear(_layer(), **kwargs)


def test_bad_input_tensor():
    s = StructuredLinear.from_linear(_layer(), "svd", 0.25)
    with pytest.raises(ValueError, match=r"\[\.\.\., 32\]"):
        s(torch.randn(4, 31, dtype=torch.float64))
    with pytest.raises(ValueError, match="finite"):
        s(torch.full((4, 32), float("inf"), dtype=torch.float64))
    with pytest.raises(TypeError, match="Linear"):
        StructuredLinear.from_linear(torch.nn.Conv1d(3, 3, 1))
