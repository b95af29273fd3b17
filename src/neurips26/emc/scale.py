"""Using EMC on graphs that do not fit one forward pass, and on GNNs that have no ``.embed``.

:func:`embed_in_batches` computes the frozen encoder's node embeddings seed batch by seed batch. Each batch
runs the encoder on the batch's ``num_hops``-hop neighbourhood (every neighbour, no sampling) and keeps the
seed rows. With ``num_hops = n_layers + 1`` the result equals full-graph inference for message-passing
encoders whose normalisation reads node degrees (GCN): every node within ``n_layers`` hops of a seed then
has its full neighbourhood, so its degree, and the seed's receptive field, are exact.

Two loaders: PyG's :class:`torch_geometric.loader.NeighborLoader` (``num_neighbors=[-1] * num_hops``;
needs PyG's sampling backend, ``pyg-lib`` or ``torch-sparse``) and a plain-torch k-hop loader built on
:func:`torch_geometric.utils.k_hop_subgraph` (no compiled extension). ``loader="auto"`` takes
NeighborLoader when its backend is installed.

:class:`PenultimateEncoder` turns any GNN module into an EMC encoder by capturing, with a forward hook,
the input (or output) of a named submodule, e.g. the last layer's input of ``torch_geometric.nn.GCN``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from neurips26.constraints import Choice, Instance, Int, Optional, validate
from neurips26.constraints import Tensor as TensorOf

__all__ = ["PenultimateEncoder", "embed_in_batches", "neighbor_loader_available"]

LOADERS = ("auto", "neighbor", "khop")


def neighbor_loader_available() -> bool:
    """Whether PyG's ``NeighborLoader`` can sample here (it needs ``pyg-lib`` or ``torch-sparse``)."""
    try:
        from torch_geometric.typing import WITH_PYG_LIB, WITH_TORCH_SPARSE
    except ImportError:  # pragma: no cover - the graph extra
        return False
    return bool(WITH_PYG_LIB or WITH_TORCH_SPARSE)


def _run(encoder: Callable, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None) -> Tensor:
    return encoder(x, edge_index) if edge_weight is None else encoder(x, edge_index, edge_weight)


@validate(x=TensorOf("N D", dtype="float"), edge_index=TensorOf("2 E", dtype="integer"), batch_size=Int(low=1),
          num_hops=Int(low=1), edge_weight=Optional(TensorOf("E", dtype="float")), loader=Choice(*LOADERS))
@torch.no_grad()
def embed_in_batches(encoder: Callable[..., Tensor], x: Tensor, edge_index: Tensor, *, batch_size: int,
                     num_hops: int, edge_weight: Tensor | None = None, loader: str = "auto") -> Tensor:
    """Node embeddings ``[n, h]`` of ``encoder(x, edge_index[, edge_weight])``, ``batch_size`` seeds at a time.

    Args:
        encoder: ``(x [m, d], edge_index [2, E_m][, edge_weight [E_m]]) -> [m, h]``, in eval mode.
        x: ``[n, d]`` node features; edge_index: ``[2, E]`` (source, target); edge_weight: optional ``[E]``.
        batch_size: seed nodes per batch (>= 1).
        num_hops: neighbourhood depth per batch; ``n_layers + 1`` is exact for GCN-style degree
            normalisation, ``n_layers`` for mean/sum/attention aggregation.
        loader: ``"neighbor"`` (PyG ``NeighborLoader``), ``"khop"`` (plain torch) or ``"auto"``.
    """
    if loader == "neighbor" and not neighbor_loader_available():
        raise ImportError("loader='neighbor': PyG's NeighborLoader needs pyg-lib or torch-sparse; install one, or "
                          "use loader='khop' (same result, plain torch)")
    use_neighbor = loader == "neighbor" or (loader == "auto" and neighbor_loader_available())
    n = x.shape[0]
    batches = _neighbor_batches if use_neighbor else _khop_batches
    out: Tensor | None = None
    for seeds, sub_x, sub_ei, sub_w, seed_pos in batches(x, edge_index, edge_weight, batch_size, num_hops):
        z = _run(encoder, sub_x, sub_ei, sub_w)[seed_pos]
        if out is None:
            out = z.new_empty(n, z.shape[1])
        out[seeds] = z
    assert out is not None  # n >= 1
    return out


