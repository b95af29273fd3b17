r"""What the paper compares against: classical tour heuristics, a POMO-style light decoder, and PyVRP for CVRP.

- :func:`nearest_neighbour_tours`: from node 0, always go to the closest unvisited city.
- :func:`farthest_insertion_tours`: start from the farthest pair; repeatedly take the unvisited city
  farthest from the tour, $r = \arg\max_{r} \min_{i \in \text{tour}} d_{ri}$, and insert it where the
  detour $d_{ir} + d_{rj} - d_{ij}$ is smallest.
- :func:`two_opt`: best-improvement 2-opt; reversing $\pi_{i+1..j}$ changes the length by
  $\Delta = d(\pi_i, \pi_j) + d(\pi_{i+1}, \pi_{j+1}) - d(\pi_i, \pi_{i+1}) - d(\pi_j, \pi_{j+1})$.
- :class:`POMOLightDecoder`: the width-heavy reference: a 6-layer attention encoder run once per
  instance and one attention step per construction step (AM/POMO "light decoder"), with the same
  ``encode``/``score`` interface so :func:`greedy_construct` and :func:`train_supervised` work with it.
  Trained here by the same supervised sub-path recipe (POMO itself uses REINFORCE; inferred choice).
- :func:`solve_cvrp_pyvrp`: PyVRP's iterated local search on a CVRPLIB file (extra ``routing``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..constraints import AnyOf, Callable, Choice, Int, Real, check_arguments, validate
from ._checks import COORDS, check_step
from .tsp import as_instances, check_tours, distance_matrix

__all__ = ["POMOLightDecoder", "farthest_insertion_tours", "nearest_neighbour_tours", "solve_cvrp_pyvrp",
           "two_opt"]


# ------------------------------------------------------------------------------------------ heuristics
def nearest_neighbour_tours(X: Any, start: int = 0) -> np.ndarray:
    """Nearest-neighbour tours ``[B, n]`` (int64) from ``start``, vectorised over the batch."""
    D = distance_matrix(as_instances(X))
    B, n, _ = D.shape
    check_arguments("nearest_neighbour_tours", {"start": Int(0, n - 1)}, {"start": start})  # a node of X
    start = int(start)
    rows = np.arange(B)
    visited = np.zeros((B, n), dtype=bool)
    tours = np.empty((B, n), dtype=np.int64)
    cur = np.full(B, start)
    tours[:, 0], visited[:, start] = start, True
    for t in range(1, n):
        d = np.where(visited, np.inf, D[rows, cur])
        cur = d.argmin(axis=1)
        tours[:, t], visited[rows, cur] = cur, True
    return tours


def farthest_insertion_tours(X: Any) -> np.ndarray:
    """Farthest-insertion tours ``[B, n]`` (int64), rotated to start at node 0."""
    D = distance_matrix(as_instances(X))
    B, n, _ = D.shape
    out = np.empty((B, n), dtype=np.int64)
    for b in range(B):
        d = D[b]
        i, j = np.unravel_index(np.argmax(d), d.shape)
        tour = [int(i), int(j)]
        in_tour = np.zeros(n, dtype=bool)
        in_tour[[i, j]] = True
        near = np.minimum(d[i], d[j])  # distance of each city to the tour
        for _ in range(n - 2):
            r = int(np.argmax(np.where(in_tour, -1.0, near)))
            a = np.asarray(tour)
            nxt = np.roll(a, -1)
            # cheapest insertion between a_k and a_{k+1}: d(a_k, r) + d(r, a_{k+1}) - d(a_k, a_{k+1})
            k = int(np.argmin(d[a, r] + d[r, nxt] - d[a, nxt]))
            tour.insert(k + 1, r)
            in_tour[r] = True
            near = np.minimum(near, d[r])
        t = np.asarray(tour)
        out[b] = np.roll(t, -int(np.flatnonzero(t == 0)[0]))
    return out


@validate(max_iterations=Int(low=0))
def two_opt(X: Any, tours: Any, max_iterations: int = 1000) -> np.ndarray:
    """Improve ``tours`` ``[B, n]`` by best-improvement 2-opt until no move gains (or ``max_iterations``)."""
    Xn = as_instances(X)
    D = distance_matrix(Xn)
    B, n, _ = D.shape
    pis = check_tours(tours, B, n).copy()
    idx = np.arange(n)
    upper = idx[:, None] < idx[None, :] - 1  # pairs i < j - 1 (non-adjacent edges)
    upper[0, n - 1] = False  # edges (0,1) and (n-1,0) are adjacent
    for b in range(B):
        pi, d = pis[b], D[b]
        for _ in range(int(max_iterations)):
            nxt = np.roll(pi, -1)
            # Delta_ij = d(pi_i, pi_j) + d(pi_{i+1}, pi_{j+1}) - d(pi_i, pi_{i+1}) - d(pi_j, pi_{j+1})
            delta = d[pi[:, None], pi[None, :]] + d[nxt[:, None], nxt[None, :]] \
                - d[pi, nxt][:, None] - d[pi, nxt][None, :]
            delta = np.where(upper, delta, 0.0)
            flat = int(np.argmin(delta))
            if delta.flat[flat] >= -1e-10:
                break
            i, j = divmod(flat, n)
            pi[i + 1:j + 1] = pi[i + 1:j + 1][::-1].copy()
        pis[b] = pi
    return pis


# ------------------------------------------------------------------------------------------ POMO-style
class _EncoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, ff), nn.ReLU(), nn.Linear(ff, d))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = self.norm1(h + self.attn(h, h, h, need_weights=False)[0])
        return self.norm2(h + self.ffn(h))


class POMOLightDecoder(nn.Module):
    r"""POMO-style policy: heavy encoder, light decoder (the width-heavy reference).

    ``encode``: $h = \mathrm{Enc}_6(W_e x)$ (post-norm Transformer layers; POMO uses instance norm, we use
    LayerNorm, inferred). ``score``: the context $q = W_q [h_{\text{first}}; h_{\text{last}}]$ attends over
    the remaining nodes (multi-head), then one pointer head gives
    $s_r = C \tanh(q'^\top W_k h_r / \sqrt{d})$ with $C = 10$.
    """

    @validate(d_model=Int(low=1), n_layers=Int(low=1), head_dim=Int(low=1), ff_mult=Int(low=1),
              clip=Real(low=0.0, closed="neither"))
    def __init__(self, *, d_model: int = 128, n_layers: int = 6, head_dim: int = 16, ff_mult: int = 4,
                 clip: float = 10.0) -> None:
        super().__init__()
        if d_model % head_dim:
            raise ValueError(f"POMOLightDecoder: d_model must be divisible by head_dim: got {d_model} and {head_dim}")
        heads = d_model // head_dim
        self.d_model, self.clip = d_model, clip
        self.embed = nn.Linear(2, d_model)
        self.layers = nn.ModuleList(_EncoderLayer(d_model, heads, ff_mult * d_model) for _ in range(n_layers))
        self.q_ctx = nn.Linear(2 * d_model, d_model, bias=False)
        self.glimpse = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.k_ptr = nn.Linear(d_model, d_model, bias=False)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @validate(X=COORDS)
    def encode(self, X: torch.Tensor) -> torch.Tensor:
        h = self.embed(X)
        for layer in self.layers:
            h = layer(h)
        return h  # [B, n, d]

    def score(self, emb: torch.Tensor, first: torch.Tensor, last: torch.Tensor,
              remaining: torch.Tensor) -> torch.Tensor:
        check_step("POMOLightDecoder.score", emb, first, last, remaining, self.d_model)
        B, _, d = emb.shape
        rows = torch.arange(B, device=emb.device)
        h_rem = torch.gather(emb, 1, remaining[:, :, None].expand(-1, -1, d))  # [B, m, d]
        q = self.q_ctx(torch.cat([emb[rows, first], emb[rows, last]], dim=-1))[:, None]  # [B, 1, d]
        g = self.glimpse(q, h_rem, h_rem, need_weights=False)[0]  # [B, 1, d]
        # s_r = C tanh(g^T W_k h_r / sqrt(d))
        s = (g @ self.k_ptr(h_rem).transpose(1, 2)).squeeze(1) / math.sqrt(d)
        return self.clip * torch.tanh(s)

    def forward(self, X: torch.Tensor, first: torch.Tensor, last: torch.Tensor,
                remaining: torch.Tensor) -> torch.Tensor:
        return self.score(self.encode(X), first, last, remaining)


# ------------------------------------------------------------------------------------------ CVRP
_ROUND_FUNCS = ("round", "trunc", "dimacs", "exact", "none")  # PyVRP's named rounding functions


@validate(max_iterations=Int(low=1), seed=Int(low=0), round_func=AnyOf(Choice(*_ROUND_FUNCS), Callable()))
def solve_cvrp_pyvrp(path: str | Path, *, max_iterations: int = 2000, seed: int = 0,
                     round_func: str = "round") -> dict[str, Any]:
    """Solve a CVRPLIB ``.vrp`` file with PyVRP (deterministic ``MaxIterations`` stop).

    Returns ``{"cost", "feasible", "routes", "bks"}``; ``bks`` is read from the ``.sol`` beside the file when
    present (``Cost`` line), else ``None``. ``round_func="round"`` is CVRPLIB's X convention.
    """
    if not isinstance(path, str | Path) or not Path(path).is_file():
        raise ValueError(f"path must be an existing .vrp file, got {str(path)!r}")
    path = Path(path)
    try:
        from pyvrp import read, solve
        from pyvrp.stop import MaxIterations
    except ImportError:
        raise ImportError("solve_cvrp_pyvrp needs PyVRP: `pip install 'neurips26[routing]'`") from None
    res = solve(read(path, round_func=round_func), stop=MaxIterations(int(max_iterations)), seed=int(seed),
                display=False)
    routes = [[act.idx for act in route if act.is_client()] for route in res.best.routes()]
    bks = None
    sol = path.with_suffix(".sol")
    if sol.is_file():
        for line in sol.read_text().splitlines():
            if line.strip().lower().startswith("cost"):
                bks = float(line.split()[-1])
    return {"cost": float(res.cost()), "feasible": bool(res.is_feasible()), "routes": routes, "bks": bks}
