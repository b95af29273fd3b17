"""EMC — Efficient Memory Crystallization: training-free continual test-time graph adaptation (P02).

What: a GNN trained on a labeled source graph meets a stream of unlabeled target graphs whose node
features drift. EMC adapts to each new domain with no training loop, keeps a compact memory of every
domain seen, and stays accurate on past domains. Baselines: frozen source, Tent-style entropy
minimisation, direct closed-form adaptation (no memory), and a port of GCAL's generative memory.
Why: generative memories (GCAL) train a VGAE and an O(m^2) edge generator by second-order gradient
matching for every domain; "crystallising" memory in closed form is far cheaper in time and memory.
How (inferred, see README): per domain, embed with the frozen encoder, align the covariate mean to an
evolving state, pseudo-label with the current closed-form classifier, crystallise each class into
``2r`` sigma points matching its mean and top-r covariance (closed-form minimiser of a moment-matching
objective), add them to the memory bank and refit a ridge classifier on the bank in closed form.
"""

from .baselines import (
    GCAL,
    T3A,
    DirectClosedForm,
    RawEmbeddingMemory,
    SourceOnly,
    TentGraph,
    information_maximization_loss,
)
from .crystal import crystal_objective, crystallize, ridge_fit, ridge_predict, weighted_moments
from .emc import EMC, Crystal
from .encoder import SourceGNN, train_source_gnn
from .evaluate import ContinualResult, TensorMemoryTracker, continual_eval
from .graph import LabelAccessError, UnlabeledGraph, unpack_graph
from .scale import PenultimateEncoder, embed_in_batches, neighbor_loader_available
from .streams import csbm_stream, planetoid_shift_stream, twitch_stream

__all__ = [
    "EMC", "GCAL", "T3A", "ContinualResult", "Crystal", "DirectClosedForm", "LabelAccessError",
    "PenultimateEncoder", "RawEmbeddingMemory", "SourceGNN", "SourceOnly", "TensorMemoryTracker", "TentGraph",
    "UnlabeledGraph", "continual_eval", "crystal_objective", "crystallize", "csbm_stream", "embed_in_batches",
    "information_maximization_loss", "neighbor_loader_available", "planetoid_shift_stream", "ridge_fit",
    "ridge_predict", "train_source_gnn", "twitch_stream", "unpack_graph", "weighted_moments",
]
