"""Streaming (one bin at a time) equals the whole-sequence forward; DelayedLinear as a drop-in nn.Linear over
any leading dimensions and in the time-first layout; evaluate keeps the model's mode; true boundaries and
the energy split against hand computations."""

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.snndelay import (
    LIF,
    CausalGaussianSmoothing,
    DelayedLinear,
    ResidualDelaySNN,
    boundary_uncertainty,
    estimate_energy,
    evaluate,
    synthetic_speech_bci,
    true_boundaries,
)


def _stream(model, x, day):
    state, outs = model.init_state(x.shape[0]), []
    for t in range(x.shape[1]):
        y, state = model.step(x[:, t], day, state)
        outs.append(y)
    return torch.stack(outs, 1)


@pytest.mark.parametrize("max_delay,dist", [(0, "uniform"), (3, "uniform"), (4, "constant"), (5, "geometric")])
def test_model_streaming_equals_forward_bit_for_bit_float64(max_delay, dist):
    torch.manual_seed(0)
    model = ResidualDelaySNN(10, 16, 3, max_delay=max_delay, n_days=2, delay_dist=dist).double().eval()
    x = 2 * torch.randn(3, 25, 10, dtype=torch.float64)
    day = torch.tensor([0, 1, 1])
    with torch.no_grad():
        full = model(x, day)
    streamed = _stream(model, x, day)
    assert torch.equal(streamed, full)


def test_model_streaming_float32_same_argmax():
    torch.manual_seed(1)
    model = ResidualDelaySNN(10, 16, 2, max_delay=4, n_days=1).eval()
    x = torch.randn(2, 30, 10)
    with torch.no_grad():
        full = model(x)
    streamed = _stream(model, x, None)
    torch.testing.assert_close(streamed, full, atol=1e-5, rtol=1e-5)  # BLAS round-off only (gemv vs gemm)


def test_lif_step_equals_forward_bit_for_bit():
    lif = LIF(0.8)
    cur = 1.5 * torch.randn(4, 40, 7)
    state, outs = lif.init_state((4, 7)), []
    for t in range(40):
        s, state = lif.step(cur[:, t], state)
        outs.append(s)
    assert torch.equal(torch.stack(outs, 1), lif(cur))


def test_smoothing_step_equals_forward_bit_for_bit():
    sm = CausalGaussianSmoothing(2.0)
    x = torch.randn(3, 12, 5)
    state, outs = sm.init_state((3, 5)), []
    for t in range(12):
        y, state = sm.step(x[:, t], state)
        outs.append(y)
    assert torch.equal(torch.stack(outs, 1), sm(x))


def test_delayed_linear_step_against_a_per_element_loop():
    torch.manual_seed(2)
    layer = DelayedLinear(4, 3, 3).double()
    x = torch.randn(2, 9, 4, dtype=torch.float64)
    state, outs = layer.init_state(2), []
    for t in range(9):
        y, state = layer.step(x[:, t], state)
        outs.append(y)
    w, b, d = layer.weight.detach(), layer.bias.detach(), layer.delays
    ref = torch.zeros(2, 9, 3, dtype=torch.float64)
    for bb in range(2):
        for t in range(9):
            for j in range(3):
                ref[bb, t, j] = b[j] + sum(w[j, i] * x[bb, t - int(d[j, i]), i] for i in range(4) if t >= d[j, i])
    torch.testing.assert_close(torch.stack(outs, 1), ref)
    torch.testing.assert_close(layer(x), ref)


def test_step_does_not_modify_the_state_in_place():
    layer = DelayedLinear(4, 3, 2)
    state = layer.init_state(2)
    before = state.clone()
    layer.step(torch.randn(2, 4), state)
    assert torch.equal(state, before)
    with pytest.raises(ValueError, match="state"):
        layer.step(torch.randn(2, 4), layer.init_state(3))


@pytest.mark.parametrize("shape", [(7, 5), (2, 3, 7, 5), (1, 2, 3, 7, 5)])
def test_zero_delay_equals_nn_linear_on_any_leading_dims(shape):
    torch.manual_seed(3)
    layer = DelayedLinear(5, 4, 0)
    lin = nn.Linear(5, 4)
    lin.load_state_dict({"weight": layer.weight.detach(), "bias": layer.bias.detach()})
    x = torch.randn(*shape)
    assert torch.equal(layer(x), lin(x))


