r"""DyRA (P18, NeurIPS 2026): input-adaptive low-rank correction of the residual *output* of structured linears.

Paper: "DyRA: input-adaptive dynamic residual low-rank correction of structured weight approximations"
(title inferred; arXiv id and code not found — everything beyond the abstract is our reconstruction).

What: a structured approximation $W_s$ of a weight $W$ (truncated SVD, SVD-LLM-style whitened SVD,
block-diagonal, Monarch) is cheap to apply but minimises the *weight* error, while accuracy depends on the
*output* error $R = X(W - W_s)^\top$, which inputs can amplify. DyRA keeps the structured product and adds, per
batch or per sample, a rank-k estimate of R found by a randomized range finder on that very input:

$$\hat Y = X W_s^\top + R Q Q^\top, \qquad Q = \mathrm{orth}\big((W - W_s) X^\top \Omega\big)_{[:, :k]}.$$

Why: at fixed rank, low-rank factors of the output beat low-rank factors of the weight (Eckart–Young on
$XW^\top$), but they depend on X, so they must be estimated cheaply at inference ("dynamic").

How: :class:`StructuredLinear` (the fast paths), :class:`DyRALinear` (structured + dynamic correction; batched,
masked, seeded), :func:`dyra_matmul` (the plain one-group reference), :class:`StaticResidualCorrection` (one
calibrated Q, the non-adaptive counterpart), :func:`apply_dyra` / :func:`collect_linear_inputs` (whole models at a
FLOP budget), :func:`flops_per_token` (every FLOP counted, QR included); :mod:`.baselines` holds the peers.
$E = W - W_s$ stays dense: DyRA trades compute, it saves no weight memory.
"""

from .adapters import (
    DyRAConfig,
    dyra_state_dict,
    get_dyra_model,
    load_dyra,
    merge,
    merge_and_unload,
    save_dyra,
    unmerge,
)
from .correction import (
    DyRALinear,
    StaticResidualCorrection,
    dense_flops,
    dyra_extra_flops,
    dyra_matmul,
    qr_flops,
    small_svd_flops,
    static_extra_flops,
)
from .structured import STRUCTURES, StructuredLinear, damped_cholesky, svd_rank
from .swap import (
    DyRAModules,
    apply_dyra,
    budget_rank,
    collect_linear_inputs,
    dyra_budget_rank,
    flops_per_token,
    gram,
    replace_linears,
    static_budget_rank,
)
from .synthetic import clustered_layer

__all__ = [
    "STRUCTURES", "DyRAConfig", "DyRALinear", "DyRAModules", "StaticResidualCorrection", "StructuredLinear",
    "apply_dyra", "budget_rank", "clustered_layer", "collect_linear_inputs", "damped_cholesky", "dense_flops",
    "dyra_budget_rank", "dyra_extra_flops", "dyra_matmul", "dyra_state_dict", "flops_per_token", "get_dyra_model",
    "gram", "load_dyra", "merge", "merge_and_unload", "qr_flops", "replace_linears", "save_dyra", "small_svd_flops",
    "static_budget_rank", "static_extra_flops", "svd_rank", "unmerge",
]
