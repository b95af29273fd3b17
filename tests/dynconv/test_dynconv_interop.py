"""Issue 14 / 16 for dynconv: autocast (cast as SDPA does), fp64 refused by the Triton backend, non-finite
input refused by name."""

import pytest
import torch

from neurips26.dynconv import (
    DynamicShortConv,
    StaticShortConv,
    conv_attention_factory,
    dynamic_conv1d,
    lowrank_dynamic_conv1d,
    naive_lowrank_dynamic_conv1d,
)
from neurips26.nn import Llama, LlamaConfig

TOL = {torch.bfloat16: 3e-2, torch.float16: 3e-3}


def _lowrank(seed=0, b=2, t=7, d=6, r=3, w=4):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, t, d, generator=g), torch.randn(b, t, r, generator=g),
            0.3 * torch.randn(r, w * d, generator=g), 0.3 * torch.randn(w, d, generator=g))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_lowrank_op_under_autocast_matches_fp64_naive(dtype):
    """fp32 x with a low-precision z (what a Linear gives under autocast): accepted and cast; output and
    gradients close to the fp64 naive formula."""
    x, z, U, s = (t.requires_grad_() for t in _lowrank())
    with torch.autocast("cpu", dtype=dtype):
        y = lowrank_dynamic_conv1d(x, z.to(dtype), U, s, True, backend="torch")
    assert y.dtype == dtype
    ref = naive_lowrank_dynamic_conv1d(*(t.detach().double() for t in (x, z, U, s)), True)
    scale = float(ref.abs().max())
    torch.testing.assert_close(y.double(), ref, rtol=0, atol=TOL[dtype] * scale)
    y.float().sum().backward()
    leaves = [t.detach().double().requires_grad_() for t in (x, z, U, s)]
    naive_lowrank_dynamic_conv1d(*leaves, True).sum().backward()
    for got, want in zip((x.grad, z.grad, U.grad, s.grad), leaves):
        assert got.dtype == torch.float32
        torch.testing.assert_close(got.double(), want.grad, rtol=0, atol=4 * TOL[dtype] * float(want.grad.abs().max()))
    with pytest.raises(TypeError, match="dtype must match x"):  # outside autocast mixed dtypes are refused
        lowrank_dynamic_conv1d(x, z.to(dtype), U, s)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_module_and_llama_under_autocast(dtype):
    layer = DynamicShortConv(6, 4, rank=3, cond_dim=5)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    g = torch.Generator().manual_seed(3)
    x, c = torch.randn(2, 9, 6, generator=g), torch.randn(2, 9, 5, generator=g)
    full = layer(x, c)
    with torch.autocast("cpu", dtype=dtype):
        low = layer(x.to(dtype), c)  # bf16 stream, fp32 conditioning: cast as SDPA does
    assert low.dtype == dtype
    torch.testing.assert_close(low.float(), full, rtol=0, atol=4 * TOL[dtype] * float(full.abs().max()))
    torch.manual_seed(0)
    model = Llama(LlamaConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, max_seq_len=32),
                  attention_factory=conv_attention_factory("dynamic"))
    ids = torch.randint(0, 64, (2, 10))
    ref = model(ids)
    with torch.autocast("cpu", dtype=dtype):
        out = model(ids)
    torch.testing.assert_close(out.float(), ref.detach(), rtol=0, atol=20 * TOL[dtype])
    out.float().sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)


def test_triton_backend_refuses_float64_naming_the_torch_backend():
    pytest.importorskip("triton")
    x, z, U, s = (t.double() for t in _lowrank())
    with pytest.raises(TypeError, match="backend='torch'"):
        lowrank_dynamic_conv1d(x, z, U, s, backend="triton")
    with pytest.raises(TypeError, match="backend='torch'"):
        dynamic_conv1d(x, torch.randn(2, 7, 3, 4, dtype=torch.float64), backend="triton")
    # auto keeps fp64 on the reference (exact fp64 accumulation)
    y = lowrank_dynamic_conv1d(x, z, U, s, True, backend="auto")
    assert y.dtype == torch.float64
    torch.testing.assert_close(y, naive_lowrank_dynamic_conv1d(x, z, U, s, True), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", ["x", "z", "U", "static_w"])
def test_ops_refuse_non_finite_by_name(bad):
    x, z, U, s = _lowrank()
    args = {"x": x, "z": z, "U": U, "static_w": s}
    args[bad] = args[bad].clone()
    args[bad].view(-1)[1] = float("nan")
    with pytest.raises(ValueError, match=f"{bad} holds NaN"):
        lowrank_dynamic_conv1d(args["x"], args["z"], args["U"], args["static_w"])


def test_modules_refuse_non_finite_by_name():
    layer = DynamicShortConv(6, 4, rank=3, cond_dim=5)
    x, c = torch.randn(1, 5, 6), torch.randn(1, 5, 5)
    with pytest.raises(ValueError, match="cond holds NaN"):
        layer(x, c.index_fill(1, torch.tensor([2]), float("inf")))
    with pytest.raises(ValueError, match="x holds NaN"):
        layer(x.index_fill(1, torch.tensor([0]), float("nan")), c)
    with pytest.raises(ValueError, match="x holds NaN"):
        StaticShortConv(6)(x.index_fill(1, torch.tensor([0]), float("nan")))


def test_readme_hf_example_runs_under_autocast_and_matches_manual_conv():
    transformers = pytest.importorskip("transformers")
    from neurips26.dynconv import add_convs_to_hf

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2)
    hf = transformers.LlamaForCausalLM(cfg)
    convs = add_convs_to_hf(hf, conv="dynamic", kernel_size=4, rank=15)
    assert len(convs) == 6
    ids = torch.randint(0, 64, (2, 12))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = hf(input_ids=ids, labels=ids).loss
    loss.backward()
    assert torch.isfinite(loss) and all(p.grad is not None for p in convs.parameters())
    # the hooked q_proj output equals the conv applied by hand (a fresh sequence: no carried state)
    layer = hf.model.layers[0].self_attn
    x = torch.randn(1, 5, 32)
    convs.cache.reset()
    want = convs[0]._run(torch.nn.functional.linear(x, layer.q_proj.weight), x)
    torch.testing.assert_close(layer.q_proj(x), want)
