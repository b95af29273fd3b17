"""The Mamba-style host: its recurrence against the closed form, causality, each conv kind in a Llama."""

import pytest
import torch
import torch.nn.functional as F

from neurips26.dynconv import GatedRecurrentMixer, recurrent_mixer_factory
from neurips26.nn import Llama, LlamaConfig


def test_recurrence_equals_closed_form():
    """h_t = sum_{s<=t} (prod_{s<r<=t} a_r) (1 - a_s) u_s, written with explicit products."""
    torch.manual_seed(0)
    mix = GatedRecurrentMixer(6, expand=2, conv="none").double()
    x = torch.randn(2, 7, 6, dtype=torch.float64)
    u = F.silu(mix.in_proj(x))
    a = torch.sigmoid(mix.gate_proj(x))
    h = torch.zeros_like(u)
    for t in range(7):
        for s in range(t + 1):
            h[:, t] += torch.prod(a[:, s + 1:t + 1], dim=1) * (1 - a[:, s]) * u[:, s]
    want = mix.out_proj(h * F.silu(mix.z_proj(x)))
    torch.testing.assert_close(mix(x), want, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("conv", ["none", "static", "dynamic"])
def test_host_in_a_llama_is_causal_and_trains(conv):
    torch.manual_seed(1)
    model = Llama(LlamaConfig(vocab_size=20, d_model=16, n_layers=2, n_heads=2),
                  attention_factory=recurrent_mixer_factory(conv)).double()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("U"):
                p.normal_(0.0, 0.5)
    ids = torch.randint(0, 20, (2, 9))
    changed = ids.clone()
    changed[:, 5] = (ids[:, 5] + 1) % 20
    torch.testing.assert_close(model(ids)[:, :5], model(changed)[:, :5], atol=1e-12, rtol=0)
    model(ids).logsumexp(-1).mean().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_bad_input():
    with pytest.raises(ValueError):
        GatedRecurrentMixer(8, conv="fancy")
    with pytest.raises(ValueError, match="x must be"):
        GatedRecurrentMixer(8)(torch.randn(2, 3, 5))
