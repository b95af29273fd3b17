"""PyTorch reference vs a naive dense-mask attention on the replicated layout; model-level exactness;
baselines; Hugging Face adapter."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.dualkv import (
    DualKVAttention,
    dualkv_attention,
    dualkv_attention_fn,
    dualkv_decoded_attention,
    pack_replicated,
    pack_shared_prompt,
    replicated_response_logprobs,
    response_logprobs,
    token_mean_policy_loss,
    verify_equivalence,
)
from neurips26.dualkv.baselines import (
    build_flex_block_mask,
    flex_dualkv_attention,
    prefix_grouper_attention,
    replicated_attention,
    replicated_attention_fn,
)
from neurips26.nn.llama import Llama, LlamaConfig
from neurips26.nn.llama import sdpa_attention as _sdpa


def _random_groups(seed, prompt_lens, resp_lens, vocab=64):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, vocab, (p,), generator=g), [torch.randint(0, vocab, (r,), generator=g) for r in rs])
            for p, rs in zip(prompt_lens, resp_lens)]


def _qkv(t, h, hk, d, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(t, n, d, generator=g, dtype=torch.float64).to(dtype) for n in (h, hk, hk))


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_reference_matches_naive_replicated_random_shapes(data, naive_attention):
    n_groups = data.draw(st.integers(1, 3))
    prompt_lens = data.draw(st.lists(st.integers(1, 9), min_size=n_groups, max_size=n_groups))
    resp_lens = [data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=4)) for _ in range(n_groups)]
    hk = data.draw(st.sampled_from([1, 2]))
    h = hk * data.draw(st.sampled_from([1, 2, 3]))
    d = data.draw(st.sampled_from([2, 4, 6]))
    b = pack_shared_prompt(_random_groups(0, prompt_lens, resp_lens))
    q, k, v = _qkv(b.num_tokens, h, hk, d, seed=data.draw(st.integers(0, 10**6)))
    out = dualkv_attention(q, k, v, b, backend="torch")
    torch.testing.assert_close(out, naive_attention(q, k, v, b), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2), (torch.float16, 2e-3)])
def test_reference_dtypes_and_gradients(dtype, tol, naive_attention):
    b = pack_shared_prompt(_random_groups(1, [11, 3], [[5, 1, 8], [2, 2]]))
    q64, k64, v64 = _qkv(b.num_tokens, 4, 2, 8, seed=3)
    q, k, v = (t.to(dtype).requires_grad_() for t in (q64, k64, v64))
    out = dualkv_attention(q, k, v, b, backend="torch")
    assert out.dtype == dtype
    ref = naive_attention(q.detach(), k.detach(), v.detach(), b)
    torch.testing.assert_close(out.double(), ref, rtol=tol, atol=tol)
    # gradients vs autograd through the dense reference (fp64 leaves)
    go = torch.randn(out.shape, dtype=torch.float64)
    grads = torch.autograd.grad(out, (q, k, v), go.to(dtype))
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    # dense reference with autograd: re-implemented inline on fp64 leaves
    ref_out = _naive_autograd(*leaves, b)
    ref_grads = torch.autograd.grad(ref_out, leaves, go)
    for gr, rg in zip(grads, ref_grads):
        torch.testing.assert_close(gr.double(), rg, rtol=5 * tol, atol=5 * tol)


def _naive_autograd(q, k, v, b):
    """Differentiable dense reference: each replicated sequence; prompt-row outputs from copy 0 only, but the
    prompt K/V of every copy feed the responses (so dK_c sums over responses, as in the replicated layout)."""
    n_rep = q.shape[1] // k.shape[1]
    rows_out = [None] * q.shape[0]
    for off, p, slices in zip(b.group_offsets, b.prompt_lens, b.response_slices):
        for i, sl in enumerate(slices):
            rows = list(range(off, off + p)) + list(range(sl.start, sl.stop))
            qs, ks, vs = q[rows].transpose(0, 1), k[rows].repeat_interleave(n_rep, 1).transpose(0, 1), \
                v[rows].repeat_interleave(n_rep, 1).transpose(0, 1)
            n = len(rows)
            s = (qs @ ks.transpose(-1, -2)) * q.shape[-1] ** -0.5
            s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
            o = (torch.softmax(s, -1) @ vs).transpose(0, 1)
            for j, r in enumerate(rows):
                if j >= p or i == 0:
                    rows_out[r] = o[j]
    return torch.stack(rows_out)


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("h, hk", [(4, 2), (3, 1), (2, 2)])
def test_cpu_flash_merge_matches_joint_softmax(h, hk, dtype, tol):
    """The CPU path (two fused flash calls merged by LSE, flash backward with the merged O/lse) against the plain
    joint-softmax reference: outputs and all five gradients, ragged lengths incl. R=1."""
    from neurips26.dualkv.attention import _MergedFlashDecodedAttention, decoded_attention_reference

    lens, p, d = [5, 1, 17, 9], 13, 8
    g = torch.Generator().manual_seed(h * 10 + hk)
    ins = [torch.randn(n, heads, d, generator=g).to(dtype).requires_grad_()
           for n, heads in ((sum(lens), h), (p, hk), (p, hk), (sum(lens), hk), (sum(lens), hk))]
    out = _MergedFlashDecodedAttention.apply(*ins, lens, 0.35)
    go = torch.randn(out.shape, generator=g).to(dtype)
    grads = torch.autograd.grad(out, ins, go)
    ref = decoded_attention_reference(*ins, lens, 0.35)
    ref_grads = torch.autograd.grad(ref, ins, go)
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def test_decoded_attention_single_group_api(naive_attention):
    b = pack_shared_prompt(_random_groups(2, [6], [[3, 5, 1]]))
    q, k, v = _qkv(b.num_tokens, 4, 2, 4)
    full = naive_attention(q, k, v, b)
    out = dualkv_decoded_attention(q[6:], k[:6], v[:6], k[6:], v[6:], b.cu_seqlens_dec[0], 6, backend="torch")
    torch.testing.assert_close(out, full[6:], rtol=1e-10, atol=1e-10)


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_baselines_match_reference():
    groups = _random_groups(3, [7, 4], [[2, 6, 3], [5]])
    b = pack_shared_prompt(groups)
    q, k, v = _qkv(b.num_tokens, 4, 2, 8, dtype=torch.float32)
    ref = dualkv_attention(q, k, v, b, backend="torch")
    torch.testing.assert_close(prefix_grouper_attention(q, k, v, b), ref, rtol=1e-5, atol=1e-5)
    mask = build_flex_block_mask(b, "cpu", block_size=16)
    torch.testing.assert_close(flex_dualkv_attention(q, k, v, mask, compiled=False), ref, rtol=1e-5, atol=1e-5)
    # replicated layout: build q/k/v per sequence from the packed rows and compare response rows
    rows = [list(range(off, off + p)) + list(range(s.start, s.stop))
            for off, p, sl in zip(b.group_offsets, b.prompt_lens, b.response_slices) for s in sl]
    idx = torch.tensor([r for seq in rows for r in seq])
    cu = torch.tensor([0] + [len(r) for r in rows]).cumsum(0)
    rep = replicated_attention(q[idx], k[idx], v[idx], cu)
    torch.testing.assert_close(rep, ref[idx], rtol=1e-5, atol=1e-5)


def _llama(n_kv_heads=2, seed=0, **kw):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=n_kv_heads, max_seq_len=128, **kw)
    return Llama(cfg)


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_llama_logprobs_and_gradients_equal_replicated(n_kv_heads):
    """The exactness claim end to end: log-probs and every parameter gradient of a token-mean DAPO loss."""
    groups = _random_groups(4, [9, 5], [[4, 1, 7], [3, 6]])
    adv = torch.tensor([0.5, -1.0, 2.0, -0.3, 1.1])
    b = pack_shared_prompt(groups)
    ids, pos, cu = pack_replicated(groups)
    model = _llama(n_kv_heads)
    p_per_seq = [5 if s >= 3 else 9 for s in range(5)]

    for layer in model.layers:
        layer.attn.attention_fn = replicated_attention_fn
    rep_lp = replicated_response_logprobs(model(ids[None], position_ids=pos[None], cu_seqlens=cu), cu, ids,
                                          p_per_seq)
    token_mean_policy_loss(rep_lp, adv).backward()
    rep_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()

    for layer in model.layers:
        layer.attn.attention_fn = dualkv_attention_fn
    dk_lp = response_logprobs(model(b.input_ids[None], position_ids=b.position_ids[None], batch=b), b)
    token_mean_policy_loss(dk_lp, adv).backward()
    for a, c in zip(dk_lp, rep_lp):
        torch.testing.assert_close(a, c, rtol=0, atol=1e-5)
    for name, param in model.named_parameters():
        g, r = param.grad, rep_grads[name]
        assert (g - r).abs().max() <= 1e-4 * r.abs().max() + 1e-9, name


def test_packed_index_positions_break_equivalence():
    """Pitfall guard: positions must restart at P; packed-index positions give different log-probs."""
    groups = _random_groups(5, [6], [[4, 5]])
    b = pack_shared_prompt(groups)
    model = _llama(seed=1)
    for layer in model.layers:
        layer.attn.attention_fn = dualkv_attention_fn
    good = response_logprobs(model(b.input_ids[None], position_ids=b.position_ids[None], batch=b), b)
    bad = response_logprobs(model(b.input_ids[None], batch=b), b)  # positions 0..T-1
    assert (good[1] - bad[1]).abs().max() > 1e-4


def test_dualkv_attention_module_matches_llama_attention():
    from neurips26.nn.llama import Attention, rope_cos_sin

    cfg = LlamaConfig(vocab_size=16, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2)
    torch.manual_seed(0)
    ref_attn = Attention(cfg)
    mod = DualKVAttention(32, 4, 2, backend="torch")
    mod.load_state_dict(ref_attn.state_dict())
    groups = _random_groups(6, [5], [[3, 4]], vocab=16)
    b = pack_shared_prompt(groups)
    x = torch.randn(b.num_tokens, 32)
    out = mod(x, b)
    # replicated sequence 2 = [prompt | response 2] through the stock Llama attention
    rows = list(range(5)) + list(range(8, 12))
    cos, sin = rope_cos_sin(torch.arange(9), cfg.head_dim, cfg.rope_theta)
    ref = ref_attn(x[rows][None], cos, sin)[0]
    torch.testing.assert_close(out[8:12], ref[5:], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mod(x[None], b)[0], out)


def test_hf_adapter_matches_per_sequence_hf_model():
    transformers = pytest.importorskip("transformers")
    from neurips26.dualkv.hf import enable_dualkv, packed_logits

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(cfg).eval()
    groups = _random_groups(7, [7, 3], [[4, 2, 5], [3]])
    expect = []
    with torch.no_grad():
        for prompt, responses in groups:
            for r in responses:
                logp = torch.log_softmax(model(torch.cat([prompt, r])[None]).logits[0].float(), -1)
                expect.append(logp[len(prompt) - 1:-1].gather(1, r[:, None])[:, 0])
        b = pack_shared_prompt(groups)
        with pytest.raises(ValueError, match="enable_dualkv"):
            packed_logits(model, b)
        enable_dualkv(model)
        got = response_logprobs(packed_logits(model, b, backend="torch"), b)
        # the user-facing verifier: packed (dualkv) vs the model's standard path (sdpa) per sequence
        report = verify_equivalence(lambda bb: packed_logits(model, bb),
                                    lambda ids: _with_attn(model, "sdpa", ids), groups, atol=1e-5)
        assert report.ok and report.num_tokens_packed == b.num_tokens, report
        # without a packed batch the same model falls back to SDPA (issue 14: generate/evaluate on one model)
        ids = torch.cat([groups[0][0], groups[0][1][0]])
        torch.testing.assert_close(model(ids[None], use_cache=False).logits[0], _with_attn(model, "sdpa", ids),
                                   rtol=0, atol=0)
    for a, c in zip(got, expect):
        torch.testing.assert_close(a, c, rtol=0, atol=1e-5)


def _with_attn(model, impl, ids):
    previous = model.config._attn_implementation
    model.set_attn_implementation(impl)
    try:
        return model(ids[None], use_cache=False).logits[0]
    finally:
        model.set_attn_implementation(previous)


def test_verify_equivalence_flags_a_broken_packing():
    """The verifier catches a non-causal / wrong-position model: here packed-index positions (a classic bug)."""
    groups = _random_groups(9, [6], [[4, 5]])
    model = _llama(seed=2)
    for layer in model.layers:
        layer.attn.attention_fn = dualkv_attention_fn

    def seq_logits(ids):
        for layer in model.layers:
            layer.attn.attention_fn = _sdpa
        try:
            return model(ids[None])[0]
        finally:
            for layer in model.layers:
                layer.attn.attention_fn = dualkv_attention_fn

    good = verify_equivalence(lambda b: model(b.input_ids[None], position_ids=b.position_ids[None], batch=b),
                              seq_logits, groups, atol=1e-5)
    bad = verify_equivalence(lambda b: model(b.input_ids[None], batch=b), seq_logits, groups, atol=1e-5)
    assert good.ok and not bad.ok and bad.max_abs_diff > 1e-4
    assert good.num_tokens_replicated == 2 * 6 + 9
    with pytest.raises(ValueError, match="atol"):
        verify_equivalence(lambda b: None, seq_logits, groups, atol=0)


def test_attention_bad_input():
    b = pack_shared_prompt(_random_groups(8, [4], [[2, 3]]))
    q, k, v = _qkv(b.num_tokens, 4, 2, 8, dtype=torch.float32)
    with pytest.raises(ValueError, match="divide"):
        dualkv_attention(q, k[:, :1].expand(-1, 3, -1).contiguous(), v[:, :1].expand(-1, 3, -1).contiguous(), b)
    with pytest.raises(ValueError, match="T=9"):
        dualkv_attention(q[:-1], k[:-1], v[:-1], b)
    with pytest.raises(TypeError, match="one dtype"):
        dualkv_attention(q, k.half(), v, b)
    with pytest.raises(ValueError, match="float32"):  # a wrong dtype is a ValueError of the declaration
        dualkv_attention(q.int(), k, v, b)
    with pytest.raises(ValueError, match=r"q must be a float32/float16/bfloat16/float64 tensor \[T, H, D\]"):
        dualkv_attention(q[None], k, v, b)
    with pytest.raises(TypeError, match="SharedPromptBatch"):
        dualkv_attention(q, k, v, None)
    with pytest.raises(ValueError, match="backend"):
        dualkv_attention(q, k, v, b, backend="cuda")
    with pytest.raises(ValueError, match="cu_seqlens"):
        dualkv_decoded_attention(q[4:], k[:4], v[:4], k[4:], v[4:], torch.tensor([0, 2, 2, 5]), 4)
    with pytest.raises(ValueError, match="context_len"):
        dualkv_decoded_attention(q[4:], k[:4], v[:4], k[4:], v[4:], torch.tensor([0, 2, 5]), 0)
    with pytest.raises(ValueError, match="context_len=3"):
        dualkv_decoded_attention(q[4:], k[:4], v[:4], k[4:], v[4:], torch.tensor([0, 2, 5]), 3)


def test_backend_dispatch_goes_through_nn_backend(monkeypatch):
    """auto: the reference on CPU and for fp64; forced triton says why it cannot run (nn.backend rules)."""
    from types import SimpleNamespace

    from neurips26.dualkv import attention

    cpu = torch.randn(3, 2, 4)
    assert attention._resolve_backend("auto", cpu) == "torch"
    assert attention._resolve_backend("torch", cpu) == "torch"
    with pytest.raises(ValueError, match="backend must be one of"):
        attention._resolve_backend("cuda", cpu)
    cuda64 = SimpleNamespace(device=torch.device("cuda"), dtype=torch.float64)
    cuda32 = SimpleNamespace(device=torch.device("cuda"), dtype=torch.float32)
    monkeypatch.setattr("neurips26.nn.backend.triton_available", lambda: True)
    monkeypatch.setattr(attention, "_kernel_interpreted", lambda: False)
    assert attention._resolve_backend("auto", cuda64) == "torch"
    assert attention._resolve_backend("auto", cuda32) == "triton"
    with pytest.raises(RuntimeError, match="needs a CUDA tensor"):
        attention._resolve_backend("triton", cpu)
    monkeypatch.setattr(attention, "_kernel_interpreted", lambda: True)
    assert attention._resolve_backend("auto", cuda32) == "torch"  # the interpreter is never the fast path
    assert attention._resolve_backend("triton", cpu) == "triton"
    monkeypatch.setattr("neurips26.nn.backend.triton_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs the triton package"):
        attention._resolve_backend("triton", cpu)


def test_gpu_bench_code_path_runs_on_cpu_at_a_tiny_shape():
    """The gpu-scale measurement (never run here: no device) exercised on CPU with the torch backend, so a
    GPU run fails for GPU reasons only: per-pair ratios for both peers, the FlexAttention metric, and the
    claim's evidence built from the result (CUDA memory absent on CPU: named as missing)."""
    from types import SimpleNamespace

    from neurips26.dualkv import check
    from neurips26.dualkv._measure import kernel_bench

    res = kernel_bench(3, 16, 8, device=torch.device("cpu"), h=4, hk=2, d=16, dtype=torch.float32, reps=2,
                       warmup=0, backend="torch", log=lambda *_: None)
    assert len(res["ratio_replicated_sdpa"]) == len(res["ratio_prefix_grouper"]) == 2
    assert all(r > 0 for r in res["ratio_replicated_sdpa"] + res["ratio_prefix_grouper"])
    assert res.get("time_flex_ms", 1.0) > 0 or "flex_unsupported" in res
    ctx = SimpleNamespace(cache=lambda key, fn: [dict(res, N=28, P=4096), dict(res, N=16, P=16384)])
    ev = check.measure_c7(ctx)
    assert ev.missing == ("memory",) and len(ev.values) == 2
    ev6 = check.measure_c6(ctx)
    assert not ev6.missing and ev6.details["n28_p4096"] == res["ratio_replicated_sdpa"]
