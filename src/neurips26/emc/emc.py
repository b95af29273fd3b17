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

import copy
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from neurips26.constraints import Bool, Choice, Instance, Int, Optional, Real, check_arguments
from neurips26.constraints import Callable as CallableC
from neurips26.constraints import Tensor as TensorOf

from .crystal import crystallize, ridge_fit, ridge_predict, weighted_moments
from .graph import unpack_graph
from .scale import embed_in_batches

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
        point_weights: optional ``[k]`` per-point ridge weights replacing ``weight`` (the raw-embedding
            memory baseline stores soft pseudo-label masses); ``None`` for crystals.
    """

    label: int
    mean: Tensor
    factor: Tensor
    points: Tensor
    weight: float
    domain: int
    point_weights: Tensor | None = None

    @property
    def cov(self) -> Tensor:
        return self.factor @ self.factor.T


def _resolve_encoder(encoder: Any) -> Encoder:
    """``encoder.embed`` of a module that has one, else the callable ``(x, edge_index) -> [n, h]`` itself."""
    check_arguments("EMC", {"encoder": CallableC()}, {"encoder": encoder})
    if isinstance(encoder, nn.Module) and hasattr(encoder, "embed"):
        return encoder.embed
    return encoder


def _accepts_edge_weight(encoder: Any, fn: Callable) -> bool:
    """Whether the encoder uses a third ``edge_weight`` argument (SourceGNN says so itself)."""
    flag = getattr(encoder, "accepts_edge_weight", None)
    if isinstance(flag, bool):
        return flag
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "edge_weight" in params or sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                          for p in params.values()) >= 3


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
        batch_size: embed graphs larger than this many nodes in seed batches of this size
            (:func:`~neurips26.emc.embed_in_batches`, PyG ``NeighborLoader`` when available); None = one pass.
        num_hops: neighbourhood depth of a batch; default ``n_layers + 1`` of a :class:`SourceGNN` (exact for
            GCN); required with ``batch_size`` for other encoders.
    """

    def __init__(self, encoder: Any, n_classes: int, *, rank: int = 8, gamma: float = 0.5, ridge: float = 0.3,
                 kappa: float = 5.0, memory_budget: int = 2048, min_mass: float | None = None,
                 align: str = "mean", keep_memory: bool = True, batch_size: int | None = None,
                 num_hops: int | None = None) -> None:
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
        self.batch_size = batch_size
        self.num_hops = num_hops

    # ------------------------------------------------------------------ validation
    #: the hyperparameters' constraints, checked (as scikit-learn's) when fitting and adapting, not in __init__
    _parameter_constraints = {
        "n_classes": Int(low=2), "rank": Int(low=1), "gamma": Real(0.0, 1.0, "right"),
        "ridge": Real(0.0, None, "neither"), "kappa": Real(0.0, None, "neither"), "min_mass": Optional(Real(low=0.0)),
        "keep_memory": Bool(), "align": Choice("mean", "none"), "batch_size": Optional(Int(low=1)),
        "num_hops": Optional(Int(low=1)),
    }

    def _validate_params(self) -> None:
        where = type(self).__name__
        check_arguments(where, self._parameter_constraints, vars(self))
        # the source crystals (n_classes * 2r points) must fit in the memory bank
        check_arguments(where, {"memory_budget": Int(low=self.n_classes * 2 * self.rank)}, vars(self))
        if self.batch_size is not None and self.num_hops is None and not hasattr(self.encoder, "convs"):
            raise ValueError("num_hops: required with batch_size for an encoder other than SourceGNN (the "
                             "number of message-passing layers, + 1 for GCN-style degree normalisation)")
        enc_classes = getattr(self.encoder, "n_classes", None)
        if isinstance(enc_classes, int) and enc_classes != self.n_classes:
            raise ValueError(f"n_classes: the source model predicts {enc_classes} classes, EMC was given "
                             f"{self.n_classes}")

    def _check_fitted(self) -> None:
        if not hasattr(self, "bank_"):
            raise RuntimeError("EMC: call fit_source(...) on the labeled source graph before adapt/predict")

    # ------------------------------------------------------------------ embedding
    @torch.no_grad()
    def _embed(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None,
               name: str = "graph") -> Tensor:
        fn = _resolve_encoder(self.encoder)
        if edge_weight is not None and not _accepts_edge_weight(self.encoder, fn):
            raise ValueError(f"{name}.edge_weight: the encoder takes (x, edge_index) only, so the weights would "
                             "be ignored; use an encoder that accepts edge_weight (SourceGNN with a gcn/graph "
                             "conv) or drop edge_weight/edge_attr")
        module = self.encoder if isinstance(self.encoder, nn.Module) else None
        was_training = module.training if module is not None else False
        if module is not None:
            module.eval()
        try:
            if self.batch_size is not None and x.shape[0] > self.batch_size:
                hops = self.num_hops if self.num_hops is not None else len(self.encoder.convs) + 1
                z = embed_in_batches(fn, x, edge_index, edge_weight=edge_weight, batch_size=self.batch_size,
                                     num_hops=hops)
            else:
                z = fn(x, edge_index) if edge_weight is None else fn(x, edge_index, edge_weight)
        finally:
            if module is not None and was_training:
                module.train()
        # one embedding per node (finiteness below, with a hint)
        check_arguments("EMC", {"encoder output": TensorOf(f"{x.shape[0]} _", finite=False)}, {"encoder output": z})
        z = z.float()
        if not bool(torch.isfinite(z).all()):
            raise ValueError(f"{name}.x: the encoder's embeddings are not finite (features too large, e.g. "
                             f"|x| up to {float(x.abs().max()):.3g}); rescale the features")
        return z

    def _aligned(self, z: Tensor, state: Tensor) -> Tensor:
        # Z~ = Z - mean(Z) + s   (first-moment covariate alignment onto the state)
        if self.align == "none":
            return z
        return z - z.mean(0) + state

    # ------------------------------------------------------------------ memory
    def _make_crystal(self, label: int, mean: Tensor, cov: Tensor, weight: float, domain: int) -> Crystal:
        if not (bool(torch.isfinite(mean).all()) and bool(torch.isfinite(cov).all())):
            raise ValueError("graph.x: the class moments of the embeddings overflow (features too large); "
                             "rescale the features")
        r = min(self.rank, mean.shape[0])
        cov = cov + self._eps * torch.eye(mean.shape[0], dtype=cov.dtype, device=cov.device)
        return Crystal(label=label, mean=mean, factor=_low_rank_factor(cov, r),
                       points=crystallize(mean, cov, r), weight=weight, domain=domain)

    def _source_memory(self, z: Tensor, y: Tensor, keep: Tensor) -> list[Crystal]:
        """One crystal per class from the labeled source embeddings."""
        bank = []
        for c in range(self.n_classes):
            mu, cov, _ = weighted_moments(z[keep & (y == c)])
            bank.append(self._make_crystal(c, mu, cov, 1.0, 0))
        return bank

    def _domain_memory(self, za: Tensor, probs: Tensor, domain: int) -> list[Crystal]:
        """The crystals of one target domain: per class with pseudo-label mass >= ``min_mass``, the
        closed-form crystal of its soft-weighted moments (classes with less keep their older crystals)."""
        min_mass = 2 * self.rank if self.min_mass is None else float(self.min_mass)
        crystals = []
        for c in range(self.n_classes):
            weight = probs[:, c]
            if float(weight.sum()) < min_mass:
                continue
            mu, cov, _ = weighted_moments(za, weight)
            crystals.append(self._make_crystal(c, mu, cov, 1.0, domain))
        return crystals

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
            weights[row:row + k] = c.weight if c.point_weights is None else c.point_weights
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
        enc_dim = getattr(self.encoder, "in_dim", None)
        x, ei, w = unpack_graph(graph, edge_index, name="source graph", return_weight=True,
                                in_dim=enc_dim if isinstance(enc_dim, int) else None)
        if y is None:
            y = getattr(graph, "y", None)
        if mask is None and not isinstance(graph, Tensor):
            mask = getattr(graph, "train_mask", None)
        check_arguments("EMC.fit_source", {"x": TensorOf("N _", finite=False), "y": TensorOf("N", dtype="integer"),
                                           "mask": Optional(TensorOf("N"))}, {"x": x, "y": y, "mask": mask})
        y = y.long()
        if int(y.max()) >= self.n_classes:
            raise ValueError(f"y: labels go up to {int(y.max())} but n_classes={self.n_classes} "
                             f"(class count mismatch)")
        keep = (y >= 0) if mask is None else (mask.bool() & (y >= 0))
        for c in range(self.n_classes):
            if not bool((keep & (y == c)).any()):
                raise ValueError(f"y: class {c} has no labeled source node; every class needs one")
        z = self._embed(x, ei, w, name="source graph")
        # -- everything below works on a fresh EMC state and is committed at the end --
        new = copy.copy(self)
        new._eps = 1e-4 * float(z.var(0).mean().clamp_min(1e-12))
        new.state_ = z.mean(0)
        bank = new._source_memory(z, y, keep)
        new.bank_ = bank
        new._refit()
        self._commit(new, in_dim_=int(x.shape[1]), _source_bank=list(bank), n_domains_=0)
        return self

    def _commit(self, new: EMC, **extra: Any) -> None:
        """Take the learned state of ``new`` (a shallow copy that did the work) in one step."""
        for key in ("_eps", "state_", "bank_", "classifier_"):
            setattr(self, key, getattr(new, key))
        for key, value in extra.items():
            setattr(self, key, value)

    @torch.no_grad()
    def adapt(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Adapt to one new unlabeled domain and return its predicted classes ``[n]`` (int64).

        Reads only ``x`` and ``edge_index``. Cost: one encoder pass, ``C`` eigendecompositions of
        ``h x h`` and one ``h x h`` solve.
        """
        self._check_fitted()
        self._validate_params()
        x, ei, w = unpack_graph(graph, edge_index, in_dim=self.in_dim_, name="target graph", return_weight=True)
        z = self._embed(x, ei, w, name="target graph")
        # work on a shallow copy (bank_ is rebound, never mutated in place); commit only when all succeeded,
        # so a failure midway (e.g. a singular solve) leaves the memory and the state as they were
        try:
            new, domain, pred = self._adapt_on_copy(z)
        except torch.linalg.LinAlgError as err:
            raise ValueError(f"target graph.x: the adaptation solve failed numerically ({err}); the features are "
                             "degenerate or too large: rescale them") from err
        self._commit(new, n_domains_=domain)
        return pred

    def _adapt_on_copy(self, z: Tensor) -> tuple[EMC, int, Tensor]:
        new = copy.copy(self)
        new.bank_ = list(self.bank_)
        domain = self.n_domains_ + 1
        # s_t = (1 - gamma) s_{t-1} + gamma mean(Z_t)
        new.state_ = (1.0 - self.gamma) * self.state_ + self.gamma * z.mean(0)
        za = self._aligned(z, new.state_)
        # P_t = softmax(kappa g_{t-1}(Z~_t))   [n, C]
        probs = torch.softmax(self.kappa * ridge_predict(za, self.classifier_), dim=1)
        crystals = new._domain_memory(za, probs, domain)
        if self.keep_memory:
            new.bank_.extend(crystals)
            new._merge_to_budget()
        else:  # direct adaptation: only the current domain (classes without evidence keep the last fit)
            labels = {c.label for c in crystals}
            new.bank_ = crystals + [c for c in new.bank_ if c.label not in labels]
        new._refit()
        return new, domain, ridge_predict(za, new.classifier_).argmax(1)

    @torch.no_grad()
    def decision_function(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Classifier scores ``[n, C]`` for a graph, aligned to the current state (no adaptation)."""
        self._check_fitted()
        x, ei, w = unpack_graph(graph, edge_index, in_dim=self.in_dim_, name="graph", return_weight=True)
        return ridge_predict(self._aligned(self._embed(x, ei, w), self.state_), self.classifier_)

    def predict(self, graph: Any, edge_index: Tensor | None = None) -> Tensor:
        """Predicted classes ``[n]`` with the current memory, without adapting to the graph."""
        return self.decision_function(graph, edge_index).argmax(1)

    # ------------------------------------------------------------------ saving and devices
    _FORMAT = 1

    def state_dict(self) -> dict[str, Any]:
        """The learned state as tensors and plain values (``torch.save``-able, ``weights_only=True``-loadable):
        the evolving state, the memory bank, the source crystals and the classifier. The encoder is not
        included: save it with its own ``state_dict``."""
        self._check_fitted()

        def crystals(bank: list[Crystal]) -> list[dict[str, Any]]:
            return [{"label": c.label, "mean": c.mean, "factor": c.factor, "points": c.points,
                     "weight": float(c.weight), "domain": int(c.domain),
                     **({} if c.point_weights is None else {"point_weights": c.point_weights})} for c in bank]

        return {"format": self._FORMAT, "n_classes": self.n_classes, "rank": self.rank, "in_dim": self.in_dim_,
                "n_domains": self.n_domains_, "eps": self._eps, "state": self.state_,
                "bank": crystals(self.bank_), "source_bank": crystals(self._source_bank),
                "classifier": list(self.classifier_)}

    def load_state_dict(self, state: dict[str, Any]) -> EMC:
        """Restore what :meth:`state_dict` returned (checked first: format, class count, rank, shapes)."""
        where = "EMC.load_state_dict"
        check_arguments(where, {"state": Instance(dict, "dict (an EMC state_dict)")}, {"state": state})
        check_arguments(where, {"state['format']": Choice(self._FORMAT)}, {"state['format']": state.get("format")})
        self._validate_params()
        # the saved class count and rank must be this EMC's
        check_arguments(where, {f"state[{key!r}]": Int(mine, mine) for key, mine in
                                (("n_classes", self.n_classes), ("rank", self.rank))},
                        {f"state[{key!r}]": state.get(key) for key in ("n_classes", "rank")})
        try:
            h = int(state["state"].shape[0])
            bank = [Crystal(**c) for c in state["bank"]]
            source = [Crystal(**c) for c in state["source_bank"]]
            classifier = tuple(state["classifier"])
        except (KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"state: missing or malformed entry ({err})") from err
        if any(c.mean.shape != (h,) for c in bank + source) or len(classifier) != 4:
            raise ValueError("state: crystal or classifier shapes do not match the state dimension")
        self.in_dim_, self.n_domains_, self._eps = int(state["in_dim"]), int(state["n_domains"]), float(state["eps"])
        self.state_, self.bank_, self._source_bank, self.classifier_ = state["state"], bank, source, classifier
        return self

    def to(self, device: Any) -> EMC:
        """Move the learned state (and the encoder, when it is a module) to ``device``; returns ``self``."""
        device = torch.device(device)
        if isinstance(self.encoder, nn.Module):
            self.encoder.to(device)
        if hasattr(self, "bank_"):
            def move(c: Crystal) -> Crystal:
                return Crystal(c.label, c.mean.to(device), c.factor.to(device), c.points.to(device), c.weight,
                               c.domain, None if c.point_weights is None else c.point_weights.to(device))

            self.state_ = self.state_.to(device)
            self.bank_ = [move(c) for c in self.bank_]
            self._source_bank = [move(c) for c in self._source_bank]
            self.classifier_ = tuple(t.to(device) for t in self.classifier_)
        return self

    @property
    def device(self) -> torch.device:
        """Where the learned state lives (CPU before ``fit_source``)."""
        return self.state_.device if hasattr(self, "state_") else torch.device("cpu")

    @property
    def memory_points(self) -> int:
        """Number of points currently in the memory bank."""
        self._check_fitted()
        return self._n_points()
