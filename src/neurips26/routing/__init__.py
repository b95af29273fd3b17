"""Depth-first decoder scaling for neural TSP solvers (P08, arXiv 2603.00430, "Efficient Decoder Scaling
Strategy for Neural Routing Solvers", Luo, Luo, Li, Wang).

What: a construction-based TSP solver with no encoder: at every step a stack of full-attention blocks
re-reads [first node, every unvisited node, last node] and scores the unvisited ones (a LEHD-style heavy
decoder), with **gated attention** (an elementwise sigmoid gate on the attention output) and **ReZero**
residuals instead of normalisation. The paper scales this decoder along depth L and width d from 1M to
~150M parameters and reports that parameter count alone does not predict quality, that depth beats
width at equal parameters, and that depth-first models beat some larger models.
Why: at a fixed budget, (d, 4L) has the same 13 d^2 L parameters as (2d, L); which one to build is the
design question. How: :class:`TSPDecoderOnly` (:mod:`.model`), imitation of reference tours with random
sub-path sampling (:func:`train_supervised`, :mod:`.train`), batched :func:`greedy_construct`, exact and
LKH/fast-tsp/PyVRP labels (:func:`solve_tsp_reference`), and the baselines in :mod:`.baselines`. No
official code exists: the block form, training recipe and grid are inferred from LEHD and the abstract.
"""

from .baselines import (
    POMOLightDecoder,
    farthest_insertion_tours,
    nearest_neighbour_tours,
    solve_cvrp_pyvrp,
    two_opt,
)
from .decode import greedy_construct, multi_start_construct
from .grid import GridPoint, equal_param_pairs, scaling_grid
from .model import (
    DecoderBlock,
    DecoderConfig,
    TSPDecoderOnly,
    count_params,
    decoder_step_flops,
    tour_flops,
    train_step_flops,
)
from .solvers import BACKENDS, backend_available, held_karp, resolve_tsp_backend, solve_tsp_reference
from .train import SubpathBatch, SubpathSampler, TrainResult, subpath_loss, train_supervised
from .tsp import (
    ROUNDINGS,
    as_instances,
    augment_x8,
    check_tours,
    distance_matrix,
    make_tsp_instances,
    optimality_gap,
    random_tours,
    tour_length,
)
from .tsplib import TSPFile, read_tour, read_tsp


def load_tsplib_small() -> list:
    """TSPLIB EUC_2D instances n <= 300 (dicts: ``name``, ``n``, ``optimal_cost`` with nint distances,
    ``coords``), via :func:`neurips26.data.load_tsplib_small`."""
    from neurips26.data import load_tsplib_small as _load

    return _load()


def load_cvrplib_x_small() -> list:
    """Paths of CVRPLIB X ``.vrp`` files (``.sol`` beside each), via :func:`neurips26.data.load_cvrplib_x_small`."""
    from neurips26.data import load_cvrplib_x_small as _load

    return _load()


__all__ = [
    "BACKENDS", "ROUNDINGS", "TSPFile", "augment_x8", "multi_start_construct", "read_tour", "read_tsp",
    "DecoderBlock", "DecoderConfig", "GridPoint", "POMOLightDecoder", "SubpathBatch",
    "SubpathSampler", "TSPDecoderOnly", "TrainResult", "as_instances", "backend_available", "check_tours",
    "count_params", "decoder_step_flops", "distance_matrix", "equal_param_pairs", "farthest_insertion_tours",
    "greedy_construct", "held_karp", "load_cvrplib_x_small", "load_tsplib_small", "make_tsp_instances",
    "nearest_neighbour_tours", "optimality_gap", "random_tours", "resolve_tsp_backend", "scaling_grid",
    "solve_cvrp_pyvrp", "solve_tsp_reference", "subpath_loss", "tour_flops", "tour_length", "train_step_flops",
    "train_supervised", "two_opt",
]
