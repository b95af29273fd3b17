"""DynamicShortConv / StaticShortConv / ConvAugmentedAttention: decoding, packing, init, Llama wiring."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.dynconv import (
    ConvAugmentedAttention,
    DynamicShortConv,
    StaticShortConv,
    conv_attention_factory,
)
from neurips26.nn import Llama, LlamaConfig


def _trained_like(layer: DynamicShortConv, seed: int = 0) -> DynamicShortConv:
    """Give the zero-initialised generator non-zero weights, as after training."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return layer


@pytest.mark.parametrize("head_size,width", [(None, 4), (2, 3), (None, 1)])
def test_step_decoding_equals_full_forward(head_size, width):
    layer = _trained_like(DynamicShortConv(6, width, rank=3, cond_dim=5, head_size=head_size))
    g = torch.Generator().manual_seed(1)
    x, c = torch.randn(2, 9, 6, generator=g), torch.randn(2, 9, 5, generator=g)
    full = layer(x, c)
    state = layer.init_state(2)
    outs = []
    for t in range(9):
        y, state = layer.step(x[:, t], c[:, t], state)
        outs.append(y)
    torch.testing.assert_close(torch.stack(outs, 1), full, atol=1e-5, rtol=1e-5)


def test_prefill_state_then_step_equals_full_forward():
    layer = _trained_like(DynamicShortConv(4, 4, rank=2))
    x = torch.randn(1, 10, 4)
    full = layer(x)
    _, state = layer(x[:, :6], return_final_state=True)
    for t in range(6, 10):
        y, state = layer.step(x[:, t], None, state)
        torch.testing.assert_close(y, full[:, t], atol=1e-5, rtol=1e-5)


def test_varlen_packing_equals_separate_sequences():
    layer = _trained_like(DynamicShortConv(5, 4, rank=3, cond_dim=3))
    static = _trained_like(StaticShortConv(5, 4))
    lengths = [3, 1, 7, 2]
    g = torch.Generator().manual_seed(2)
    xs = [torch.randn(1, n, 5, generator=g) for n in lengths]
    cs = [torch.randn(1, n, 3, generator=g) for n in lengths]
    cu = torch.tensor([0, 3, 4, 11, 13])
    packed = layer(torch.cat(xs, 1), torch.cat(cs, 1), cu_seqlens=cu)
    torch.testing.assert_close(packed, torch.cat([layer(x, c) for x, c in zip(xs, cs)], 1))
    torch.testing.assert_close(static(torch.cat(xs, 1), cu_seqlens=cu), torch.cat([static(x) for x in xs], 1))
    # per-sequence prefill caches
    _, states = layer(torch.cat(xs, 1), torch.cat(cs, 1), cu_seqlens=cu, return_final_state=True)
    for i, x in enumerate(xs):
        _, st = layer(x, cs[i], return_final_state=True)
        torch.testing.assert_close(states[i:i + 1], st)


def test_zero_init_equals_static_conv_plus_residual():
    layer = DynamicShortConv(6, 4, rank=15, cond_dim=8)
    assert torch.count_nonzero(layer.U) == 0
    static = StaticShortConv(6, 4, residual=True)
    with torch.no_grad():
        static.weight.copy_(layer.static_weight)
    x, c = torch.randn(2, 7, 6), torch.randn(2, 7, 8)
    torch.testing.assert_close(layer(x, c), static(x))


def test_static_conv_matches_nn_conv1d_with_flipped_taps():
    conv = nn.Conv1d(6, 6, 4, groups=6, padding=3, bias=False)
    layer = StaticShortConv.from_conv1d(conv)
    x = torch.randn(2, 9, 6)
    expected = conv(x.transpose(1, 2))[..., :9].transpose(1, 2)
    torch.testing.assert_close(layer(x), expected)
    # and step() decoding
    state, outs = layer.init_state(2), []
    for t in range(9):
        y, state = layer.step(x[:, t], state)
        outs.append(y)
    torch.testing.assert_close(torch.stack(outs, 1), expected, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("conv,match", [
    (nn.Conv1d(4, 4, 3, groups=4, padding=1, bias=False), "not a causal"),
    (nn.Conv1d(4, 4, 3, groups=4, padding="same", bias=False), "not a causal"),
    (nn.Conv1d(4, 4, 3, groups=1, padding=2, bias=False), "depthwise"),
    (nn.Conv1d(4, 4, 3, groups=4, padding=2), "bias"),
])
def test_from_conv1d_rejects_non_causal_or_non_depthwise(conv, match):
    with pytest.raises(ValueError, match=match):
        StaticShortConv.from_conv1d(conv)


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(dim=4, kernel_size=0), ValueError, "kernel_size must be an int >= 1"),
    (dict(dim=4, rank=0), ValueError, "rank must be an int >= 1"),
    (dict(dim=4, head_size=3), ValueError, "must divide dim"),
    (dict(dim=4, kernel_size=2.5), TypeError, "kernel_size must be an int"),
    (dict(dim=4, backend="cuda"), ValueError, "backend"),
])
def test_dynamic_short_conv_bad_construction(kwargs, err, match):
    with pytest.raises(err, match=match):
        DynamicShortConv(**kwargs)


