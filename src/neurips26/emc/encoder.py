"""The source model every method starts from: a GNN encoder ``phi`` and a linear ``head``.

``f = head o phi``; ``phi`` is any stack of PyG convolutions (``"gcn"``, ``"sage"``, ``"gat"``,
``"gin"`` or a factory ``(in_dim, out_dim) -> MessagePassing``). EMC only needs ``phi``
(:meth:`SourceGNN.embed`); the gradient-based baselines (Tent, GCAL) update the whole model.
All listed PyG layers run without the optional compiled extensions (torch-scatter, torch-sparse).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.nn.train import TrainingGuard

from ._validate import check_int, check_number
from .graph import unpack_graph

__all__ = ["SourceGNN", "train_source_gnn"]

ConvFactory = Callable[[int, int], nn.Module]


def _conv_factory(conv: str | ConvFactory) -> tuple[ConvFactory, bool]:
    """(factory, accepts_edge_weight) for a named PyG convolution or a user factory."""
    from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

    if callable(conv):
        return conv, False
    table: dict[str, tuple[ConvFactory, bool]] = {
        "gcn": (lambda i, o: GCNConv(i, o, cached=False), True),
        "sage": (lambda i, o: SAGEConv(i, o), False),
        "gat": (lambda i, o: GATConv(i, o, heads=1), False),
        "gin": (lambda i, o: GINConv(nn.Sequential(nn.Linear(i, o), nn.ReLU(), nn.Linear(o, o))), False),
    }
    if conv not in table:
        raise ValueError(f"conv: expected one of {sorted(table)} or a callable (in_dim, out_dim) -> module, "
                         f"got {conv!r}")
    return table[conv]


class SourceGNN(nn.Module):
    """``n_layers`` graph convolutions (ReLU, dropout, optional BatchNorm) then a linear head.

    Args:
        in_dim: node feature dimension ``d``.
        n_classes: number of classes ``C``.
        hidden: embedding width ``h`` of every convolution (the output of :meth:`embed`).
        n_layers: number of convolutions (>= 1).
        conv: ``"gcn"``, ``"sage"``, ``"gat"``, ``"gin"`` or a factory ``(in_dim, out_dim) -> module``
            whose ``forward(x, edge_index)`` returns ``[n, out_dim]``.
        dropout: dropout probability after each convolution (training only).
        batch_norm: BatchNorm1d after each convolution.
    """

    def __init__(self, in_dim: int, n_classes: int, *, hidden: int = 64, n_layers: int = 2,
                 conv: str | ConvFactory = "gcn", dropout: float = 0.2, batch_norm: bool = False) -> None:
        super().__init__()
        for arg, value, low in (("in_dim", in_dim, 1), ("n_classes", n_classes, 2), ("hidden", hidden, 1),
                                ("n_layers", n_layers, 1)):
            check_int(arg, value, low)
        check_number("dropout", dropout, low=0.0, high=1.0, high_open=True)
        factory, self.accepts_edge_weight = _conv_factory(conv)
        self.in_dim, self.n_classes, self.hidden, self.dropout = in_dim, n_classes, hidden, dropout
        dims = [in_dim] + [hidden] * n_layers
        self.convs = nn.ModuleList(factory(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) if batch_norm else nn.Identity()
                                   for _ in range(n_layers))
        self.head = nn.Linear(hidden, n_classes)

    def embed(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """``phi(G)``: node embeddings ``[n, hidden]`` (after the last ReLU)."""
        h = x
        for conv, norm in zip(self.convs, self.norms, strict=True):
            if edge_weight is not None and self.accepts_edge_weight:
                h = conv(h, edge_index, edge_weight)
            else:
                h = conv(h, edge_index)
            h = F.relu(norm(h))
            h = F.dropout(h, p=self.dropout, training=self.training)
        return h

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """Logits ``[n, n_classes]``."""
        return self.head(self.embed(x, edge_index, edge_weight))


def train_source_gnn(graph: Any, *, n_classes: int | None = None, hidden: int = 64, n_layers: int = 2,
                     conv: str | ConvFactory = "gcn", epochs: int = 200, lr: float = 0.01,
                     weight_decay: float = 5e-4, dropout: float = 0.2, batch_norm: bool = False,
                     train_mask: Tensor | None = None, seed: int = 0) -> SourceGNN:
    """Fit a :class:`SourceGNN` on the labeled source graph by full-batch Adam on cross-entropy.

    Args:
        graph: PyG ``Data`` with ``x`` ``[n, d]``, ``edge_index`` ``[2, E]`` and ``y`` ``[n]`` (int64,
            ``-1`` = unlabeled). ``graph.train_mask`` is used when ``train_mask`` is None and it exists.
        n_classes: defaults to ``max(y) + 1``.
        train_mask: bool ``[n]``, the labeled nodes to fit on; default all nodes with ``y >= 0``.
        seed: seeds the weight initialisation and dropout.
    Returns the model in eval mode.
    """
    check_int("epochs", epochs, 1)
    check_number("lr", lr, low=0.0, low_open=True)
    check_number("weight_decay", weight_decay, low=0.0)
    check_int("seed", seed)
    if n_classes is not None:
        check_int("n_classes", n_classes, 2)
    x, edge_index = unpack_graph(graph, name="source graph")
    if train_mask is not None and (not isinstance(train_mask, Tensor) or train_mask.dtype != torch.bool
                                   or train_mask.shape != (x.shape[0],)):
        got = f"{getattr(train_mask, 'shape', type(train_mask).__name__)} {getattr(train_mask, 'dtype', '')}"
        raise ValueError(f"train_mask: expected a bool tensor [{x.shape[0]}], got {got}")
    y = getattr(graph, "y", None)
    if not isinstance(y, Tensor) or y.shape != (x.shape[0],) or y.is_floating_point():
        raise ValueError(f"source graph.y: expected an int64 tensor [{x.shape[0]}], got "
                         f"{None if y is None else tuple(getattr(y, 'shape', ()))}")
    y = y.long()
    if train_mask is None:
        train_mask = getattr(graph, "train_mask", None)
    if train_mask is None:
        train_mask = y >= 0
    train_mask = train_mask & (y >= 0)
    if int(train_mask.sum()) == 0:
        raise ValueError("source graph: no labeled training nodes (train_mask & y >= 0 is empty)")
    n_cls = int(y.max()) + 1 if n_classes is None else n_classes
    if int(y.max()) >= n_cls:
        raise ValueError(f"n_classes: labels go up to {int(y.max())}, so n_classes must be > that, got {n_cls}")
    if epochs < 1:
        raise ValueError(f"epochs: expected >= 1, got {epochs}")
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = SourceGNN(x.shape[1], n_cls, hidden=hidden, n_layers=n_layers, conv=conv, dropout=dropout,
                          batch_norm=batch_norm)
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        model.train()
        with TrainingGuard(model, opt, where="train_source_gnn", what="the source cross-entropy") as guard:
            for epoch in range(epochs):
                opt.zero_grad()
                loss = F.cross_entropy(model(x, edge_index)[train_mask], y[train_mask])
                guard.check_loss(loss, step=epoch)
                loss.backward()
                opt.step()
    finally:
        torch.random.set_rng_state(gen_state)
    return model.eval()
