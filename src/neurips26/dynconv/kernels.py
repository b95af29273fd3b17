r"""Triton kernels for the dynamic causal depthwise convolution (forward and backward), any T and D.

Layout: ``x, y: [B, T, D]`` contiguous; head-wise taps ``G: [B, T, H, W]``; low-rank ``z: [B, T, R]``,
``U: [R, W*D]``; static ``S: [W, D]``; optional ``starts: [T]`` (int32, first index of each token's
packed sequence). Every program owns a ``[BT, BD]`` tile of ``(t, d)``; the W lags are W shifted,
masked loads of ``x`` (``t - w < start`` reads 0), so T and D need not be multiples of the tiles.
All sums are in fp32.

Backward, with $p^{(w)}_{t,d} = \partial y_{t,d}\, x_{t-w,d}$ (the gradient of the tap $K_{t,w,d}$):

* $\partial x_{s,d} = \sum_w K_{s+w,w,d}\, \partial y_{s+w,d}$ (+ $\partial y_{s,d}$ if residual);
* head-wise $\partial G_{t,h,w} = \sum_{d \in h} p^{(w)}_{t,d}$, static $\partial S_{w,d} = \sum_{b,t} p^{(w)}_{t,d}$;
* low-rank $\partial z_t = \sum_w p^{(w)}_t U_w^\top$ and $\partial U_w = \sum_{b,t} z_t^\top p^{(w)}_t$
  (``tl.dot`` on ``[BT, RP] x [RP, BD]`` tiles, R zero-padded to ``RP`` = a power of two >= 16).

Sums over time tiles (``dS``, ``dU``, and ``dG`` when a head spans several channel tiles) use fp32
atomic adds. Tiles are fixed (no autotuning). On CPU the kernels run in Triton's
interpreter when ``TRITON_INTERPRET=1`` is set before triton is imported: slow, for tests at tiny shapes.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# Triton decides at *its own* import whether kernels run compiled (CUDA) or in the interpreter (CPU
# tensors, numpy-simulated): set TRITON_INTERPRET=1 before anything imports triton to use the latter.
INTERPRET = bool(triton.knobs.runtime.interpret)


@triton.jit
def _headwise_fwd_kernel(x_ptr, g_ptr, s_ptr, st_ptr, y_ptr, T, D, H,
                         W: tl.constexpr, HS: tl.constexpr, HAS_S: tl.constexpr,
                         HAS_ST: tl.constexpr, RESIDUAL: tl.constexpr,
                         BT: tl.constexpr, BD: tl.constexpr):
    pid_d, pid_t, b = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    offs_t = pid_t * BT + tl.arange(0, BT)
    offs_d = pid_d * BD + tl.arange(0, BD)
    mt, md = offs_t < T, offs_d < D
    m = mt[:, None] & md[None, :]
    xb, gb = x_ptr + b * T * D, g_ptr + b * T * H * W
    heads = offs_d // HS
    if HAS_ST:
        start = tl.load(st_ptr + offs_t, mask=mt, other=0)
    acc = tl.zeros([BT, BD], dtype=tl.float32)
    for w in tl.static_range(W):
        # y_{t,d} += (G_{t, d//hs, w} + S_{w,d}) x_{t-w,d}
        src = offs_t - w
        valid = src >= 0
        if HAS_ST:
            valid = valid & (src >= start)
        xs = tl.load(xb + src[:, None] * D + offs_d[None, :], mask=m & valid[:, None], other=0.0)
        k = tl.load(gb + offs_t[:, None] * (H * W) + heads[None, :] * W + w, mask=m, other=0.0)
        k = k.to(tl.float32)
        if HAS_S:
            k += tl.load(s_ptr + w * D + offs_d, mask=md, other=0.0).to(tl.float32)[None, :]
        acc += k * xs.to(tl.float32)
    if RESIDUAL:
        acc += tl.load(xb + offs_t[:, None] * D + offs_d[None, :], mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + b * T * D + offs_t[:, None] * D + offs_d[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=m)

@triton.jit
def _headwise_bwd_kernel(x_ptr, g_ptr, s_ptr, st_ptr, dy_ptr, dx_ptr, dg_ptr, ds_ptr, T, D, H,
                         W: tl.constexpr, HS: tl.constexpr, HAS_S: tl.constexpr,
                         HAS_ST: tl.constexpr, RESIDUAL: tl.constexpr, MODE: tl.constexpr,
                         BT: tl.constexpr, BD: tl.constexpr):
    # MODE 0: hs == 1 (store dG); 1: BD % hs == 0 (sum heads in-tile, store);
    # 2: hs % BD == 0 (row sum, atomic add); 3: anything else (per-element atomic add).
    pid_d, pid_t, b = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    offs_t = pid_t * BT + tl.arange(0, BT)
    offs_d = pid_d * BD + tl.arange(0, BD)
    mt, md = offs_t < T, offs_d < D
    m = mt[:, None] & md[None, :]
    xb, gb, dyb = x_ptr + b * T * D, g_ptr + b * T * H * W, dy_ptr + b * T * D
    dgb = dg_ptr + b * T * H * W
    heads = offs_d // HS
    if HAS_ST:
        start = tl.load(st_ptr + offs_t, mask=mt, other=0)
    dy = tl.load(dyb + offs_t[:, None] * D + offs_d[None, :], mask=m, other=0.0).to(tl.float32)
    if RESIDUAL:
        dx = dy
    else:
        dx = tl.zeros([BT, BD], dtype=tl.float32)
    for w in tl.static_range(W):
        # dx_{s,d} += K_{s+w,w,d} dy_{s+w,d}, if s+w < T and s lies in (s+w)'s sequence
        tgt = offs_t + w
        vt = tgt < T
        if HAS_ST:
            vt = vt & (offs_t >= tl.load(st_ptr + tgt, mask=vt, other=0))
        mm = vt[:, None] & md[None, :]
        dy_t = tl.load(dyb + tgt[:, None] * D + offs_d[None, :], mask=mm, other=0.0).to(tl.float32)
        k_t = tl.load(gb + tgt[:, None] * (H * W) + heads[None, :] * W + w, mask=mm, other=0.0)
        k_t = k_t.to(tl.float32)
        if HAS_S:
            k_t += tl.load(s_ptr + w * D + offs_d, mask=md, other=0.0).to(tl.float32)[None, :]
        dx += k_t * dy_t
        # p_{t,d} = dy_{t,d} x_{t-w,d}: the gradient of tap (t, w, d)
        src = offs_t - w
        valid = src >= 0
        if HAS_ST:
            valid = valid & (src >= start)
        xs = tl.load(xb + src[:, None] * D + offs_d[None, :], mask=m & valid[:, None], other=0.0)
        p = dy * xs.to(tl.float32)
        if HAS_S:
            tl.atomic_add(ds_ptr + w * D + offs_d, tl.sum(p, axis=0), mask=md)
        if MODE == 0:
            tl.store(dgb + offs_t[:, None] * (H * W) + offs_d[None, :] * W + w, p, mask=m)
        elif MODE == 1:
            ph = tl.sum(tl.reshape(p, (BT, BD // HS, HS)), axis=2)  # [BT, BD/hs]
            offs_h = pid_d * (BD // HS) + tl.arange(0, BD // HS)
            tl.store(dgb + offs_t[:, None] * (H * W) + offs_h[None, :] * W + w, ph,
                     mask=mt[:, None] & (offs_h < H)[None, :])
        elif MODE == 2:
            h = (pid_d * BD) // HS
            tl.atomic_add(dgb + offs_t * (H * W) + h * W + w, tl.sum(p, axis=1), mask=mt)
        else:
            tl.atomic_add(dgb + offs_t[:, None] * (H * W) + heads[None, :] * W + w, p, mask=m)
    tl.store(dx_ptr + b * T * D + offs_t[:, None] * D + offs_d[None, :], dx.to(dx_ptr.dtype.element_ty),
             mask=m)

@triton.jit
def _lowrank_fwd_kernel(x_ptr, z_ptr, u_ptr, s_ptr, st_ptr, y_ptr, T, D, R,
                        W: tl.constexpr, RP: tl.constexpr, HAS_S: tl.constexpr, HAS_ST: tl.constexpr,
                        RESIDUAL: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr):
    pid_d, pid_t, b = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    offs_t = pid_t * BT + tl.arange(0, BT)
    offs_d = pid_d * BD + tl.arange(0, BD)
    offs_r = tl.arange(0, RP)
    mt, md, mr = offs_t < T, offs_d < D, offs_r < R
    m = mt[:, None] & md[None, :]
    xb = x_ptr + b * T * D
    zt = tl.load(z_ptr + b * T * R + offs_t[:, None] * R + offs_r[None, :],
                 mask=mt[:, None] & mr[None, :], other=0.0).to(tl.float32)  # [BT, RP]
    if HAS_ST:
        start = tl.load(st_ptr + offs_t, mask=mt, other=0)
    acc = tl.zeros([BT, BD], dtype=tl.float32)
    for w in tl.static_range(W):
        # K_w = z U_w, formed on chip: [BT, RP] @ [RP, BD]
        uw = tl.load(u_ptr + offs_r[:, None] * (W * D) + w * D + offs_d[None, :],
                     mask=mr[:, None] & md[None, :], other=0.0).to(tl.float32)
        k = tl.dot(zt, uw, input_precision="ieee")
        if HAS_S:
            k += tl.load(s_ptr + w * D + offs_d, mask=md, other=0.0).to(tl.float32)[None, :]
        src = offs_t - w
        valid = src >= 0
        if HAS_ST:
            valid = valid & (src >= start)
        xs = tl.load(xb + src[:, None] * D + offs_d[None, :], mask=m & valid[:, None], other=0.0)
        acc += k * xs.to(tl.float32)
    if RESIDUAL:
        acc += tl.load(xb + offs_t[:, None] * D + offs_d[None, :], mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + b * T * D + offs_t[:, None] * D + offs_d[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=m)

@triton.jit
def _lowrank_bwd_dzdu_kernel(x_ptr, z_ptr, u_ptr, st_ptr, dy_ptr, dz_ptr, du_ptr, ds_ptr, T, D, R,
                             W: tl.constexpr, RP: tl.constexpr, HAS_S: tl.constexpr,
                             HAS_ST: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr):
    # one program per (time tile, batch); loops over channel tiles so dz needs no atomics
    pid_t, b = tl.program_id(0), tl.program_id(1).to(tl.int64)
    offs_t = pid_t * BT + tl.arange(0, BT)
    offs_r = tl.arange(0, RP)
    mt, mr = offs_t < T, offs_r < R
    xb, dyb = x_ptr + b * T * D, dy_ptr + b * T * D
    zt = tl.load(z_ptr + b * T * R + offs_t[:, None] * R + offs_r[None, :],
                 mask=mt[:, None] & mr[None, :], other=0.0).to(tl.float32)
    if HAS_ST:
        start = tl.load(st_ptr + offs_t, mask=mt, other=0)
    dz = tl.zeros([BT, RP], dtype=tl.float32)
    for d0 in range(0, D, BD):
        offs_d = d0 + tl.arange(0, BD)
        md = offs_d < D
        m = mt[:, None] & md[None, :]
        dy = tl.load(dyb + offs_t[:, None] * D + offs_d[None, :], mask=m, other=0.0).to(tl.float32)
        for w in tl.static_range(W):
            src = offs_t - w
            valid = src >= 0
            if HAS_ST:
                valid = valid & (src >= start)
            xs = tl.load(xb + src[:, None] * D + offs_d[None, :], mask=m & valid[:, None], other=0.0)
            p = dy * xs.to(tl.float32)  # dK_w, [BT, BD]
            uw = tl.load(u_ptr + offs_r[:, None] * (W * D) + w * D + offs_d[None, :],
                         mask=mr[:, None] & md[None, :], other=0.0).to(tl.float32)
            dz += tl.dot(p, tl.trans(uw), input_precision="ieee")  # [BT, RP]
            du = tl.dot(tl.trans(zt), p, input_precision="ieee")  # [RP, BD]
            tl.atomic_add(du_ptr + offs_r[:, None] * (W * D) + w * D + offs_d[None, :], du,
                          mask=mr[:, None] & md[None, :])
            if HAS_S:
                tl.atomic_add(ds_ptr + w * D + offs_d, tl.sum(p, axis=0), mask=md)
    tl.store(dz_ptr + b * T * R + offs_t[:, None] * R + offs_r[None, :], dz.to(dz_ptr.dtype.element_ty),
             mask=mt[:, None] & mr[None, :])

@triton.jit
def _lowrank_bwd_dx_kernel(z_ptr, u_ptr, s_ptr, st_ptr, dy_ptr, dx_ptr, T, D, R,
                           W: tl.constexpr, RP: tl.constexpr, HAS_S: tl.constexpr, HAS_ST: tl.constexpr,
                           RESIDUAL: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr):
    pid_d, pid_t, b = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    offs_t = pid_t * BT + tl.arange(0, BT)
    offs_d = pid_d * BD + tl.arange(0, BD)
    offs_r = tl.arange(0, RP)
    mt, md, mr = offs_t < T, offs_d < D, offs_r < R
    m = mt[:, None] & md[None, :]
    dyb = dy_ptr + b * T * D
    if RESIDUAL:
        dx = tl.load(dyb + offs_t[:, None] * D + offs_d[None, :], mask=m, other=0.0).to(tl.float32)
    else:
        dx = tl.zeros([BT, BD], dtype=tl.float32)
    for w in tl.static_range(W):
        # dx_{s} += (z_{s+w} U_w + S_w) dy_{s+w}
        tgt = offs_t + w
        vt = tgt < T
        if HAS_ST:
            vt = vt & (offs_t >= tl.load(st_ptr + tgt, mask=vt, other=0))
        zs = tl.load(z_ptr + b * T * R + tgt[:, None] * R + offs_r[None, :],
                     mask=vt[:, None] & mr[None, :], other=0.0).to(tl.float32)
        uw = tl.load(u_ptr + offs_r[:, None] * (W * D) + w * D + offs_d[None, :],
                     mask=mr[:, None] & md[None, :], other=0.0).to(tl.float32)
        k = tl.dot(zs, uw, input_precision="ieee")
        if HAS_S:
            k += tl.load(s_ptr + w * D + offs_d, mask=md, other=0.0).to(tl.float32)[None, :]
        dy_t = tl.load(dyb + tgt[:, None] * D + offs_d[None, :], mask=vt[:, None] & md[None, :],
                       other=0.0).to(tl.float32)
        dx += k * dy_t
    tl.store(dx_ptr + b * T * D + offs_t[:, None] * D + offs_d[None, :], dx.to(dx_ptr.dtype.element_ty),
             mask=m)


def _pow2_at_least(n: int, low: int) -> int:
    return max(low, triton.next_power_of_2(n))


def _tiles(d: int, bd: int | None, bt: int | None) -> tuple[int, int]:
    """Fixed tiles: BT = 16 rows of time, BD = 32 (interpreter) / 64 (GPU) channels, capped by D."""
    if bd is None:
        bd = min(32 if INTERPRET else 64, _pow2_at_least(d, 16))
    return (16 if bt is None else bt), bd


def _dummy(x: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    return torch.empty(1, device=x.device, dtype=dtype or x.dtype)


class _HeadwiseConv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, taps, static_w, residual, starts, bd, bt):  # noqa: D102
        x, taps = x.contiguous(), taps.contiguous()
        s = static_w.contiguous() if static_w is not None else None
        b, t, d = x.shape
        h, width = taps.shape[2], taps.shape[3]
        hs = d // h
        if bd is None and hs > 1 and hs & (hs - 1) == 0 and hs <= 128:
            bd = max(_tiles(d, None, bt)[1], hs)  # a head never straddles a tile: dG without atomics
        bt, bd = _tiles(d, bd, bt)
        y = torch.empty_like(x)
        grid = (triton.cdiv(d, bd), triton.cdiv(t, bt), b)
        _headwise_fwd_kernel[grid](x, taps, s if s is not None else _dummy(x),
                                   starts if starts is not None else _dummy(x, torch.int32), y, t, d, h,
                                   W=width, HS=hs, HAS_S=s is not None, HAS_ST=starts is not None,
                                   RESIDUAL=residual, BT=bt, BD=bd)
        ctx.save_for_backward(x, taps, s, starts)
        ctx.cfg = (residual, hs, bd, bt)
        return y

    @staticmethod
    def backward(ctx, dy):  # noqa: D102
        x, taps, s, starts = ctx.saved_tensors
        residual, hs, bd, bt = ctx.cfg
        dy = dy.contiguous()
        b, t, d = x.shape
        h, width = taps.shape[2], taps.shape[3]
        if hs == 1:
            mode = 0
        elif bd % hs == 0:
            mode = 1
        elif hs % bd == 0:
            mode = 2
        else:
            mode = 3
        dx = torch.empty_like(x)
        dg = torch.zeros(taps.shape, device=x.device, dtype=torch.float32)
        ds = torch.zeros((width, d), device=x.device, dtype=torch.float32) if s is not None else _dummy(x)
        grid = (triton.cdiv(d, bd), triton.cdiv(t, bt), b)
        _headwise_bwd_kernel[grid](x, taps, s if s is not None else _dummy(x),
                                   starts if starts is not None else _dummy(x, torch.int32), dy, dx, dg, ds,
                                   t, d, h, W=width, HS=hs, HAS_S=s is not None, HAS_ST=starts is not None,
                                   RESIDUAL=residual, MODE=mode, BT=bt, BD=bd)
        return dx, dg.to(taps.dtype), (ds.to(s.dtype) if s is not None else None), None, None, None, None


class _LowrankConv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, z, U, static_w, residual, starts, bd, bt):  # noqa: D102
        x, z, U = x.contiguous(), z.contiguous(), U.contiguous()
        s = static_w.contiguous() if static_w is not None else None
        b, t, d = x.shape
        r = z.shape[2]
        width = U.shape[1] // d
        rp = _pow2_at_least(r, 16)
        bt, bd = _tiles(d, bd, bt)
        y = torch.empty_like(x)
        grid = (triton.cdiv(d, bd), triton.cdiv(t, bt), b)
        _lowrank_fwd_kernel[grid](x, z, U, s if s is not None else _dummy(x),
                                  starts if starts is not None else _dummy(x, torch.int32), y, t, d, r,
                                  W=width, RP=rp, HAS_S=s is not None, HAS_ST=starts is not None,
                                  RESIDUAL=residual, BT=bt, BD=bd)
        ctx.save_for_backward(x, z, U, s, starts)
        ctx.cfg = (residual, rp, bd, bt)
        return y

    @staticmethod
    def backward(ctx, dy):  # noqa: D102
        x, z, U, s, starts = ctx.saved_tensors
        residual, rp, bd, bt = ctx.cfg
        dy = dy.contiguous()
        b, t, d = x.shape
        r = z.shape[2]
        width = U.shape[1] // d
        st = starts if starts is not None else _dummy(x, torch.int32)
        dz = torch.empty(z.shape, device=x.device, dtype=torch.float32)
        du = torch.zeros(U.shape, device=x.device, dtype=torch.float32)
        ds = torch.zeros((width, d), device=x.device, dtype=torch.float32) if s is not None else _dummy(x)
        _lowrank_bwd_dzdu_kernel[(triton.cdiv(t, bt), b)](x, z, U, st, dy, dz, du, ds, t, d, r, W=width, RP=rp,
                                                          HAS_S=s is not None, HAS_ST=starts is not None,
                                                          BT=bt, BD=bd)
        dx = torch.empty_like(x)
        grid = (triton.cdiv(d, bd), triton.cdiv(t, bt), b)
        _lowrank_bwd_dx_kernel[grid](z, U, s if s is not None else _dummy(x), st, dy, dx, t, d, r, W=width,
                                     RP=rp, HAS_S=s is not None, HAS_ST=starts is not None,
                                     RESIDUAL=residual, BT=bt, BD=bd)
        return (dx, dz.to(z.dtype), du.to(U.dtype), (ds.to(s.dtype) if s is not None else None),
                None, None, None, None)


def headwise_conv_triton(x: torch.Tensor, taps: torch.Tensor, static_w: torch.Tensor | None,
                         residual: bool, starts: torch.Tensor | None, *, block_d: int | None = None,
                         block_t: int | None = None) -> torch.Tensor:
    """Head-wise kernel path (inputs already validated by :func:`..ops.dynamic_conv1d`)."""
    return _HeadwiseConv.apply(x, taps, static_w, bool(residual), starts, block_d, block_t)


def lowrank_conv_triton(x: torch.Tensor, z: torch.Tensor, U: torch.Tensor, static_w: torch.Tensor | None,
                        residual: bool, starts: torch.Tensor | None, *, block_d: int | None = None,
                        block_t: int | None = None) -> torch.Tensor:
    """Low-rank kernel path (inputs already validated by :func:`..ops.lowrank_dynamic_conv1d`)."""
    return _LowrankConv.apply(x, z, U, static_w, bool(residual), starts, block_d, block_t)
