"""Triton kernels (forward and backward) vs the PyTorch reference, under TRITON_INTERPRET=1 on CPU.

Shapes are tiny and deliberately odd (T, D not multiples of the 16 x 32 tiles) to exercise masking;
every head-wise reduction mode of the backward kernel (hs = 1, hs | BD, BD | hs, neither) is hit.
"""

import os

import torch

if not torch.cuda.is_available():
    # must precede the first `import triton` anywhere in the process
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

from neurips26.dynconv import dynamic_conv1d, lowrank_dynamic_conv1d  # noqa: E402
from neurips26.dynconv.ops import (  # noqa: E402
    reference_dynamic_conv1d,
    reference_lowrank_dynamic_conv1d,
    sequence_starts,
)

kernels = pytest.importorskip("neurips26.dynconv.kernels")
DEVICE = "cuda" if torch.cuda.is_available() and not kernels.INTERPRET else "cpu"
if DEVICE == "cpu" and not kernels.INTERPRET:
    pytest.skip("triton was imported without TRITON_INTERPRET=1 and there is no CUDA device",
                allow_module_level=True)

ATOL, RTOL = 1e-4, 1e-3  # fp32, as the official test.py


def _grads(y, inputs, dy):
    return torch.autograd.grad(y, inputs, dy)


def _close(a, b):
    torch.testing.assert_close(a, b, atol=ATOL, rtol=RTOL)


HEADWISE_CASES = [
    # B, T, D, hs, W, static, residual, block_d
    (1, 37, 13, 1, 4, True, True, None),     # odd T and D, fully general taps
    (1, 64, 64, 8, 4, True, False, None),    # hs | BD: in-tile head sum
    (2, 19, 24, 8, 2, False, True, None),    # last channel tile partly masked (3 heads in a 32 tile)
    (1, 33, 64, 64, 3, True, True, 32),      # BD | hs: heads span tiles, atomic row sums
    (1, 21, 18, 6, 4, True, False, None),    # hs = 6: per-element atomics
    (1, 5, 9, 3, 4, False, False, None),     # T < W region fully inside the first tile
]


@pytest.mark.parametrize("b,t,d,hs,w,static,residual,block_d", HEADWISE_CASES)
def test_headwise_kernel_matches_reference(b, t, d, hs, w, static, residual, block_d):
    g = torch.Generator().manual_seed(t * 100 + d)
    x = torch.randn(b, t, d, generator=g).to(DEVICE).requires_grad_()
    taps = torch.randn(b, t, d // hs, w, generator=g).to(DEVICE).requires_grad_()
    s = torch.randn(w, d, generator=g).to(DEVICE).requires_grad_() if static else None
    inputs = [x, taps] + ([s] if static else [])
    y_ref = reference_dynamic_conv1d(x, taps, s, residual)
    y_tri = kernels.headwise_conv_triton(x, taps, s, residual, None, block_d=block_d)
    _close(y_tri, y_ref)
    dy = torch.randn_like(y_ref)
    for a, r in zip(_grads(y_tri, inputs, dy), _grads(y_ref, inputs, dy)):
        _close(a, r)


LOWRANK_CASES = [
    # B, T, D, R, W, static, residual
    (1, 37, 13, 15, 4, True, True),    # the paper's R = 15 + static
    (1, 64, 64, 16, 4, False, True),   # R = 16 without static
    (2, 19, 40, 15, 2, True, False),
    (1, 50, 33, 3, 3, True, True),     # small odd R (padded to 16 on chip)
]


@pytest.mark.parametrize("b,t,d,r,w,static,residual", LOWRANK_CASES)
def test_lowrank_kernel_matches_reference(b, t, d, r, w, static, residual):
    g = torch.Generator().manual_seed(t * 100 + d + r)
    x = torch.randn(b, t, d, generator=g).to(DEVICE).requires_grad_()
    z = torch.randn(b, t, r, generator=g).to(DEVICE).requires_grad_()
    U = (0.3 * torch.randn(r, w * d, generator=g)).to(DEVICE).requires_grad_()
    s = torch.randn(w, d, generator=g).to(DEVICE).requires_grad_() if static else None
    inputs = [x, z, U] + ([s] if static else [])
    y_ref = reference_lowrank_dynamic_conv1d(x, z, U, s, residual)
    y_tri = kernels.lowrank_conv_triton(x, z, U, s, residual, None)
    _close(y_tri, y_ref)
    dy = torch.randn_like(y_ref)
    for a, r_ in zip(_grads(y_tri, inputs, dy), _grads(y_ref, inputs, dy)):
        _close(a, r_)


@pytest.mark.parametrize("lowrank", [False, True])
def test_kernels_respect_packed_sequence_starts(lowrank):
    t, d, w = 29, 24, 4
    cu = torch.tensor([0, 2, 2, 17, t])  # includes an empty and a short (< W) sequence
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1, t, d, generator=g).to(DEVICE).requires_grad_()
    s = torch.randn(w, d, generator=g).to(DEVICE).requires_grad_()
    if lowrank:
        z = torch.randn(1, t, 15, generator=g).to(DEVICE).requires_grad_()
        U = torch.randn(15, w * d, generator=g).to(DEVICE).requires_grad_()
        args = [x, z, U]
        y_tri = lowrank_dynamic_conv1d(x, z, U, s, True, backend="triton", cu_seqlens=cu)
        y_ref = lowrank_dynamic_conv1d(x, z, U, s, True, backend="torch", cu_seqlens=cu)
    else:
        taps = torch.randn(1, t, 3, w, generator=g).to(DEVICE).requires_grad_()
        args = [x, taps]
        y_tri = dynamic_conv1d(x, taps, s, True, backend="triton", cu_seqlens=cu)
        y_ref = dynamic_conv1d(x, taps, s, True, backend="torch", cu_seqlens=cu)
    _close(y_tri, y_ref)
    dy = torch.randn_like(y_ref)
    for a, r in zip(_grads(y_tri, args + [s], dy), _grads(y_ref, args + [s], dy)):
        _close(a, r)


def test_sequence_starts_layout():
    x = torch.zeros(1, 6, 2)
    assert sequence_starts(torch.tensor([0, 2, 2, 6]), x).tolist() == [0, 0, 2, 2, 2, 2]


def test_fp16_kernel_runs_with_loose_tolerance():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 20, 16, generator=g)
    taps = torch.randn(1, 20, 2, 4, generator=g)
    y_ref = reference_dynamic_conv1d(x, taps, None, True)
    y = kernels.headwise_conv_triton(x.half().to(DEVICE), taps.half().to(DEVICE), None, True, None)
    assert y.dtype == torch.float16
    torch.testing.assert_close(y.float().cpu(), y_ref, atol=2e-2, rtol=2e-2)
