r"""Causal depthwise convolution with per-position, input-dependent filters: the functional API.

For ``x: [B, T, D]``, lag $w = 0 \dots W-1$ ($w = 0$ is the current token) and an optional static
filter $S \in \mathbb{R}^{W \times D}$:

$$y_{b,t,d} = \sum_{w=0}^{W-1} \big(K_{b,t,w,d} + S_{w,d}\big)\, x_{b,t-w,d} \;(+\, x_{b,t,d}
\text{ if residual}),\qquad x_{b,t-w,d} = 0 \text{ for } t - w < \text{start of } t\text{'s sequence}.$$

Two ways to give the dynamic filter $K$:

* head-wise (:func:`dynamic_conv1d`): ``taps: [B, T, H, W]``; the ``hs = D / H`` channels of head
  $h$ share one tap set, $K_{b,t,w,d} = G_{b,t,\lfloor d/hs \rfloor,w}$ (``H = D`` is fully general);
* low-rank (:func:`lowrank_dynamic_conv1d`): ``z: [B, T, R]`` and ``U: [R, W*D]``,
  $K_{b,t} = \mathrm{reshape}(z_{b,t} U, (W, D))$, never materialised by the Triton kernel.

``backend="torch"`` is the plain PyTorch reference (W shifted multiplies, fp32 accumulation);
``"triton"`` the fused kernels of :mod:`.kernels` (forward and backward); ``"auto"`` picks Triton for
CUDA tensors when Triton is importable, else the reference. ``cu_seqlens`` (``[N+1]`` int, B = 1)
describes packed variable-length sequences: the left context is zero at every sequence start.
"""

from __future__ import annotations

import torch

from neurips26.constraints import Choice, Optional, Tensor, check_arguments, validate
from neurips26.nn.backend import BACKENDS, resolve_backend, triton_available

# --------------------------------------------------------------------------------------------------
# validation (shared by both functional forms, the naive baselines and the modules)
# --------------------------------------------------------------------------------------------------

#: declared argument constraints (neurips26.constraints); named dimensions bind across one call's arguments.
#: Finiteness is checked separately by :func:`check_finite` (after the autocast casts, skipped while
#: ``torch.compile`` traces, and switched off by ``finite_check=False``).
BACKEND = Choice(*BACKENDS)
X = Tensor("B T D", dtype="float", finite=False)
STATIC_W = Optional(Tensor("W D", finite=False))
CU_SEQLENS = Optional(Tensor("N", dtype="integer", finite=False))
#: the inputs of the head-wise form (taps: B, T from x; static_w: W from taps, D from x)
HEADWISE = {"x": X, "taps": Tensor("B T H W", finite=False), "static_w": STATIC_W}
#: the inputs of the low-rank form (z: B, T from x; U: R from z; static_w: D from x, W checked from U)
LOWRANK = {"x": X, "z": Tensor("B T R", finite=False), "U": Tensor("R _", finite=False), "static_w": STATIC_W}


def _check_same(name: str, t: torch.Tensor, x: torch.Tensor, ref: str = "x") -> None:
    """``t`` has ``x``'s dtype and device (a dependency between arguments a declaration cannot state)."""
    if t.dtype != x.dtype:
        raise TypeError(f"{name} dtype must match {ref} ({x.dtype}), got {t.dtype}")
    if t.device != x.device:
        raise ValueError(f"{name} must be on {ref}'s device ({x.device}), got {t.device}")


def _check_width(width: int, what: str) -> None:
    if width < 1:
        raise ValueError(f"kernel size W ({what}) must be >= 1, got {width}")


def check_taps(x: torch.Tensor, taps: torch.Tensor, static_w: torch.Tensor | None) -> None:
    """What :data:`HEADWISE` cannot declare: ``W >= 1``, ``H`` divides ``D``, one dtype and device."""
    _check_width(taps.shape[3], "taps.shape[3]")
    if taps.shape[2] < 1 or x.shape[2] % taps.shape[2]:
        raise ValueError(f"taps heads H={taps.shape[2]} must divide D={x.shape[2]}")
    _check_same("taps", taps, x)
    if static_w is not None:
        _check_same("static_w", static_w, x)


