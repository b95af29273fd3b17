"""Forward-only SVD rank search on a frozen LLM (P05, NeurIPS 2026; title, arXiv id and code not found).

Paper idea (abstract only): adapt a served LLM with **no backward pass**. For each SVD component of each
candidate weight matrix, measure from ordinary forward passes whether it makes the layer's outputs more
*concentrated* (pointing one way) or more *dispersed*; pick the matrix with the highest dispersion and
truncate its SVD, keeping the large-σ ("lower-order") components: a LASER edit (arXiv 2312.13558) found
without LASER's exhaustive grid or a gradient search (C2I, arXiv 2510.20800).

How (our formalisation, inferred; see :mod:`.stats`): with $c_{t,i} = \\sigma_i v_i^\\top x_t$ the mean pairwise
cosine of a layer's outputs splits exactly into per-component terms $\\kappa_i$; a component is dispersed when
$\\kappa_i \\le 0$; a matrix's score is the output-energy share of its dispersed tail. Only $O(r)$ sums per
matrix are kept. :mod:`.svd` does the edit (:func:`laser_reduce`, bit-exact restore), :mod:`.search` the
forward-only search, :mod:`.baselines` LASER, the gradient search and the random control, :mod:`.controls`
the weight-only controls (sigma-tail share, Marchenko-Pastur noise share), :mod:`.hub` safetensors
save/load of edited models,
:mod:`.tasks` the Shakespeare tasks of the claim check and :mod:`.experiment` its set-up.
"""

from .baselines import GradientSVSearch, LaserExhaustiveSearch, RandomMatrixSearch, laser_grid_passes
from .controls import (
    WEIGHT_SCORES,
    WeightSpectrumSearch,
    marchenko_pastur_edge,
    mp_noise_share,
    sigma_tail_share,
    weight_scores,
)
from .harness import HarnessLM, multiple_choice_eval_fn
from .hub import load_pretrained, save_pretrained
from .search import (
    DEFAULT_RHO_GRID,
    ForwardOnlyRankSearch,
    SearchResult,
    angle_concentration_by_rank,
    knee_index,
)
from .stats import AngleConcentrationStats, kappa_from_coefficients, mean_pairwise_cosine
from .svd import (
    ComposedEdit,
    RankReduction,
    RestoreHandle,
    candidate_linears,
    compose_edits,
    laser_reduce,
    rank_for_rho,
    svd_factors,
)

__all__ = [
    "DEFAULT_RHO_GRID",
    "WEIGHT_SCORES",
    "AngleConcentrationStats",
    "ComposedEdit",
    "HarnessLM",
    "WeightSpectrumSearch",
    "compose_edits",
    "load_pretrained",
    "marchenko_pastur_edge",
    "mp_noise_share",
    "multiple_choice_eval_fn",
    "save_pretrained",
    "sigma_tail_share",
    "weight_scores",
    "ForwardOnlyRankSearch",
    "GradientSVSearch",
    "LaserExhaustiveSearch",
    "RandomMatrixSearch",
    "RankReduction",
    "RestoreHandle",
    "SearchResult",
    "angle_concentration_by_rank",
    "candidate_linears",
    "kappa_from_coefficients",
    "knee_index",
    "laser_grid_passes",
    "laser_reduce",
    "mean_pairwise_cosine",
    "rank_for_rho",
    "svd_factors",
]
