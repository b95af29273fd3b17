"""DelayedLinear against a per-element loop of its defining sum, nn.Linear at D = 0, causality, errors."""

import pytest
import torch
from torch import nn

from neurips26.snndelay import DelayedLinear, draw_delays


def _loop_reference(x, weight, bias, delays):
    """y[b,t,j] = bias_j + sum_i weight[j,i] * x[b, t - delays[j,i], i], zero before t = 0 (element loop)."""
    b, t, f = x.shape
    out = weight.shape[0]
    rows = []
    for bi in range(b):
        for ti in range(t):
            for j in range(out):
                acc = bias[j] if bias is not None else x.new_zeros(())
                for i in range(f):
                    src = ti - int(delays[j, i])
                    if src >= 0:
                        acc = acc + weight[j, i] * x[bi, src, i]
                rows.append(acc)
    return torch.stack(rows).view(b, t, out)


@pytest.mark.parametrize("backend", ["reference", "conv", "gather", "auto"])
@pytest.mark.parametrize("max_delay, t_len, bias", [(0, 5, True), (1, 4, True), (3, 7, False), (6, 5, True)])
def test_matches_element_loop_values_and_gradients(backend, max_delay, t_len, bias):
    torch.manual_seed(max_delay)
    layer = DelayedLinear(4, 3, max_delay, bias=bias, seed=7, backend=backend).double()
    x = torch.randn(2, t_len, 4, dtype=torch.float64, requires_grad=True)
    y = layer(x)
    x2 = x.detach().clone().requires_grad_(True)
    w2 = layer.weight.detach().clone().requires_grad_(True)
    b2 = layer.bias.detach().clone().requires_grad_(True) if bias else None
    ref = _loop_reference(x2, w2, b2, layer.delays)
    torch.testing.assert_close(y, ref, rtol=1e-12, atol=1e-12)
    g = torch.randn_like(y)
    (y * g).sum().backward()
    (ref * g).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(layer.weight.grad, w2.grad, rtol=1e-12, atol=1e-12)
    if bias:
        torch.testing.assert_close(layer.bias.grad, b2.grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("max_delay", [2, 8, 16])
def test_fast_paths_agree_float32_larger(max_delay):
    layer = DelayedLinear(33, 17, max_delay, seed=1)
    x = torch.randn(3, 65, 33)
    ref = layer(x, backend="reference")
    for backend in ("conv", "gather"):
        torch.testing.assert_close(layer(x, backend=backend), ref, rtol=1e-5, atol=1e-5)


def test_zero_delay_is_nn_linear():
    torch.manual_seed(0)
    layer = DelayedLinear(6, 5, 0)
    lin = nn.Linear(6, 5)
    lin.load_state_dict({"weight": layer.weight.detach(), "bias": layer.bias.detach()})
    x = torch.randn(2, 9, 6)
    torch.testing.assert_close(layer(x), lin(x))
    # same initialisation scheme: the same RNG draws give the same parameters
    torch.manual_seed(3)
    a = DelayedLinear(6, 5, 4)
    torch.manual_seed(3)
    b = nn.Linear(6, 5)
    torch.testing.assert_close(a.weight, b.weight)
    torch.testing.assert_close(a.bias, b.bias)


def test_delays_are_a_buffer_drawn_from_seed():
    a, b, c = DelayedLinear(8, 4, 5, seed=3), DelayedLinear(8, 4, 5, seed=3), DelayedLinear(8, 4, 5, seed=4)
    assert torch.equal(a.delays, b.delays) and not torch.equal(a.delays, c.delays)
    assert a.delays.dtype == torch.long and a.delays.shape == (4, 8)
    assert int(a.delays.min()) >= 0 and int(a.delays.max()) <= 5
    assert "delays" in a.state_dict() and "delays" not in dict(a.named_parameters())
    n0 = sum(p.numel() for p in DelayedLinear(8, 4, 0).parameters())
    assert sum(p.numel() for p in a.parameters()) == n0 == sum(p.numel() for p in nn.Linear(8, 4).parameters())
    fresh = DelayedLinear(8, 4, 5, seed=99)
    fresh.load_state_dict(a.state_dict())
    assert torch.equal(fresh.delays, a.delays)


def test_geometric_delays_favour_short_lags():
    d_u = draw_delays(200, 200, 16, seed=0, dist="uniform").float()
    d_g = draw_delays(200, 200, 16, seed=0, dist="geometric").float()
    assert abs(d_u.mean().item() - 8.0) < 0.2
    assert d_g.mean().item() < 6.0 and int(d_g.max()) <= 16


@pytest.mark.parametrize("backend", ["conv", "gather", "reference"])
def test_causal_outputs_and_gradients(backend):
    layer = DelayedLinear(5, 4, 6, seed=2, backend=backend)
    x = torch.randn(2, 12, 5, requires_grad=True)
    y = layer(x)
    y[:, :7].sum().backward()
    assert torch.all(x.grad[:, 7:] == 0)  # outputs up to t = 6 never read inputs after t = 6
    x2 = x.detach().clone()
    x2[:, 7:] += 100.0
    torch.testing.assert_close(layer(x2)[:, :7], y[:, :7].detach())


def test_bad_input():
    with pytest.raises(ValueError, match="max_delay"):
        DelayedLinear(3, 2, -1)
    with pytest.raises(ValueError, match="backend"):
        DelayedLinear(3, 2, 1, backend="cuda")
    with pytest.raises(ValueError, match="delay_dist"):
        DelayedLinear(3, 2, 1, delay_dist="normal")
    layer = DelayedLinear(3, 2, 1)
    with pytest.raises(ValueError, match=r"\[\.\.\., T, 3\]"):
        layer(torch.randn(3))  # [T, F] is accepted (any leading dimensions), a 1-D vector has no time axis
    with pytest.raises(ValueError, match=r"\[\.\.\., T, 3\]"):
        layer(torch.randn(2, 4, 5))
    with pytest.raises(ValueError, match="float tensor"):  # a wrong dtype is a value error (neurips26.constraints)
        layer(torch.ones(2, 4, 3, dtype=torch.long))
