"""Input layers every decoder shares: per-day affine recalibration and causal Gaussian smoothing.

Both follow the Willett et al. (2023) PyTorch baseline (cffan/neural_seq_decoder), with one change we
made for streaming use: the baseline smooths with a symmetric Gaussian (it sees the future), ours uses
only past bins (inferred; required for a causal decoder).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import NONNEGATIVE, Int, TensorC, features, is_trusted, validate

_DAY = TensorC("B", dtype="integer")


def validate_inputs(x: Tensor, day_idx: Tensor | None, n_in: int, n_days: int, where: str = "") -> Tensor:
    """Check ``x [B, T, n_in]`` (finite floats, T >= 1) and ``day_idx [B]`` (ints in 0..n_days-1, a tensor or
    anything ``torch.as_tensor`` takes); returns day_idx. ``where``: the caller's name, the message prefix."""
    dims: dict = {}
    features(n_in).check(x, "x", where, dims)
    prefix = f"{where}: " if where else ""
    if x.shape[1] < 1:
        raise ValueError(f"{prefix}x must have at least one time bin, got T={x.shape[1]}")
    if day_idx is None:
        if n_days != 1:
            raise ValueError(f"{prefix}day_idx is required when n_days > 1 (n_days={n_days})")
        return torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
    day_idx = torch.as_tensor(day_idx, device=x.device)
    _DAY.check(day_idx, "day_idx", where, dims)
    if day_idx.numel() and (int(day_idx.min()) < 0 or int(day_idx.max()) >= n_days):
        raise ValueError(f"{prefix}day_idx values must be in 0..{n_days - 1}, got min {int(day_idx.min())}, "
                         f"max {int(day_idx.max())}")
    return day_idx.long()


class DayInputLayer(nn.Module):
    """Per-day affine map, identity-initialised, then softsign: $x' = \\mathrm{softsign}(A_d x + c_d)$.

    ``x [B, T, F], day_idx [B] -> [B, T, F]``. Excluded from "core" parameters (see
    :func:`count_core_params`).
    """

    @validate(n_features=Int(low=1), n_days=Int(low=1))
    def __init__(self, n_features: int, n_days: int) -> None:
        n_features, n_days = int(n_features), int(n_days)
        super().__init__()
        self.n_days = n_days
        self.weight = nn.Parameter(torch.eye(n_features).repeat(n_days, 1, 1))  # [days, F, F]
        self.bias = nn.Parameter(torch.zeros(n_days, 1, n_features))  # [days, 1, F]

    def forward(self, x: Tensor, day_idx: Tensor) -> Tensor:
        if not is_trusted():  # a decoder has checked its inputs already
            day_idx = validate_inputs(x, day_idx, self.weight.shape[1], self.n_days, "DayInputLayer")
        # x'_{b,t} = softsign(A_{d_b} x_{b,t} + c_{d_b})
        return F.softsign(torch.bmm(x, self.weight[day_idx]) + self.bias[day_idx])


class CausalGaussianSmoothing(nn.Module):
    """Causal smoothing along time with a half-Gaussian kernel of width ``sigma`` bins.

    $\\tilde x_t = \\sum_{m=0}^{M} w_m x_{t-m}$, $w_m \\propto \\exp(-m^2 / 2\\sigma^2)$,
    $M = \\lceil 3\\sigma \\rceil$,
    zeros before t = 0 (renormalised so that early bins keep their scale). ``sigma=0`` is the identity.
    ``[B, T, F] -> [B, T, F]``.
    """

    @validate(sigma=NONNEGATIVE)
    def __init__(self, sigma: float = 2.0) -> None:
        sigma = float(sigma)
        super().__init__()
        self.sigma = float(sigma)
        taps = int(math.ceil(3 * sigma)) + 1 if sigma > 0 else 1
        m = torch.arange(taps, dtype=torch.float32)
        w = torch.exp(-(m**2) / (2 * max(sigma, 1e-12) ** 2)) if sigma > 0 else torch.ones(1)
        self.register_buffer("kernel", (w / w.sum()).flip(0))  # conv correlates: lag m at tap M - m

    @validate(x=TensorC("B T F", dtype="float"))  # inside a decoder's trusted(): the shape only
    def forward(self, x: Tensor) -> Tensor:
        taps = self.kernel.numel()
        if taps == 1:
            return x
        w = self.kernel.flip(0).to(x.dtype)  # w[m]: weight of lag m
        t = x.shape[1]
        out = w[0] * x
        norm = torch.full((t,), float(w[0]), dtype=x.dtype, device=x.device)
        for m in range(1, min(taps, t)):
            # \tilde x_t += w_m x_{t-m}   (a sum of shifted copies: cheaper than a depthwise conv1d on CPU)
            out = out + w[m] * F.pad(x, (0, 0, m, 0))[:, :t]
            norm[m:] += w[m]
        # renormalise by the weight that fell inside [0, t]
        return out / norm.view(1, t, 1)

    # ------------------------------------------------------------------ streaming
    def init_state(self, shape: tuple[int, ...], *, dtype: torch.dtype = torch.float32,
                   device: torch.device | str | None = None) -> tuple[Tensor, int]:
        """``(history [M, *shape], t = 0)``: the last M inputs (slot m-1 = $x_{t-m}$) and the bin count."""
        taps = self.kernel.numel()
        return torch.zeros(max(taps - 1, 0), *shape, dtype=dtype, device=device), 0

    def step(self, x_t: Tensor, state: tuple[Tensor, int]) -> tuple[Tensor, tuple[Tensor, int]]:
        """One bin ``x_t [*shape]`` -> ``(\\tilde x_t, new_state)``; the same sum, in the same order, as
        :meth:`forward` (terms before t = 0 are exact zeros), so the outputs agree bit for bit."""
        hist, t = state
        taps = self.kernel.numel()
        if taps == 1:
            return x_t, (hist, t + 1)
        w = self.kernel.flip(0).to(x_t.dtype)
        out = w[0] * x_t
        norm = w[0].clone()
        for m in range(1, taps):
            out = out + w[m] * hist[m - 1]
            if m <= t:
                norm = norm + w[m]
        hist = torch.cat([x_t.unsqueeze(0), hist[:-1]], dim=0)
        return out / norm, (hist, t + 1)
