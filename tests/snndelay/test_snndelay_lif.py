"""LIF against the hand recurrence (numpy), the autograd reference loop, and snnTorch's Leaky."""

import numpy as np
import pytest
import torch

from neurips26.snndelay import LIF, lif, lif_reference


def _numpy_recurrence(current, beta, theta=1.0):
    """v_t = beta v_{t-1} + I_t - theta s_{t-1}; s_t = [v_t > theta]; v_0 = s_0 = 0."""
    b, t_len, n = current.shape
    v, s = np.zeros((b, n)), np.zeros((b, n))
    out = np.zeros_like(current)
    for t in range(t_len):
        v = beta * v + current[:, t] - theta * s
        s = (v > theta).astype(float)
        out[:, t] = s
    return out


@pytest.mark.parametrize("beta", [0.5, 0.8, 1.0])
def test_spikes_match_hand_recurrence(beta):
    cur = torch.randn(3, 40, 7, dtype=torch.float64) * 1.5 + 0.4
    expected = _numpy_recurrence(cur.numpy(), beta)
    for backend in ("auto", "reference"):
        spikes = LIF(beta, backend=backend).double()(cur)
        np.testing.assert_array_equal(spikes.numpy(), expected)
    assert 0.05 < expected.mean() < 0.9  # the test exercises both spiking and silence


@pytest.mark.parametrize("detach_reset", [True, False])
@pytest.mark.parametrize("t_len", [1, 2, 17])
def test_bptt_gradients_match_autograd_reference(detach_reset, t_len):
    torch.manual_seed(t_len)
    cur = (torch.randn(2, t_len, 5, dtype=torch.float64) + 0.5).requires_grad_(True)
    beta = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    g = torch.randn(2, t_len, 5, dtype=torch.float64)
    out = lif(cur, beta, 1.0, 10.0, detach_reset=detach_reset)
    (out * g).sum().backward()
    cur2, beta2 = cur.detach().clone().requires_grad_(True), beta.detach().clone().requires_grad_(True)
    ref = lif_reference(cur2, beta2, 1.0, 10.0, detach_reset=detach_reset)
    (ref * g).sum().backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(cur.grad, cur2.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(beta.grad, beta2.grad, rtol=1e-10, atol=1e-12)


def test_learn_beta_is_a_trained_parameter():
    layer = LIF(0.8, learn_beta=True)
    assert [n for n, _ in layer.named_parameters()] == ["beta"]
    cur = torch.randn(2, 10, 4) + 0.8
    layer(cur).sum().backward()
    assert layer.beta.grad is not None and torch.isfinite(layer.beta.grad)
    assert list(LIF(0.8).parameters()) == []


def test_matches_snntorch_leaky_spikes_and_gradients():
    snn = pytest.importorskip("snntorch")
    from snntorch import surrogate

    torch.manual_seed(0)
    cur = (torch.randn(4, 30, 6) * 1.2 + 0.5).requires_grad_(True)
    leaky = snn.Leaky(beta=0.8, threshold=1.0, spike_grad=surrogate.fast_sigmoid(slope=10),
                      reset_mechanism="subtract")
    mem = leaky.init_leaky()
    spk = []
    for t in range(cur.shape[1]):
        s, mem = leaky(cur[:, t], mem)
        spk.append(s)
    ref = torch.stack(spk, 1)
    g = torch.randn_like(ref)
    (ref * g).sum().backward()
    grad_ref = cur.grad.clone()
    cur.grad = None
    ours = LIF(0.8, threshold=1.0, slope=10.0)(cur)
    (ours * g).sum().backward()
    torch.testing.assert_close(ours, ref)
    torch.testing.assert_close(cur.grad, grad_ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("beta", [0.0, -0.1, 1.5, float("nan"), True])
def test_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        LIF(beta)


def test_bad_current_shape():
    with pytest.raises(ValueError, match=r"\[B, T, N\]"):
        LIF()(torch.randn(3, 4))
