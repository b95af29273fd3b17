"""Angle-concentration statistics against independent references: the brute-force mean pairwise cosine
(float64), the batch form of the streamed sums, sign-flip invariance, hand-computed scores."""

import math

import pytest
import torch
from torch import nn

from neurips26.fwdsvd import AngleConcentrationStats, kappa_from_coefficients, mean_pairwise_cosine
from neurips26.nn import Llama, LlamaConfig


def tiny_llama(seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=40, d_model=16, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=32, max_seq_len=64,
                      init_std=0.2)
    return Llama(cfg).to(dtype).eval()


def _ids(seed, batch=4, seq=7):
    return torch.randint(0, 40, (batch, seq), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("m, n, t", [(5, 8, 6), (8, 5, 9), (6, 6, 2)])
def test_kappa_sums_to_brute_force_mean_pairwise_cosine(m, n, t):
    g = torch.Generator().manual_seed(m * 100 + n)
    layer = nn.Linear(n, m, bias=False).double()
    with torch.no_grad():
        layer.weight.copy_(torch.randn(m, n, generator=g, dtype=torch.float64))
    x = torch.randn(t, n, generator=g, dtype=torch.float64) + 0.7  # a shared offset: positive concentration
    stats = AngleConcentrationStats.attach(nn.Sequential(layer), candidates="all")
    with torch.no_grad():
        nn.Sequential(layer)(x)  # plain 2-D forward: every row counts
    stats.detach()
    kappa = stats.kappa("0")
    assert kappa.shape == (min(m, n),) and kappa.dtype == torch.float64
    want = mean_pairwise_cosine(x @ layer.weight.T)
    assert abs(float(kappa.sum()) - want) < 1e-12


def test_streamed_equals_one_batch_and_batch_form():
    model = tiny_llama()
    name = "layers.1.mlp.down_proj"
    ids = _ids(1, batch=6, seq=9)
    one = AngleConcentrationStats.attach(model, [name], positions="all")
    one.observe(model, ids)
    one.detach()
    streamed = AngleConcentrationStats.attach(model, [name], positions="all")
    for chunk in (ids[:1], ids[1:4], ids[4:]):
        streamed.observe(model, chunk)
    streamed.detach()
    assert one.tokens(name) == streamed.tokens(name) == 6 * 8
    torch.testing.assert_close(one.kappa(name), streamed.kappa(name), rtol=0, atol=1e-14)
    # batch form from the coefficients c = σ Vᵀ x of the captured inputs, positions 1..T-1
    captured = []
    h = model.get_submodule(name).register_forward_hook(lambda mod, inp, out: captured.append(inp[0]))
    with torch.no_grad():
        model(ids)
    h.remove()
    x = captured[0][:, 1:].reshape(-1, captured[0].shape[-1])
    _, s, vh = torch.linalg.svd(model.get_submodule(name).weight.detach(), full_matrices=False)
    torch.testing.assert_close(one.kappa(name), kappa_from_coefficients((x @ vh.T) * s), rtol=0, atol=1e-12)
    # and the sum is the brute-force mean pairwise cosine of the layer's outputs
    y = x @ model.get_submodule(name).weight.detach().T
    assert abs(float(one.kappa(name).sum()) - mean_pairwise_cosine(y)) < 1e-10


def test_kappa_invariant_to_svd_sign_flips():
    g = torch.Generator().manual_seed(3)
    c = torch.randn(11, 6, generator=g, dtype=torch.float64) + 0.4
    flips = torch.tensor([1.0, -1.0, -1.0, 1.0, -1.0, 1.0], dtype=torch.float64)
    torch.testing.assert_close(kappa_from_coefficients(c), kappa_from_coefficients(c * flips), rtol=0, atol=1e-15)


def test_positions_last_and_masks():
    model = tiny_llama()
    name = "layers.0.attn.q_proj"
    ids = _ids(2, batch=5, seq=6)
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0
    mask[3, 2:] = 0
    captured = []
    h = model.get_submodule(name).register_forward_hook(lambda mod, inp, out: captured.append(inp[0]))
    stats = AngleConcentrationStats.attach(model, [name], positions="last")
    stats.observe(model, {"input_ids": ids, "attention_mask": mask})
    stats.detach()
    h.remove()
    last = mask.sum(1) - 1
    x = captured[0][torch.arange(5), last]  # each row's last real token  [5, 16]
    y = x @ model.get_submodule(name).weight.detach().T
    assert stats.tokens(name) == 5
    assert abs(float(stats.kappa(name).sum()) - mean_pairwise_cosine(y)) < 1e-10
    # a plain forward [B, T, n] counts each row's last position
    plain = AngleConcentrationStats.attach(model, [name])
    with torch.no_grad():
        model(ids)
    plain.detach()
    assert plain.tokens(name) == 5


def test_dispersion_scores_by_hand():
    layer = nn.Linear(4, 4, bias=False).double()
    with torch.no_grad():
        layer.weight.copy_(torch.diag(torch.tensor([4.0, 3.0, 2.0, 1.0], dtype=torch.float64)))
    # tokens: coordinate 0 and 1 always positive (concentrated), 2 and 3 alternate sign (dispersed)
    x = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, -1.0, -1.0], [1.0, 1.0, 1.0, -1.0], [1.0, 1.0, -1.0, 1.0]],
                     dtype=torch.float64)
    model = nn.Sequential(layer)
    stats = AngleConcentrationStats.attach(model)
    with torch.no_grad():
        model(x)
    kappa = stats.kappa("0")
    assert (kappa[:2] > 0).all() and (kappa[2:] <= 1e-15).all()
    energy = torch.tensor([16.0, 9.0, 4.0, 1.0], dtype=torch.float64) * 4
    # rho_min = 0.25: k0 = 1, tail = components 2..4, dispersed = 3, 4
    scores = stats.dispersion("dispersion_energy", rho_min=0.25)
    assert math.isclose(scores["0"], float(energy[2:].sum() / energy.sum()), rel_tol=1e-12)
    assert math.isclose(stats.dispersion("neg_kappa_tail", rho_min=0.25)["0"], -float(kappa[1:].sum()), rel_tol=1e-12)
    assert math.isclose(stats.dispersion("frac_dispersed", rho_min=0.25)["0"], 2 / 3, rel_tol=1e-12)


