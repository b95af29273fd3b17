"""Issue 14 interop: autocast (cast as SDPA does), pytree/torch.export/weights_only for SharedPromptBatch,
the Hugging Face attention registered on import with an SDPA fallback (generate on the same model)."""

import io

import pytest
import torch
from torch.utils import _pytree

from neurips26.dualkv import dualkv_attention, dualkv_attention_fn, pack_shared_prompt, response_logprobs
from neurips26.nn.llama import Llama, LlamaConfig


def _groups(seed=0, vocab=64):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, vocab, (p,), generator=g), [torch.randint(0, vocab, (r,), generator=g) for r in rs])
            for p, rs in ((6, (3, 5, 2)), (4, (4,)))]


TOL = {torch.bfloat16: 3e-2, torch.float16: 4e-3}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_attention_under_autocast_matches_fp32(dtype, naive_attention):
    """fp32 q, k (after RoPE) with a low-precision v, as a projection under autocast gives them: accepted, cast
    to the autocast dtype, output in that dtype; outputs and gradients near the fp64 dense reference."""
    b = pack_shared_prompt(_groups())
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(b.num_tokens, n, 8, generator=gen).requires_grad_() for n in (4, 2, 2))
    with torch.autocast("cpu", dtype=dtype):
        out = dualkv_attention(q, k, v.to(dtype), b, backend="torch")
    assert out.dtype == dtype
    ref = naive_attention(q.detach(), k.detach(), v.detach(), b)
    torch.testing.assert_close(out.double(), ref, rtol=0, atol=TOL[dtype])
    w = torch.randn(out.shape, generator=gen)
    (out.float() * w).sum().backward()
    got = [t.grad.clone() for t in (q, k, v)]
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    (naive_attention(qd, kd, vd, b) * w.double()).sum().backward()
    for g, r in zip(got, (qd.grad, kd.grad, vd.grad)):
        assert g.dtype == torch.float32
        torch.testing.assert_close(g.double(), r, rtol=0, atol=8 * TOL[dtype] * float(r.abs().max()))
    with pytest.raises(TypeError, match="one dtype"):  # outside autocast mixed dtypes are refused, as in SDPA
        dualkv_attention(q, k, v.to(dtype), b)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_llama_trains_under_autocast(dtype):
    torch.manual_seed(0)
    model = Llama(LlamaConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_seq_len=64),
                  attention_fn=dualkv_attention_fn)
    b = pack_shared_prompt(_groups())
    full = response_logprobs(model(b.input_ids[None], position_ids=b.position_ids[None], batch=b), b)
    with torch.autocast("cpu", dtype=dtype):
        logits = model(b.input_ids[None], position_ids=b.position_ids[None], batch=b)
    low = response_logprobs(logits, b)
    torch.cat(low).sum().backward()
    for a, c in zip(low, full):
        torch.testing.assert_close(a, c.detach(), rtol=0, atol=10 * TOL[dtype])
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_shared_prompt_batch_is_a_pytree_and_loads_weights_only():
    b = pack_shared_prompt(_groups())
    leaves, spec = _pytree.tree_flatten(b)
    assert all(isinstance(x, torch.Tensor) for x in leaves) and len(leaves) == 2 + b.num_groups
    back = _pytree.tree_unflatten(leaves, spec)
    assert back.response_slices == b.response_slices and torch.equal(back.input_ids, b.input_ids)
    doubled = _pytree.tree_map(lambda t: t * 2, b)
    assert torch.equal(doubled.position_ids, b.position_ids * 2) and doubled.prompt_lens == b.prompt_lens
    buf = io.BytesIO()
    torch.save({"batch": b}, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=True)["batch"]
    assert loaded.response_slices == b.response_slices and loaded.group_offsets == b.group_offsets
    assert torch.equal(loaded.position_ids, b.position_ids)
    assert all(torch.equal(x, y) for x, y in zip(loaded.cu_seqlens_dec, b.cu_seqlens_dec))


def test_torch_export_takes_a_shared_prompt_batch():
    b = pack_shared_prompt(_groups())

    class Attn(torch.nn.Module):
        def forward(self, q, k, v, batch):
            return dualkv_attention(q, k, v, batch, backend="torch")

    gen = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(b.num_tokens, n, 8, generator=gen) for n in (4, 2, 2))
    exported = torch.export.export(Attn(), (q, k, v, b))
    torch.testing.assert_close(exported.module()(q, k, v, b), Attn()(q, k, v, b), rtol=0, atol=1e-6)


