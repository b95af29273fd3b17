r"""Layers: the dynamic short convolution, its static baseline, and attention with convs on Q, K, V.

:class:`DynamicShortConv` generates each token's filter from a conditioning vector $c_t$
(the pre-norm block input in the paper's QKV recipe):

$$z_t = W_{in} c_t \in \mathbb{R}^R,\qquad K_t = \mathrm{reshape}(z_t U, (W, D)),\qquad
y_t = \sum_{w} (K_{t,w} + S_w) \odot x_{t-w} + x_t.$$

$U$ starts at zero, so at initialisation the layer is the static conv $S$ plus the residual (and
$\partial z = 0$ until $U$ moves, as with LoRA). :class:`ConvAugmentedAttention` applies one such
module to each of the q, k, v projections (own widths under grouped-query attention) *before* RoPE,
then runs RoPE and causal attention as usual; it plugs into :class:`neurips26.nn.Llama` through
:func:`conv_attention_factory`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import Choice, Instance, Int, Optional, Tensor, check_arguments, validate
from neurips26.nn import LlamaConfig, apply_rope, rope_cos_sin, sdpa_attention

from .ops import (
    BACKEND,
    CU_SEQLENS,
    _check_same,
    _shift,
    autocast_inputs,
    check_cu_seqlens,
    check_finite,
    dynamic_conv1d,
    lowrank_dynamic_conv1d,
    sequence_starts,
)

CONV_KINDS = ("none", "static", "dynamic")


#: declared argument constraints shared by the layers
POS_INT = Int(low=1)
CONV_KIND = Choice(*CONV_KINDS)


@functools.cache
def stream(spec: str, floating: bool = True) -> Tensor:
    """The constraint of a layer input of shape ``spec`` (``"B T 6"``; sizes fixed by the layer), built once
    per spec. Finiteness is :func:`~.ops.check_finite`'s (after autocast, skipped while compiling)."""
    return Tensor(spec, dtype="float" if floating else None, finite=False)


def _final_state(x: torch.Tensor, width: int, cu_seqlens: torch.Tensor | None) -> torch.Tensor:
    """The last ``W-1`` inputs of each sequence, zero-padded on the left: ``[B or N, W-1, D]``."""
    keep = width - 1
    if cu_seqlens is None:
        seqs = list(x)
    else:
        c = cu_seqlens.tolist()
        seqs = [x[0, a:b] for a, b in zip(c, c[1:])]
    out = x.new_zeros(len(seqs), keep, x.shape[-1])
    for i, s in enumerate(seqs):
        n = min(keep, s.shape[0])
        if n:
            out[i, keep - n:] = s[s.shape[0] - n:]
    return out


def _check_step(where: str, layer: nn.Module, x_t: object, cond_t: object, state: object,
                cond_dim: int | None = None) -> None:
    """One decoding step's inputs: ``x_t [B, D]``, ``cond_t [B, Dc]`` (when ``cond_dim`` is given) and the
    decode cache ``state [B, W-1, D]`` in ``x_t``'s dtype."""
    spec = {"x_t": stream(f"B {layer.dim}", floating=False)}
    if cond_dim is not None:
        spec["cond_t"] = stream(f"B {cond_dim}")
    spec["state"] = stream(f"B {layer.kernel_size - 1} {layer.dim}", floating=False)
    check_arguments(where, spec, {"x_t": x_t, "cond_t": cond_t, "state": state})
    _check_same("state", state, x_t, "x_t")


