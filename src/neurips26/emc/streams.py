"""Seeded streams of graph domains under continual covariate shift (element 0 is the labeled source).

* :func:`csbm_stream`: contextual stochastic block model. Labels ``y`` balanced over ``C`` classes;
  edges with probability ``p_in`` inside a class and ``p_out`` across; features
  ``x = R_t mu_y + b_t + N(0, I)`` with a random-walk offset ``b_t`` (step ``drift``) and a slowly
  accumulating rotation ``R_t`` (``R_t = R_{t-1} expm(rotation_rate * A_t)``, ``A_t`` a random unit
  skew-symmetric matrix). Optional structure drift moves ``p_in`` towards ``p_out``.
* :func:`planetoid_shift_stream`: Cora / CiteSeer cut into ``T + 1`` connected-ish node blocks (BFS
  order), block ``t`` gets feature dropout ``max_dropout * t / T`` and an additive random-walk drift
  on a random feature subspace.
* :func:`twitch_stream`: the real shift of GCAL's Twitch protocol (one graph per language, DE first), read
  through PyG's ``Twitch`` dataset; it downloads only with ``download=True`` (the check never downloads:
  the other real streams the spec names, Facebook-100, ogbn-arxiv by year and Elliptic, have no loader here).
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch
from torch_geometric.data import Data

from neurips26.constraints import Bool, Choice, Instance, Int, Real, check_arguments, validate

__all__ = ["csbm_stream", "planetoid_shift_stream", "twitch_stream"]

TWITCH_LANGUAGES = ("DE", "EN", "ES", "FR", "PT", "RU")
_LANGUAGE = Choice(*TWITCH_LANGUAGES)
_PROBABILITY = Real(0.0, 1.0)
_FRACTION = Real(0.0, 1.0, "neither")


def _sbm_edges(y: np.ndarray, p_in: float, p_out: float, rng: np.random.Generator) -> np.ndarray:
    """Undirected SBM edges as ``[2, 2E]`` (both directions), sampled block by block in O(E) memory."""
    classes = np.unique(y)
    members = [np.flatnonzero(y == c) for c in classes]
    rows, cols = [], []
    for a, ia in enumerate(members):
        for b, ib in enumerate(members):
            if b < a:
                continue
            p = p_in if a == b else p_out
            n_pairs = len(ia) * (len(ia) - 1) // 2 if a == b else len(ia) * len(ib)
            k = rng.binomial(n_pairs, p) if n_pairs > 0 else 0
            if k == 0:
                continue
            # sample k pairs uniformly (with replacement, then dedupe: p small so collisions are rare)
            if a == b:
                u = rng.integers(0, len(ia), size=(2 * k + 8, 2))
                u = u[u[:, 0] != u[:, 1]][:k]
                s, t = ia[np.minimum(u[:, 0], u[:, 1])], ia[np.maximum(u[:, 0], u[:, 1])]
            else:
                s, t = ia[rng.integers(0, len(ia), size=k)], ib[rng.integers(0, len(ib), size=k)]
            rows.append(s)
            cols.append(t)
    if not rows:
        return np.zeros((2, 0), dtype=np.int64)
    und = np.unique(np.stack([np.concatenate(rows), np.concatenate(cols)], 0), axis=1)
    return np.concatenate([und, und[::-1]], axis=1).astype(np.int64)


def _random_rotation_step(dim: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """``expm(rate * A)`` for a random skew-symmetric ``A`` with unit Frobenius norm / sqrt(2)."""
    from scipy.linalg import expm

    g = rng.standard_normal((dim, dim))
    a = (g - g.T) / np.linalg.norm(g - g.T) * math.sqrt(2.0)
    return expm(rate * a)


@validate(n_domains=Int(low=1), n_nodes=Int(low=2), n_classes=Int(low=2), dim=Int(low=2), p_in=_PROBABILITY,
          p_out=_PROBABILITY, structure_drift=_PROBABILITY, drift=Real(low=0.0), rotation_rate=Real(low=0.0),
          separation=Real(0.0, None, "neither"), train_fraction=_FRACTION, seed=Int(low=0))
def csbm_stream(n_domains: int = 10, n_nodes: int = 1000, n_classes: int = 4, dim: int = 32, *,
                drift: float = 0.6, rotation_rate: float = 0.15, separation: float = 2.0,
                p_in: float = 0.02, p_out: float = 0.004, structure_drift: float = 0.0,
                train_fraction: float = 0.5, seed: int = 0) -> list[Data]:
    """A contextual-SBM stream: ``n_domains + 1`` PyG ``Data`` graphs, element 0 the labeled source.

    Args:
        n_domains: number of target domains ``T`` (>= 1).
        n_nodes: nodes per domain ``n``; n_classes: ``C``; dim: feature dimension ``d``.
        drift: std of each random-walk step of the covariate offset, ``b_t = b_{t-1} + drift * N(0, I_d)
            / sqrt(d) * separation`` (so ``||b_t - b_{t-1}|| ~ drift * separation``).
        rotation_rate: angle scale of each accumulated rotation step of the class means.
        separation: norm of each class mean ``mu_c`` (feature noise is ``N(0, I)``).
        p_in, p_out: intra- and inter-class edge probabilities (homophilous when p_in > p_out).
        structure_drift: per-domain fraction by which ``p_in`` moves towards ``p_out`` (0 = none).
        train_fraction: fraction of source nodes in ``train_mask`` (the rest in ``test_mask``).
        seed: the stream is a deterministic function of its arguments.
    Each ``Data`` has ``x [n, d]`` float32, ``edge_index [2, E]``, ``y [n]``, ``domain`` (int) and the
    generating ``offset [d]``, ``rotation [d, d]``, ``class_means [C, d]`` (for tests); the source has
    ``train_mask`` / ``test_mask``.
    """
    check_arguments("csbm_stream", {"n_nodes": Int(low=n_classes)}, {"n_nodes": n_nodes})  # a node per class
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((n_classes, dim))
    means *= separation / np.linalg.norm(means, axis=1, keepdims=True)
    offset = np.zeros(dim)
    rotation = np.eye(dim)
    stream: list[Data] = []
    for t in range(n_domains + 1):
        if t > 0:
            # b_t = b_{t-1} + drift * separation * N(0, I/d);  R_t = R_{t-1} expm(rate A_t)
            offset = offset + drift * separation * rng.standard_normal(dim) / math.sqrt(dim)
            rotation = rotation @ _random_rotation_step(dim, rotation_rate, rng)
        y = np.repeat(np.arange(n_classes), int(math.ceil(n_nodes / n_classes)))[:n_nodes]
        y = rng.permutation(y)
        pin_t = p_in + (p_out - p_in) * min(1.0, structure_drift * t)
        edges = _sbm_edges(y, pin_t, p_out, rng)
        x = means[y] @ rotation.T + offset + rng.standard_normal((n_nodes, dim))
        data = Data(x=torch.tensor(x, dtype=torch.float32), edge_index=torch.from_numpy(edges),
                    y=torch.from_numpy(y.astype(np.int64)))
        data.domain = t
        data.offset = torch.tensor(offset, dtype=torch.float32)
        data.rotation = torch.tensor(rotation, dtype=torch.float32)
        data.class_means = torch.tensor(means, dtype=torch.float32)
        if t == 0:
            train = torch.zeros(n_nodes, dtype=torch.bool)
            train[torch.from_numpy(rng.permutation(n_nodes)[: int(round(train_fraction * n_nodes))])] = True
            data.train_mask, data.test_mask = train, ~train
        stream.append(data)
    return stream


def _bfs_order(n: int, edge_index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Nodes in breadth-first order from random roots (all components), so contiguous chunks of the
    order are mostly connected subgraphs."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    adj = csr_matrix((np.ones(edge_index.shape[1]), (edge_index[0], edge_index[1])), shape=(n, n))
    seen = np.zeros(n, dtype=bool)
    order: list[np.ndarray] = []
    for root in rng.permutation(n):
        if seen[root]:
            continue
        comp = breadth_first_order(adj, int(root), directed=False, return_predecessors=False)
        seen[comp] = True
        order.append(comp)
    return np.concatenate(order)


@validate(name=Instance(str, "str"), n_domains=Int(low=1), max_dropout=Real(0.0, 1.0, "left"), drift=Real(low=0.0),
          drift_dims=Int(low=1), train_fraction=_FRACTION, seed=Int(low=0))
def planetoid_shift_stream(name: str = "cora", n_domains: int = 8, *, max_dropout: float = 0.5,
                           drift: float = 0.5, drift_dims: int = 64, train_fraction: float = 0.5,
                           seed: int = 0) -> list[Data]:
    """Cora or CiteSeer as ``n_domains + 1`` domains with a progressive covariate shift.

    Nodes are ordered breadth-first and cut into ``n_domains + 1`` equal blocks; each block's induced
    subgraph is one domain (block 0 = labeled source). Domain ``t`` gets (i) feature dropout with rate
    ``max_dropout * t / n_domains`` (entries zeroed independently) and (ii) an additive offset
    ``b_t = b_{t-1} + drift * N(0, 1)`` on a fixed random set of ``drift_dims`` features (``b_0 = 0``).
    Nodes with unknown labels (CiteSeer's isolated nodes, ``y = -1``) are dropped.

    Args:
        name: ``"cora"`` or ``"citeseer"`` (read offline via :func:`neurips26.data.load_planetoid`).
        n_domains: number of target domains ``T`` (>= 1).
        seed: the stream is a deterministic function of its arguments.
    """
    from neurips26.data import load_planetoid

    raw = load_planetoid(name)
    x_all, y_all, ei_all = raw["x"], raw["y"].astype(np.int64), raw["edge_index"].astype(np.int64)
    n, d = x_all.shape
    check_arguments("planetoid_shift_stream", {"drift_dims": Int(1, d)}, {"drift_dims": drift_dims})  # <= features
    rng = np.random.default_rng(seed)
    classes = np.unique(y_all[y_all >= 0])
    for _ in range(20):
        order = _bfs_order(n, ei_all, rng)
        order = order[y_all[order] >= 0]
        blocks = np.array_split(order, n_domains + 1)
        # the labeled source must contain every class (nothing label-free can learn an unseen class);
        # a BFS block is topically concentrated, so redraw the roots until it does
        if np.isin(classes, y_all[blocks[0]]).all():
            break
    else:
        raise ValueError(f"n_domains: with {n_domains} domains the source block of {name} never contained "
                         f"every class in 20 draws; use fewer domains")
    subspace = rng.choice(d, size=drift_dims, replace=False)
    offset = np.zeros(drift_dims)
    stream: list[Data] = []
    for t, nodes in enumerate(blocks):
        nodes = np.sort(nodes)
        local = -np.ones(n, dtype=np.int64)
        local[nodes] = np.arange(len(nodes))
        keep = (local[ei_all[0]] >= 0) & (local[ei_all[1]] >= 0)
        ei = local[ei_all[:, keep]]
        x = x_all[nodes].copy()
        if t > 0:
            rate = max_dropout * t / n_domains
            x *= rng.random(x.shape) >= rate
            offset = offset + drift * rng.standard_normal(drift_dims)
            x[:, subspace] += offset
        data = Data(x=torch.tensor(x, dtype=torch.float32), edge_index=torch.from_numpy(ei),
                    y=torch.from_numpy(y_all[nodes]))
        data.domain = t
        data.dropout_rate = max_dropout * t / n_domains
        if t == 0:
            train = torch.zeros(len(nodes), dtype=torch.bool)
            k = int(round(train_fraction * len(nodes)))
            perm = rng.permutation(len(nodes))
            train[torch.from_numpy(perm[:k])] = True
            # every class keeps at least one labeled source node (first one in the permutation)
            labels = y_all[nodes]
            for c in classes[~np.isin(classes, labels[perm[:k]])]:
                train[int(perm[np.nonzero(labels[perm] == c)[0][0]])] = True
            data.train_mask, data.test_mask = train, ~train
        stream.append(data)
    return stream


@validate(root=Instance((str, os.PathLike)), source=_LANGUAGE, download=Bool(), train_fraction=_FRACTION,
          seed=Int(low=0))
def twitch_stream(root: str, *, source: str = "DE", targets: tuple[str, ...] = ("EN", "ES", "FR", "PT", "RU"),
                  download: bool = False, train_fraction: float = 0.5, seed: int = 0) -> list[Data]:
    """Twitch gamer networks, one domain per language (GCAL's protocol: train on DE, adapt to the others).

    128 game-embedding features per user, binary label (streams mature content), followership edges made
    undirected. Read with :class:`torch_geometric.datasets.Twitch` under ``root/<LANG>/``.

    Args:
        root: folder holding (or to hold) ``<LANG>/raw/<LANG>.npz``.
        source: the labeled source language; targets: the target languages, in stream order.
        download: fetch missing files from PyG's dataset host; without it a missing file raises
            :class:`neurips26.data.DatasetNotFoundError` naming the path (nothing is fetched silently).
        train_fraction, seed: the labeled share of the source graph (``train_mask``), drawn with ``seed``.
    """
    from torch_geometric.datasets import Twitch
    from torch_geometric.utils import to_undirected

    from neurips26.data import DatasetNotFoundError

    if not isinstance(targets, tuple | list) or not targets:
        raise ValueError(f"targets: expected a non-empty tuple of languages, got {targets!r}")
    for lang in targets:
        check_arguments("twitch_stream", {"language": _LANGUAGE}, {"language": lang})
    if source in targets:
        raise ValueError(f"targets: must not contain the source language {source!r}")
    stream = []
    for t, lang in enumerate((source, *targets)):
        raw = os.path.join(str(root), lang, "raw", f"{lang}.npz")
        if not download and not os.path.exists(raw):
            raise DatasetNotFoundError(f"twitch/{lang}", [raw],
                                       "twitch_stream(root, download=True)  # fetches PyG's Twitch files",
                                       source="PyG torch_geometric.datasets.Twitch (MUSAE, Rozemberczki et al.)")
        g = Twitch(str(root), lang)[0]
        data = Data(x=g.x.float(), edge_index=to_undirected(g.edge_index, num_nodes=g.num_nodes), y=g.y.long())
        data.domain, data.language = t, lang
        if t == 0:
            rng = np.random.default_rng(seed)
            train = torch.zeros(g.num_nodes, dtype=torch.bool)
            k = max(1, int(round(train_fraction * g.num_nodes)))
            train[torch.from_numpy(rng.permutation(g.num_nodes)[:k])] = True
            data.train_mask, data.test_mask = train, ~train
        stream.append(data)
    return stream
