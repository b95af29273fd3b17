"""Multidimensional two-parameter logistic (2PL) item response theory, fitted by MAP.

Model: model ``m`` answers item ``j`` correctly with probability

.. math:: P(S_{mj} = 1) = \\sigma(\\theta_m \\cdot a_j - b_j),

``theta_m`` in R^D (ability), ``a_j`` in R^D (discrimination), ``b_j`` (difficulty). MAP with the priors
``theta ~ N(0, I)``, ``a ~ N(0, I)``, ``b ~ N(0, prior_b_scale^2)`` (the prior scales are our choice,
inferred). Full-batch optimisation in torch: L-BFGS (lean, default) or Adam (the reference-style
configuration tinyBenchmarks uses through py-irt: D = 10, 2000 steps). No py-irt / pyro.

Abilities of new models on a few items (:func:`estimate_ability`) use Newton's method on the same
posterior with the items fixed, batched over models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from neurips26.claims import torch_threads
from neurips26.constraints import Choice, Instance, Int, Optional, Real, validate

from ._validation import check_indices, check_matrix


@dataclass
class IRTParams:
    """Fitted 2PL: ``theta`` ``(M, D)``, ``a`` ``(N, D)``, ``b`` ``(N,)``; ``loss`` = final negative
    log posterior per entry; ``steps`` = optimiser steps taken."""

    theta: np.ndarray
    a: np.ndarray
    b: np.ndarray
    loss: float
    steps: int

    @property
    def dims(self) -> int:
        return self.a.shape[1]

    def proba(self, theta: np.ndarray) -> np.ndarray:
        """``P(correct)`` for abilities ``theta`` ``(m, D)`` on every item -> ``(m, N)``."""
        return _sigmoid(theta @ self.a.T - self.b)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@validate(dims=Int(low=1), optimizer=Choice("lbfgs", "adam"), steps=Optional(Int(low=1)),
          lr=Real(0, closed="neither"), prior_b_scale=Real(0, closed="neither"), random_state=Int(low=0))
def fit_irt_2pl(S, dims: int = 1, *, optimizer: Literal["lbfgs", "adam"] = "lbfgs", steps: int | None = None,
                lr: float = 0.1, prior_b_scale: float = 3.0, random_state: int = 0) -> IRTParams:
    """MAP fit of a ``dims``-dimensional 2PL to a 0/1 matrix ``S`` ``(M models, N items)``.

    Args:
        optimizer: ``"lbfgs"`` (default ``steps=50`` iterations) or ``"adam"`` (default 2000).
        lr: Adam learning rate (ignored by L-BFGS, which line-searches).
        random_state: seeds the initial ``theta``, ``a`` (``N(0, 0.1^2)``).
    For ``dims == 1`` the sign is fixed so that the mean discrimination is positive.
    """
    import torch

    S = check_matrix(S, name="S", binary=True, min_rows=2)
    n_steps = (50 if optimizer == "lbfgs" else 2000) if steps is None else int(steps)
    lr, prior_b_scale, random_state = float(lr), float(prior_b_scale), int(random_state)
    m, n = S.shape
    # small problems: one intra-op thread is faster than two fighting for cores (restored below)
    with torch_threads(1 if m * n * dims <= 2_000_000 else torch.get_num_threads()):
        return _fit(torch, S, dims, optimizer, n_steps, lr, prior_b_scale, int(random_state))


def _fit(torch, S, dims, optimizer, n_steps, lr, prior_b_scale, random_state) -> IRTParams:
    m, n = S.shape
    gen = torch.Generator().manual_seed(random_state)
    Y = torch.as_tensor(S, dtype=torch.float64)
    theta = (0.1 * torch.randn(m, dims, generator=gen, dtype=torch.float64)).requires_grad_()
    a = (0.1 * torch.randn(n, dims, generator=gen, dtype=torch.float64) + 1.0 / dims**0.5).requires_grad_()
    # initialise difficulties at the logit of each item's error rate
    p = Y.mean(0).clamp(0.02, 0.98)
    b = torch.log((1 - p) / p).clone().requires_grad_()
    params = [theta, a, b]

    def objective() -> torch.Tensor:
        logits = theta @ a.T - b  # [M, N]
        nll = torch.nn.functional.binary_cross_entropy_with_logits(logits, Y, reduction="sum")
        prior = 0.5 * (theta.square().sum() + a.square().sum() + (b / prior_b_scale).square().sum())
        return (nll + prior) / (m * n)

    if optimizer == "lbfgs":
        opt = torch.optim.LBFGS(params, lr=1.0, max_iter=n_steps, line_search_fn="strong_wolfe",
                                tolerance_grad=1e-9, tolerance_change=1e-12, history_size=20)

        def closure():
            opt.zero_grad()
            loss = objective()
            loss.backward()
            return loss

        opt.step(closure)
        taken = int(opt.state[opt._params[0]].get("n_iter", n_steps))
    else:
        opt = torch.optim.Adam(params, lr=lr)
        for _ in range(n_steps):
            opt.zero_grad()
            loss = objective()
            loss.backward()
            opt.step()
        taken = n_steps
    with torch.no_grad():
        final = float(objective())
    th, av, bv = theta.detach().numpy().copy(), a.detach().numpy().copy(), b.detach().numpy().copy()
    # Standardise the abilities without changing any logit (our choice, not in tinyBenchmarks):
    # theta' = (theta - mu) / s, a' = a s, b' = b - a . mu. The joint MAP leaves theta with a spread of
    # ~2.5 (the a-prior shrinks a, theta grows to compensate); after this, the N(0, I) prior that
    # estimate_ability puts on a new model matches the source models' ability distribution.
    mu, sd = th.mean(0), th.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    bv = bv - av @ mu
    th, av = (th - mu) / sd, av * sd
    if dims == 1 and av.mean() < 0:
        th, av = -th, -av
    return IRTParams(th, av, bv, final, taken)


@validate(params=Instance(IRTParams, "IRTParams"), iters=Int(low=1))
def estimate_ability(Y, items, params: IRTParams, *, iters: int = 30) -> np.ndarray:
    """MAP abilities of new models from their 0/1 answers ``Y`` ``(m, k)`` on ``items`` ``(k,)``.

    Newton on ``log p(theta | Y) = sum_j [y log p_j + (1-y) log(1-p_j)] - |theta|^2 / 2``:
    gradient ``(Y - P) A - theta``, Hessian ``-A^T diag(P(1-P)) A - I`` (negative definite, so the
    iteration converges). Returns ``(m, D)``.
    """
    items = check_indices(items, name="items", n=params.b.shape[0])
    Y = check_matrix(Y, name="Y", binary=False, columns=(items.size, "answers on the given items"))
    iters = int(iters)
    A, b = params.a[items], params.b[items]  # [k, D], [k]
    d = A.shape[1]
    theta = np.zeros((Y.shape[0], d))
    eye = np.eye(d)
    for _ in range(iters):
        P = _sigmoid(theta @ A.T - b)  # [m, k]
        grad = (Y - P) @ A - theta  # [m, D]
        W = P * (1 - P)
        H = np.einsum("mk,kd,ke->mde", W, A, A) + eye  # negative Hessian: [m, D, D]
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        theta = theta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta
