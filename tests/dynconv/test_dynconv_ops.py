"""The PyTorch reference: float64 gradcheck, an independent loop implementation, the naive baselines,
and every bad-input path of the functional API."""

import pytest
import torch

from neurips26.dynconv import (
    dynamic_conv1d,
    lowrank_dynamic_conv1d,
    naive_dynamic_conv1d,
    naive_lowrank_dynamic_conv1d,
    static_depthwise_conv1d,
)
from neurips26.dynconv.ops import reference_dynamic_conv1d, reference_lowrank_dynamic_conv1d


def loop_conv(x, k, s=None, residual=False, cu=None):
    """y[b,t,d] = sum_w (k[b,t,w,d] + s[w,d]) x[b,t-w,d], element by element (k: [B,T,W,D])."""
    b_, t_, d_ = x.shape
    w_ = k.shape[2]
    starts = [0] * t_
    if cu is not None:
        c = cu.tolist()
        for a, e in zip(c, c[1:]):
            for i in range(a, e):
                starts[i] = a
    y = torch.zeros_like(x)
    for b in range(b_):
        for t in range(t_):
            for w in range(w_):
                if t - w >= starts[t]:
                    y[b, t] += (k[b, t, w] + (s[w] if s is not None else 0)) * x[b, t - w]
    return y + x if residual else y


def test_headwise_reference_equals_loop():
    g = torch.Generator().manual_seed(0)
    x, taps, s = torch.randn(2, 7, 6, generator=g), torch.randn(2, 7, 3, 3, generator=g), torch.randn(3, 6)
    k = taps.transpose(2, 3).repeat_interleave(2, dim=-1)  # [B,T,W,D]
    torch.testing.assert_close(dynamic_conv1d(x, taps, s, True, backend="torch"), loop_conv(x, k, s, True))


def test_lowrank_reference_equals_loop_with_packing():
    g = torch.Generator().manual_seed(1)
    x, z, U = torch.randn(1, 9, 4, generator=g), torch.randn(1, 9, 3, generator=g), torch.randn(3, 8, generator=g)
    cu = torch.tensor([0, 1, 4, 9])
    k = (z @ U).view(1, 9, 2, 4)
    torch.testing.assert_close(lowrank_dynamic_conv1d(x, z, U, backend="torch", cu_seqlens=cu),
                               loop_conv(x, k, cu=cu))


def test_naive_baselines_agree_with_reference():
    g = torch.Generator().manual_seed(2)
    x, s = torch.randn(2, 11, 8, generator=g), torch.randn(4, 8, generator=g)
    taps = torch.randn(2, 11, 4, 4, generator=g)
    z, U = torch.randn(2, 11, 5, generator=g), torch.randn(5, 32, generator=g)
    torch.testing.assert_close(naive_dynamic_conv1d(x, taps, s, True), reference_dynamic_conv1d(x, taps, s, True))
    torch.testing.assert_close(naive_lowrank_dynamic_conv1d(x, z, U, s),
                               reference_lowrank_dynamic_conv1d(x, z, U, s))
    zero = torch.zeros(2, 11, 8, 4)
    torch.testing.assert_close(static_depthwise_conv1d(x, s, True), reference_dynamic_conv1d(x, zero, s, True))


