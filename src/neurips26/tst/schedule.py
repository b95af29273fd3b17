"""When to superpose: the two-phase schedule, the PatchTrain preset, and a Warmup-Stable-Decay LR."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from neurips26.nn.train import lr_lambda

Phase = Literal["superposition", "recovery"]


@dataclass(frozen=True)
class TSTSchedule:
    """Phase boundaries of Token-Superposition Training (a pure config object).

    Steps ``0 .. switch_step - 1`` are the superposition phase, the rest the recovery (plain NTP) phase,
    with ``switch_step = round(r·T)`` (Python's round: half to even).

    Args:
        total_steps: T, optimizer steps of the whole run (>= 1).
        bag_size: s, tokens per bag in the superposition phase (>= 1).
        superposition_fraction: r in [0, 1); ``0`` is the plain next-token baseline.
    """

    total_steps: int
    bag_size: int = 4
    superposition_fraction: float = 0.3

    def __post_init__(self) -> None:
        if isinstance(self.total_steps, bool) or not isinstance(self.total_steps, int) or self.total_steps < 1:
            raise ValueError(f"total_steps must be a positive int, got {self.total_steps!r}")
        if isinstance(self.bag_size, bool) or not isinstance(self.bag_size, int):
            raise TypeError(f"bag_size must be an int, got {type(self.bag_size).__name__}")
        if self.bag_size < 1:
            raise ValueError(f"bag_size must be >= 1, got {self.bag_size}")
        r = self.superposition_fraction
        if isinstance(r, bool) or not isinstance(r, float | int) or not math.isfinite(r) or not 0.0 <= r < 1.0:
            raise ValueError(f"superposition_fraction must be a float in [0, 1), got {r!r}")

    @property
    def switch_step(self) -> int:
        """First recovery step, ``round(r·T)``."""
        return round(self.superposition_fraction * self.total_steps)

    def _check_step(self, step: int) -> None:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be a non-negative int, got {step!r}")

    def phase(self, step: int) -> Phase:
        self._check_step(step)
        return "superposition" if step < self.switch_step else "recovery"

    def raw_tokens_per_row(self, step: int, context_len: int) -> int:
        """Raw tokens a row must hold at ``step``: ``s·(L+1)`` when superposing, else ``L+1``."""
        if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 1:
            raise ValueError(f"context_len must be a positive int, got {context_len!r}")
        s = self.bag_size if self.phase(step) == "superposition" else 1
        return s * (context_len + 1)

    def to_dict(self) -> dict[str, Any]:
        return {"total_steps": self.total_steps, "bag_size": self.bag_size,
                "superposition_fraction": float(self.superposition_fraction)}

    @classmethod
    def patch_level(cls, total_steps: int, K: int = 4, data_fraction: float = 2 / 3) -> TSTSchedule:
        r"""Patch-Level Training preset (Shao et al. 2024): patch size ``K``, a fraction ``data_fraction``
        of all *tokens* read in patch mode (their default 2/3 with K=4).

        With r of the steps reading K× the tokens: $\frac{rK}{rK + 1 - r} = f \Rightarrow
        r = \frac{f}{K(1-f) + f}$ (= 1/3 for K=4, f=2/3, i.e. ≈ 1/3 of the compute).
        """
        if isinstance(data_fraction, bool) or not isinstance(data_fraction, int | float) \
                or not 0.0 < data_fraction < 1.0:
            raise ValueError(f"data_fraction must be a number in (0, 1), got {data_fraction!r}")
        if isinstance(K, bool) or not isinstance(K, int) or K < 1:
            raise ValueError(f"K (patch size) must be a positive int, got {K!r}")
        r = data_fraction / (K * (1.0 - data_fraction) + data_fraction)
        return cls(total_steps, K, r)


def wsd_lr_lambda(total_steps: int, *, warmup_fraction: float = 0.05,
                  decay_fraction: float = 0.2) -> Callable[[int], float]:
    r"""Warmup-Stable-Decay multiplier for ``torch.optim.lr_scheduler.LambdaLR``: linear warmup over the
    first ``warmup_fraction`` of the steps, flat, then linear decay to 0 over the last ``decay_fraction``.

    A thin wrapper of :func:`neurips26.nn.train.lr_lambda` (``schedule="wsd"``) with the step counts TST
    uses: $W = \max(1, \mathrm{round}(w T))$ warm-up steps (0 when $w = 0$) and $D = \mathrm{round}(f T)$
    decay steps, so the multiplier is $(t+1)/W$ for $t < W$, $(T - t)/D$ for $t \ge T - D$, else 1.
    The schedule does not restart at the TST phase switch (inferred from the paper's setup)."""
    if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 1:
        raise ValueError(f"total_steps must be a positive int, got {total_steps!r}")
    for name, value in (("warmup_fraction", warmup_fraction), ("decay_fraction", decay_fraction)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not (0 <= warmup_fraction < 1 and 0 <= decay_fraction <= 1 and warmup_fraction + decay_fraction <= 1):
        raise ValueError(f"need 0 <= warmup_fraction, decay_fraction and their sum <= 1, got "
                         f"{warmup_fraction}, {decay_fraction}")
    warmup = max(1, round(warmup_fraction * total_steps)) if warmup_fraction > 0 else 0
    return lr_lambda(total_steps=total_steps, schedule="wsd", warmup_steps=warmup,
                     decay_fraction=float(decay_fraction))