def test_bad_input():
    model = tiny_llama()
    with pytest.raises(ValueError, match="positions must be one of"):
        AngleConcentrationStats.attach(model, positions="first")
    with pytest.raises(ValueError, match="tied LM head"):
        AngleConcentrationStats.attach(model, ["lm_head"])
    with pytest.raises(TypeError, match="must be an nn.Linear"):
        AngleConcentrationStats.attach(model, ["embed_tokens"])
    with pytest.raises(ValueError, match="not found"):
        AngleConcentrationStats.attach(model, ["layers.9.mlp.up_proj"])
    stats = AngleConcentrationStats.attach(model, "mlp")
    assert all("mlp" in n for n in stats.names) and len(stats.names) == 6
    with pytest.raises(ValueError, match="score must be one of"):
        stats.dispersion("entropy")
    with pytest.raises(ValueError, match="at least 2 observed tokens"):
        stats.kappa(stats.names[0])
    ids = _ids(0, batch=2, seq=4)
    with pytest.raises(ValueError, match="right-padded"):
        stats.observe(model, {"input_ids": ids, "attention_mask": torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]])})
    with pytest.raises(ValueError, match="at least one real token"):
        stats.observe(model, {"input_ids": ids, "attention_mask": torch.zeros_like(ids)})
    with pytest.raises(TypeError, match="batch must be"):
        stats.observe(model, [1, 2])
    half = AngleConcentrationStats.attach(model, "last_half").names
    assert half and all(n.startswith("layers.1.") for n in half) and len(half) == 7
