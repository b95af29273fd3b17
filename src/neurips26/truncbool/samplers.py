"""Exact samplers for truncated Boolean product distributions ``μ_{z,S}``, in log space.

``μ_z(x) = Π_i σ(z_i)^{x_i} (1 - σ(z_i))^{1 - x_i} ∝ exp⟨z, x⟩`` on ``{0,1}^n`` (σ the logistic function)
and ``μ_{z,S}(x) = μ_z(x) 1[x ∈ S] / μ_z(S)``.

When ``S`` is recognised by a finite automaton over the coordinates (weight band, parity, integer
halfspace: see :mod:`.oracles`), a suffix dynamic programme gives exact draws, with no rejection:

    log T[n, q] = log 1[q accepting]
    log T[i, q] = logaddexp( log(1 - p_i) + log T[i+1, δ_i(q, 0)],  log p_i + log T[i+1, δ_i(q, 1)] )

``T[i, q]`` is the probability that coordinates ``i..n-1`` drawn from the product take the automaton from
state ``q`` to acceptance, so ``μ_z(S) = T[0, q_0]`` and, sampling left to right,

    P(x_i = 1 | x_{<i}) = p_i T[i+1, δ_i(q_i, 1)] / T[i, q_i].

Everything is in logs, so the law is exact even where ``μ_z(S) ≈ 1e-64`` (and far below). Other oracles
fall back to capped rejection sampling.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, log_expit

from ..constraints import AnyOf, ArrayLike, Instance, Int, Optional, check_arguments, validate
from .oracles import ORACLE, query

__all__ = ["sample_truncated_product", "sample_product", "log_mass", "enumerate_set", "truncated_pmf",
           "RejectionLimitError", "as_rng"]

ENUM_MAX_N = 20


class RejectionLimitError(RuntimeError):
    """Rejection sampling reached its cap on tries (``max_tries``) before collecting the draws asked for."""


#: a random state: None, an int seed or a numpy Generator
RNG = Optional(AnyOf(Instance(np.random.Generator, "numpy Generator"), Int()))


def as_rng(rng: Any) -> np.random.Generator:
    """``None`` / an int seed / a ``Generator`` -> a ``Generator``."""
    check_arguments("", {"rng": RNG}, {"rng": rng})
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def check_params(z: Any, oracle: Any = None, name: str = "z") -> np.ndarray:
    """Natural parameters as ``float64 [n]``: 1-D, finite, the oracle's length when it has one."""
    check_arguments("", {name: ArrayLike("N")}, {name: z})
    arr = np.asarray(z, dtype=np.float64)
    if arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of natural parameters, got shape {arr.shape}")
    n_or = getattr(oracle, "n", None)
    if n_or is not None and n_or != arr.size:
        raise ValueError(f"{name} has length {arr.size} but the oracle {oracle!r} is defined on n = {n_or}")
    return arr


COUNT = Int(low=0)


def _suffix_log_table(z: np.ndarray, automaton) -> np.ndarray:
    """``log T`` of the module docstring: ``float64 [n + 1, n_states]``."""
    n = z.size
    lp1, lp0 = log_expit(z), log_expit(-z)  # log p_i, log (1 - p_i)
    logT = np.empty((n + 1, automaton.n_states))
    with np.errstate(divide="ignore"):
        logT[n] = np.log(automaton.accept.astype(np.float64))
    for i in range(n - 1, -1, -1):
        logT[i] = np.logaddexp(lp0[i] + logT[i + 1][automaton.step(i, 0)],
                               lp1[i] + logT[i + 1][automaton.step(i, 1)])
    return logT


def _dp_sample(z: np.ndarray, automaton, m: int, rng: np.random.Generator) -> np.ndarray:
    logT = _suffix_log_table(z, automaton)
    if not np.isfinite(logT[0, automaton.start]):
        raise ValueError("S is empty: no x in {0,1}^n satisfies the oracle, so there is nothing to sample")
    lp1 = log_expit(z)
    X = np.empty((m, z.size), dtype=np.int8)
    q = np.full(m, automaton.start, dtype=np.int64)  # automaton state of every draw, [m]
    for i in range(z.size):
        nxt1 = automaton.step(i, 1)[q]
        # log P(x_i = 1 | x_{<i}) = log p_i + log T[i+1, δ(q, 1)] - log T[i, q]
        with np.errstate(invalid="ignore"):
            log_p = lp1[i] + logT[i + 1][nxt1] - logT[i][q]
        bit = np.log(rng.random(m)) < log_p
        X[:, i] = bit
        q = np.where(bit, nxt1, automaton.step(i, 0)[q])
    return X


@validate(m=COUNT)
def sample_product(z: Any, m: int, *, rng: Any = None) -> np.ndarray:
    """``m`` i.i.d. draws from the untruncated product ``μ_z``: ``int8 [m, n]``."""
    z = check_params(z)
    m = int(m)
    return (as_rng(rng).random((m, z.size)) < expit(z)).astype(np.int8)


