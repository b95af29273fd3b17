"""Triton kernel (forward and backward) vs the PyTorch reference, under TRITON_INTERPRET=1 on CPU.

Shapes are tiny (the interpreter runs programs one by one in numpy) but hit partial tiles (lengths not a
multiple of the 16-wide blocks), GQA, several groups, head dims that are not powers of two, and every dtype
the interpreter runs (bf16 dot products run in fp32 there; see kernel.py).
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

pytest.importorskip("triton")

from neurips26.dualkv import dualkv_attention, dualkv_decoded_attention, pack_shared_prompt  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _need_interpreter_or_cuda():
    from neurips26.dualkv import kernel

    if not kernel.INTERPRETED and not torch.cuda.is_available():
        pytest.skip("kernel module was imported without TRITON_INTERPRET=1 and there is no CUDA device")


def _batch(prompt_lens, resp_lens, seed=0):
    g = torch.Generator().manual_seed(seed)
    return pack_shared_prompt([(torch.randint(0, 9, (p,), generator=g),
                                [torch.randint(0, 9, (r,), generator=g) for r in rs])
                               for p, rs in zip(prompt_lens, resp_lens)])


def _leaves(t, h, hk, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(t, n, d, generator=g).to(dtype).requires_grad_() for n in (h, hk, hk)]


TOL = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 3e-2}

CASES = [
    # (prompt lengths, response lengths per group, H, H_kv, d, dtype)
    ([32], [[5, 16, 23]], 2, 2, 16, torch.float32),      # the spec's smoke shape
    ([17], [[1, 33, 16]], 2, 1, 16, torch.float32),      # partial tiles on both regions, GQA 2
    ([7, 20], [[3, 9], [18]], 3, 1, 8, torch.float32),   # two groups, MQA (3 heads), d padded 8 -> 16
    ([13], [[11, 4]], 1, 1, 24, torch.float32),          # d = 24 (not a power of two)
    ([19], [[6, 17]], 2, 1, 16, torch.float16),
    ([19], [[6, 17]], 2, 1, 16, torch.bfloat16),
]


@pytest.mark.parametrize("prompt_lens, resp_lens, h, hk, d, dtype", CASES)
def test_kernel_forward_backward_matches_reference(prompt_lens, resp_lens, h, hk, d, dtype, naive_attention):
    b = _batch(prompt_lens, resp_lens)
    q, k, v = _leaves(b.num_tokens, h, hk, d, dtype)
    out = dualkv_attention(q, k, v, b, backend="triton")
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    grads = torch.autograd.grad(out, (q, k, v), go)

    # reference in fp32 on the same (rounded) inputs
    q32, k32, v32 = (t.detach().float().requires_grad_() for t in (q, k, v))
    ref = dualkv_attention(q32, k32, v32, b, backend="torch")
    ref_grads = torch.autograd.grad(ref, (q32, k32, v32), go.float())
    tol = TOL[dtype]
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), ref, rtol=tol, atol=tol)
    for name, gr, rg in zip("qkv", grads, ref_grads):
        assert gr.dtype == dtype
        scale = rg.abs().max().item()
        err = (gr.float() - rg).abs().max().item()
        assert err <= tol * max(1.0, scale), f"d{name}: max err {err:.3g} (scale {scale:.3g})"
    if dtype == torch.float32:  # and against the independent dense reference on the replicated layout
        torch.testing.assert_close(out.double(), naive_attention(q.detach(), k.detach(), v.detach(), b),
                                   rtol=1e-4, atol=1e-4)


def test_kernel_split_api_matches_reference():
    b = _batch([21], [[4, 17, 9]], seed=3)
    q, k, v = _leaves(b.num_tokens, 4, 2, 16, torch.float32, seed=2)
    p = 21
    args = (q[p:], k[:p], v[:p], k[p:], v[p:], b.cu_seqlens_dec[0], p)
    out = dualkv_decoded_attention(*args, backend="triton")
    ref = dualkv_decoded_attention(*args, backend="torch")
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    go = torch.randn(out.shape)
    g1 = torch.autograd.grad(out, (q, k, v), go)
    g2 = torch.autograd.grad(ref, (q, k, v), go)
    for a, c in zip(g1, g2):
        torch.testing.assert_close(a, c, rtol=1e-4, atol=1e-4)


def test_prompt_gradient_is_sum_over_responses():
    """dK_c from Call 2 equals the sum of per-response contributions (each response alone)."""
    b = _batch([16], [[5, 9, 3]], seed=4)
    q, k, v = _leaves(b.num_tokens, 2, 1, 16, torch.float32, seed=5)
    p, cu = 16, [0, 5, 14, 17]
    go = torch.randn(17, 2, 16, generator=torch.Generator().manual_seed(6))
    out = dualkv_decoded_attention(q[p:], k[:p], v[:p], k[p:], v[p:], torch.tensor(cu), p, backend="triton")
    dk_all = torch.autograd.grad(out, k, go)[0][:p]
    total = torch.zeros_like(dk_all)
    for a, e in zip(cu[:-1], cu[1:]):
        o_i = dualkv_decoded_attention(q[p + a:p + e], k[:p], v[:p], k[p + a:p + e], v[p + a:p + e],
                                       torch.tensor([0, e - a]), p, backend="torch")
        total += torch.autograd.grad(o_i, k, go[a:e])[0][:p]
    torch.testing.assert_close(dk_all, total, rtol=1e-4, atol=1e-5)


def test_kernel_bad_input():
    b = _batch([8], [[3, 4]])
    q, k, v = (t.detach() for t in _leaves(b.num_tokens, 2, 2, 16, torch.float32))
    strided = torch.randn(b.num_tokens, 2, 32)[..., ::2]
    with pytest.raises(ValueError, match="contiguous last dimension"):
        dualkv_attention(strided, k, v, b, backend="triton")
    with pytest.raises(TypeError, match="triton backend takes float32, float16, bfloat16"):
        dualkv_attention(q.double(), k.double(), v.double(), b, backend="triton")
    with pytest.raises(TypeError, match="one dtype"):
        dualkv_attention(q, k.half(), v, b, backend="triton")
    with pytest.raises(ValueError, match="divide"):
        dualkv_attention(torch.randn(b.num_tokens, 3, 16), k, v, b, backend="triton")
