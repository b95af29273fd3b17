"""RNR: Randomized weight-Norm Regularization, the client-side defense against WLIA.

The abstract says RNR "disrupts frequency–weight correlations by randomly regularizing weight norms"
and "adds only a penalty term to the cross-entropy loss". The form below is our inference:

    L = CE(f(x), y) + λ Σ_c (‖w_c‖₂ − r_c)²,    r_c = m̄ · (1 + ε_c),   ε_c ~ U(−ρ, ρ)

with m̄ the mean row norm of the classifier the client received. Each row is pulled toward a random
target norm, redrawn every round (or every local epoch), so the norm growth the server sees is driven
by the draw rather than by the class count. Aggregation is untouched; only client code changes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from neurips26.constraints import Choice, Int, Real, Tensor, validate

__all__ = ["RNRPenalty", "rnr_penalty"]

_RESAMPLE = ("round", "epoch")


@validate(weight=Tensor("C H", dtype="float"), targets=Tensor("C"), lam=Real(low=0.0))
def rnr_penalty(weight: torch.Tensor, targets: torch.Tensor, lam: float) -> torch.Tensor:
    r"""Functional form: ``λ Σ_c (‖w_c‖₂ − r_c)²``.

    Args:
        weight: classifier weight ``[C, H]``.
        targets: target row norms ``r [C]`` (same dtype/device as ``weight``).
        lam: λ >= 0.
    Returns:
        scalar tensor (differentiable in ``weight``).
    """
    if bool((targets < 0).any()):
        raise ValueError("targets must be finite, non-negative row norms")
    # ‖w_c‖₂: [C, H] -> [C]  (torch's norm backward gives the 0 sub-gradient at w_c = 0, no NaN)
    norms = torch.linalg.vector_norm(weight, dim=1)
    return lam * ((norms - targets) ** 2).sum()


class RNRPenalty(nn.Module):
    r"""RNR as an ``nn.Module`` penalty: ``loss = F.cross_entropy(logits, y) + reg(model.fc.weight)``.

    Args:
        lam: λ >= 0, the penalty weight (λ = 0 disables the defense).
        spread: ρ in [0, 1): targets are ``m̄ (1 + ε_c)`` with ``ε_c ~ U(−ρ, ρ)``.
        resample: ``"round"`` (new ε each :meth:`start_round`) or ``"epoch"`` (also each :meth:`start_epoch`).
        seed: base seed. Draws with a ``key`` (e.g. ``(client_id, round)``) come from
            ``np.random.default_rng([seed, *key])``, so every client process draws the same numbers
            no matter where it runs (in-process loop or a Flower node).

    Call :meth:`start_round` with the received global classifier before local training.
    """

    targets: torch.Tensor

    @validate(lam=Real(low=0.0), spread=Real(low=0.0, high=1.0, closed="left"), resample=Choice(*_RESAMPLE),
              seed=Int(low=0))
    def __init__(self, *, lam: float = 0.2, spread: float = 0.5, resample: str = "round", seed: int = 0) -> None:
        super().__init__()
        self.lam = float(lam)
        self.spread = float(spread)
        self.resample = resample
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)
        self._mean_norm: float | None = None
        self._key: tuple[int, ...] | None = None
        self._epoch = 0
        self.register_buffer("targets", torch.empty(0), persistent=False)

    @staticmethod
    def _check_key(key: Sequence[int] | None) -> tuple[int, ...] | None:
        if key is None:
            return None
        if isinstance(key, str | bytes) or not hasattr(key, "__iter__"):
            raise TypeError(f"key must be a sequence of ints >= 0 (e.g. (client_id, round)), got {key!r}")
        key = tuple(key)
        if any(isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0 for k in key):
            raise ValueError(f"key entries must be ints >= 0, got {key}")
        return tuple(int(k) for k in key)

    def _generator(self, key: Sequence[int] | None) -> np.random.Generator:
        if key is None:
            return self._rng
        return np.random.default_rng([self.seed, *self._check_key(key)])

    def _draw(self, n_classes: int, key: Sequence[int] | None) -> None:
        assert self._mean_norm is not None
        # ε_c ~ U(−ρ, ρ);  r_c = m̄ (1 + ε_c)
        eps = self._generator(key).uniform(-self.spread, self.spread, size=n_classes)
        targets = self._mean_norm * (1.0 + eps)
        self.targets = torch.as_tensor(targets, dtype=torch.float32)

    def start_round(self, global_weight: torch.Tensor | np.ndarray, *, key: Sequence[int] | None = None
                    ) -> torch.Tensor:
        """Set ``m̄`` from the received classifier ``[C, H]`` and draw the targets ``r [C]`` (returned)."""
        if not isinstance(global_weight, torch.Tensor | np.ndarray):
            raise TypeError(f"global_weight must be a tensor or array [C, H], got {type(global_weight).__name__}")
        w = torch.as_tensor(global_weight).detach()
        key = self._check_key(key)  # everything is checked before any state changes
        if w.ndim != 2 or w.shape[0] < 1:
            raise ValueError(f"global_weight must be a 2-D classifier weight [C, H], got shape {tuple(w.shape)}")
        if not torch.isfinite(w).all():
            raise ValueError("global_weight contains NaN or inf")
        # m̄ = mean_c ‖W^g_c‖₂
        self._mean_norm = float(torch.linalg.vector_norm(w.double(), dim=1).mean())
        self._key = key
        self._epoch = 0
        self._draw(w.shape[0], self._key)
        return self.targets.clone()

    @validate(epoch=Int(low=0))
    def start_epoch(self, epoch: int) -> None:
        """Redraw the targets for local epoch ``epoch`` (>= 1) when ``resample="epoch"``; else no-op."""
        if self._mean_norm is None:
            raise RuntimeError("call start_round(global_weight) before start_epoch")
        if self.resample != "epoch" or epoch == 0:
            return
        key = None if self._key is None else (*self._key, int(epoch))
        self._draw(self.targets.shape[0], key)

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        """``λ Σ_c (‖w_c‖₂ − r_c)²`` for the classifier ``weight [C, H]``; scalar tensor."""
        if self._mean_norm is None:
            raise RuntimeError("RNRPenalty: call start_round(global_weight) before using the penalty")
        if not isinstance(weight, torch.Tensor):
            raise TypeError(f"weight must be a torch.Tensor, got {type(weight).__name__}")
        if weight.ndim != 2 or weight.shape[0] != self.targets.shape[0]:
            raise ValueError(f"weight must have shape [{self.targets.shape[0]}, H] (as in start_round), "
                             f"got {tuple(weight.shape)}")
        return rnr_penalty(weight, self.targets.to(device=weight.device, dtype=weight.dtype), self.lam)

    def extra_repr(self) -> str:
        return f"lam={self.lam}, spread={self.spread}, resample={self.resample!r}, seed={self.seed}"