def autocast_inputs(*tensors: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
    """Cast as ``F.scaled_dot_product_attention`` does under ``torch.autocast``: when autocast is on for the
    first tensor's device, fp32/fp16/bf16 tensors become the autocast dtype (fp64 is not autocast-eligible);
    ``None`` passes through. Outside autocast nothing changes (mixed dtypes are then refused)."""
    first = next(t for t in tensors if t is not None)
    device = first.device.type
    if not torch.is_autocast_enabled(device):
        return tensors
    target = torch.get_autocast_dtype(device)
    return tuple(t.to(target) if t is not None and t.dtype in (torch.float32, torch.float16, torch.bfloat16)
                 else t for t in tensors)


def check_finite(**tensors: torch.Tensor | None) -> None:
    """Refuse NaN/inf by argument name (skipped while ``torch.compile`` traces)."""
    if torch.compiler.is_compiling():
        return
    for name, t in tensors.items():
        if t is not None and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} holds NaN or inf values; dynamic conv refuses non-finite input")


def check_cu_seqlens(cu_seqlens: torch.Tensor | None, x: torch.Tensor) -> None:
    """What :data:`CU_SEQLENS` cannot declare: ``B == 1``, and the values: 0 first, ``T`` last, non-decreasing."""
    if cu_seqlens is None:
        return
    if x.shape[0] != 1:
        raise ValueError(f"cu_seqlens packs sequences along T and needs batch size 1, got B={x.shape[0]}")
    c = cu_seqlens.tolist()
    if len(c) < 2 or c[0] != 0 or c[-1] != x.shape[1] or any(b < a for a, b in zip(c, c[1:])):
        raise ValueError(f"cu_seqlens must start at 0, end at T={x.shape[1]} and never decrease, got {c}")


def sequence_starts(cu_seqlens: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor | None:
    """``starts[t]`` = index of the first token of ``t``'s sequence (int32 ``[T]``), or None."""
    if cu_seqlens is None:
        return None
    t = x.shape[1]
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).to(device=x.device, dtype=torch.long)
    return torch.repeat_interleave(cu_seqlens[:-1].to(device=x.device, dtype=torch.long), lengths,
                                   output_size=t).to(torch.int32)


# --------------------------------------------------------------------------------------------------
# the PyTorch reference
# --------------------------------------------------------------------------------------------------

def _shift(x: torch.Tensor, w: int, starts: torch.Tensor | None) -> torch.Tensor:
    r"""$x_{b,t-w,d}$ as a ``[B, T, D]`` tensor, zero where $t - w$ leaves the sequence."""
    if w == 0:
        return x
    t = x.shape[1]
    shifted = torch.zeros_like(x)
    if w < t:
        shifted[:, w:] = x[:, : t - w]
    if starts is not None:
        keep = torch.arange(t, device=x.device) - w >= starts.long()  # [T]
        shifted = shifted * keep[None, :, None].to(x.dtype)
    return shifted


def reference_dynamic_conv1d(x: torch.Tensor, taps: torch.Tensor, static_w: torch.Tensor | None = None,
                             residual: bool = False, starts: torch.Tensor | None = None) -> torch.Tensor:
    """Head-wise reference: ``x [B,T,D]``, ``taps [B,T,H,W]`` -> ``[B,T,D]`` (fp32 accumulation)."""
    b, t, d = x.shape
    h, width = taps.shape[2], taps.shape[3]
    hs = d // h
    acc = torch.promote_types(x.dtype, torch.float32)  # fp32 accumulation (fp64 stays fp64)
    x32, k32 = x.to(acc), taps.to(acc)
    y = x32.clone() if residual else torch.zeros_like(x32)
    for w in range(width):
        # K_{b,t,w,d} = G_{b,t,d // hs, w}: every channel of a head uses its head's tap
        kw = k32[..., w].repeat_interleave(hs, dim=-1)  # [B, T, D]
        if static_w is not None:
            kw = kw + static_w[w].to(acc)
        y = y + kw * _shift(x32, w, starts)
    return y.to(x.dtype)


