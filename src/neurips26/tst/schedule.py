"""When to superpose: the two-phase schedule, the PatchTrain preset, and a Warmup-Stable-Decay LR."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from neurips26.constraints import Int, Real, check_arguments, validate
from neurips26.nn.train import lr_lambda

Phase = Literal["superposition", "recovery"]

STEPS = Int(low=1)  # T, optimizer steps of a run
BAG = Int(low=1)  # s (or K), tokens per bag
STEP = Int(low=0)  # an optimizer step
CONTEXT = Int(low=1)  # L, positions per row
_SCHEDULE = {"total_steps": STEPS, "bag_size": BAG, "superposition_fraction": Real(0.0, 1.0, closed="left")}


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
        check_arguments("TSTSchedule", _SCHEDULE, {"total_steps": self.total_steps, "bag_size": self.bag_size,
                                                   "superposition_fraction": self.superposition_fraction})

    @property
    def switch_step(self) -> int:
        """First recovery step, ``round(r·T)``."""
        return round(self.superposition_fraction * self.total_steps)

    @validate(step=STEP)
    def phase(self, step: int) -> Phase:
        return "superposition" if step < self.switch_step else "recovery"

    @validate(context_len=CONTEXT, step=STEP)
    def raw_tokens_per_row(self, step: int, context_len: int) -> int:
        """Raw tokens a row must hold at ``step``: ``s·(L+1)`` when superposing, else ``L+1``."""
        s = self.bag_size if self.phase(step) == "superposition" else 1
        return s * (context_len + 1)

    def to_dict(self) -> dict[str, Any]:
        return {"total_steps": self.total_steps, "bag_size": self.bag_size,
                "superposition_fraction": float(self.superposition_fraction)}

    @classmethod
    @validate(data_fraction=Real(0.0, 1.0, closed="neither"), K=BAG)
    def patch_level(cls, total_steps: int, K: int = 4, data_fraction: float = 2 / 3) -> TSTSchedule:
        r"""Patch-Level Training preset (Shao et al. 2024): patch size ``K``, a fraction ``data_fraction``
        of all *tokens* read in patch mode (their default 2/3 with K=4).

        With r of the steps reading K× the tokens: $\frac{rK}{rK + 1 - r} = f \Rightarrow
        r = \frac{f}{K(1-f) + f}$ (= 1/3 for K=4, f=2/3, i.e. ≈ 1/3 of the compute).
        """
        r = data_fraction / (K * (1.0 - data_fraction) + data_fraction)
        return cls(total_steps, K, r)


@validate(total_steps=STEPS, warmup_fraction=Real(0.0, 1.0, closed="left"), decay_fraction=Real(0.0, 1.0))
def wsd_lr_lambda(total_steps: int, *, warmup_fraction: float = 0.05,
                  decay_fraction: float = 0.2) -> Callable[[int], float]:
    r"""Warmup-Stable-Decay multiplier for ``torch.optim.lr_scheduler.LambdaLR``: linear warmup over the
    first ``warmup_fraction`` of the steps, flat, then linear decay to 0 over the last ``decay_fraction``.

    A thin wrapper of :func:`neurips26.nn.train.lr_lambda` (``schedule="wsd"``) with the step counts TST
    uses: $W = \max(1, \mathrm{round}(w T))$ warm-up steps (0 when $w = 0$) and $D = \mathrm{round}(f T)$
    decay steps, so the multiplier is $(t+1)/W$ for $t < W$, $(T - t)/D$ for $t \ge T - D$, else 1.
    The schedule does not restart at the TST phase switch (inferred from the paper's setup)."""
    if warmup_fraction + decay_fraction > 1:
        raise ValueError(f"wsd_lr_lambda: warmup_fraction + decay_fraction must be <= 1, got {warmup_fraction} + "
                         f"{decay_fraction}")
    warmup = max(1, round(warmup_fraction * total_steps)) if warmup_fraction > 0 else 0
    return lr_lambda(total_steps=total_steps, schedule="wsd", warmup_steps=warmup,
                     decay_fraction=float(decay_fraction))