def _khop_batches(x: Tensor, edge_index: Tensor, edge_weight: Tensor | None, batch_size: int, num_hops: int):
    from torch_geometric.utils import k_hop_subgraph

    n = x.shape[0]
    for start in range(0, n, batch_size):
        seeds = torch.arange(start, min(start + batch_size, n), device=x.device)
        # subset: every node within num_hops of a seed; mapping: where the seeds sit in it
        subset, sub_ei, mapping, edge_mask = k_hop_subgraph(seeds, num_hops, edge_index, relabel_nodes=True,
                                                            num_nodes=n, flow="source_to_target")
        yield seeds, x[subset], sub_ei, None if edge_weight is None else edge_weight[edge_mask], mapping


def _neighbor_batches(x: Tensor, edge_index: Tensor, edge_weight: Tensor | None, batch_size: int, num_hops: int):
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader

    data = Data(x=x, edge_index=edge_index, num_nodes=x.shape[0])
    if edge_weight is not None:
        data.edge_weight = edge_weight
    for batch in NeighborLoader(data, num_neighbors=[-1] * num_hops, batch_size=batch_size, shuffle=False):
        k = int(batch.batch_size)
        yield batch.n_id[:k], batch.x, batch.edge_index, getattr(batch, "edge_weight", None), slice(0, k)


class PenultimateEncoder(nn.Module):
    """An EMC encoder from any GNN module: ``phi(x, edge_index)`` = what a named submodule receives (or returns).

    ::

        from torch_geometric.nn import GCN
        gnn = GCN(in_channels=d, hidden_channels=64, num_layers=2, out_channels=C)   # no .embed
        emc = EMC(PenultimateEncoder(gnn, "convs.1", capture="input"), n_classes=C)

    Args:
        model: the trained GNN; called as ``model(x, edge_index[, edge_weight])`` (kept frozen, in eval mode
            during EMC's calls).
        layer: dotted name of the submodule (``dict(model.named_modules())``), e.g. the classifier layer.
        capture: ``"input"`` (the first positional input of ``layer``: the penultimate embedding when
            ``layer`` is the last layer) or ``"output"``.
    """

    @validate(model=Instance(nn.Module), layer=Instance(str), capture=Choice("input", "output"))
    def __init__(self, model: nn.Module, layer: str, *, capture: str = "input") -> None:
        super().__init__()
        modules = dict(model.named_modules())
        if layer not in modules or layer == "":
            raise ValueError(f"layer: expected the name of a submodule of the model, one of "
                             f"{[k for k in modules if k][:12]}..., got {layer!r}")
        self.model, self.layer, self.capture = model, layer, capture
        self.in_dim = getattr(model, "in_dim", getattr(model, "in_channels", None))
        self._target = modules[layer]

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """Embeddings ``[n, h]`` captured at ``layer`` during one forward pass of the model."""
        seen: list[Tensor] = []

        def hook(_module: nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
            seen.append(inputs[0] if self.capture == "input" else output)

        handle = self._target.register_forward_hook(hook)
        try:
            if edge_weight is None:
                self.model(x, edge_index)
            else:
                self.model(x, edge_index, edge_weight)
        finally:
            handle.remove()
        if not seen or not isinstance(seen[-1], Tensor):
            raise RuntimeError(f"PenultimateEncoder: layer {self.layer!r} was not called with a tensor during "
                               "the model's forward pass")
        return seen[-1]

    def embed(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """Same as calling the encoder (EMC and the baselines look for ``.embed``)."""
        return self(x, edge_index, edge_weight)