def reference_lowrank_dynamic_conv1d(x: torch.Tensor, z: torch.Tensor, U: torch.Tensor,
                                     static_w: torch.Tensor | None = None, residual: bool = False,
                                     starts: torch.Tensor | None = None) -> torch.Tensor:
    """Low-rank reference: ``K[b,t,w] = z[b,t] @ U[:, w*D:(w+1)*D]``; one ``[B,T,D]`` slab per lag."""
    d = x.shape[2]
    width = U.shape[1] // d
    acc = torch.promote_types(x.dtype, torch.float32)
    x32, z32, u32 = x.to(acc), z.to(acc), U.to(acc)
    y = x32.clone() if residual else torch.zeros_like(x32)
    for w in range(width):
        kw = z32 @ u32[:, w * d:(w + 1) * d]  # [B, T, D]
        if static_w is not None:
            kw = kw + static_w[w].to(acc)
        y = y + kw * _shift(x32, w, starts)
    return y.to(x.dtype)


# --------------------------------------------------------------------------------------------------
# dispatch
# --------------------------------------------------------------------------------------------------

def _resolve(backend: str, x: torch.Tensor) -> str:
    """``"torch"`` or ``"triton"`` for this call, through :func:`neurips26.nn.backend.resolve_backend`.

    ``"auto"`` takes the kernels only for CUDA tensors with Triton installed and not in the CPU
    interpreter; a forced ``"triton"`` imports :mod:`.kernels` (whose ``INTERPRET`` flag triton fixed at
    its import) and raises a ``RuntimeError`` saying why when they cannot run on ``x``. The kernels take
    fp32/fp16/bf16 (fp32 accumulation, stored in the input dtype); fp64 needs the reference."""
    interpreted = None
    if triton_available() and (backend == "triton" or (backend == "auto" and x.is_cuda)):
        from . import kernels

        interpreted = kernels.INTERPRET
    # fp64: "auto" stays on the reference; a forced "triton" raises a TypeError naming backend='torch' (the
    # kernels accumulate in fp32 and would silently lose fp64's precision)
    return resolve_backend(backend, device=x.device, dtype=getattr(x, "dtype", None), what="dynamic conv",
                           interpreted=interpreted)


@validate(**HEADWISE, backend=BACKEND, cu_seqlens=CU_SEQLENS)
def dynamic_conv1d(x: torch.Tensor, taps: torch.Tensor, static_w: torch.Tensor | None = None,
                   residual: bool = False, backend: str = "auto",
                   cu_seqlens: torch.Tensor | None = None, *, finite_check: bool = True) -> torch.Tensor:
    """Head-wise dynamic causal depthwise convolution.

    Args:
        x: input ``[B, T, D]``.
        taps: dynamic filter ``[B, T, H, W]``, lag 0 (current token) first; ``H`` must divide ``D``
            and each head's ``D/H`` consecutive channels share its taps.
        static_w: optional input-independent filter ``[W, D]`` added to the taps (lag 0 first).
        residual: add ``x`` to the output.
        backend: ``"auto"`` | ``"torch"`` | ``"triton"``.
        cu_seqlens: optional ``[N+1]`` cumulative lengths of packed sequences (``B == 1``).
        finite_check: refuse NaN/inf in ``x``, ``taps``, ``static_w`` (``ValueError``); the modules, which
            check their own input, pass ``False``.

    Returns:
        ``[B, T, D]`` in ``x``'s dtype (accumulated in fp32). Under ``torch.autocast`` the float inputs are
        cast to the autocast dtype first (as SDPA does), so the output is in that dtype. The Triton backend
        takes fp32/fp16/bf16; fp64 runs on ``backend="torch"`` (``"auto"`` picks it).
    """
    x, taps, static_w = autocast_inputs(x, taps, static_w)
    check_taps(x, taps, static_w)
    check_cu_seqlens(cu_seqlens, x)
    chosen = _resolve(backend, x)
    if finite_check:
        check_finite(x=x, taps=taps, static_w=static_w)
    starts = sequence_starts(cu_seqlens, x)
    with torch.autocast(x.device.type, enabled=False):
        if chosen == "torch":
            return reference_dynamic_conv1d(x, taps, static_w, residual, starts)
        from .kernels import headwise_conv_triton

        return headwise_conv_triton(x, taps, static_w, residual, starts)