def test_dynamic_short_conv_bad_calls():
    layer = DynamicShortConv(4, 3, rank=2, cond_dim=5)
    with pytest.raises(ValueError, match="cond is required"):
        layer(torch.randn(1, 3, 4))
    with pytest.raises(ValueError, match="cond must be"):
        layer(torch.randn(1, 3, 4), torch.randn(1, 3, 4))
    with pytest.raises(ValueError, match=r"state must be a tensor \[B, 2, 4\]"):  # [B, W-1, D]
        layer.step(torch.randn(2, 4), torch.randn(2, 5), torch.zeros(2, 3, 4))
    with pytest.raises(TypeError, match="cond dtype"):
        layer(torch.randn(1, 3, 4).double(), torch.randn(1, 3, 5))
    with pytest.raises(ValueError, match="x must be a float tensor"):  # a wrong dtype: ValueError (issue 33)
        layer(torch.ones(1, 3, 4, dtype=torch.long), torch.randn(1, 3, 5))
    with pytest.raises(ValueError, match="kernel_size"):
        StaticShortConv(4, 0)


@pytest.mark.parametrize("conv", ["none", "static", "dynamic"])
def test_conv_attention_in_llama_trains_and_is_causal(conv):
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, max_seq_len=16)
    model = Llama(cfg, attention_factory=conv_attention_factory(conv, rank=3))
    if conv == "dynamic":  # the zero-initialised U survives Llama's Linear initialiser
        assert all(torch.count_nonzero(layer.attn.convs["q"].U) == 0 for layer in model.layers)
        assert model.layers[0].attn.convs["k"].dim == 8  # GQA: K/V convs use the K/V width
    ids = torch.randint(0, 32, (2, 10))
    logits = model(ids)
    loss = F.cross_entropy(logits.flatten(0, 1), ids.roll(-1, 1).flatten())
    loss.backward()
    assert torch.isfinite(loss)
    ids2 = ids.clone()
    ids2[:, 7:] = (ids2[:, 7:] + 1) % 32
    torch.testing.assert_close(model(ids2)[:, :7], logits[:, :7])


def test_packed_attention_equals_separate_sequences():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, max_seq_len=16)
    model = Llama(cfg, attention_factory=conv_attention_factory("dynamic", rank=3))
    with torch.no_grad():
        for layer in model.layers:
            for c in layer.attn.convs.values():
                c.U.normal_(0, 0.3)
    a, b = torch.randint(0, 32, (1, 5)), torch.randint(0, 32, (1, 6))
    pos = torch.cat([torch.arange(5), torch.arange(6)])[None]
    packed = model(torch.cat([a, b], 1), position_ids=pos, cu_seqlens=torch.tensor([0, 5, 11]))
    torch.testing.assert_close(packed, torch.cat([model(a), model(b)], 1), atol=1e-5, rtol=1e-4)


def test_conv_attention_bad_arguments():
    with pytest.raises(ValueError, match="conv must be one of"):
        ConvAugmentedAttention(16, 2, conv="dynamic-ish")
    with pytest.raises(ValueError, match="must divide n_heads"):
        ConvAugmentedAttention(16, 4, 3)
    with pytest.raises(ValueError, match="conv must be one of"):
        conv_attention_factory("lstm")
    layer = ConvAugmentedAttention(16, 2, conv="static")
    assert layer(torch.randn(1, 5, 16)).shape == (1, 5, 16)  # standalone RoPE


def test_low_precision_activations_with_fp32_weights():
    layer = _trained_like(DynamicShortConv(8, 4, rank=3))
    static = _trained_like(StaticShortConv(8, 4))
    x = torch.randn(2, 6, 8)
    for mod in (layer, static):
        y16 = mod(x.bfloat16())
        assert y16.dtype == torch.bfloat16
        torch.testing.assert_close(y16.float(), mod(x), atol=0.1, rtol=0.05)
