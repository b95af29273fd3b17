"""Ready-made preconditions: what must hold before a comparison of trained models can answer its claim.

A claim decided where it cannot be answered (an undertrained model, a task at its ceiling, a baseline
stopped before its plateau, a signal that is not there) is a defect even when its numbers are honest. Each
function here returns a :class:`~neurips26.claims.spec.Precondition` whose ``measure(ctx) -> Evidence`` the
check supplies (usually reading ``ctx.cache``) and whose rule is fixed here:

    Claim(..., compares_trained=True, tuning="equal",
          preconditions=(preconditions.beats_reference("model beats the unigram LM", measure_gap,
                                                       margin=0.1, min_n=3),
                         preconditions.converged("baseline converged", measure_curves, delta=0.01, k=3,
                                                 min_n=3)))

Any unmet precondition makes its claim ``inconclusive``; the record shows each precondition's value and
criterion beside the claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from . import rules
from .rules import REQUIRED
from .spec import CheckContext, Evidence, Precondition, Verdict


def beats_reference(name: str, measure: Callable[[CheckContext], Evidence], *, margin: float,
                    min_n: int = REQUIRED) -> Precondition:
    """The trained model beats a named trivial reference (chance, a unigram model, farthest insertion) by more
    than ``margin`` on every seed. ``measure`` gives per-seed ``model - reference``, oriented so that larger
    is better (for a loss: ``reference_loss - model_loss``)."""
    return Precondition(name, measure, rules.threshold(">", margin, stat="min", min_n=min_n))


def relative_improvement(curve: Sequence[float], k: int, *, higher_is_better: bool = False) -> float:
    """How much the best value of a curve's last ``k`` evaluations improves on the best before them,
    relative to the latter's magnitude: ``(best_before - best_last) / |best_before|`` for a loss (lower is
    better), the mirror for a score. Non-positive means the curve has stopped improving.

    Args:
        curve: evaluation values in order (validation loss, accuracy), at least ``k + 1`` of them.
        k: evaluations in the window.
    """
    values = np.asarray(curve, dtype=float).ravel()
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    if values.size < k + 1:
        raise ValueError(f"curve needs at least k + 1 = {k + 1} evaluations, got {values.size}")
    if not np.all(np.isfinite(values)):
        raise ValueError("curve must be finite (a diverged run has not converged)")
    before, last = values[:-k], values[-k:]
    if higher_is_better:
        ref, new = float(before.max()), float(last.max())
        gain = new - ref
    else:
        ref, new = float(before.min()), float(last.min())
        gain = ref - new
    return gain / max(abs(ref), 1e-12)


def converged(name: str, measure: Callable[[CheckContext], Evidence], *, delta: float, k: int,
              min_n: int = REQUIRED, higher_is_better: bool = False) -> Precondition:
    """Every evaluation curve has reached its plateau: its relative improvement over the last ``k``
    evaluations (:func:`relative_improvement`) is below ``delta``.

    ``measure`` returns ``Evidence(values=..., details={"curves": [curve, ...]})`` with one curve per seed
    and arm; the values are ignored (give e.g. the final losses, for the record).
    """
    if not (isinstance(delta, int | float) and not isinstance(delta, bool) and math.isfinite(delta) and delta > 0):
        raise ValueError(f"delta must be a positive number, got {delta!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    min_n = rules._check_min_n(min_n, "converged")

    def decide(evidence: Evidence) -> Verdict:
        curves = evidence.details.get("curves")
        if not isinstance(curves, list | tuple) or not curves:
            return Verdict("inconclusive", "no evaluation curves in details['curves']")
        if len(curves) < min_n:
            return Verdict("inconclusive", f"only {len(curves)} curve(s), needs {min_n}")
        try:
            gains = [relative_improvement(c, k, higher_is_better=higher_is_better) for c in curves]
        except ValueError as err:
            return Verdict("not supported", f"a curve cannot show convergence: {err}")
        worst = max(gains)
        said = f"largest relative improvement over the last {k} evaluations {worst:.3g}"
        return Verdict("supported" if worst < delta else "not supported", f"{said}; needs < {delta:.3g}")

    text = f"every curve improves by less than {delta:.3g} (relative) over its last {k} evaluations (curves >= {min_n})"
    return Precondition(name, measure, rules.custom(text, decide, min_n=1))


def headroom(name: str, measure: Callable[[CheckContext], Evidence], *, at_least: float,
             at_most: float | None = None, min_n: int = REQUIRED) -> Precondition:
    """The task can show the difference the claim is about: a reference probe or oracle reaches at least
    ``at_least`` (the task is learnable here) and, when given, at most ``at_most`` (it is not at its ceiling).
    ``measure`` gives the reference's score per seed."""
    low = rules.threshold(">=", at_least, stat="min", min_n=min_n)
    if at_most is None:
        return Precondition(name, measure, low)
    return Precondition(name, measure, rules.all_of(low, rules.threshold("<=", at_most, stat="max", min_n=min_n)))


def signal_exists(name: str, measure: Callable[[CheckContext], Evidence], *, delta: float,
                  min_n: int = REQUIRED) -> Precondition:
    """The quantity the claim is about exists: it differs from its no-signal version (a history-dependent
    output from the same output without history, a trained feature from a random one) by at least ``delta``
    on every value. ``measure`` gives the per-seed absolute differences."""
    return Precondition(name, measure, rules.threshold(">=", delta, stat="min", min_n=min_n))


__all__ = ["beats_reference", "converged", "headroom", "relative_improvement", "signal_exists"]