def check_lowrank_shapes(x: torch.Tensor, z: torch.Tensor, U: torch.Tensor, static_w: torch.Tensor | None,
                         where: str = "lowrank_dynamic_conv1d") -> int:
    """What :data:`LOWRANK` cannot declare (``R >= 1``, ``U``'s width a multiple ``W*D``, ``static_w``'s ``W``
    from it, one dtype and device), for :func:`lowrank_dynamic_conv1d` and the naive baseline; returns W."""
    if z.shape[2] < 1:
        raise ValueError(f"rank R = z.shape[2] must be >= 1, got {z.shape[2]}")
    d = x.shape[2]
    if U.shape[1] < d or U.shape[1] % d:
        raise ValueError(f"U must be [R, W*D] with R={z.shape[2]}, D={d} and W >= 1, got {tuple(U.shape)}")
    width = U.shape[1] // d
    check_arguments(where, {"static_w": Optional(Tensor(f"{width} {d}", finite=False))}, {"static_w": static_w})
    _check_same("z", z, x)
    _check_same("U", U, x)
    if static_w is not None:
        _check_same("static_w", static_w, x)
    return width


@validate(**LOWRANK, backend=BACKEND, cu_seqlens=CU_SEQLENS)
def lowrank_dynamic_conv1d(x: torch.Tensor, z: torch.Tensor, U: torch.Tensor,
                           static_w: torch.Tensor | None = None, residual: bool = False,
                           backend: str = "auto", cu_seqlens: torch.Tensor | None = None, *,
                           finite_check: bool = True) -> torch.Tensor:
    """Low-rank dynamic causal depthwise convolution, ``K[b,t] = reshape(z[b,t] @ U, (W, D))``.

    Args:
        x: input ``[B, T, D]``.
        z: per-token filter coordinates ``[B, T, R]`` (e.g. ``Linear(cond)``).
        U: filter basis ``[R, W*D]``; column ``w*D + d`` is lag ``w`` of channel ``d``.
        static_w, residual, backend, cu_seqlens, finite_check: as in :func:`dynamic_conv1d` (autocast and
            fp64 too).

    Returns:
        ``[B, T, D]`` in ``x``'s dtype. Any ``R >= 1`` works (the kernel pads R on chip; no power-of-two
        rule).
    """
    x, z, U, static_w = autocast_inputs(x, z, U, static_w)
    check_lowrank_shapes(x, z, U, static_w)
    check_cu_seqlens(cu_seqlens, x)
    chosen = _resolve(backend, x)
    if finite_check:
        check_finite(x=x, z=z, U=U, static_w=static_w)
    starts = sequence_starts(cu_seqlens, x)
    with torch.autocast(x.device.type, enabled=False):
        if chosen == "torch":
            return reference_lowrank_dynamic_conv1d(x, z, U, static_w, residual, starts)
        from .kernels import lowrank_conv_triton

        return lowrank_conv_triton(x, z, U, static_w, residual, starts)
