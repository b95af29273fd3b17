"""EMC: Efficient Memory Crystallization for training-free continual test-time graph adaptation.

Everything beyond the abstract is our reconstruction (inferred): see the package README.

Per incoming unlabeled domain ``G_t`` (no gradient step anywhere):

1. embed with the frozen source encoder, ``Z_t = phi(G_t)`` ``[n, h]``;
2. evolve the state (a running covariate mean) ``s_t = (1 - gamma) s_{t-1} + gamma mean(Z_t)`` and align
   the domain to it, ``Z~_t = Z_t - mean(Z_t) + s_t``;
3. soft pseudo-labels from the current closed-form classifier, ``P_t = softmax(kappa g_{t-1}(Z~_t))``;
4. crystallise: per class ``c`` with enough pseudo-label mass, the closed-form crystal of the weighted
   moments of ``Z~_t`` (:func:`~neurips26.emc.crystal.crystallize`), ``2r`` points;
5. add the crystals to the memory bank (merging the oldest ones by moment averaging past the budget)
   and refit the ridge classifier ``g_t`` on the whole bank in closed form; predict ``argmax g_t(Z~_t)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .crystal import crystallize, ridge_fit, ridge_predict, weighted_moments
from .graph import unpack_graph

__all__ = ["EMC", "Crystal"]

Encoder = Callable[[Tensor, Tensor], Tensor]


@dataclass
class Crystal:
    """One class's memory from one domain (or a merge of several).

    Attributes:
        label: class index.
        mean: ``[h]`` class mean in the aligned embedding space.
        factor: ``[h, r]``, the rank-r covariance is ``factor @ factor.T``.
        points: ``[2r, h]`` the crystallised memory points.
        weight: how many domain-crystals it stands for (1 unless merged); its points' ridge weight.
        domain: index of the (newest) domain it came from; ``0`` = source.
    """

    label: int
    mean: Tensor
    factor: Tensor
    points: Tensor
    weight: float
    domain: int

    @property
    def cov(self) -> Tensor:
        return self.factor @ self.factor.T


def _resolve_encoder(encoder: Any) -> Encoder:
    if isinstance(encoder, nn.Module) and hasattr(encoder, "embed"):
        return encoder.embed
    if callable(encoder):
        return encoder
    raise TypeError(f"encoder: expected a callable (x, edge_index) -> [n, h] or a module with .embed, "
                    f"got {type(encoder).__name__}")


def _low_rank_factor(cov: Tensor, rank: int) -> Tensor:
    """``F`` ``[h, r]`` with ``F F^T`` the best rank-r PSD approximation of ``cov``."""
    evals, evecs = torch.linalg.eigh(0.5 * (cov + cov.T))
    return evecs[:, -rank:].flip(1) * evals[-rank:].flip(0).clamp_min(0.0).sqrt()[None, :]


class EMC:
    """Training-free continual test-time adaptation with crystallised, state-evolving memory.

    Args:
        encoder: the frozen source GNN encoder ``phi``: a callable ``(x [n, d], edge_index [2, E]) ->
            [n, h]`` or a module with ``.embed`` (e.g. :class:`~neurips26.emc.SourceGNN`). Any PyG
            convolution stack works; it is called under ``torch.no_grad`` in eval mode.
        n_classes: number of classes ``C``.
        rank: ``r``, principal directions kept per class crystal (``2r`` points each).
        gamma: state step size in ``(0, 1]``; 1 aligns each domain to itself (no memory of the state).
        ridge: ``lambda`` of the closed-form ridge classifier (on standardised features).
        kappa: pseudo-label temperature ``softmax(kappa * scores)``.
        memory_budget: maximum number of memory points in the bank; the oldest crystals of a class are
            merged (moment averaging) beyond it. Must hold at least the source crystals (``C * 2r``).
        min_mass: minimum pseudo-label mass a class needs in a domain to be crystallised; default ``2r``.
        align: ``"mean"`` (shift each domain's mean onto the state) or ``"none"``.
        keep_memory: accumulate crystals across domains (EMC). ``False`` keeps only the current domain's
            crystals: the "direct adaptation" baseline.
    """

    def __init__(self, encoder: Any, n_classes: int, *, rank: int = 8, gamma: float = 0.5, ridge: float = 0.3,
                 kappa: float = 5.0, memory_budget: int = 2048, min_mass: float | None = None,
                 align: str = "mean", keep_memory: bool = True) -> None:
        self.encoder = encoder
        self.n_classes = n_classes
        self.rank = rank
        self.gamma = gamma
        self.ridge = ridge
        self.kappa = kappa
        self.memory_budget = memory_budget
        self.min_mass = min_mass
        self.align = align
        self.keep_memory = keep_memory

    # ------------------------------------------------------------------ validation
    def _validate_params(self) -> None:
        if not isinstance(self.n_classes, int) or self.n_classes < 2:
            raise ValueError(f"n_classes: expected an integer >= 2, got {self.n_classes!r}")
        if not isinstance(self.rank, int) or self.rank < 1:
            raise ValueError(f"rank: expected an integer >= 1, got {self.rank!r}")
        if not 0.0 < float(self.gamma) <= 1.0:
            raise ValueError(f"gamma: expected a value in (0, 1], got {self.gamma!r}")
        if not float(self.ridge) > 0.0:
            raise ValueError(f"ridge: expected > 0, got {self.ridge!r}")
        if not float(self.kappa) > 0.0:
            raise ValueError(f"kappa: expected > 0, got {self.kappa!r}")
        need = self.n_classes * 2 * self.rank
        if not isinstance(self.memory_budget, int) or self.memory_budget < need:
            raise ValueError(f"memory_budget: expected an integer >= n_classes * 2 * rank = {need}, "
                             f"got {self.memory_budget!r}")
        if self.align not in ("mean", "none"):
            raise ValueError(f"align: expected 'mean' or 'none', got {self.align!r}")
        enc_classes = getattr(self.encoder, "n_classes", None)
        if isinstance(enc_classes, int) and enc_classes != self.n_classes:
            raise ValueError(f"n_classes: the source model predicts {enc_classes} classes, EMC was given "
                             f"{self.n_classes}")

    def _check_fitted(self) -> None:
        if not hasattr(self, "bank_"):
            raise RuntimeError("EMC: call fit_source(...) on the labeled source graph before adapt/predict")

    # ------------------------------------------------------------------ embedding
    @torch.no_grad()
    def _embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        module = self.encoder if isinstance(self.encoder, nn.Module) else None
        was_training = module.training if module is not None else False
        if module is not None:
            module.eval()
        try:
            z = _resolve_encoder(self.encoder)(x, edge_index)
        finally:
            if module is not None and was_training:
                module.train()
        if not isinstance(z, Tensor) or z.dim() != 2 or z.shape[0] != x.shape[0]:
            raise ValueError(f"encoder: expected embeddings [{x.shape[0]}, h], got "
                             f"{getattr(z, 'shape', type(z).__name__)}")
        return z.float()

    def _aligned(self, z: Tensor, state: Tensor) -> Tensor:
        # Z~ = Z - mean(Z) + s   (first-moment covariate alignment onto the state)
        if self.align == "none":
            return z
        return z - z.mean(0) + state

    # ------------------------------------------------------------------ memory
    def _make_crystal(self, label: int, mean: Tensor, cov: Tensor, weight: float, domain: int) -> Crystal:
        r = min(self.rank, mean.shape[0])
        cov = cov + self._eps * torch.eye(mean.shape[0], dtype=cov.dtype, device=cov.device)
        return Crystal(label=label, mean=mean, factor=_low_rank_factor(cov, r),
                       points=crystallize(mean, cov, r), weight=weight, domain=domain)

    def _n_points(self) -> int:
        return sum(c.points.shape[0] for c in self.bank_)

    def _merge_to_budget(self) -> None:
        """Merge the two oldest non-source crystals of the most crowded class until within budget.

        Mixture moments (weights a, b):  mu = (a mu1 + b mu2)/(a+b),
        Sigma = (a S1 + b S2)/(a+b) + ab/(a+b)^2 (mu1-mu2)(mu1-mu2)^T, then re-crystallised at rank r.
        """
        while self._n_points() > self.memory_budget:
            counts: dict[int, list[int]] = {}
            for i, c in enumerate(self.bank_):
                if c.domain > 0:
                    counts.setdefault(c.label, []).append(i)
            mergeable = {k: v for k, v in counts.items() if len(v) >= 2}
            if not mergeable:
                return
            label = max(mergeable, key=lambda k: len(mergeable[k]))
            i, j = mergeable[label][:2]
            c1, c2 = self.bank_[i], self.bank_[j]
            a, b = c1.weight, c2.weight
            mu = (a * c1.mean + b * c2.mean) / (a + b)
            d = (c1.mean - c2.mean)[:, None]
            cov = (a * c1.cov + b * c2.cov) / (a + b) + (a * b / (a + b) ** 2) * (d @ d.T)
            merged = self._make_crystal(label, mu, cov, a + b, max(c1.domain, c2.domain))
            self.bank_ = [c for k, c in enumerate(self.bank_) if k not in (i, j)]
            self.bank_.insert(min(i, j), merged)

    def _refit(self) -> None:
        # g_t: W = (Z^T D Z + lambda I)^{-1} Z^T D Y on the bank points (standardised, intercept)
        points = torch.cat([c.points for c in self.bank_])
        targets = torch.zeros(points.shape[0], self.n_classes, device=points.device)
        weights = torch.empty(points.shape[0], device=points.device)
        row = 0
        for c in self.bank_:
            k = c.points.shape[0]
            targets[row:row + k, c.label] = 1.0
            weights[row:row + k] = c.weight
            row += k
        self.classifier_ = ridge_fit(points, targets, float(self.ridge), weights)

    # ------------------------------------------------------------------ public API
    def fit_source(self, graph: Any, edge_index: Tensor | None = None, *, y: Tensor | None = None,
                   mask: Tensor | None = None) -> EMC:
        """Build the source crystals from the labeled source graph (the only place labels are read).

        Args:
            graph: PyG ``Data`` with ``x``, ``edge_index``, ``y`` (and optionally ``train_mask``), or ``x``.
            edge_index: with a tensor ``graph``.
            y: ``[n]`` int labels (``-1`` = unlabeled); default ``graph.y``.
            mask: bool ``[n]``, which labeled nodes to use; default ``graph.train_mask`` or all labeled.
        """
        self._validate_params()
        x, ei = unpack_graph(graph, edge_index, name="source graph")
        if y is None:
            y = getattr(graph, "y", None)
        if not isinstance(y, Tensor) or y.shape != (x.shape[0],):
            raise ValueError(f"y: expected an integer tensor [{x.shape[0]}] of source labels, got "
                             f"{getattr(y, 'shape', type(y).__name__)}")
        y = y.long()
        if int(y.max()) >= self.n_classes:
            raise ValueError(f"y: labels go up to {int(y.max())} but n_classes={self.n_classes} "
                             f"(class count mismatch)")
        if mask is None and not isinstance(graph, Tensor):
            mask = getattr(graph, "train_mask", None)
        keep = (y >= 0) if mask is None else (mask.bool() & (y >= 0))
        self.in_dim_ = int(x.shape[1])
        z = self._embed(x, ei)
        self._eps = 1e-4 * float(z.var(0).mean().clamp_min(1e-12))
        self.state_ = z.mean(0)
        self.bank_: list[Crystal] = []
        for c in range(self.n_classes):
            zc = z[keep & (y == c)]
            if zc.shape[0] == 0:
                raise ValueError(f"y: class {c} has no labeled source node; every class needs one")
            mu, cov, _ = weighted_moments(zc)
            self.bank_.append(self._make_crystal(c, mu, cov, 1.0, 0))
        self._source_bank = list(self.bank_)
        self.n_domains_ = 0
        self._refit()
        return self

    @torch.no_grad()
    def adapt(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Adapt to one new unlabeled domain and return its predicted classes ``[n]`` (int64).

        Reads only ``x`` and ``edge_index``. Cost: one encoder pass, ``C`` eigendecompositions of
        ``h x h`` and one ``h x h`` solve.
        """
        self._check_fitted()
        x, ei = unpack_graph(graph, edge_index, in_dim=self.in_dim_, name="target graph")
        z = self._embed(x, ei)
        self.n_domains_ += 1
        # s_t = (1 - gamma) s_{t-1} + gamma mean(Z_t)
        self.state_ = (1.0 - self.gamma) * self.state_ + self.gamma * z.mean(0)
        za = self._aligned(z, self.state_)
        # P_t = softmax(kappa g_{t-1}(Z~_t))   [n, C]
        probs = torch.softmax(self.kappa * ridge_predict(za, self.classifier_), dim=1)
        min_mass = 2 * self.rank if self.min_mass is None else float(self.min_mass)
        new: list[Crystal] = []
        for c in range(self.n_classes):
            w = probs[:, c]
            if float(w.sum()) < min_mass:      # too little evidence: keep the class's older crystals
                continue
            mu, cov, _ = weighted_moments(za, w)
            new.append(self._make_crystal(c, mu, cov, 1.0, self.n_domains_))
        if self.keep_memory:
            self.bank_.extend(new)
            self._merge_to_budget()
        else:  # direct adaptation: only the current domain (classes without evidence keep the last fit)
            labels = {c.label for c in new}
            self.bank_ = new + [c for c in self.bank_ if c.label not in labels]
        self._refit()
        return ridge_predict(za, self.classifier_).argmax(1)

    @torch.no_grad()
    def decision_function(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Classifier scores ``[n, C]`` for a graph, aligned to the current state (no adaptation)."""
        self._check_fitted()
        x, ei = unpack_graph(graph, edge_index, in_dim=self.in_dim_, name="graph")
        return ridge_predict(self._aligned(self._embed(x, ei), self.state_), self.classifier_)

    def predict(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Predicted classes ``[n]`` with the current memory, without adapting to the graph."""
        return self.decision_function(graph, edge_index).argmax(1)

    @property
    def memory_points(self) -> int:
        """Number of points currently in the memory bank."""
        self._check_fitted()
        return self._n_points()
