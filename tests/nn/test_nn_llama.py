"""The shared Llama against independent references: naive RoPE, causality, GQA == MHA with repeated
kv weights, tied weights, inputs_embeds == embedding of ids."""

import math

import pytest
import torch

from neurips26.nn import Llama, LlamaConfig, apply_rope, rope_cos_sin


def _tiny(**kw) -> Llama:
    torch.manual_seed(0)
    cfg = dict(vocab_size=61, d_model=32, n_layers=2, n_heads=4, max_seq_len=64)
    cfg.update(kw)
    return Llama(LlamaConfig(**cfg))


def test_rope_matches_naive_pairwise_rotation():
    torch.manual_seed(1)
    b, h, t, d, theta = 2, 3, 7, 8, 10000.0
    x = torch.randn(b, h, t, d)
    pos = torch.arange(t)
    cos, sin = rope_cos_sin(pos, d, theta)
    got = apply_rope(x, cos, sin)
    # naive: rotate each pair (x_i, x_{i+d/2}) by angle p * theta^(-2i/d)
    want = torch.empty_like(x)
    half = d // 2
    for p in range(t):
        for i in range(half):
            ang = p * theta ** (-2 * i / d)
            a, c = x[..., p, i], x[..., p, i + half]
            want[..., p, i] = a * math.cos(ang) - c * math.sin(ang)
            want[..., p, i + half] = a * math.sin(ang) + c * math.cos(ang)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_rope_relative_property():
    # <R_p q, R_k k> depends only on p - k.
    torch.manual_seed(2)
    d = 16
    q, k = torch.randn(1, 1, 1, d), torch.randn(1, 1, 1, d)

    def rot(x, p):
        cos, sin = rope_cos_sin(torch.tensor([p]), d, 10000.0)
        return apply_rope(x, cos, sin)

    a = (rot(q, 5) * rot(k, 2)).sum()
    b = (rot(q, 13) * rot(k, 10)).sum()
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_causality_future_tokens_do_not_change_past_logits():
    model = _tiny().eval()
    ids = torch.randint(0, 61, (2, 12))
    ids2 = ids.clone()
    ids2[:, 8:] = torch.randint(0, 61, (2, 4))
    with torch.no_grad():
        a, b = model(ids), model(ids2)
    torch.testing.assert_close(a[:, :8], b[:, :8])
    assert not torch.allclose(a[:, 8:], b[:, 8:])


def test_gqa_equals_mha_with_repeated_kv_weights():
    gqa = _tiny(n_heads=4, n_kv_heads=2).eval()
    mha = _tiny(n_heads=4, n_kv_heads=4).eval()
    state = gqa.state_dict()
    hd = 32 // 4
    new = {}
    for key, val in state.items():
        if key.endswith(("k_proj.weight", "v_proj.weight")):
            # [H_kv * d, D] -> repeat each kv head twice -> [H * d, D]
            heads = val.view(2, hd, -1)
            new[key] = heads.repeat_interleave(2, dim=0).reshape(4 * hd, -1)
        else:
            new[key] = val
    mha.load_state_dict(new)
    ids = torch.randint(0, 61, (2, 10))
    with torch.no_grad():
        torch.testing.assert_close(gqa(ids), mha(ids), atol=1e-5, rtol=1e-5)


def test_tied_and_untied_embeddings():
    tied = _tiny(tie_embeddings=True)
    assert tied.lm_head.weight is tied.embed_tokens.weight
    untied = _tiny(tie_embeddings=False)
    assert untied.lm_head.weight is not untied.embed_tokens.weight
    assert tied.num_parameters() == untied.num_parameters() - 61 * 32


def test_inputs_embeds_equals_embedding_of_ids():
    model = _tiny().eval()
    ids = torch.randint(0, 61, (3, 9))
    pos = torch.arange(9).expand(3, 9)
    with torch.no_grad():
        a = model(ids)
        b = model(inputs_embeds=model.embed_tokens.weight[ids], position_ids=pos)
    torch.testing.assert_close(a, b)


def test_bad_inputs():
    model = _tiny()
    with pytest.raises(ValueError, match="exactly one"):
        model()
    with pytest.raises(ValueError, match="inputs_embeds"):
        model(inputs_embeds=torch.randn(1, 4, 7))
    with pytest.raises(ValueError, match="n_kv_heads"):
        LlamaConfig(n_heads=4, n_kv_heads=3)
