"""Leaky integrate-and-fire neurons with soft (subtractive) reset and a fast-sigmoid surrogate gradient.

$$v_t = \\beta\\, v_{t-1} + I_t - \\theta\\, s_{t-1}, \\qquad s_t = H(v_t - \\theta), \\qquad v_0 = s_0 = 0,$$

with $H(u) = [u > 0]$ in the forward pass and the surrogate
$\\partial s / \\partial v \\approx 1 / (1 + k\\,|v - \\theta|)^2$ (fast sigmoid, slope k) in the backward pass.
As in snnTorch's ``snn.Leaky(reset_mechanism="subtract")`` the reset term is detached by default (no
gradient flows through $s_{t-1}$ into $v_t$), so both give the same spikes and the same gradients.

Two implementations: :func:`lif_reference` (a Python loop that autograd differentiates) and the default
:class:`_LIFFunction` (the same loop without a graph in the forward pass, and a hand-written backward
through time, which is several times faster on CPU). Tests compare the two.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ._checks import BETA, POSITIVE, SEQUENCE3, Bool, Choice, check_arguments, validate

_BACKENDS = ("auto", "bptt", "reference")
_LIF_ARGS = {"current": SEQUENCE3, "beta": BETA, "threshold": POSITIVE, "slope": POSITIVE}


class _FastSigmoidSpike(torch.autograd.Function):
    """$s = [u > 0]$; backward $\\partial s/\\partial u = 1/(1 + k|u|)^2$."""

    @staticmethod
    def forward(ctx, u: Tensor, slope: float) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(u)
        ctx.slope = slope
        return (u > 0).to(u.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        (u,) = ctx.saved_tensors
        return grad / (1.0 + ctx.slope * u.abs()) ** 2, None


def _check_lif_args(where: str, current: Any, beta: Any, threshold: Any, slope: Any) -> None:
    """``current [B, T, N]`` finite floats; β a scalar in (0, 1] (a number, or a one-element tensor: its value is
    what is checked); θ, k > 0."""
    if isinstance(beta, Tensor) and beta.numel() == 1 and beta.is_floating_point():
        beta = beta.detach().reshape(())
    check_arguments(where, _LIF_ARGS, {"current": current, "beta": beta, "threshold": threshold, "slope": slope})


def lif_reference(current: Tensor, beta: Tensor | float, threshold: float = 1.0, slope: float = 10.0,
                  detach_reset: bool = True) -> Tensor:
    """Plain autograd loop over time. ``current [B, T, N] -> spikes [B, T, N]``."""
    _check_lif_args("lif_reference", current, beta, threshold, slope)
    return _lif_reference(current, beta, threshold, slope, detach_reset)


def _lif_reference(current: Tensor, beta: Tensor | float, threshold: float, slope: float,
                   detach_reset: bool) -> Tensor:
    beta_t = torch.as_tensor(beta, dtype=current.dtype, device=current.device)
    v = current.new_zeros(current.shape[0], current.shape[2])
    s = torch.zeros_like(v)
    out = []
    for t in range(current.shape[1]):
        reset = s.detach() if detach_reset else s
        # v_t = β v_{t-1} + I_t − θ s_{t-1}
        v = beta_t * v + current[:, t] - threshold * reset
        # s_t = H(v_t − θ)
        s = _FastSigmoidSpike.apply(v - threshold, slope)
        out.append(s)
    return torch.stack(out, dim=1)


class _LIFFunction(torch.autograd.Function):
    """Forward loop without a graph; backward through time by hand.

    With $g^s_t = \\partial L/\\partial s_t$ (from the output), $\\sigma'_t = 1/(1+k|v_t-\\theta|)^2$ and the
    detached reset:
    $g^v_t = g^s_t\\,\\sigma'_t + \\beta\\, g^v_{t+1}$, $\\partial L/\\partial I_t = g^v_t$,
    $\\partial L/\\partial\\beta = \\sum_t g^v_t\\, v_{t-1}$. Without the detach, $s_t$ also feeds
    $v_{t+1}$ through $-\\theta s_t$, so $g^s_t$ gains $-\\theta\\, g^v_{t+1}$.
    """

    @staticmethod
    def forward(ctx, current: Tensor, beta: Tensor, threshold: float, slope: float,  # type: ignore[override]
                detach_reset: bool) -> Tensor:
        b, t_len, n = current.shape
        v = current.new_zeros(b, n)
        s = torch.zeros_like(v)
        mem = current.new_empty(b, t_len, n)
        spikes = current.new_empty(b, t_len, n)
        for t in range(t_len):
            v = beta * v + current[:, t] - threshold * s
            s = (v > threshold).to(current.dtype)
            mem[:, t] = v
            spikes[:, t] = s
        ctx.save_for_backward(mem, beta)
        ctx.threshold, ctx.slope, ctx.detach_reset = threshold, slope, detach_reset
        return spikes

    @staticmethod
    def backward(ctx, grad_spikes: Tensor):  # type: ignore[override]
        mem, beta = ctx.saved_tensors
        threshold, slope = ctx.threshold, ctx.slope
        surrogate = 1.0 / (1.0 + slope * (mem - threshold).abs()) ** 2  # σ'_t, [B, T, N]
        grad_current = torch.empty_like(mem)
        g_next = mem.new_zeros(mem.shape[0], mem.shape[2])  # g^v_{t+1}
        for t in range(mem.shape[1] - 1, -1, -1):
            g_s = grad_spikes[:, t]
            if not ctx.detach_reset:
                g_s = g_s - threshold * g_next
            g_next = g_s * surrogate[:, t] + beta * g_next
            grad_current[:, t] = g_next
        grad_beta = None
        if ctx.needs_input_grad[1]:
            v_prev = torch.cat([mem.new_zeros(mem.shape[0], 1, mem.shape[2]), mem[:, :-1]], dim=1)
            grad_beta = (grad_current * v_prev).sum().reshape(beta.shape)
        return grad_current, grad_beta, None, None, None


def lif(current: Tensor, beta: Tensor | float, threshold: float = 1.0, slope: float = 10.0, *,
        detach_reset: bool = True, backend: str = "auto") -> Tensor:
    """LIF spikes for an input current ``[B, T, N]`` (``backend``: ``"auto"``/``"bptt"`` or ``"reference"``)."""
    check_arguments("lif", {"backend": Choice(*_BACKENDS)}, {"backend": backend})
    _check_lif_args("lif", current, beta, threshold, slope)
    return _lif(current, beta, threshold, slope, detach_reset=detach_reset, backend=backend)


def _lif(current: Tensor, beta: Tensor | float, threshold: float, slope: float, *, detach_reset: bool,
         backend: str) -> Tensor:
    """:func:`lif` on checked arguments (the model's inner layers)."""
    if backend == "reference":
        return _lif_reference(current, beta, threshold, slope, detach_reset)
    beta_t = torch.as_tensor(beta, dtype=current.dtype, device=current.device)
    return _LIFFunction.apply(current, beta_t, float(threshold), float(slope), bool(detach_reset))


class LIF(nn.Module):
    """Multi-step LIF layer: input current ``[B, T, N]`` -> spikes ``[B, T, N]`` (0/1, same dtype).

    Args:
        beta: membrane decay β in (0, 1] (β = 0.8: τ = −1/ln β ≈ 4.5 bins).
        threshold: firing threshold θ > 0.
        slope: k of the fast-sigmoid surrogate 1/(1 + k|v − θ|)².
        learn_beta: make β a trainable scalar (clamped to [0, 1] in the forward pass).
        detach_reset: no gradient through the reset term (snnTorch's default).
        backend: ``"auto"`` (hand-written BPTT) or ``"reference"`` (autograd loop).
    """

    @validate(beta=BETA, threshold=POSITIVE, slope=POSITIVE, learn_beta=Bool(), detach_reset=Bool(),
              backend=Choice(*_BACKENDS))
    def __init__(self, beta: float = 0.8, threshold: float = 1.0, slope: float = 10.0, learn_beta: bool = False,
                 *, detach_reset: bool = True, backend: str = "auto") -> None:
        super().__init__()
        self.threshold, self.slope = float(threshold), float(slope)
        self.detach_reset, self.backend = detach_reset, backend
        if learn_beta:
            self.beta = nn.Parameter(torch.tensor(float(beta)))
        else:
            self.register_buffer("beta", torch.tensor(float(beta)))

    def _beta(self) -> Tensor:
        return self.beta.clamp(0.0, 1.0) if isinstance(self.beta, nn.Parameter) else self.beta

    @validate(current=SEQUENCE3)  # inside a decoder's trusted(): the shape only (its currents are its own)
    def forward(self, current: Tensor) -> Tensor:
        return _lif(current, self._beta().to(current.dtype), self.threshold, self.slope,
                    detach_reset=self.detach_reset, backend=self.backend)

    # ------------------------------------------------------------------ streaming (snnTorch's init_leaky/step)
    def init_state(self, shape: tuple[int, ...], *, dtype: torch.dtype = torch.float32,
                   device: torch.device | str | None = None) -> tuple[Tensor, Tensor]:
        """``(v, s)`` zeros of ``shape`` (``[B, N]``): the membrane and the last spikes before t = 0."""
        v = torch.zeros(*shape, dtype=dtype, device=device if device is not None else self.beta.device)
        return v, torch.zeros_like(v)

    def step(self, current_t: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """One bin: $v_t = \\beta v_{t-1} + I_t - \\theta s_{t-1}$, $s_t = H(v_t - \\theta)$.

        ``current_t [*, N]``, ``state = (v, s)`` -> ``(s_t, (v_t, s_t))``; the same operations as the
        multi-step forward, so a loop of steps gives the same spikes bit for bit. Inference only (the
        surrogate gradient lives in the multi-step forward).
        """
        if not (isinstance(state, tuple) and len(state) == 2 and all(isinstance(t, Tensor) for t in state)):
            raise TypeError("LIF.step: state must be the (v, s) pair from init_state or the previous step")
        v, s = state
        if not isinstance(current_t, Tensor) or current_t.shape != v.shape:
            raise ValueError(f"LIF.step: current_t must be a tensor of the state's shape {tuple(v.shape)}, got "
                             f"{tuple(current_t.shape) if isinstance(current_t, Tensor) else type(current_t).__name__}")
        beta = self._beta().to(current_t.dtype)
        v = beta * v + current_t - self.threshold * s
        s = (v > self.threshold).to(current_t.dtype)
        return s, (v, s)

    def extra_repr(self) -> str:
        return f"beta={float(self.beta):.3g}, threshold={self.threshold}, slope={self.slope}"
