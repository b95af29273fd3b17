"""Fatness and influence: how much information a truncation set lets through, per coordinate.

* Relative fatness (the paper's sharper notion, inferred from its abstract):
  ``α_i(S, z) = Pr_{x ∼ μ_{z,S}}[x^{⊕i} ∈ S]``, measured under the *truncated* law. The r = 1 estimator's
  error on coordinate ``i`` scales like ``1 / sqrt(m α_i σ(z_i)(1 - σ(z_i)))``.
* Boolean influence under the *untruncated* product: ``Inf_i(1_S) = Pr_{x ∼ μ_z}[1_S(x) ≠ 1_S(x^{⊕i})]``.
  Under the uniform measure ``1 - α_i = Inf_i(1_S) / (2 μ_z(S))``; for a biased ``μ_z`` up to ``e^{±|z_i|}``.

Exact where the oracle carries an automaton (band, parity, integer halfspace). Their statistic is a sum,
so the automaton's state does not depend on the order of the coordinates, and coordinate ``i`` can be
read last: with ``P_{-i}(q)`` the law of the state reached by the other coordinates (a forward DP in logs),

    Inf_i = Σ_q P_{-i}(q) · 1[acc(δ_i(q, 0)) ≠ acc(δ_i(q, 1))]          (x_i does not matter: the XOR is symmetric)
    α_i   = Σ_q P_{-i}(q) · acc(δ_i(q, 0)) acc(δ_i(q, 1)) / μ_z(S),

so ``Inf_i ≈ 1e-68`` is as exact as ``0.3``. Other oracles get a Monte Carlo estimate (exact sampler or
rejection); an influence Monte Carlo run that sees no disagreement at all cannot tell ``1e-3`` from
``1e-68`` and is refused (NaN with a warning naming the upper bound it does support).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.special import log_expit, logsumexp

from ..constraints import Choice, Int, validate
from .oracles import ORACLE, _flip_feasible, query
from .samplers import RNG, _suffix_log_table, as_rng, check_params, sample_product, sample_truncated_product

__all__ = ["fatness", "influence", "log_influence"]

METHODS = ("auto", "exact", "mc")
EXACT_FATNESS_MAX_CELLS = 2 * 10**7  # auto: exact fatness while n² · states stays below this


def _check_method(method: str, oracle: Any) -> str:
    """The method to run (``method`` is declared one of METHODS): ``"exact"`` needs an automaton."""
    has_dp = getattr(oracle, "automaton", None) is not None
    if method == "exact" and not has_dp:
        raise ValueError(f'method="exact" needs an oracle with an automaton (WeightBand, Parity, IntHalfspace), '
                         f"got {oracle!r}; use method=\"mc\"")
    return "exact" if method == "auto" and has_dp else ("mc" if method == "auto" else method)


def _log_state_law_without(z: np.ndarray, aut, i: int) -> np.ndarray:
    """``log P_{-i}(q)``: the automaton state after every coordinate except ``i`` (order-free statistic)."""
    lp1, lp0 = log_expit(z), log_expit(-z)
    logp = np.full(aut.n_states, -np.inf)
    logp[aut.start] = 0.0
    for j in range(z.size):
        if j == i:
            continue
        nxt = np.full(aut.n_states, -np.inf)
        for bit, lp in ((0, lp0[j]), (1, lp1[j])):
            # push mass along q -> δ_j(q, bit): log-sum-exp into the target states
            np.logaddexp.at(nxt, aut.step(j, bit), logp + lp)
        logp = nxt
    return logp


def _exact_terms(z: np.ndarray, oracle: Any, i: int) -> tuple[float, float]:
    """``(log Inf_i, log Pr_{μ_z}[x ∈ S and x^{⊕i} ∈ S])`` by the DP of the module docstring."""
    aut = oracle.automaton(z.size)
    logp = _log_state_law_without(z, aut, i)
    a0, a1 = aut.accept[aut.step(i, 0)], aut.accept[aut.step(i, 1)]
    with np.errstate(divide="ignore"):
        return float(logsumexp(np.where(a0 != a1, logp, -np.inf))), float(logsumexp(np.where(a0 & a1, logp, -np.inf)))


@validate(oracle=ORACLE, n_mc=Int(low=1), rng=RNG, method=Choice(*METHODS))
def fatness(oracle: Any, z: Any, n_mc: int = 10_000, rng: Any = None, *, method: str = "auto") -> np.ndarray:
    """``α_i(S, z) = Pr_{x∼μ_{z,S}}[x^{⊕i} ∈ S]`` for every coordinate: ``float [n]`` in [0, 1].

    ``method="auto"``: exact (DP, ``O(n² · states)``, while that is below ``EXACT_FATNESS_MAX_CELLS``) when the
    oracle has an automaton, else Monte Carlo on
    ``n_mc`` draws of ``μ_{z,S}`` (standard error ``≤ 0.5/sqrt(n_mc)``).
    """
    z = check_params(z, oracle)
    n_mc = int(n_mc)
    how = _check_method(method, oracle)
    gen = as_rng(rng)
    big = how == "exact" and z.size ** 2 * oracle.automaton(z.size).n_states > EXACT_FATNESS_MAX_CELLS
    if big and method == "auto":
        how = "mc"  # the exact DP would cost n² · states; Monte Carlo on the exact sampler is cheaper
    if how == "exact":
        aut = oracle.automaton(z.size)
        log_mass = _suffix_log_table(z, aut)[0, aut.start]
        if not np.isfinite(log_mass):
            raise ValueError(f"S is empty for {oracle!r}: fatness is undefined")
        return np.array([np.exp(_exact_terms(z, oracle, i)[1] - log_mass) for i in range(z.size)])
    X = sample_truncated_product(z, oracle, n_mc, rng=gen)
    fast = getattr(oracle, "flip_feasible_all", None)
    if fast is not None:
        return np.asarray(fast(X), dtype=bool).mean(axis=0)
    return np.array([_flip_feasible(oracle, X, i).mean() for i in range(z.size)])


def _check_index(i: int, n: int) -> int:
    """The upper bound of a coordinate index (declared an int >= 0): ``i < n``."""
    if i >= n:
        raise ValueError(f"i must be a coordinate index in [0, {n}), got {i!r}")
    return int(i)


@validate(oracle=ORACLE, i=Int(low=0))
def log_influence(oracle: Any, z: Any, i: int) -> float:
    """``log Inf_i(1_S)`` exactly (natural log; ``-inf`` when flipping ``i`` never changes membership).

    Needs an oracle with an automaton; meaningful far below float range (``μ_z(S) = 1e-400`` is fine).
    """
    z = check_params(z, oracle)
    i = _check_index(i, z.size)
    _check_method("exact", oracle)
    return _exact_terms(z, oracle, i)[0]


@validate(oracle=ORACLE, i=Int(low=0), n_mc=Int(low=1), rng=RNG, method=Choice(*METHODS))
def influence(oracle: Any, z: Any, i: int, n_mc: int = 10_000, rng: Any = None, *, method: str = "auto") -> float:
    """``Inf_i(1_S) = Pr_{x∼μ_z}[1_S(x) ≠ 1_S(x^{⊕i})]`` under the untruncated product ``μ_z``.

    ``method="auto"``: exact when the oracle has an automaton (see :func:`log_influence` for values below
    float range), else Monte Carlo on ``n_mc`` untruncated draws. A Monte Carlo run without a single
    disagreement is refused: NaN and a warning (it only shows ``Inf_i < 3/n_mc`` at 95 %).
    """
    z = check_params(z, oracle)
    i = _check_index(i, z.size)
    n_mc = int(n_mc)
    how = _check_method(method, oracle)
    gen = as_rng(rng)
    if how == "exact":
        return float(np.exp(_exact_terms(z, oracle, i)[0]))
    X = sample_product(z, n_mc, rng=gen)
    hits = int(np.sum(query(oracle, X) != _flip_feasible(oracle, X, i)))
    if hits == 0:
        warnings.warn(f"influence: no disagreement in {n_mc} Monte Carlo draws, so Inf_{i} < {3 / n_mc:.1e} (95%) "
                      "is all they show; at a tiny mass μ_z(S) this says nothing. Returning NaN; use an oracle "
                      "with an automaton (exact) or raise n_mc", UserWarning, stacklevel=2)
        return float("nan")
    return hits / n_mc