def test_same_initialisation_as_nn_linear():
    torch.manual_seed(4)
    a = DelayedLinear(6, 3, 2)
    torch.manual_seed(4)
    b = nn.Linear(6, 3)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)


@pytest.mark.parametrize("backend", ["conv", "gather", "reference"])
def test_delays_on_4d_input_equal_each_3d_slice(backend):
    torch.manual_seed(5)
    layer = DelayedLinear(5, 4, 3, backend=backend)
    x = torch.randn(2, 3, 8, 5)
    y = layer(x)
    for i in range(2):
        torch.testing.assert_close(y[i], layer(x[i]))
    torch.testing.assert_close(layer(x[0, 0]), layer(x[0, :1])[0])  # [T, F] works like [1, T, F]


def test_time_first_layout():
    torch.manual_seed(6)
    bf = DelayedLinear(5, 4, 3)
    tf = DelayedLinear(5, 4, 3, time_first=True)
    tf.load_state_dict(bf.state_dict())
    x = torch.randn(8, 2, 5)  # [T, B, F]
    torch.testing.assert_close(tf(x), bf(x.transpose(0, 1)).transpose(0, 1))
    m_bf = ResidualDelaySNN(5, 8, 2, max_delay=2)
    m_tf = ResidualDelaySNN(5, 8, 2, max_delay=2, time_first=True)
    m_tf.load_state_dict(m_bf.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(m_tf(x), m_bf(x.transpose(0, 1)).transpose(0, 1))


def test_evaluate_keeps_the_mode_also_on_bad_data():
    data = synthetic_speech_bci(4, 4, 1.0, 1, 1, seed=0)
    model = ResidualDelaySNN(data.n_features, 8, 1, max_delay=1)
    model.train()
    ev = evaluate(model, data)
    assert model.training
    assert np.isclose(sum(ev.errors) / sum(ev.ref_lengths), ev.per)
    bad = synthetic_speech_bci(4, 4, 1.0, 1, 1, seed=0)
    bad.features[0] = bad.features[0][:, :3]  # wrong width: refused inside
    with pytest.raises((ValueError, TypeError)):
        evaluate(model, bad)
    assert model.training
    model.eval()
    with pytest.raises((ValueError, TypeError)):
        evaluate(model, bad)
    assert not model.training


def test_true_boundaries_naive():
    labels = [5, 5, 5, 7, 7, 9, 9, 9, 9, 2]
    assert true_boundaries(labels).tolist() == [3, 5, 9]
    assert true_boundaries(labels, lead=3).tolist() == [0, 2, 6]
    with pytest.raises(ValueError, match="lead"):
        true_boundaries(labels, lead=-1)


def test_boundary_uncertainty_with_given_boundaries_by_hand():
    rng = np.random.default_rng(0)
    lp = torch.log_softmax(torch.tensor(rng.normal(size=(8, 4))), -1)
    ent = -(lp.exp() * lp).sum(-1).numpy()
    bu = boundary_uncertainty([lp], [[1, 2]], window=1, boundaries=[[4]])
    near = [3, 4, 5]
    assert bu.boundary_entropy == pytest.approx(ent[near].mean())
    assert bu.interior_entropy == pytest.approx(np.delete(ent, near).mean())
    assert bu.per_sentence_boundary_entropy[0] == pytest.approx(ent[near].mean())


def test_energy_split_adds_up():
    torch.manual_seed(7)
    model = ResidualDelaySNN(6, 8, 2, max_delay=2)
    e = estimate_energy(model, torch.randn(2, 10, 6))
    assert e["joules_per_bin"] == pytest.approx(e["joules_activity_per_bin"] + e["joules_fixed_per_bin"])
    # three event-driven synapses of the SNN: two 8 -> 8 blocks and the 8 -> 41 readout, dense at E_MAC
    assert e["dense_equivalent_joules_per_bin"] == pytest.approx(4.6e-12 * (8 * 8 * 2 + 8 * 41))