class ConvCache:
    """The decode state of every short conv of a model, carried from one forward call to the next.

    While a conv module holds a cache (:func:`conv_cache`), each of its forward calls continues the sequence
    of the previous call: it prepends the last ``W-1`` inputs it saw (zeros at the start) and saves the new
    last ``W-1``. So a prefill followed by one-token calls gives exactly the full forward's outputs, which a
    KV-cached decoder (:func:`~.decoding.generate`, Hugging Face ``generate`` through
    :func:`~.decoding.add_convs_to_hf`) needs. ``tokens`` counts the positions seen since :meth:`reset`.
    """

    def __init__(self) -> None:
        self._states: dict[int, torch.Tensor] = {}
        self.tokens = 0

    def reset(self) -> None:
        """Start a new sequence (forget every conv's state)."""
        self._states.clear()
        self.tokens = 0

    def get(self, conv: nn.Module) -> torch.Tensor | None:
        return self._states.get(id(conv))

    def put(self, conv: nn.Module, state: torch.Tensor) -> None:
        self._states[id(conv)] = state

    def reorder(self, index: torch.Tensor) -> None:
        """Reorder the batch rows of every state (beam search), ``index: [B']`` of row indices."""
        for key, state in self._states.items():
            self._states[key] = state.index_select(0, index.to(state.device))


def _stateful(conv: nn.Module, run: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor], x: torch.Tensor,
              c: torch.Tensor | None, cache: ConvCache, cu_seqlens: torch.Tensor | None) -> torch.Tensor:
    r"""Run ``run(x, c)`` as the continuation of the cached sequence: prepend the last ``W-1`` inputs
    (zeros before the first call) and drop their outputs. Output ``t`` reads only $x_{t-W+1..t}$ and
    $c_t$, so the prepended rows' conditioning (zeros) never reaches a kept output."""
    if cu_seqlens is not None:
        raise ValueError("cu_seqlens cannot be combined with a decode cache (conv_cache): decode one batch "
                         "of sequences [B, T, D] at a time")
    keep = conv.kernel_size - 1
    state = cache.get(conv)
    if state is None:
        state = x.new_zeros(x.shape[0], keep, x.shape[-1])
    elif state.shape[0] != x.shape[0] or state.dtype != x.dtype:
        raise ValueError(f"the conv cache holds a state for batch {state.shape[0]} ({state.dtype}), got x of "
                         f"batch {x.shape[0]} ({x.dtype}); call cache.reset() to start new sequences")
    xs = torch.cat([state, x], dim=1)  # [B, W-1+T, D]
    cs = None if c is None else torch.cat([c.new_zeros(c.shape[0], keep, c.shape[-1]), c], dim=1)
    y = run(xs, cs)[:, keep:]
    cache.put(conv, xs[:, xs.shape[1] - keep:].detach())
    return y


