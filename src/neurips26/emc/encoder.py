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

from neurips26.constraints import AnyOf, Choice, Int, Optional, Real, check_arguments, validate
from neurips26.constraints import Callable as CallableC
from neurips26.constraints import Tensor as TensorOf
from neurips26.nn.parallel import DISTRIBUTED, data_parallel

from .graph import unpack_graph

__all__ = ["SourceGNN", "train_source_gnn"]

ConvFactory = Callable[[int, int], nn.Module]


#: the named convolutions of :class:`SourceGNN` (or a factory ``(in_dim, out_dim) -> module``)
CONVS = ("gcn", "sage", "gat", "gin")
_CONV = AnyOf(Choice(*CONVS), CallableC())


def _conv_factory(conv: str | ConvFactory) -> tuple[ConvFactory, bool]:
    """(factory, accepts_edge_weight) for a named PyG convolution or a user factory (checked by the caller)."""
    from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

    if callable(conv):
        return conv, False
    table: dict[str, tuple[ConvFactory, bool]] = {
        "gcn": (lambda i, o: GCNConv(i, o, cached=False), True),
        "sage": (lambda i, o: SAGEConv(i, o), False),
        "gat": (lambda i, o: GATConv(i, o, heads=1), False),
        "gin": (lambda i, o: GINConv(nn.Sequential(nn.Linear(i, o), nn.ReLU(), nn.Linear(o, o))), False),
    }
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

    @validate(in_dim=Int(low=1), n_classes=Int(low=2), hidden=Int(low=1), n_layers=Int(low=1), conv=_CONV,
              dropout=Real(0.0, 1.0, "left"))
    def __init__(self, in_dim: int, n_classes: int, *, hidden: int = 64, n_layers: int = 2,
                 conv: str | ConvFactory = "gcn", dropout: float = 0.2, batch_norm: bool = False) -> None:
        super().__init__()
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


def _source_loss(model: nn.Module, x: Tensor, edge_index: Tensor, y: Tensor, rows: Tensor,
                 scale: float | None) -> Tensor:
    """Cross-entropy of the labelled ``rows``: their mean (one process), or under data parallelism this rank's
    share of the sum times ``scale = world / n_labelled``, so the mean over ranks is the mean over all rows."""
    logits = model(x, edge_index)
    if scale is None:
        return F.cross_entropy(logits[rows], y[rows])
    return F.cross_entropy(logits[rows], y[rows], reduction="sum") * scale


@validate(conv=_CONV, epochs=Int(low=1), lr=Real(0.0, None, "neither"), weight_decay=Real(low=0.0),
          n_classes=Optional(Int(low=2)), seed=Int(), distributed=Choice(*DISTRIBUTED))
def train_source_gnn(graph: Any, *, n_classes: int | None = None, hidden: int = 64, n_layers: int = 2,
                     conv: str | ConvFactory = "gcn", epochs: int = 200, lr: float = 0.01,
                     weight_decay: float = 5e-4, dropout: float = 0.2, batch_norm: bool = False,
                     train_mask: Tensor | None = None, seed: int = 0, distributed: str = "auto") -> SourceGNN:
    """Fit a :class:`SourceGNN` on the labeled source graph by full-batch Adam on cross-entropy.

    Args:
        graph: PyG ``Data`` with ``x`` ``[n, d]``, ``edge_index`` ``[2, E]`` and ``y`` ``[n]`` (int64,
            ``-1`` = unlabeled). ``graph.train_mask`` is used when ``train_mask`` is None and it exists.
        n_classes: defaults to ``max(y) + 1``.
        train_mask: bool ``[n]``, the labeled nodes to fit on; default all nodes with ``y >= 0``.
        seed: seeds the weight initialisation and dropout.
        distributed: data parallelism under ``torchrun`` (:data:`neurips26.nn.parallel.DISTRIBUTED`):
            ``"auto"`` (DDP when torchrun started more than one process, else one process, unchanged), ``"off"``,
            ``"ddp"`` or ``"fsdp"``. Every rank runs the full-graph forward (message passing needs the whole
            graph; the same seed gives every rank the same weights and dropout masks) and takes the
            cross-entropy of its share ``rank::world`` of the labelled nodes, weighted so that the ranks' mean
            is the one-process mean for any number of labelled nodes; the gradients are averaged by DDP (or
            reduce-scattered by FSDP2, which returns a sharded model: gather it with
            :func:`neurips26.nn.train.full_state_dict`). The forward is not divided, so this keeps the trainer
            correct inside a torchrun job rather than making it faster.
    Returns the model in eval mode.
    """
    x, edge_index = unpack_graph(graph, name="source graph")
    y = getattr(graph, "y", None)
    check_arguments("train_source_gnn", {"x": TensorOf("N _", finite=False),
                                         "train_mask": Optional(TensorOf("N", dtype=torch.bool)),
                                         "source graph.y": TensorOf("N", dtype="integer")},
                    {"x": x, "train_mask": train_mask, "source graph.y": y})
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
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = SourceGNN(x.shape[1], n_cls, hidden=hidden, n_layers=n_layers, conv=conv, dropout=dropout,
                          batch_norm=batch_norm)
        dp = data_parallel(model, _source_loss, distributed=distributed)  # before the optimizer (FSDP)
        rows, scale = train_mask, None
        if dp.world_size > 1:  # this rank's labelled nodes; every rank drew the same graph and weights
            labelled = train_mask.nonzero().flatten()
            rows, scale = labelled[dp.rank::dp.world_size], dp.world_size / labelled.numel()
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        model.train()
        with dp.guard(model, opt, where="train_source_gnn", what="the source cross-entropy") as guard:
            for epoch in range(epochs):
                opt.zero_grad()
                loss = dp(x, edge_index, y, rows, scale)
                guard.check_loss(loss, step=epoch)
                loss.backward()
                opt.step()
    finally:
        torch.random.set_rng_state(gen_state)
    return model.eval()