def test_reference_gradcheck_float64():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1, 6, 4, dtype=torch.float64, generator=g, requires_grad=True)
    taps = torch.randn(1, 6, 2, 3, dtype=torch.float64, generator=g, requires_grad=True)
    z = torch.randn(1, 6, 2, dtype=torch.float64, generator=g, requires_grad=True)
    U = torch.randn(2, 12, dtype=torch.float64, generator=g, requires_grad=True)
    s = torch.randn(3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    cu = torch.tensor([0, 2, 6])
    assert torch.autograd.gradcheck(lambda a, b, c: dynamic_conv1d(a, b, c, True, backend="torch"), (x, taps, s))
    assert torch.autograd.gradcheck(
        lambda a, b, c, d: lowrank_dynamic_conv1d(a, b, c, d, False, backend="torch", cu_seqlens=cu), (x, z, U, s))


def test_causality_output_ignores_future():
    g = torch.Generator().manual_seed(4)
    x, z, U = torch.randn(1, 10, 4, generator=g), torch.randn(1, 10, 3, generator=g), torch.randn(3, 16, generator=g)
    y = lowrank_dynamic_conv1d(x, z, U, residual=True)
    x2, z2 = x.clone(), z.clone()
    x2[:, 6:] += 5.0
    z2[:, 6:] -= 3.0
    torch.testing.assert_close(lowrank_dynamic_conv1d(x2, z2, U, residual=True)[:, :6], y[:, :6])


def test_auto_backend_on_cpu_is_reference():
    x, taps = torch.randn(1, 5, 4), torch.randn(1, 5, 4, 2)
    torch.testing.assert_close(dynamic_conv1d(x, taps), reference_dynamic_conv1d(x, taps))


X = torch.randn(1, 8, 4)
TAPS = torch.randn(1, 8, 2, 3)


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(x=torch.randn(8, 4), taps=TAPS), ValueError, "x must be"),
    (dict(x=X.long(), taps=TAPS), ValueError, "x must be a float tensor"),  # a wrong dtype: ValueError
    (dict(x=X, taps=torch.randn(1, 7, 2, 3)), ValueError, "taps must be"),
    (dict(x=X, taps=torch.randn(1, 8, 3, 3)), ValueError, "must divide D"),
    (dict(x=X, taps=torch.randn(1, 8, 2, 0)), ValueError, "kernel size"),
    (dict(x=X, taps=TAPS.double()), TypeError, "taps dtype"),
    (dict(x=X, taps=TAPS, static_w=torch.randn(4, 4)), ValueError, "static_w must be"),
    (dict(x=X, taps=TAPS, static_w=torch.randn(3, 4).half()), TypeError, "static_w dtype"),
    (dict(x=X, taps=TAPS, backend="cuda"), ValueError, "backend"),
    (dict(x=X, taps=TAPS, cu_seqlens=torch.tensor([0, 5, 3, 8])), ValueError, "never decrease"),
    (dict(x=X, taps=TAPS, cu_seqlens=torch.tensor([0, 5])), ValueError, "end at T"),
    (dict(x=X, taps=TAPS, cu_seqlens=torch.tensor([0.0, 8.0])), ValueError, "integer"),  # wrong dtype: ValueError
    (dict(x=X.expand(2, 8, 4), taps=TAPS.expand(2, 8, 2, 3), cu_seqlens=torch.tensor([0, 8])), ValueError,
     "batch size 1"),
])
def test_dynamic_conv1d_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        dynamic_conv1d(**kwargs)


@pytest.mark.parametrize("z,U,err,match", [
    (torch.randn(1, 8, 0), torch.randn(0, 12), ValueError, "rank"),
    (torch.randn(1, 8, 3), torch.randn(2, 12), ValueError, "U must be"),
    (torch.randn(1, 8, 3), torch.randn(3, 10), ValueError, "U must be"),
    (torch.randn(1, 6, 3), torch.randn(3, 12), ValueError, "z must be"),
    (torch.randn(1, 8, 3), torch.randn(3, 12).double(), TypeError, "U dtype"),
])
def test_lowrank_bad_input(z, U, err, match):
    with pytest.raises(err, match=match):
        lowrank_dynamic_conv1d(X, z, U)


def test_forced_triton_on_cpu_without_interpreter_is_a_clear_error(monkeypatch):
    kernels = pytest.importorskip("neurips26.dynconv.kernels")
    monkeypatch.setattr(kernels, "INTERPRET", False)
    with pytest.raises(RuntimeError, match="needs a CUDA tensor"):
        dynamic_conv1d(X, TAPS, backend="triton")