class DynamicShortConv(nn.Module):
    """Causal depthwise conv whose W taps per channel are generated from each token's conditioning.

    Args:
        dim: channels ``D`` of the convolved stream.
        kernel_size: taps ``W`` (lag 0 = current token).
        rank: ``R`` of the low-rank generator ``K_t = reshape((W_in c_t) U, (W, D))``.
        cond_dim: width of the conditioning ``c`` (default ``dim``: condition on ``x`` itself).
        head_size: if given, use the head-wise generator instead: ``G_t = W_g c_t`` reshaped to
            ``[D / head_size, W]`` (each group of ``head_size`` channels shares its taps; ``rank`` unused).
        static: add a learned input-independent filter ``S [W, D]`` (init ``U(-1/√W, 1/√W)``).
        residual: add ``x`` to the output.
        backend: ``"auto"`` | ``"torch"`` | ``"triton"`` (see :func:`dynamic_conv1d`).

    The generator's last matrix (``U``, or ``W_g`` head-wise) starts at zero, so a fresh layer equals
    the static conv plus the residual.
    """

    @validate(dim=POS_INT, kernel_size=POS_INT, cond_dim=Optional(POS_INT), head_size=Optional(POS_INT),
              backend=BACKEND)
    def __init__(self, dim: int, kernel_size: int = 4, rank: int = 15, cond_dim: int | None = None, *,
                 head_size: int | None = None, static: bool = True, residual: bool = True,
                 backend: str = "auto") -> None:
        if head_size is None:  # rank is unused (and not checked) with the head-wise generator
            check_arguments("DynamicShortConv.__init__", {"rank": POS_INT}, {"rank": rank})
        elif dim % head_size:
            raise ValueError(f"head_size ({head_size}) must divide dim ({dim})")
        super().__init__()
        dim, kernel_size = int(dim), int(kernel_size)
        self.dim, self.kernel_size = dim, kernel_size
        self.cond_dim = dim if cond_dim is None else int(cond_dim)
        head_size = None if head_size is None else int(head_size)
        self.rank = int(rank) if head_size is None else None
        self.head_size, self.residual, self.backend = head_size, bool(residual), backend
        if head_size is None:
            # z_t = W_in c_t  (proj_in: [R, Dc]); U: [R, W*D], zero-initialised
            self.proj_in = nn.Linear(self.cond_dim, self.rank, bias=False)
            self.U = nn.Parameter(torch.zeros(self.rank, kernel_size * dim))
        else:
            # G_t = W_g c_t, [H*W, Dc] zero-initialised (a Parameter, not nn.Linear, so model-wide
            # Linear initialisers leave it at zero)
            self.tap_weight = nn.Parameter(torch.zeros((dim // head_size) * kernel_size, self.cond_dim))
        if static:
            bound = 1.0 / math.sqrt(kernel_size)
            self.static_weight = nn.Parameter(torch.empty(kernel_size, dim).uniform_(-bound, bound))
        else:
            self.register_parameter("static_weight", None)
        self.conv_cache: ConvCache | None = None  # set by conv_cache(model) while decoding

    def extra_repr(self) -> str:
        kind = f"rank={self.rank}" if self.head_size is None else f"head_size={self.head_size}"
        return (f"dim={self.dim}, kernel_size={self.kernel_size}, {kind}, cond_dim={self.cond_dim}, "
                f"static={self.static_weight is not None}, residual={self.residual}")

    def _cond(self, x: torch.Tensor, cond: torch.Tensor | None) -> torch.Tensor:
        if cond is None:
            if self.cond_dim != self.dim:
                raise ValueError(f"cond is required: cond_dim={self.cond_dim} differs from dim={self.dim}")
            return x
        return cond

    def forward(self, x: torch.Tensor, cond: torch.Tensor | None = None,
                cu_seqlens: torch.Tensor | None = None, *,
                return_final_state: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """``x: [B, T, D]``, ``cond: [B, T, Dc]`` (default ``x``) -> ``[B, T, D]``.

        ``cu_seqlens`` (``[N+1]``, ``B == 1``) packs sequences; ``return_final_state`` also returns the
        decode cache ``[B (or N), W-1, D]`` (prefill), to continue with :meth:`step`. Under
        :func:`conv_cache` the call continues the previous call's sequence (see :class:`ConvCache`).
        """
        check_arguments("DynamicShortConv.forward",
                        {"x": stream(f"B T {self.dim}"), "cond": Optional(stream(f"B T {self.cond_dim}")),
                         "cu_seqlens": CU_SEQLENS}, {"x": x, "cond": cond, "cu_seqlens": cu_seqlens})
        c = self._cond(x, cond)
        # under torch.autocast, x and cond are cast to the autocast dtype first (as SDPA does): a bf16
        # projection output conditioned on an fp32 normed block input is what autocast produces
        x, c = autocast_inputs(x, c)
        if c is not x:
            _check_same("cond", c, x)
        check_finite(x=x, cond=None if c is x else c)
        if self.conv_cache is not None:
            y = _stateful(self, self._run, x, c, self.conv_cache, cu_seqlens)
        else:
            y = self._run(x, c, cu_seqlens)
        if return_final_state:
            return y, _final_state(x, self.kernel_size, cu_seqlens)
        return y

    def _run(self, x: torch.Tensor, c: torch.Tensor, cu_seqlens: torch.Tensor | None = None) -> torch.Tensor:
        # parameters follow x's dtype (works under autocast / bf16 activations with fp32 master weights)
        dt = x.dtype
        static_w = self.static_weight.to(dt) if self.static_weight is not None else None
        with torch.autocast(x.device.type, enabled=False):
            if self.head_size is None:
                # z_t = W_in c_t  [B, T, R]
                z = F.linear(c, self.proj_in.weight.to(dt))
                return lowrank_dynamic_conv1d(x, z, self.U.to(dt), static_w, self.residual, self.backend,
                                              cu_seqlens, finite_check=False)
            b, t, _ = x.shape
            # G_t = W_g c_t  [B, T, H, W]
            taps = F.linear(c, self.tap_weight.to(dt)).view(b, t, self.dim // self.head_size, self.kernel_size)
            return dynamic_conv1d(x, taps, static_w, self.residual, self.backend, cu_seqlens, finite_check=False)

    @validate(batch_size=POS_INT)
    def init_state(self, batch_size: int, *, device: torch.device | str | None = None,
                   dtype: torch.dtype | None = None) -> torch.Tensor:
        """An empty decode cache ``[B, W-1, D]`` (zeros: nothing before the first token)."""
        return torch.zeros(batch_size, self.kernel_size - 1, self.dim, device=device, dtype=dtype)

    def taps_at(self, cond_t: torch.Tensor) -> torch.Tensor:
        """The full filter ``K_t + S`` for conditioning ``cond_t: [B, Dc]``: ``[B, W, D]``."""
        check_arguments("DynamicShortConv.taps_at", {"cond_t": stream(f"B {self.cond_dim}")}, {"cond_t": cond_t})
        check_finite(cond_t=cond_t)
        b, dt = cond_t.shape[0], cond_t.dtype
        if self.head_size is None:
            k = (F.linear(cond_t, self.proj_in.weight.to(dt)) @ self.U.to(dt)).view(b, self.kernel_size, self.dim)
        else:
            g = F.linear(cond_t, self.tap_weight.to(dt)).view(b, self.dim // self.head_size, self.kernel_size)
            k = g.repeat_interleave(self.head_size, dim=1).transpose(1, 2)
        return k + self.static_weight.to(dt) if self.static_weight is not None else k

    def step(self, x_t: torch.Tensor, cond_t: torch.Tensor | None, state: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """One decoding step. ``x_t: [B, D]``, ``cond_t: [B, Dc]`` (None = ``x_t``), ``state: [B, W-1, D]``
        (the last W-1 inputs, oldest first) -> ``(y_t [B, D], new_state [B, W-1, D])``."""
        if cond_t is None and self.cond_dim == self.dim:
            cond_t = x_t  # None is refused below when cond_dim != dim (cond_t is required then)
        _check_step("DynamicShortConv.step", self, x_t, cond_t, state, self.cond_dim)
        window = torch.cat([state, x_t[:, None]], dim=1)  # [B, W, D]; window[:, W-1-w] = x_{t-w}
        k = self.taps_at(cond_t)  # [B, W, D], lag 0 first
        # accumulate in the input dtype, at least fp32 (bf16/fp16 as the kernels do; fp64 stays fp64)
        acc = torch.promote_types(x_t.dtype, torch.float32)
        y = (k.to(acc) * window.flip(1).to(acc)).sum(1).to(x_t.dtype)
        if self.residual:
            y = y + x_t
        return y, window[:, 1:]


class StaticShortConv(nn.Module):
    r"""Canon-style static causal depthwise conv: $y_t = \sum_w S_w \odot x_{t-w}\ (+\, x_t)$.

    Args:
        dim: channels ``D``.
        kernel_size: taps ``W`` (lag 0 first in ``weight [W, D]``; nn.Conv1d stores the reverse).
        residual: add ``x`` to the output.

    Without ``cu_seqlens`` the forward is one ``F.conv1d(groups=D)`` (cuDNN on GPU).
    """

    @validate(dim=POS_INT, kernel_size=POS_INT)
    def __init__(self, dim: int, kernel_size: int = 4, residual: bool = True) -> None:
        super().__init__()
        dim, kernel_size = int(dim), int(kernel_size)
        self.dim, self.kernel_size = dim, kernel_size
        self.residual = bool(residual)
        bound = 1.0 / math.sqrt(kernel_size)  # nn.Conv1d's default bound for fan_in = W
        self.weight = nn.Parameter(torch.empty(kernel_size, dim).uniform_(-bound, bound))
        self.conv_cache: ConvCache | None = None  # set by conv_cache(model) while decoding

    def extra_repr(self) -> str:
        return f"dim={self.dim}, kernel_size={self.kernel_size}, residual={self.residual}"

    @classmethod
    @validate(conv=Instance(nn.Conv1d, "torch.nn.Conv1d"))
    def from_conv1d(cls, conv: nn.Conv1d, *, residual: bool = False) -> StaticShortConv:
        """Import a depthwise ``nn.Conv1d(D, D, W, groups=D, padding=W-1, bias=False)`` used causally
        (output cropped to the first T steps); flips its taps into lag order. Non-causal set-ups
        (``padding`` other than ``W-1``, stride/dilation != 1) and biases are rejected."""
        d, width = conv.in_channels, conv.kernel_size[0]
        if conv.groups != d or conv.out_channels != d:
            raise ValueError(f"conv must be depthwise (groups = in = out channels), got groups={conv.groups}, "
                             f"in={d}, out={conv.out_channels}")
        if conv.padding != (width - 1,) or conv.stride != (1,) or conv.dilation != (1,):
            raise ValueError(f"conv is not a causal short conv: need padding={width - 1} (left context, crop "
                             f"right), stride 1, dilation 1; got padding={conv.padding}, stride={conv.stride}, "
                             f"dilation={conv.dilation}")
        if conv.bias is not None:
            raise ValueError("conv has a bias; StaticShortConv has none (build the conv with bias=False)")
        layer = cls(d, width, residual)
        with torch.no_grad():
            layer.weight.copy_(conv.weight[:, 0, :].flip(-1).T)  # Conv1d index W-1 = lag 0
        return layer

    def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor | None = None) -> torch.Tensor:
        """``x: [B, T, D]`` -> ``[B, T, D]``; ``cu_seqlens`` packs sequences (``B == 1``)."""
        check_arguments("StaticShortConv.forward", {"x": stream(f"B T {self.dim}"), "cu_seqlens": CU_SEQLENS},
                        {"x": x, "cu_seqlens": cu_seqlens})
        check_cu_seqlens(cu_seqlens, x)
        check_finite(x=x)
        if self.conv_cache is not None:
            return _stateful(self, lambda xs, _: self._run(xs, None), x, None, self.conv_cache, cu_seqlens)
        return self._run(x, cu_seqlens)

    def _run(self, x: torch.Tensor, cu_seqlens: torch.Tensor | None) -> torch.Tensor:
        t = x.shape[1]
        weight = self.weight.to(x.dtype)  # follows x's dtype (autocast / bf16 activations)
        if cu_seqlens is None:
            # nn.Conv1d convention: weight [D, 1, W] with index W-1 = current token
            w = weight.flip(0).T.unsqueeze(1)
            y = F.conv1d(x.transpose(1, 2), w, padding=self.kernel_size - 1, groups=self.dim)[..., :t]
            y = y.transpose(1, 2)
        else:
            starts = sequence_starts(cu_seqlens, x)
            y = sum(weight[w] * _shift(x, w, starts) for w in range(self.kernel_size))
        return y + x if self.residual else y

    @validate(batch_size=POS_INT)
    def init_state(self, batch_size: int, *, device: torch.device | str | None = None,
                   dtype: torch.dtype | None = None) -> torch.Tensor:
        return torch.zeros(batch_size, self.kernel_size - 1, self.dim, device=device, dtype=dtype)

    def step(self, x_t: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x_t: [B, D]``, ``state: [B, W-1, D]`` -> ``(y_t, new_state)``."""
        _check_step("StaticShortConv.step", self, x_t, None, state)
        window = torch.cat([state, x_t[:, None]], dim=1)
        acc = torch.promote_types(x_t.dtype, torch.float32)
        y = (self.weight.to(acc) * window.flip(1).to(acc)).sum(1).to(x_t.dtype)
        return (y + x_t if self.residual else y), window[:, 1:]


@validate(t=POS_INT, cu_seqlens=Tensor("N", dtype="integer", finite=False))
def packed_causal_mask(cu_seqlens: torch.Tensor, t: int, device: torch.device) -> torch.Tensor:
    """Block-diagonal causal mask ``[T, T]`` (True = attend) for packed sequences (``cu_seqlens`` as in
    :func:`~.ops.dynamic_conv1d`: 0 first, ``t`` last, non-decreasing)."""
    t = int(t)
    probe = torch.empty(1, t, 1, device=device)
    check_cu_seqlens(cu_seqlens, probe)
    starts = sequence_starts(cu_seqlens, probe).long()
    i = torch.arange(t, device=device)
    return (i[None, :] <= i[:, None]) & (i[None, :] >= starts[:, None])


class KVCache:
    """Keys and values (after RoPE) of every :class:`ConvAugmentedAttention` of a model, for decoding."""

    def __init__(self) -> None:
        self._kv: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def length(self, layer: nn.Module) -> int:
        """Positions cached for ``layer`` (0 before the prefill)."""
        kv = self._kv.get(id(layer))
        return 0 if kv is None else kv[0].shape[2]

    def append(self, layer: nn.Module, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add ``k, v: [B, H_kv, T, d]``; returns the whole cached ``[B, H_kv, past + T, d]``."""
        if id(layer) in self._kv:
            pk, pv = self._kv[id(layer)]
            k, v = torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2)
        self._kv[id(layer)] = (k, v)
        return k, v


class ConvAugmentedAttention(nn.Module):
    """Llama attention with a short conv on each of q, k, v, applied before RoPE.

    Args:
        d_model: model width.
        n_heads: query heads (``d_model / n_heads`` = head dim, even).
        n_kv_heads: key/value heads (grouped-query attention; default ``n_heads``).
        conv: ``"none"`` (plain attention), ``"static"`` (:class:`StaticShortConv`, residual) or
            ``"dynamic"`` (:class:`DynamicShortConv` conditioned on the block input, static + residual).
        kernel_size, rank: conv taps ``W`` and generator rank ``R``.
        rope_theta: RoPE base, used only when ``forward`` is called without ``cos``/``sin``.
        backend: kernel backend for the dynamic convs.
        attention_fn: the core attention step (default causal SDPA).

    ``forward(x, cos, sin, cu_seqlens=None, **attention_kwargs)`` matches :class:`neurips26.nn.Attention`.
    """

    @validate(d_model=POS_INT, n_heads=POS_INT, n_kv_heads=Optional(POS_INT), conv=CONV_KIND)
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, *, conv: str = "dynamic",
                 kernel_size: int = 4, rank: int = 15, rope_theta: float = 10000.0, backend: str = "auto",
                 attention_fn: Callable[..., torch.Tensor] | None = None) -> None:
        super().__init__()
        d_model, n_heads = int(d_model), int(n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else int(n_kv_heads)
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(f"d_model ({d_model}) / n_heads ({n_heads}) must be an even integer (RoPE)")
        if n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads ({n_kv_heads}) must divide n_heads ({n_heads})")
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.conv, self.rope_theta = conv, float(rope_theta)
        self.attention_fn = attention_fn or sdpa_attention
        widths = {"q": n_heads * self.head_dim, "k": n_kv_heads * self.head_dim, "v": n_kv_heads * self.head_dim}
        self.q_proj = nn.Linear(d_model, widths["q"], bias=False)
        self.k_proj = nn.Linear(d_model, widths["k"], bias=False)
        self.v_proj = nn.Linear(d_model, widths["v"], bias=False)
        self.o_proj = nn.Linear(widths["q"], d_model, bias=False)
        if conv == "static":
            self.convs = nn.ModuleDict({n: StaticShortConv(w, kernel_size, residual=True) for n, w in widths.items()})
        elif conv == "dynamic":
            # conditioning c = the block input (already RMS-normalised by the pre-norm Block)
            self.convs = nn.ModuleDict({n: DynamicShortConv(w, kernel_size, rank, cond_dim=d_model, static=True,
                                                            residual=True, backend=backend)
                                        for n, w in widths.items()})
        else:
            self.convs = None

    def _conv(self, name: str, h: torch.Tensor, x: torch.Tensor, cu_seqlens: torch.Tensor | None) -> torch.Tensor:
        if self.convs is None:
            return h
        if self.conv == "static":
            return self.convs[name](h, cu_seqlens)
        return self.convs[name](h, cond=x, cu_seqlens=cu_seqlens)

    def forward(self, x: torch.Tensor, cos: torch.Tensor | None = None, sin: torch.Tensor | None = None,
                cu_seqlens: torch.Tensor | None = None, kv_cache: KVCache | None = None,
                **attention_kwargs: Any) -> torch.Tensor:
        """``x: [B, T, d_model]``, RoPE tables ``[B, 1, T, head_dim]`` -> ``[B, T, d_model]``.

        With ``kv_cache`` (decoding) the call continues the cached sequence: its keys/values are appended to
        the cache and the queries attend causally to everything cached (pass matching ``cos``/``sin`` of the
        new positions, as :func:`~.decoding.generate` does)."""
        # shapes only: no NaN scan (no extra sync per layer)
        check_arguments("ConvAugmentedAttention.forward",
                        {"x": stream(f"B T {self.q_proj.in_features}"), "cu_seqlens": CU_SEQLENS},
                        {"x": x, "cu_seqlens": cu_seqlens})
        b, t, _ = x.shape
        if kv_cache is not None and cu_seqlens is not None:
            raise ValueError("kv_cache cannot be combined with cu_seqlens")
        if cos is None or sin is None:
            start = 0 if kv_cache is None else kv_cache.length(self)
            cos, sin = rope_cos_sin(torch.arange(start, start + t, device=x.device), self.head_dim,
                                    self.rope_theta, x.dtype)
        if cu_seqlens is not None:
            check_cu_seqlens(cu_seqlens, x)
            attention_kwargs.setdefault("attn_mask", packed_causal_mask(cu_seqlens, t, x.device))

        def heads(h: torch.Tensor, n: int) -> torch.Tensor:
            return h.view(b, t, n, self.head_dim).transpose(1, 2)

        q = apply_rope(heads(self._conv("q", self.q_proj(x), x, cu_seqlens), self.n_heads), cos, sin)
        k = apply_rope(heads(self._conv("k", self.k_proj(x), x, cu_seqlens), self.n_kv_heads), cos, sin)
        v = heads(self._conv("v", self.v_proj(x), x, cu_seqlens), self.n_kv_heads)
        if kv_cache is not None:
            k, v = kv_cache.append(self, k, v)  # [B, H_kv, past + T, d]
            past = k.shape[2] - t
            # query i sits at position past + i and sees keys 0 .. past + i
            i = torch.arange(t, device=x.device)[:, None]
            attention_kwargs["attn_mask"] = torch.arange(past + t, device=x.device)[None, :] <= past + i
        out = self.attention_fn(q, k, v, **attention_kwargs)  # [B, H, T, d]
        return self.o_proj(out.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim))


@validate(conv=CONV_KIND, kernel_size=POS_INT, rank=POS_INT, backend=BACKEND)
def conv_attention_factory(conv: str = "dynamic", *, kernel_size: int = 4, rank: int = 15,
                           backend: str = "auto") -> Callable[[LlamaConfig, int], ConvAugmentedAttention]:
    """``Llama(config, attention_factory=conv_attention_factory("dynamic"))``: convs on Q/K/V in every layer."""
    # kernel_size, rank and backend are checked now (declared above), not when the model is built
    def factory(config: LlamaConfig, layer_idx: int) -> ConvAugmentedAttention:
        return ConvAugmentedAttention(config.d_model, config.n_heads, config.n_kv_heads, conv=conv,
                                      kernel_size=kernel_size, rank=rank, rope_theta=config.rope_theta,
                                      backend=backend)

    return factory
