"""What EMC is compared with: frozen source, Tent-style entropy minimisation, direct closed-form
adaptation (no memory, no state) and a port of GCAL's generative memory (Qiao et al., ICML 2025).

All share the interface of :class:`~neurips26.emc.EMC` used by :func:`~neurips26.emc.continual_eval`:
``adapt(graph) -> predictions [n]`` (label-free; reads only ``x`` and ``edge_index``) and
``predict(graph) -> predictions [n]`` (no adaptation).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.constraints import AnyOf, Choice, Int, Optional, Real, validate
from neurips26.constraints import Tensor as TensorOf
from neurips26.nn.parallel import DISTRIBUTED, DataParallel, data_parallel
from neurips26.nn.train import TrainingGuard

from .emc import EMC, Crystal
from .encoder import SourceGNN
from .graph import unpack_graph

__all__ = ["GCAL", "T3A", "DirectClosedForm", "RawEmbeddingMemory", "SourceOnly", "TentGraph",
           "information_maximization_loss"]


def _check_model(model: Any) -> SourceGNN:
    if not isinstance(model, nn.Module) or not hasattr(model, "embed") or not hasattr(model, "head"):
        raise TypeError(f"model: expected a source GNN module with .embed(x, edge_index) and .head "
                        f"(e.g. SourceGNN), got {type(model).__name__}")
    return model


class SourceOnly:
    """The frozen source model: no adaptation at all.

    Args:
        model: the source GNN (``model(x, edge_index) -> logits [n, C]``), not modified.
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = _check_model(model)

    @torch.no_grad()
    def predict(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Predicted classes ``[n]``."""
        x, ei = unpack_graph(graph, edge_index, in_dim=getattr(self.model, "in_dim", None))
        self.model.eval()
        return self.model(x, ei).argmax(1)

    def adapt(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Same as :meth:`predict` (the source model never changes)."""
        return self.predict(graph, edge_index)


@validate(logits=TensorOf("N C", dtype="float"), diversity_weight=Real(),
          teacher_logits=Optional(TensorOf("N C", dtype="float")))
def information_maximization_loss(logits: Tensor, diversity_weight: float = 0.0,
                                  teacher_logits: Tensor | None = None) -> Tensor:
    """Mean prediction entropy minus ``diversity_weight`` times the entropy of the mean prediction.

    .. math:: L = -\\frac1n\\sum_i \\sum_c q_{ic} \\log p_{ic} + \\beta \\sum_c \\bar p_c \\log \\bar p_c,
              \\quad \\bar p = \\frac1n \\sum_i p_i

    with ``q = softmax(teacher_logits)`` (default ``p``, i.e. Shannon entropy; Tent uses ``beta = 0``).
    """
    logp = logits.log_softmax(1)
    q = logp.exp() if teacher_logits is None else teacher_logits.softmax(1)
    loss = -(q * logp).sum(1).mean()
    if diversity_weight:
        p_bar = logp.exp().mean(0)
        loss = loss + diversity_weight * (p_bar * torch.log(p_bar + 1e-12)).sum()
    return loss


def _shard_rows(dp: DataParallel, n: int) -> tuple[Tensor | None, float | None]:
    """Under data parallelism, this rank's nodes ``rank::world`` of an ``n``-node graph and the weight
    ``world / n`` that makes the ranks' mean of their entropy sums the mean over all nodes; ``(None, None)`` in one
    process (the loss is then the unchanged :func:`information_maximization_loss`)."""
    if dp.world_size == 1:
        return None, None
    return torch.arange(n)[dp.rank::dp.world_size], dp.world_size / n


def _im_loss_rows(logits: Tensor, diversity_weight: float, rows: Tensor | None, scale: float | None) -> Tensor:
    """:func:`information_maximization_loss` with the entropy term restricted to ``rows`` (weighted by ``scale``);
    the diversity term, a statistic of the whole graph, is computed whole on every rank (each rank forwards the
    whole graph), so averaging the ranks' gradients gives the one-process gradient."""
    if rows is None:
        return information_maximization_loss(logits, diversity_weight)
    logp = logits.log_softmax(1)
    loss = -(logp.exp() * logp).sum(1)[rows].sum() * scale
    if diversity_weight:
        p_bar = logp.exp().mean(0)
        loss = loss + diversity_weight * (p_bar * torch.log(p_bar + 1e-12)).sum()
    return loss


def _use_batch_statistics(model: nn.Module) -> list[nn.Parameter]:
    """Tent's model configuration: every BatchNorm normalises with the statistics of the graph it sees
    (running statistics dropped) and its affine parameters are the ones adapted. Returns them."""
    params = []
    for m in model.modules():
        if isinstance(m, nn.BatchNorm1d):
            m.track_running_stats = False
            m.running_mean, m.running_var, m.num_batches_tracked = None, None, None
            params.extend(p for p in (m.weight, m.bias) if p is not None)
    return params


class TentGraph:
    """Tent (Wang et al., ICLR 2021) for graphs, continual: entropy minimisation on a copy of the source model.

    Args:
        model: the source GNN; copied, the original is untouched.
        params: ``"norm"`` (Tent proper: BatchNorm normalises with the target graph's statistics and only its
            affine parameters are adapted; needs ``batch_norm=True`` in the source model), ``"head"`` (the
            linear head only), ``"all"`` or ``"auto"`` (``"norm"`` when the model has BatchNorm, else ``"head"``).
        steps: gradient steps per domain (the whole graph is one batch); lr: Adam learning rate.
        diversity_weight: ``beta`` of :func:`information_maximization_loss` (0 = plain Tent).
        distributed: data parallelism under ``torchrun`` (:data:`neurips26.nn.parallel.DISTRIBUTED`; ``"auto"``:
            DDP when torchrun started more than one process, else one process, unchanged). Every rank forwards the
            whole target graph (the same on every rank) and takes the entropy of its nodes ``rank::world``
            (weighted to the all-node mean; the diversity term whole), so the averaged gradients are the
            one-process ones. ``"fsdp"`` shards the copied model (FSDP2, its weights gathered in ``forward``).
    Parameters carry over from domain to domain (continual Tent).
    """

    @validate(params=Choice("auto", "head", "norm", "all"), steps=Int(low=1), lr=Real(0.0, None, "neither"),
              diversity_weight=Real(), distributed=Choice(*DISTRIBUTED))
    def __init__(self, model: nn.Module, *, params: str = "auto", steps: int = 10, lr: float = 1e-3,
                 diversity_weight: float = 0.0, distributed: str = "auto") -> None:
        _check_model(model)
        steps, lr, diversity_weight = int(steps), float(lr), float(diversity_weight)
        has_norm = any(isinstance(m, nn.BatchNorm1d) for m in model.modules())
        if params == "auto":
            params = "norm" if has_norm else "head"
        if params == "norm" and not has_norm:
            raise ValueError("params='norm': the source model has no BatchNorm layers (train it with "
                             "batch_norm=True, or use params='head')")
        self.model = copy.deepcopy(model).eval()
        self.params, self.steps, self.lr, self.diversity_weight = params, steps, lr, diversity_weight
        if params == "head":
            trainable = list(self.model.head.parameters())
        elif params == "all":
            trainable = list(self.model.parameters())
        else:
            trainable = _use_batch_statistics(self.model)
        for p in self.model.parameters():
            p.requires_grad_(False)
        for p in trainable:
            p.requires_grad_(True)
        self._dp = data_parallel(self.model, self._loss, distributed=distributed)
        if self._dp.mode == "fsdp":  # FSDP2 replaced the parameters by sharded ones: the optimizer takes those
            trainable = [p for p in self.model.parameters() if p.requires_grad]
        self._optimizer = torch.optim.Adam(trainable, lr=lr)

    def adapt(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """``steps`` entropy-minimisation steps on the domain, then its predictions ``[n]``."""
        x, ei = unpack_graph(graph, edge_index, in_dim=self.model.in_dim, name="target graph")
        self.model.eval()  # dropout off; with params='norm' BatchNorm uses the graph's own statistics
        rows, scale = _shard_rows(self._dp, x.shape[0])
        with self._dp.guard(self.model, self._optimizer, where="TentGraph.adapt", what="the entropy loss") as guard:
            for step in range(self.steps):
                self._optimizer.zero_grad()
                loss = self._dp(x, ei, rows, scale)
                guard.check_loss(loss, step=step)
                loss.backward()
                self._optimizer.step()
        return self.predict(x, ei)

    def _loss(self, model: nn.Module, x: Tensor, ei: Tensor, rows: Tensor | None, scale: float | None) -> Tensor:
        return _im_loss_rows(model(x, ei), self.diversity_weight, rows, scale)

    @torch.no_grad()
    def predict(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        x, ei = unpack_graph(graph, edge_index, in_dim=self.model.in_dim)
        self.model.eval()
        return self.model(x, ei).argmax(1)


class T3A:
    r"""T3A (Iwasawa & Matsuo, NeurIPS 2021): training-free test-time classifier adjustment, continual.

    The classifier is replaced by class prototypes over a growing support set of (L2-normalised) embeddings
    from the frozen encoder. The supports start as the head's weight rows; every adapted node joins the
    support set of its predicted class, and each class keeps only its ``filter_k`` lowest-entropy supports.

    .. math:: \text{logits}(z) = \hat z^\top W, \qquad
              W_{:,c} = \operatorname{normalize}\Big(\sum_{s \in S_c} \hat s\Big), \quad \hat s = s / \lVert s\rVert

    Args:
        model: the source GNN (``.embed`` and a linear ``.head``); not modified.
        filter_k: supports kept per class (``-1`` keeps all); T3A's own grid is {1, 5, 20, 50, 100, -1}.
    Supports carry over from domain to domain.
    """

    @validate(filter_k=AnyOf(Int(low=1), Int(-1, -1)))  # -1 keeps all
    def __init__(self, model: nn.Module, *, filter_k: int = 20) -> None:
        self.model = _check_model(model)
        self.filter_k = filter_k
        weight = self.model.head.weight.detach()                    # [C, h]
        self.n_classes = int(weight.shape[0])
        self.supports_ = F.normalize(weight, dim=1)                  # [S, h]
        self.labels_ = torch.arange(self.n_classes)                 # [S]
        self.entropy_ = _entropy(self.model.head(weight))           # [S]

    def _prototypes(self) -> Tensor:
        onehot = F.one_hot(self.labels_, self.n_classes).to(self.supports_.dtype)   # [S, C]
        return F.normalize(self.supports_.T @ onehot, dim=0)                         # [h, C]

    @torch.no_grad()
    def _embed(self, x: Tensor, ei: Tensor) -> Tensor:
        self.model.eval()
        return self.model.embed(x, ei)

    @torch.no_grad()
    def adapt(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Add the domain's nodes to the supports (by the source head's prediction, as T3A), filter, and
        return the adjusted predictions ``[n]``."""
        x, ei = unpack_graph(graph, edge_index, in_dim=self.model.in_dim, name="target graph")
        z = self._embed(x, ei)
        logits = self.model.head(z)
        supports = torch.cat([self.supports_.to(z.device), F.normalize(z, dim=1)])
        labels = torch.cat([self.labels_.to(z.device), logits.argmax(1)])
        entropy = torch.cat([self.entropy_.to(z.device), _entropy(logits)])
        if self.filter_k > 0:
            keep = torch.cat([torch.nonzero(labels == c).flatten()[entropy[labels == c].argsort()[: self.filter_k]]
                              for c in range(self.n_classes)])
            supports, labels, entropy = supports[keep], labels[keep], entropy[keep]
        self.supports_, self.labels_, self.entropy_ = supports, labels, entropy
        return (F.normalize(z, dim=1) @ self._prototypes()).argmax(1)

    @torch.no_grad()
    def predict(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        x, ei = unpack_graph(graph, edge_index, in_dim=self.model.in_dim)
        z = self._embed(x, ei)
        return (F.normalize(z, dim=1) @ self._prototypes().to(z.device)).argmax(1)


def _entropy(logits: Tensor) -> Tensor:
    logp = logits.log_softmax(1)
    return -(logp.exp() * logp).sum(1)


class RawEmbeddingMemory(EMC):
    """Uncompressed memory: EMC's pipeline (state, alignment, pseudo-labels, ridge on the bank) but each domain
    stores *every* aligned node embedding, with its soft pseudo-label mass per class, instead of ``2r``
    crystal points per class. It asks whether crystallisation (compression to rank r) costs accuracy.

    Each (domain, class) keeps the same total ridge weight as one EMC crystal (``2r``), spread over the
    nodes in proportion to ``P[i, c]``; the source stores its labeled embeddings the same way. No budget
    (memory grows as ``n * C`` points per domain). Same arguments as :class:`~neurips26.emc.EMC`.
    """

    def __init__(self, encoder: Any, n_classes: int, *, rank: int = 8, gamma: float = 0.5, ridge: float = 0.3,
                 kappa: float = 5.0, min_mass: float | None = None) -> None:
        super().__init__(encoder, n_classes, rank=rank, gamma=gamma, ridge=ridge, kappa=kappa,
                         memory_budget=2 ** 62, min_mass=min_mass)

    def _raw(self, label: int, z: Tensor, weight: Tensor, domain: int) -> Crystal:
        mass = weight.sum()
        mu = (weight[:, None] * z).sum(0) / mass
        return Crystal(label=label, mean=mu, factor=z.new_zeros(z.shape[1], 0), points=z, weight=1.0,
                       domain=domain, point_weights=weight * (2 * self.rank) / mass)

    def _source_memory(self, z: Tensor, y: Tensor, keep: Tensor) -> list[Crystal]:
        return [self._raw(c, z[keep & (y == c)], z.new_ones(int((keep & (y == c)).sum())), 0)
                for c in range(self.n_classes)]

    def _domain_memory(self, za: Tensor, probs: Tensor, domain: int) -> list[Crystal]:
        min_mass = 2 * self.rank if self.min_mass is None else float(self.min_mass)
        return [self._raw(c, za, probs[:, c], domain) for c in range(self.n_classes)
                if float(probs[:, c].sum()) >= min_mass]


class DirectClosedForm(EMC):
    """Direct adaptation: EMC's closed form refit on the current domain only, no memory, no state.

    Pseudo-labels of domain ``t`` come from the classifier fitted on domain ``t-1``, so errors and
    forgetting accumulate; this is the "direct adaptation" of the paper's bound. Same arguments as
    :class:`~neurips26.emc.EMC` except ``align``/``keep_memory``/``gamma``.
    """

    def __init__(self, encoder: Any, n_classes: int, *, rank: int = 8, ridge: float = 0.3, kappa: float = 5.0,
                 min_mass: float | None = None) -> None:
        super().__init__(encoder, n_classes, rank=rank, gamma=1.0, ridge=ridge, kappa=kappa,
                         memory_budget=max(2048, 2 * rank * n_classes if isinstance(n_classes, int) else 0),
                         min_mass=min_mass, align="none", keep_memory=False)


# ----------------------------------------------------------------------------------------- GCAL port
class _PairwiseEdgeGenerator(nn.Module):
    """GCAL's edge generator: an MLP on the concatenated features of *all* ``m^2`` node pairs.

    ``A = sigmoid((S + S^T) / 2)``, ``S_ij = MLP([x_i, x_j])``; a Gumbel-softmax sample over each row
    (temperature 0.5, soft while training, hard at replay) thresholded at 0.8 selects the edges, whose
    weights are ``A_ij``. Memory is O(m^2 * hidden): the cost EMC avoids.
    """

    def __init__(self, dim: int, hidden: int = 128, n_layers: int = 3) -> None:
        super().__init__()
        dims = [2 * dim] + [hidden] * (n_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        self.norms = nn.ModuleList(nn.BatchNorm1d(b) for b in dims[1:])
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: Tensor, hard: bool = False) -> tuple[Tensor, Tensor, Tensor]:
        """Returns ``(edge_index [2, E], edge_weight [E], edge_prob [m*m])`` for node features ``[m, d]``."""
        m = x.shape[0]
        rows = torch.arange(m, device=x.device).repeat_interleave(m)     # [m^2]
        cols = torch.arange(m, device=x.device).repeat(m)                # [m^2]
        e = torch.cat([x[rows], x[cols]], dim=1)                          # [m^2, 2d]
        for layer, norm in zip(self.layers, self.norms, strict=True):
            e = F.relu(norm(layer(e)))
        s = self.out(e).reshape(m, m)
        prob = torch.sigmoid((s + s.T) / 2)                               # A, [m, m]
        sample = F.gumbel_softmax(prob, tau=0.5, hard=hard)              # row-wise, as in GCAL's code
        mask = sample.reshape(-1) > 0.8
        flat = prob.reshape(-1)
        return torch.stack([rows[mask], cols[mask]]), flat[mask], flat


class _MemoryVGAE(nn.Module):
    """GCAL's generative memory: 1-layer GCN (+BN) to ``[n, 2d]``, TopK pooling to ``m = ratio * n``
    nodes, split into ``(mu, logvar)`` ``[m, d]``; decoder = reparameterised features + edge generator."""

    def __init__(self, dim: int, ratio: float) -> None:
        super().__init__()
        from torch_geometric.nn import GCNConv, TopKPooling

        self.conv = GCNConv(dim, 2 * dim)
        self.norm = nn.BatchNorm1d(2 * dim)
        self.pool = TopKPooling(2 * dim, ratio=ratio)
        self.edges = _PairwiseEdgeGenerator(dim)
        self.dim = dim

    def encode(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        h = self.norm(self.conv(x, edge_index))
        h = self.pool(h, edge_index)[0]                                    # [m, 2d]
        return h[:, : self.dim], h[:, self.dim:]

    def decode(self, mu: Tensor, logvar: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        x = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)           # reparameterisation
        ei, ew, prob = self.edges(x)
        return x, ei, ew, prob


def _gradient_distance(g_real: Tensor, g_syn: Tensor) -> Tensor:
    """GCAL's per-layer gradient distance: sum over output units of ``1 - cos``; biases count 0."""
    if g_real.dim() == 1:
        return g_real.new_zeros(())
    a, b = g_real.T, g_syn.T
    if a.dim() > 2:
        a, b = a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)
    return (1 - (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1) + 1e-6)).sum()


class GCAL:
    """Port of GCAL's continual test-time adaptation with a generative memory (the paper's competitor).

    Per domain, for ``epochs`` epochs: (1) one Adam step of information maximisation on the target
    (``entropy - entropy_weight * diversity``) plus ``replay_weight`` times the same loss on a graph
    replayed from every stored memory; EMA teacher update (``ema``). (2) After ``warmup_epochs``,
    ``inner_loop`` steps training the VGAE memory by gradient matching (cosine distance between the
    model's IM-loss gradients on the real and the generated graph; second-order, ``create_graph=True``)
    plus ``vae_weight`` (Gaussian KL + Bernoulli KL of edge probabilities vs 0.1) plus ``edge_weight``
    times the squared distance of mean embeddings. At the last epoch ``(mu, logvar)`` of the domain is
    stored; the model is replaced by its EMA teacher. Defaults follow GCAL's code except ``epochs``:
    its default (1 epoch < 5 warm-up epochs) never trains or stores a memory; the fewest epochs that do
    are ``warmup_epochs + 1`` = 6, our default (GCAL's paper gives no per-domain epoch count).

    Args:
        model: the source GNN (copied).
        params: ``"all"`` (every parameter adapted, GCAL's default) or ``"norm"`` (only the BatchNorm affine
            parameters, the choice GCAL's ``configure_model`` offers; needs ``batch_norm=True``).
        syn_ratio: memory size ``m = ceil(syn_ratio * n)`` nodes per domain (TopK pooling ratio).
        seed: seeds the VGAE initialisation.
        distributed: data parallelism of the model update under ``torchrun``: ``"auto"`` (DDP when torchrun
            started more than one process, else one process, unchanged), ``"off"`` or ``"ddp"``. Every rank
            forwards the whole target graph with the same seeded stream (same dropout, Gumbel and
            reparameterisation draws), takes the entropy of its nodes ``rank::world`` (weighted to the all-node
            mean; the diversity and replay terms whole), and DDP averages the gradients; the memory (VGAE) step
            is the same computation on every rank. Not ``"fsdp"``: the memory step reaches the model's weights
            outside ``forward`` (``model.embed`` and ``torch.autograd.grad`` of the parameters), where FSDP2
            would hand it shards.
    """

    _LR = Real(0.0, None, "neither")
    _WEIGHT = Real(low=0.0)

    @validate(epochs=Int(low=1), params=Choice("all", "norm"), warmup_epochs=Int(low=0), inner_loop=Int(low=0),
              lr_model=_LR, wd_model=_WEIGHT, lr_mem=_LR, wd_mem=_WEIGHT, entropy_weight=_WEIGHT,
              replay_weight=_WEIGHT, vae_weight=_WEIGHT, edge_weight=_WEIGHT, ema=Real(0.0, 1.0, "left"),
              syn_ratio=Real(0.0, 1.0, "right"), seed=Int(), distributed=Choice("auto", "off", "ddp"))
    def __init__(self, model: nn.Module, *, epochs: int = 6, params: str = "all", warmup_epochs: int = 5,
                 inner_loop: int = 1,
                 lr_model: float = 0.01, wd_model: float = 1e-4, lr_mem: float = 0.01, wd_mem: float = 1e-4,
                 entropy_weight: float = 0.1, replay_weight: float = 0.1, vae_weight: float = 0.1,
                 edge_weight: float = 0.1, ema: float = 0.9, syn_ratio: float = 0.05, seed: int = 0,
                 distributed: str = "auto") -> None:
        _check_model(model)
        self.model = copy.deepcopy(model)
        norm = [p for m in self.model.modules() if isinstance(m, nn.BatchNorm1d) for p in m.parameters()]
        if params == "norm" and not norm:
            raise ValueError("params='norm': the source model has no BatchNorm layers (train it with batch_norm=True)")
        self.params = params
        self.epochs, self.warmup_epochs, self.inner_loop = epochs, warmup_epochs, inner_loop
        self.lr_mem, self.wd_mem = lr_mem, wd_mem
        self.entropy_weight, self.replay_weight = entropy_weight, replay_weight
        self.vae_weight, self.edge_weight, self.ema = vae_weight, edge_weight, ema
        trainable = list(self.model.parameters()) if params == "all" else norm
        for p in self.model.parameters():
            p.requires_grad_(params == "all")
        for p in trainable:
            p.requires_grad_(True)
        self._dp = data_parallel(self.model, self._adapt_loss, distributed=distributed)
        self._optimizer = torch.optim.Adam(trainable, lr=lr_model, weight_decay=wd_model)
        self.teacher = copy.deepcopy(self.model)
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            self.vgae = _MemoryVGAE(self.model.in_dim, syn_ratio)
            self._rng_state = torch.random.get_rng_state()  # GCAL's own stream: dropout, Gumbel, noise
        finally:
            torch.random.set_rng_state(state)
        self.memory_: list[tuple[Tensor, Tensor]] = []

    def _im(self, logits: Tensor) -> Tensor:
        return information_maximization_loss(logits, self.entropy_weight)

    def _set_train(self) -> None:
        # GCAL: model.train() but every BatchNorm in eval mode
        self.model.train()
        for m in self.model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.eval()

    @torch.no_grad()
    def _update_teacher(self) -> None:
        for t, s in zip(self.teacher.parameters(), self.model.parameters(), strict=True):
            t.mul_(self.ema).add_(s, alpha=1 - self.ema)
        for t, s in zip(self.teacher.buffers(), self.model.buffers(), strict=True):
            t.copy_(s)

    def _train_memory(self, x: Tensor, ei: Tensor, optimizer: torch.optim.Optimizer) -> None:
        self.model.eval()
        params = [p for p in self.model.parameters() if p.requires_grad]
        mu, logvar = self.vgae.encode(x, ei)
        x_syn, ei_syn, ew_syn, prob = self.vgae.decode(mu, logvar)
        g_real = [g.detach() for g in torch.autograd.grad(self._im(self.model(x, ei)), params)]
        g_syn = torch.autograd.grad(self._im(self.model(x_syn, ei_syn, ew_syn)), params, create_graph=True)
        match = sum(_gradient_distance(a, b) for a, b in zip(g_real, g_syn, strict=True))
        # KL(q(z)||N(0,I)) + KL(Bernoulli(A)||Bernoulli(0.1)), both summed as in GCAL
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        p = prob.clamp(1e-6, 1 - 1e-6)
        kl_edges = torch.sum(p * torch.log(p / 0.1) + (1 - p) * torch.log((1 - p) / 0.9))
        mmd = ((self.model.embed(x, ei).mean(0) - self.model.embed(x_syn, ei_syn, ew_syn).mean(0)) ** 2).mean()
        loss = match + self.vae_weight * (kl + kl_edges) + self.edge_weight * mmd
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    def adapt(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Adapt to one unlabeled domain (``epochs`` epochs) and return its predictions ``[n]``.

        Random draws (dropout, Gumbel noise, reparameterisation) come from the instance's own CPU RNG
        stream, so results depend on ``seed`` only, not on what ran before.
        """
        x, ei = unpack_graph(graph, edge_index, in_dim=self.model.in_dim, name="target graph")
        outer = torch.random.get_rng_state()
        torch.random.set_rng_state(self._rng_state)
        try:
            return self._adapt(x, ei)
        finally:
            self._rng_state = torch.random.get_rng_state()
            torch.random.set_rng_state(outer)

    def _adapt(self, x: Tensor, ei: Tensor) -> Tensor:
        self.vgae.train()
        mem_opt = torch.optim.Adam(self.vgae.parameters(), lr=self.lr_mem, weight_decay=self.wd_mem)
        with self._dp.guard(self.model, self._optimizer, where="GCAL.adapt", what="the adaptation loss") as guard:
            self._epochs(x, ei, mem_opt, guard)
        if self.epochs > self.warmup_epochs:
            with torch.no_grad():
                mu, logvar = self.vgae.encode(x, ei)
            self.memory_.append((mu.detach(), logvar.detach()))
        self.model.load_state_dict(self.teacher.state_dict())
        return self.predict(x, ei)

    def _adapt_loss(self, model: nn.Module, x: Tensor, ei: Tensor, rows: Tensor | None,
                    scale: float | None) -> Tensor:
        loss = _im_loss_rows(model(x, ei), self.entropy_weight, rows, scale)
        for mu, _logvar in self.memory_:
            # replay at the mean with hard edges; as in GCAL, the generator runs with autograd on
            ei_m, ew_m, _ = self.vgae.edges(mu, hard=True)
            loss = loss + self.replay_weight * self._im(model(mu, ei_m, ew_m))
        return loss

    def _epochs(self, x: Tensor, ei: Tensor, mem_opt: torch.optim.Optimizer, guard: TrainingGuard) -> None:
        rows, scale = _shard_rows(self._dp, x.shape[0])
        for epoch in range(self.epochs):
            self._set_train()
            loss = self._dp(x, ei, rows, scale)
            guard.check_loss(loss, step=epoch)
            self._optimizer.zero_grad()
            loss.backward()
            self._optimizer.step()
            self._update_teacher()
            if epoch >= self.warmup_epochs:
                for _ in range(self.inner_loop):
                    self._train_memory(x, ei, mem_opt)

    @torch.no_grad()
    def predict(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        x, ei = unpack_graph(graph, edge_index, in_dim=self.model.in_dim)
        self.model.eval()
        return self.model(x, ei).argmax(1)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the stored memories (``mu``, ``logvar``)."""
        return sum(t.numel() * t.element_size() for pair in self.memory_ for t in pair)
