"""Cached decoding equals the full forward: our Llama's generate (KV cache + conv states) against re-running the
whole sequence, Hugging Face generate with add_convs_to_hf against the full-forward argmax, refusals, and step()
in the input dtype."""

import pytest
import torch

from neurips26.dynconv import (
    DynamicShortConv,
    StaticShortConv,
    add_convs_to_hf,
    conv_attention_factory,
    conv_cache,
    every_linear_llama,
    generate,
)
from neurips26.nn import Llama, LlamaConfig


def _randomise_taps(model):
    """Zero-initialised U would make the dynamic part vanish: give it weight so a wrong state shows."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("U"):
                p.normal_(0.0, 0.4)


@pytest.mark.parametrize("arm", ["none", "static", "dynamic", "every_linear"])
def test_cached_generate_equals_full_forward_argmax(arm):
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=40, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2)
    model = (every_linear_llama(cfg) if arm == "every_linear"
             else Llama(cfg, attention_factory=conv_attention_factory(arm)))
    _randomise_taps(model)
    model.double()
    ids = torch.randint(0, 40, (3, 5))
    cached = generate(model, ids, 12)
    full = generate(model, ids, 12, use_cache=False)
    assert torch.equal(cached, full)
    # and the logits of every step agree to fp64 round-off with the full forward
    with conv_cache(model):
        from neurips26.dynconv import KVCache

        kv = KVCache()
        steps = [model(cached[:, :5], position_ids=torch.arange(5).expand(3, 5), kv_cache=kv)]
        for t in range(5, cached.shape[1]):
            steps.append(model(cached[:, t:t + 1], position_ids=torch.full((3, 1), t), kv_cache=kv))
    torch.testing.assert_close(torch.cat(steps, 1), model(cached), atol=1e-10, rtol=1e-10)


def test_generate_refuses_a_model_it_cannot_cache():
    model = Llama(LlamaConfig(vocab_size=20, d_model=16, n_layers=1, n_heads=2))  # plain nn.Attention
    with pytest.raises(TypeError, match="ConvAugmentedAttention"):
        generate(model, torch.zeros(1, 3, dtype=torch.long), 2)


def test_conv_cache_chunks_equal_one_call():
    torch.manual_seed(1)
    for conv in (DynamicShortConv(8, 4, rank=3, cond_dim=6), StaticShortConv(8, 4)):
        if isinstance(conv, DynamicShortConv):
            torch.nn.init.normal_(conv.U, 0.0, 0.5)
        x, c = torch.randn(2, 11, 8, dtype=torch.float64), torch.randn(2, 11, 6, dtype=torch.float64)
        conv.double()

        def call(a, b, conv=conv):
            return conv(a, b) if isinstance(conv, DynamicShortConv) else conv(a)

        full = call(x, c)
        with conv_cache(conv):
            parts = [call(x[:, a:b], c[:, a:b]) for a, b in ((0, 1), (1, 3), (3, 4), (4, 11))]
        torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-12, rtol=1e-12)
        assert conv.conv_cache is None  # stateless again after the block


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_step_computes_in_the_input_dtype(dtype):
    torch.manual_seed(2)
    conv = DynamicShortConv(6, 3, rank=2, cond_dim=5)
    torch.nn.init.normal_(conv.U, 0.0, 0.5)
    conv.to(dtype)
    x, c = torch.randn(2, 7, 6, dtype=dtype), torch.randn(2, 7, 5, dtype=dtype)
    state, ys = conv.init_state(2, dtype=dtype), []
    for t in range(7):
        y, state = conv.step(x[:, t], c[:, t], state)
        assert y.dtype == dtype
        ys.append(y)
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 3e-2}[dtype]
    torch.testing.assert_close(torch.stack(ys, 1), conv(x, c),
                               atol=tol, rtol=tol)


transformers = pytest.importorskip("transformers")


def _hf(seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, bos_token_id=None,
                                   eos_token_id=None)
    hf = transformers.LlamaForCausalLM(cfg).eval()
    convs = add_convs_to_hf(hf)
    _randomise_taps(convs)
    return hf, convs


def test_hf_generate_with_convs_equals_full_forward_argmax():
    hf, convs = _hf()
    ids = torch.randint(1, 64, (2, 6))
    out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False)
    ref = ids
    with torch.no_grad():
        for _ in range(10):
            ref = torch.cat([ref, hf(ref).logits[:, -1].argmax(-1, keepdim=True)], 1)
    assert torch.equal(out, ref)
    # beam search reorders the KV cache each step; the conv states follow (cached = uncached)
    b1 = hf.generate(ids, max_new_tokens=6, num_beams=3, do_sample=False)
    b2 = hf.generate(ids, max_new_tokens=6, num_beams=3, do_sample=False, use_cache=False)
    assert torch.equal(b1, b2)
    convs.remove()
    assert all(m.conv_cache is None for m in convs)


def test_hf_convs_refuse_padding_and_unknown_caches():
    hf, _ = _hf()
    ids = torch.randint(1, 64, (2, 6))
    with pytest.raises(ValueError, match="padding"):
        hf.generate(ids, attention_mask=torch.tensor([[0, 1, 1, 1, 1, 1], [1] * 6]), max_new_tokens=2)
    with torch.no_grad():
        out = hf(ids, use_cache=True)
        other = hf(ids[:, :3], use_cache=True)  # the convs now hold 3 positions, the first cache 6
        with pytest.raises(RuntimeError, match="KV cache holds 6"):
            hf(ids[:, :1], past_key_values=out.past_key_values, use_cache=True)
        assert other.logits.shape == (2, 3, 64)