def test_hf_registered_on_import_fallback_generate_and_multirow_refused():
    transformers = pytest.importorskip("transformers")
    import neurips26.dualkv.hf as hf

    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                   max_position_embeddings=64)
    sdpa = transformers.Qwen3ForCausalLM._from_config(cfg, attn_implementation="sdpa").eval()
    dk = transformers.Qwen3ForCausalLM._from_config(cfg, attn_implementation="dualkv").eval()  # by name
    dk.load_state_dict(sdpa.state_dict())
    assert dk.config._attn_implementation == hf.ATTENTION_NAME
    ids = torch.randint(2, 64, (2, 6))
    mask = torch.ones_like(ids)
    mask[0, :2] = 0  # a left-padded row: the fallback must use the padding mask
    kw = dict(attention_mask=mask, max_new_tokens=5, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        assert torch.equal(dk.generate(ids, **kw), sdpa.generate(ids, **kw))
        b = pack_shared_prompt(_groups())
        got = response_logprobs(hf.packed_logits(dk, b), b)
        for (prompt, responses), s in zip(_groups(), (0, 3)):
            for i, r in enumerate(responses):
                ref = torch.log_softmax(sdpa(torch.cat([prompt, r])[None]).logits[0], -1)
                ref = ref[len(prompt) - 1:-1].gather(1, r[:, None])[:, 0]
                torch.testing.assert_close(got[s + i], ref, rtol=0, atol=1e-5)
        with pytest.raises(ValueError, match="one row"):
            dk(input_ids=b.input_ids[None].expand(2, -1), dualkv_batch=b, use_cache=False)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = hf.packed_logits(dk, b)
        assert low.dtype == torch.bfloat16
        torch.testing.assert_close(low.float(), hf.packed_logits(dk, b), rtol=0, atol=0.1)


def _bad_cases():
    from _badinput import BadInput

    b = pack_shared_prompt(_groups())
    gen = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(b.num_tokens, n, 8, generator=gen) for n in (4, 2, 2))
    nan_q = q.clone()
    nan_q[3, 1, 2] = float("nan")
    inf_v = v.clone()
    inf_v[0, 0, 0] = float("inf")
    return [
        BadInput("nan-q", (nan_q, k, v, b), names="q"),
        BadInput("inf-v", (q, k, inf_v, b), names="v"),
        BadInput("nan-scale", (q, k, v, b), {"scale": float("nan")}, names="scale"),
        BadInput("zero-scale", (q, k, v, b), {"scale": 0.0}, names="scale"),
        BadInput("str-scale", (q, k, v, b), {"scale": "0.3"}, names="scale"),
        BadInput("wrong-T", (q[:-1], k[:-1], v[:-1], b), names="T="),
        BadInput("q-list", (q.tolist(), k, v, b), names="q"),
        BadInput("int-k", (q, k.long(), v, b), names="k"),
        BadInput("batch-None", (q, k, v, None), names="batch"),
        BadInput("backend", (q, k, v, b), {"backend": "gpu"}, names="backend"),
    ]


@pytest.mark.parametrize("case", _bad_cases(), ids=lambda c: c.id)
def test_dualkv_attention_bad_input_table(case):
    """Issue 16: NaN q or scale used to return zeros silently; now every bad call names its argument."""
    from _badinput import check_bad_inputs

    check_bad_inputs(dualkv_attention, case, targets=[a for a in case.args if isinstance(a, torch.Tensor)])


def test_packing_and_logprob_bad_input_table():
    from _badinput import BadInput, check_bad_inputs
    from neurips26.dualkv import groups_from_rollouts, token_reduction_ratio

    b = pack_shared_prompt(_groups())
    for call, case in [
        (pack_shared_prompt, BadInput("empty", ([],), names="groups")),
        (pack_shared_prompt, BadInput("float-ids", ([(torch.rand(3), [torch.arange(2)])],), names="prompt")),
        (pack_shared_prompt, BadInput("empty-resp", ([(torch.arange(3), [torch.arange(0)])],), names="response")),
        (response_logprobs, BadInput("wrong-T", (torch.randn(b.num_tokens - 1, 8), b), names="logits")),
        (response_logprobs, BadInput("batch", (torch.randn(b.num_tokens, 8), "b"), names="batch")),
        (token_reduction_ratio, BadInput("N-0", (0, 4, 2.0), names="N")),
        (token_reduction_ratio, BadInput("R-nan", (2, 4, float("nan")), names="R")),
        (groups_from_rollouts, BadInput("len", (torch.ones(2, 3).long(), torch.ones(3, 2).long(), [0, 0]),
                                        names="response_ids", match=r"with B = 2 \(from prompt_ids\)")),
    ]:
        check_bad_inputs(call, case)
