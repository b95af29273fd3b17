"""Graph inputs: PyG ``Data`` objects or plain ``(x, edge_index)`` tensors, validated once.

Every public entry point of :mod:`neurips26.emc` goes through :func:`unpack_graph`, so the same
errors (empty graph, wrong feature dimension, edge index out of range, NaN features) read the same
everywhere. :class:`UnlabeledGraph` is what adaptation methods receive from
:func:`~neurips26.emc.continual_eval`: it carries ``x`` and ``edge_index`` only, and reading ``y``
(or any other attribute) raises :class:`LabelAccessError`, so label-free adaptation is enforced, not
promised.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["LabelAccessError", "UnlabeledGraph", "unpack_graph"]


class LabelAccessError(RuntimeError):
    """Raised when test-time adaptation tries to read the labels of a target graph."""


class UnlabeledGraph:
    """A target graph as an adaptation method sees it: ``x`` ``[n, d]`` and ``edge_index`` ``[2, E]``.

    Reading ``y`` (or any attribute other than ``x``, ``edge_index``, ``num_nodes``) raises
    :class:`LabelAccessError`.
    """

    __slots__ = ("x", "edge_index")

    def __init__(self, x: Tensor, edge_index: Tensor) -> None:
        self.x = x
        self.edge_index = edge_index

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    def __getattr__(self, name: str) -> Any:  # only called for attributes that do not exist
        raise LabelAccessError(
            f"test-time adaptation may only read x and edge_index of a target graph, it tried {name!r}")

    def __repr__(self) -> str:
        return f"UnlabeledGraph(num_nodes={self.num_nodes}, num_edges={int(self.edge_index.shape[1])})"


def _edge_index_from(adj: Tensor, n: int) -> Tensor:
    """``edge_index`` ``[2, E]`` from either an ``edge_index`` or a sparse COO adjacency ``[n, n]``."""
    if adj.layout == torch.sparse_coo:
        if tuple(adj.shape) != (n, n):
            raise ValueError(f"edge_index: a sparse adjacency must have shape ({n}, {n}), "
                             f"got {tuple(adj.shape)}")
        return adj.coalesce().indices()
    return adj


def unpack_graph(graph: Any, edge_index: Tensor | None = None, *, in_dim: int | None = None,
                 name: str = "graph") -> tuple[Tensor, Tensor]:
    """Return validated ``(x [n, d] float32, edge_index [2, E] int64)``.

    Args:
        graph: a PyG ``Data`` (or anything with ``.x`` and ``.edge_index``), or the feature tensor
            ``x`` ``[n, d]`` itself when ``edge_index`` is given.
        edge_index: ``[2, E]`` integer node indices in ``[0, n)``, or a sparse COO adjacency ``[n, n]``;
            only with a tensor ``graph``.
        in_dim: the feature dimension the source model expects; ``None`` skips that check.
        name: how errors call the graph.
    """
    if isinstance(graph, Tensor):
        if edge_index is None:
            raise TypeError(f"{name}: with a feature tensor x, pass edge_index too (got edge_index=None)")
        x, ei = graph, edge_index
    else:
        if edge_index is not None:
            raise TypeError(f"{name}: pass either a graph object or (x, edge_index), not both")
        try:
            x, ei = graph.x, graph.edge_index
        except AttributeError as err:
            raise TypeError(f"{name}: expected a PyG Data (with .x and .edge_index) or a tensor x, got "
                            f"{type(graph).__name__}") from err
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}.x: expected a torch.Tensor [n, d], got {type(x).__name__}")
    if not isinstance(ei, Tensor):
        raise TypeError(f"{name}.edge_index: expected a torch.Tensor [2, E], got {type(ei).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{name}.x: expected a 2-D tensor [n, d], got shape {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise ValueError(f"{name}: empty graph (0 nodes); a target domain needs at least one node")
    if not x.is_floating_point():
        x = x.float()
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name}.x: features contain NaN or inf")
    if in_dim is not None and x.shape[1] != in_dim:
        raise ValueError(f"{name}.x: feature dimension {x.shape[1]} differs from the source model's "
                         f"{in_dim}")
    n = int(x.shape[0])
    ei = _edge_index_from(ei, n)
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"{name}.edge_index: expected shape [2, E], got {tuple(ei.shape)}")
    if ei.is_floating_point() or ei.dtype == torch.bool:
        raise TypeError(f"{name}.edge_index: expected an integer tensor, got {ei.dtype}")
    if ei.numel() > 0:
        lo, hi = int(ei.min()), int(ei.max())
        if lo < 0 or hi >= n:
            raise ValueError(f"{name}.edge_index: node indices must lie in [0, {n}), got range [{lo}, {hi}]")
    return x.float(), ei.long()
