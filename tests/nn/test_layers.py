"""nn.layers against naive references: RMSNorm and SwiGLU against their formulas, patchify/unpatchify against an
explicit loop and as a round trip, PreNormBlock against a hand-written block (and causality), AdaLNZeroBlock as the
identity at initialisation and against the DiT equations."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.nn import llama
from neurips26.nn.layers import AdaLNZeroBlock, PreNormBlock, RMSNorm, SwiGLU, modulate, patchify, unpatchify

torch.set_num_threads(1)
DT = torch.float64


def _attention_reference(q, k, v, causal):
    """softmax(q kᵀ / √d + M) v written out, M = -inf above the diagonal when causal."""
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        logits = logits.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return logits.softmax(-1) @ v


def _qkv_attention(block, h, causal, rotate=None):
    b, n, d = h.shape
    hd = d // block.heads
    qkv = h @ block.qkv.weight.T + block.qkv.bias
    q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(b, n, block.heads, hd).transpose(1, 2) for i in range(3))
    if rotate is not None:
        q, k = rotate(q), rotate(k)
    out = _attention_reference(q, k, v, causal).transpose(1, 2).reshape(b, n, d)
    return out @ block.proj.weight.T + block.proj.bias


# ------------------------------------------------------------------------------------------ norms and MLPs
def test_rmsnorm_is_the_formula_and_llama_uses_it():
    torch.manual_seed(0)
    norm = RMSNorm(6, eps=1e-5)  # normalises in fp32 (Llama's, kept bit for bit), so compare in fp32
    with torch.no_grad():
        norm.weight.uniform_(0.5, 2.0)
    x = torch.randn(3, 4, 6)
    want = torch.empty_like(x)
    for idx in torch.cartesian_prod(torch.arange(3), torch.arange(4)):
        row = x[idx[0], idx[1]]
        want[idx[0], idx[1]] = row / math.sqrt(float((row ** 2).sum()) / 6 + 1e-5) * norm.weight
    torch.testing.assert_close(norm(x), want, rtol=1e-6, atol=1e-6)
    assert llama.RMSNorm is RMSNorm and llama.SwiGLU is SwiGLU
    assert list(RMSNorm(4).state_dict()) == ["weight"]


def test_rmsnorm_keeps_low_precision_dtype_and_normalises_in_fp32():
    x = (torch.randn(2, 8) * 300).to(torch.float16)
    y = RMSNorm(8).half()(x)
    assert y.dtype == torch.float16
    want = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).half()
    assert torch.equal(y, want)


def test_swiglu_is_the_formula_with_llamas_keys():
    torch.manual_seed(1)
    mlp = SwiGLU(5, 7).to(DT)
    x = torch.randn(2, 3, 5, dtype=DT)
    w1, w3, w2 = mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight
    silu = lambda a: a / (1 + torch.exp(-a))  # noqa: E731
    torch.testing.assert_close(mlp(x), (silu(x @ w1.T) * (x @ w3.T)) @ w2.T, rtol=1e-12, atol=1e-12)
    assert sorted(mlp.state_dict()) == ["down_proj.weight", "gate_proj.weight", "up_proj.weight"]


def test_modulate_broadcasts_a_per_sample_condition():
    x, shift, scale = torch.randn(2, 3, 4), torch.randn(2, 4), torch.randn(2, 4)
    want = torch.stack([x[b] * (1 + scale[b]) + shift[b] for b in range(2)])
    assert torch.equal(modulate(x, shift, scale), want)
    per_token = shift[:, None].expand(2, 3, 4), scale[:, None].expand(2, 3, 4)
    assert torch.equal(modulate(x, *per_token), want)


# ------------------------------------------------------------------------------------------ patches
@pytest.mark.parametrize("c, h, w, p", [(3, 8, 8, 4), (1, 6, 9, 3), (2, 5, 5, 1), (4, 4, 8, 4)])
def test_patchify_matches_an_explicit_loop_and_round_trips(c, h, w, p):
    x = torch.randn(2, c, h, w)
    tokens = patchify(x, p)
    gh, gw = h // p, w // p
    assert tokens.shape == (2, gh * gw, c * p * p)
    for b in range(2):
        for i in range(gh):
            for j in range(gw):
                patch = x[b, :, i * p:(i + 1) * p, j * p:(j + 1) * p]  # [C, p, p], flattened channel-major
                assert torch.equal(tokens[b, i * gw + j], patch.reshape(-1))
    assert torch.equal(unpatchify(tokens, p, h, w), x)


def test_patchify_moves_nan_untouched_and_refuses_bad_shapes():
    x = torch.zeros(1, 1, 4, 4)
    x[0, 0, 3, 3] = float("nan")
    assert patchify(x, 2)[0, 3, 3].isnan()
    with pytest.raises(ValueError, match="p must divide the image height and width 4 x 4, got 3"):
        patchify(x, 3)
    with pytest.raises(ValueError, match=r"patchify: x must be a tensor \[B, C, H, W\]"):
        patchify(torch.zeros(4, 4), 2)
    with pytest.raises(ValueError, match="patchify: p must be an int >= 1, got 0"):
        patchify(x, 0)
    with pytest.raises(ValueError, match=r"unpatchify: tokens must be \[B, 4, C\*4\]"):
        unpatchify(torch.zeros(1, 5, 4), 2, 4, 4)


# ------------------------------------------------------------------------------------------ PreNormBlock
@pytest.mark.parametrize("causal", [False, True])
def test_prenorm_block_matches_a_hand_written_block(causal):
    torch.manual_seed(2)
    block = PreNormBlock(8, 2, mlp_ratio=2, causal=causal).to(DT)
    x = torch.randn(2, 5, 8, dtype=DT)
    ln = lambda t, m: F.layer_norm(t, (8,), m.weight, m.bias, m.eps)  # noqa: E731
    u = x + _qkv_attention(block, ln(x, block.norm1), causal)
    m0, m2 = block.mlp[0], block.mlp[2]
    want = u + F.gelu(ln(u, block.norm2) @ m0.weight.T + m0.bias) @ m2.weight.T + m2.bias
    torch.testing.assert_close(block(x), want, rtol=1e-10, atol=1e-10)


def test_prenorm_causal_output_at_t_ignores_later_tokens():
    torch.manual_seed(3)
    block = PreNormBlock(8, 2, causal=True, norm="rms", mlp="swiglu").to(DT)
    x = torch.randn(1, 6, 8, dtype=DT)
    y = block(x)
    for t in range(6):
        changed = x.clone()
        changed[:, t + 1:] = torch.randn_like(changed[:, t + 1:]) * 10
        torch.testing.assert_close(block(changed)[:, :t + 1], y[:, :t + 1], rtol=1e-12, atol=1e-12)
    # a non-causal block does look ahead
    full = PreNormBlock(8, 2).to(DT)
    changed = x.clone()
    changed[:, -1] = torch.randn(8, dtype=DT) * 3  # not a constant shift: that would vanish in the LayerNorm
    assert not torch.allclose(full(changed)[:, 0], full(x)[:, 0])


def test_prenorm_seams_rotate_attend_and_mask():
    torch.manual_seed(4)
    block = PreNormBlock(8, 2).to(DT)
    x = torch.randn(2, 4, 8, dtype=DT)
    flip = lambda t: t.flip(-1)  # noqa: E731  (any map of q and k)
    ln = lambda t, m: F.layer_norm(t, (8,), m.weight, m.bias, m.eps)  # noqa: E731
    got = block(x, rotate=flip)
    u = x + _qkv_attention(block, ln(x, block.norm1), False, rotate=flip)
    torch.testing.assert_close(got - u, block.mlp(block.norm2(u)), rtol=1e-10, atol=1e-10)
    calls = []
    block(x, attend=lambda q, k, v: calls.append(q.shape) or v)
    assert calls == [(2, 2, 4, 4)]
    causal_mask = torch.ones(4, 4, dtype=torch.bool).tril()
    torch.testing.assert_close(block(x, attn_mask=causal_mask), _causal_copy(block)(x), rtol=1e-12, atol=1e-12)


def _causal_copy(block):
    twin = PreNormBlock(8, 2, causal=True).to(DT)
    twin.load_state_dict(block.state_dict())
    return twin


def test_prenorm_refuses_bad_configuration():
    with pytest.raises(ValueError, match="dim must be divisible by heads"):
        PreNormBlock(6, 4)
    with pytest.raises(ValueError, match="norm must be one of"):
        PreNormBlock(8, 2, norm="batch")


# ------------------------------------------------------------------------------------------ AdaLNZeroBlock
@pytest.mark.parametrize("per_token", [False, True])
def test_adaln_zero_is_the_identity_at_initialisation(per_token):
    torch.manual_seed(5)
    block = AdaLNZeroBlock(8, 2)
    x = torch.randn(2, 5, 8)
    c = torch.randn(2, 5, 8) if per_token else torch.randn(2, 8)
    assert torch.equal(block(x, c), x)
    assert torch.count_nonzero(block.ada.weight) == 0 and torch.count_nonzero(block.ada.bias) == 0


@pytest.mark.parametrize("gelu, eps", [("tanh", 1e-6), ("none", 1e-5)])
def test_adaln_zero_matches_the_dit_equations(gelu, eps):
    torch.manual_seed(6)
    block = AdaLNZeroBlock(8, 2, mlp_ratio=1.5, norm_eps=eps, gelu=gelu).to(DT)
    with torch.no_grad():
        block.ada.weight.normal_(0, 0.3)
        block.ada.bias.normal_(0, 0.3)
    x, c = torch.randn(2, 4, 8, dtype=DT), torch.randn(2, 8, dtype=DT)
    e = F.silu(c) @ block.ada.weight.T + block.ada.bias  # [B, 6 D]
    b1, s1, g1, b2, s2, g2 = (e[:, None, i * 8:(i + 1) * 8] for i in range(6))
    ln = lambda t: F.layer_norm(t, (8,), eps=eps)  # noqa: E731
    u = x + g1 * _qkv_attention(block, ln(x) * (1 + s1) + b1, False)
    m0, m2 = block.mlp[0], block.mlp[2]
    hidden = F.gelu((ln(u) * (1 + s2) + b2) @ m0.weight.T + m0.bias, approximate=gelu)
    want = u + g2 * (hidden @ m2.weight.T + m2.bias)
    torch.testing.assert_close(block(x, c), want, rtol=1e-10, atol=1e-10)
    assert m0.out_features == 12
    assert list(block.state_dict()) == ["qkv.weight", "qkv.bias", "proj.weight", "proj.bias", "mlp.0.weight",
                                        "mlp.0.bias", "mlp.2.weight", "mlp.2.bias", "ada.weight", "ada.bias"]
