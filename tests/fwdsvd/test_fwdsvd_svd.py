"""LASER edits against numpy's truncated SVD; bit-exact restore; the factorised form; rank rule; bad input."""

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.fwdsvd import candidate_linears, laser_reduce, rank_for_rho
from neurips26.nn import Llama, LlamaConfig


def tiny_llama(seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=40, d_model=16, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=32, max_seq_len=64,
                      init_std=0.2)
    return Llama(cfg).to(dtype).eval()


@pytest.mark.parametrize("rho, r, k", [(0.01, 192, 1), (0.1, 576, 57), (0.5, 7, 3), (1.0, 5, 5), (0.1, 30, 3),
                                       (0.29, 100, 29)])
def test_rank_for_rho(rho, r, k):
    assert rank_for_rho(rho, r) == k


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name, rho", [("layers.0.mlp.up_proj", 0.25), ("layers.1.mlp.down_proj", 0.1),
                                       ("layers.1.attn.k_proj", 0.5)])
def test_laser_reduce_matches_numpy_truncated_svd_and_restores_bit_exact(dtype, name, rho):
    model = tiny_llama(dtype=dtype)
    layer = model.get_submodule(name)
    before = layer.weight.detach().clone()
    w = before.double().numpy()
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    k = max(1, int(np.floor(rho * min(w.shape) + 1e-9)))
    want = (u[:, :k] * s[:k]) @ vt[:k]
    handle = laser_reduce(model, name, rho)
    assert handle.reduction.rank == k
    tol = 1e-12 if dtype == torch.float64 else 1e-6
    np.testing.assert_allclose(layer.weight.detach().double().numpy(), want, rtol=0, atol=tol)
    assert np.linalg.matrix_rank(layer.weight.detach().double().numpy(), tol=1e-6) == k
    handle.restore()
    handle.restore()  # idempotent
    assert torch.equal(layer.weight, before)


def test_factorized_equals_dense_and_restores_module():
    model = tiny_llama()
    ids = torch.randint(0, 40, (3, 5), generator=torch.Generator().manual_seed(0))
    name = "layers.1.mlp.up_proj"
    original = model.get_submodule(name)
    with torch.no_grad():
        base = model(ids)
    with laser_reduce(model, name, 0.1):
        with torch.no_grad():
            dense = model(ids)
    with laser_reduce(model, name, 0.1, factorize=True) as h:
        pair = model.get_submodule(name)
        assert isinstance(pair, nn.Sequential) and pair[0].weight.shape == (h.reduction.rank, 16)
        with torch.no_grad():
            factored = model(ids)
    assert model.get_submodule(name) is original
    torch.testing.assert_close(factored, dense, rtol=0, atol=1e-12)
    with torch.no_grad():
        assert torch.equal(model(ids), base)
    assert not torch.allclose(dense, base)


def test_rho_one_keeps_the_function():
    model = tiny_llama()
    ids = torch.randint(0, 40, (2, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        base = model(ids)
        with laser_reduce(model, "layers.0.attn.o_proj", 1.0):
            torch.testing.assert_close(model(ids), base, rtol=0, atol=1e-12)


def test_candidates_and_bad_input():
    model = tiny_llama()
    assert len(candidate_linears(model)) == 14  # 7 per block, lm_head tied
    assert candidate_linears(model, "mlp")[0] == "layers.0.mlp.gate_proj"
    with pytest.raises(ValueError, match="tied LM head"):
        laser_reduce(model, "lm_head", 0.1)
    with pytest.raises(TypeError, match="must be an nn.Linear"):
        laser_reduce(model, "layers.0.mlp", 0.1)
    with pytest.raises(ValueError, match="not found"):
        laser_reduce(model, "layers.0.mlp.nope", 0.1)
    for bad in (0.0, 1.5, -0.1, float("nan"), "0.1", True):
        with pytest.raises(ValueError, match=r"rho must be a finite number in \(0, 1\]"):
            laser_reduce(model, "layers.0.mlp.up_proj", bad)
    with pytest.raises(ValueError, match="candidates must be"):
        candidate_linears(model, "attn")
    with pytest.raises(ValueError, match="numbered blocks"):
        candidate_linears(nn.Sequential(nn.Linear(2, 2)).get_submodule("0").__class__(2, 2), "last_half")
    w = model.get_submodule("layers.0.mlp.up_proj").weight
    with torch.no_grad():
        w[0, 0] = float("nan")
    with pytest.raises(ValueError, match="weight must be a float tensor .* of finite values"):
        laser_reduce(model, "layers.0.mlp.up_proj", 0.5)
