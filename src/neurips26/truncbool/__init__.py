"""TruncBool (P03): fit a Boolean product distribution from samples seen only inside a set S.

What: estimate the natural parameters ``z ∈ R^n`` of ``μ_z(x) ∝ exp⟨z, x⟩`` on ``{0,1}^n`` from i.i.d.
samples of the truncated law ``μ_{z,S}`` (``x ∈ S`` only), with ``S`` known through a batched membership
oracle. The paper (title and text not found; spec in the project's ``P03-truncbool.md``) claims
``O(log n / ε²)`` samples for ℓ∞ error ε under a relative "fatness" condition, even when ``μ_z(S)`` is
exponentially small, by plain gradient descent that never samples from the model.
Why: the FKT'20 estimator (and delphi.ai) needs model draws at every trial parameter, by rejection, so its
cost grows like ``1/μ_z(S)``; here the only questions are "is this flipped sample still in S?".
How (inferred; see README.md): conditional on ``x_{-B}``, a block ``x_B`` follows ``exp⟨z_B, c⟩`` over its
feasible completions ``C_B(x)``; :class:`TruncatedBooleanProduct` minimises that composite likelihood
(singletons, or pairs for sets of minimum distance 2 such as parity) by projected GD on ``[-W, W]^n``.
:func:`sample_truncated_product` draws exactly from ``μ_{z,S}`` with a log-space DP (band, parity,
integer halfspace), which the claim check and the tests use as ground truth.
"""

from .baselines import ExactTruncatedMLE, NaiveBooleanProduct, TruncatedMLESGD, UntruncatedBooleanProduct
from .diagnostics import fatness, influence, log_influence
from .estimator import TruncatedBooleanProduct, UnidentifiableWarning
from .oracles import (
    CallableOracle,
    IntHalfspace,
    MembershipOracle,
    Parity,
    SubcubeUnion,
    WeightBand,
    block_completions,
    flip_feasible,
)
from .pseudolikelihood import composite_grad, composite_loss, composite_stats, make_blocks
from .samplers import (
    RejectionLimitError,
    enumerate_set,
    log_mass,
    sample_product,
    sample_truncated_product,
    truncated_pmf,
)

__all__ = [
    "MembershipOracle",
    "WeightBand",
    "Parity",
    "IntHalfspace",
    "SubcubeUnion",
    "CallableOracle",
    "flip_feasible",
    "block_completions",
    "sample_truncated_product",
    "sample_product",
    "log_mass",
    "enumerate_set",
    "truncated_pmf",
    "RejectionLimitError",
    "TruncatedBooleanProduct",
    "UnidentifiableWarning",
    "composite_stats",
    "composite_loss",
    "composite_grad",
    "make_blocks",
    "fatness",
    "influence",
    "log_influence",
    "NaiveBooleanProduct",
    "UntruncatedBooleanProduct",
    "TruncatedMLESGD",
    "ExactTruncatedMLE",
]
