"""GroupShift (P07): move a fitted group-ℓ_{p,1} model to a new group partition without retraining.

What: estimators for ``F(Xw + b) + α Σ_g ω_g ‖w_g‖_p`` (least squares or logistic, p ∈ (1, ∞]) whose solutions
carry a duality-gap certificate, and ``refit_partition`` / :func:`groupshift`, which take an optimum for a
partition ``G`` to the optimum for a new partition ``G'``.
Why: groupings change (domain knowledge, upstream features); retraining from scratch throws away the old
optimum, and a plain warm start still pays for global passes it does not need.
How: ``G -> G'`` is decomposed through the meet of the two partitions into binary splits then pairwise merges
(:meth:`GroupPartition.transition_to`), applied one by one. Each primitive's new groups are tested in closed form
(dual feasibility and the group's Fenchel-Young gap); when they pass, the coefficients are kept; otherwise the
primitive's homotopy is followed (p = 2, squared loss: predictor-corrector on its closed-form dynamics, with
events) or a local working-set solve runs. Every run ends with the global duality gap ``<= tol · P(0)``: the
proof that the new optimum was recovered. Estimators re-partition through ``set_params(groups=...)`` +
``fit`` under ``warm_start`` (Pipeline- and clone-safe). Parts marked inferred in
README.md are our reconstruction (the paper's text and code were not found).
"""

from .baselines import cold_newton_refit, cold_refit, skglm_group_lasso, warm_refit
from .estimators import GroupL1Classifier, GroupL1Regressor
from .partition import GroupPartition, Primitive, apply_primitives
from .shift import groupshift, homotopy_tangent
from .solver import (
    SolveResult,
    duality_gap,
    group_lambda_max,
    group_norms,
    prox_group_norm,
    solve_group_l1,
)

__all__ = [
    "GroupPartition",
    "Primitive",
    "apply_primitives",
    "GroupL1Regressor",
    "GroupL1Classifier",
    "groupshift",
    "homotopy_tangent",
    "group_lambda_max",
    "duality_gap",
    "solve_group_l1",
    "SolveResult",
    "prox_group_norm",
    "group_norms",
    "cold_refit",
    "cold_newton_refit",
    "warm_refit",
    "skglm_group_lasso",
]