def rejection_sample(z: np.ndarray, oracle: Any, m: int, rng: np.random.Generator,
                     max_tries: int, rate_hint: float | None = None) -> tuple[np.ndarray, int]:
    """``m`` draws of ``μ_{z,S}`` by rejection from ``μ_z``, and the number of tries (= oracle queries).

    Candidates are drawn and queried in batches, but the count is that of a one-at-a-time sampler: the
    candidates up to and including the ``m``-th acceptance. ``rate_hint`` (an acceptance-rate guess) sizes
    the first batch; it changes the speed, not the law or the count.

    Raises :class:`RejectionLimitError` once ``max_tries`` candidate rows were drawn without ``m`` accepted.
    """
    p = expit(z)
    kept: list[np.ndarray] = []
    got = tries = 0
    batch = max(16, 2 * m) if rate_hint is None else int(min(max(16, 1.5 * m / max(rate_hint, 1e-6)), 1 << 20))
    while got < m:
        size = min(batch, max_tries - tries)
        if size <= 0:
            raise RejectionLimitError(f"rejection sampling stopped at max_tries = {max_tries} tries with {got} of "
                                      f"{m} draws accepted (estimated mass μ_z(S) ≈ {got / max(tries, 1):.2e}); "
                                      "raise max_tries or use an oracle with an exact sampler")
        cand = (rng.random((size, z.size)) < p).astype(np.int8)
        ok = query(oracle, cand)
        hits = np.flatnonzero(ok)
        need = m - got
        # a sequential sampler stops at the m-th acceptance: only candidates up to it count as queries
        tries += int(hits[need - 1]) + 1 if hits.size >= need else size
        kept.append(cand[hits[:need]])
        got += min(hits.size, need)
        rate = got / tries
        batch = int(min(max(64, 1.2 * (m - got) / max(rate, 1e-6)), 1 << 20))
    return np.concatenate(kept, axis=0), tries


@validate(oracle=ORACLE, m=COUNT, max_tries=COUNT)
def sample_truncated_product(z: Any, oracle: Any, m: int, *, rng: Any = None,
                             max_tries: int = 10**6) -> np.ndarray:
    """``m`` i.i.d. draws from ``μ_{z,S}``: ``int8 [m, n]`` with every row in ``S``.

    Exact log-space dynamic programme for :class:`WeightBand`, :class:`Parity` and :class:`IntHalfspace`
    (any mass, e.g. ``μ_z(S) ≈ 1e-64``); capped rejection from ``μ_z`` for every other oracle.

    Args:
        z: natural parameters ``[n]`` (``μ_z(x) ∝ exp⟨z, x⟩``, {0,1} encoding).
        oracle: the membership oracle of ``S``.
        m: number of draws.
        rng: seed or ``numpy.random.Generator``.
        max_tries: cap on candidate rows for rejection sampling (:class:`RejectionLimitError` beyond it).
    """
    z = check_params(z, oracle)
    m, max_tries = int(m), int(max_tries)
    gen = as_rng(rng)
    automaton = getattr(oracle, "automaton", None)
    if automaton is not None:
        return _dp_sample(z, automaton(z.size), m, gen)
    return rejection_sample(z, oracle, m, gen, max_tries)[0]


@validate(oracle=ORACLE, n=Int(low=1, high=ENUM_MAX_N))
def enumerate_set(oracle: Any, n: int) -> np.ndarray:
    """All points of ``S ⊆ {0,1}^n`` (``n ≤ 20``) as ``int8 [|S|, n]``, in lexicographic order."""
    n = int(n)
    idx = np.arange(2 ** n, dtype=np.int64)
    cube = ((idx[:, None] >> np.arange(n - 1, -1, -1)) & 1).astype(np.int8)  # [2^n, n]
    keep = np.concatenate([query(oracle, cube[s: s + 65536]) for s in range(0, cube.shape[0], 65536)])
    return cube[keep]


def truncated_pmf(z: Any, oracle: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(points [|S|, n], probabilities [|S|])`` of ``μ_{z,S}`` by enumeration (``n ≤ 20``)."""
    z = check_params(z, oracle)
    pts = enumerate_set(oracle, z.size)
    if pts.shape[0] == 0:
        raise ValueError("S is empty")
    logw = pts @ z
    w = np.exp(logw - logw.max())
    return pts, w / w.sum()


def log_mass(z: Any, oracle: Any) -> float:
    """``log μ_z(S)`` (natural log): exact dynamic programme when the oracle has one, else enumeration
    (``n ≤ 20``); ``-inf`` for an empty ``S``."""
    z = check_params(z, oracle)
    automaton = getattr(oracle, "automaton", None)
    if automaton is not None:
        aut = automaton(z.size)
        return float(_suffix_log_table(z, aut)[0, aut.start])
    if z.size > ENUM_MAX_N:
        raise ValueError(f"log_mass needs an oracle with an exact sampler (WeightBand, Parity, IntHalfspace) "
                         f"or n <= {ENUM_MAX_N}, got {oracle!r} with n = {z.size}")
    pts = enumerate_set(oracle, z.size)
    if pts.shape[0] == 0:
        return float("-inf")
    # log μ_z(S) = log Σ_{x∈S} exp⟨z,x⟩ - Σ_i log(1 + e^{z_i})
    logw = pts @ z
    return float(np.logaddexp.reduce(logw) - np.logaddexp(0.0, z).sum())
