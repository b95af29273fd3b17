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

from neurips26.constraints import Tensor as TensorOf
from neurips26.constraints import check_arguments

from ._validate import NonEmpty

__all__ = ["LabelAccessError", "UnlabeledGraph", "unpack_graph"]


class LabelAccessError(RuntimeError):
    """Raised when test-time adaptation tries to read the labels of a target graph."""


class UnlabeledGraph:
    """A target graph as an adaptation method sees it: ``x`` ``[n, d]`` and ``edge_index`` ``[2, E]``.

    Reading ``y`` (or any attribute other than ``x``, ``edge_index``, ``edge_weight``, ``num_nodes``) raises
    :class:`LabelAccessError`.
    """

    __slots__ = ("x", "edge_index", "edge_weight")

    def __init__(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> None:
        self.x = x
        self.edge_index = edge_index
        self.edge_weight = edge_weight

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
        check_arguments("", {"edge_index (a sparse adjacency)": TensorOf(f"{n} {n}", finite=False)},
                        {"edge_index (a sparse adjacency)": adj})
        return adj.coalesce().indices()
    return adj


def _from_adj_t(adj_t: Any, name: str) -> tuple[Tensor, Tensor | None]:
    """PyG's transposed adjacency ``adj_t`` (``torch_sparse.SparseTensor`` or a torch sparse tensor, row =
    target, col = source) -> ``(edge_index [2, E] source -> target, edge_weight [E] or None)`` through
    ``torch_geometric.utils.to_edge_index``."""
    try:
        from torch_geometric.utils import to_edge_index
    except ImportError as err:  # pragma: no cover - the graph extra
        raise ImportError(f"{name}.adj_t needs torch-geometric: pip install 'neurips26[graph]'") from err
    try:
        rows_cols, values = to_edge_index(adj_t)
    except Exception as err:  # noqa: BLE001 - anything PyG cannot read is the user's input
        raise TypeError(f"{name}.adj_t: expected a SparseTensor or a torch sparse [n, n] tensor, got "
                        f"{type(adj_t).__name__} ({err})") from err
    edge_index = rows_cols.flip(0)  # adj_t[target, source] -> (source, target)
    weight = None
    if values is not None and values.numel() and not bool((values == 1).all()):
        weight = values.reshape(-1)
    return edge_index, weight


def _edge_weight_of(graph: Any, n_edges: int, name: str) -> Tensor | None:
    """``graph.edge_weight`` ``[E]``, or a scalar ``graph.edge_attr`` (``[E]`` or ``[E, 1]``); a
    multi-dimensional ``edge_attr`` is refused by name (EMC's encoders take one weight per edge)."""
    weight = getattr(graph, "edge_weight", None)
    attr = None if isinstance(graph, UnlabeledGraph) else getattr(graph, "edge_attr", None)
    if weight is None and attr is not None:
        if not isinstance(attr, Tensor) or attr.dim() > 2 or (attr.dim() == 2 and attr.shape[1] != 1):
            raise ValueError(f"{name}.edge_attr: EMC's encoders take one scalar weight per edge "
                             f"(edge_weight [E]); got edge_attr of shape {tuple(getattr(attr, 'shape', ()))}. "
                             "Reduce it to edge_weight or drop it")
        weight = attr.reshape(-1)
    if weight is None:
        return None
    # one finite float weight per edge (n_edges < 0: the edge index is malformed, refused after this)
    check_arguments("", {f"{name}.edge_weight": TensorOf(f"{max(n_edges, 0)}", dtype="float")},
                    {f"{name}.edge_weight": weight})
    return weight.float()


def unpack_graph(graph: Any, edge_index: Tensor | None = None, *, in_dim: int | None = None,
                 name: str = "graph", edge_weight: Tensor | None = None,
                 return_weight: bool = False) -> tuple[Tensor, Tensor] | tuple[Tensor, Tensor, Tensor | None]:
    """Return validated ``(x [n, d] float32, edge_index [2, E] int64)`` (``return_weight=True``: plus
    ``edge_weight [E] float32`` or ``None``).

    Args:
        graph: a PyG ``Data`` (or anything with ``.x`` and ``.edge_index``, or ``.x`` and ``.adj_t`` as
            after ``T.ToSparseTensor()``), or the feature tensor ``x`` ``[n, d]`` itself when
            ``edge_index`` is given. ``edge_weight`` / a scalar ``edge_attr`` are read from the Data.
        edge_index: ``[2, E]`` integer node indices in ``[0, n)``, or a sparse COO adjacency ``[n, n]``;
            only with a tensor ``graph``.
        in_dim: the feature dimension the source model expects; ``None`` skips that check.
        name: how errors call the graph.
        edge_weight: ``[E]`` weights with a tensor ``graph``.
        return_weight: also return the edge weights (callers that cannot use them check for ``None``).
    """
    weight = None
    if isinstance(graph, Tensor):
        if edge_index is None:
            raise TypeError(f"{name}: with a feature tensor x, pass edge_index too (got edge_index=None)")
        x, ei = graph, edge_index
        if edge_weight is not None:
            weight = _edge_weight_of(type("G", (), {"edge_weight": edge_weight})(),
                                     int(ei.shape[-1]) if isinstance(ei, Tensor) and ei.dim() == 2 else -1, name)
    else:
        if edge_index is not None or edge_weight is not None:
            raise TypeError(f"{name}: pass either a graph object or (x, edge_index[, edge_weight]), not both")
        if isinstance(graph, UnlabeledGraph):
            x, ei, adj_t = graph.x, graph.edge_index, None
        else:
            x = getattr(graph, "x", None)
            ei = getattr(graph, "edge_index", None)
            adj_t = getattr(graph, "adj_t", None)
        if x is None or (ei is None and adj_t is None):
            raise TypeError(f"{name}: expected a PyG Data (with .x and .edge_index or .adj_t) or a tensor x, "
                            f"got {type(graph).__name__}")
        if ei is None:
            ei, weight = _from_adj_t(adj_t, name)
        elif isinstance(ei, Tensor) and ei.dim() == 2:
            weight = _edge_weight_of(graph, int(ei.shape[1]), name)
    # features: [n >= 1, d] (d = the source model's in_dim when given), finite (integer features are converted
    # to float); edges: an integer [2, E]
    features = NonEmpty(TensorOf("N D" if in_dim is None else f"N {in_dim}"))
    check_arguments("", {f"{name}.x": features, f"{name}.edge_index": TensorOf(finite=False)},
                    {f"{name}.x": x, f"{name}.edge_index": ei})
    if not x.is_floating_point():
        x = x.float()
    n = int(x.shape[0])
    ei = _edge_index_from(ei, n)
    check_arguments("", {f"{name}.edge_index": TensorOf("2 E", dtype="integer")}, {f"{name}.edge_index": ei})
    if ei.numel() > 0:
        lo, hi = int(ei.min()), int(ei.max())
        if lo < 0 or hi >= n:
            raise ValueError(f"{name}.edge_index: node indices must lie in [0, {n}), got range [{lo}, {hi}]")
    if return_weight:
        return x.float(), ei.long(), weight
    if weight is not None:
        raise ValueError(f"{name}.edge_weight: this method uses unweighted graphs only; drop edge_weight "
                         "(or edge_attr) to run it on the unweighted graph")
    return x.float(), ei.long()
