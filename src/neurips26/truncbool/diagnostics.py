"""Fatness and influence: how much information a truncation set lets through, per coordinate.

* Relative fatness (the paper's sharper notion, inferred from its abstract):
  ``α_i(S, z) = Pr_{x ∼ μ_{z,S}}[x^{⊕i} ∈ S]``, measured under the *truncated* law. The r = 1 estimator's
  error on coordinate ``i`` scales like ``1 / sqrt(m α_i σ(z_i)(1 - σ(z_i)))``.
* Boolean influence under the *untruncated* product: ``Inf_i(1_S) = Pr_{x ∼ μ_z}[1_S(x) ≠ 1_S(x^{⊕i})]``.
  Under the uniform measure ``1 - α_i = Inf_i(1_S) / (2 μ_z(S))``; for a biased ``μ_z`` up to ``e^{±|z_i|}``.

Both are Monte Carlo estimates (exact sampler where the oracle has one); ``n_mc`` sets their precision
(standard error ``≤ 0.5 / sqrt(n_mc)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .oracles import _check_oracle, _flip_feasible, query
from .samplers import as_rng, check_params, sample_product, sample_truncated_product

__all__ = ["fatness", "influence"]


def _check_mc(n_mc: Any) -> int:
    if isinstance(n_mc, bool) or not isinstance(n_mc, int | np.integer) or n_mc < 1:
        raise ValueError(f"n_mc must be an int >= 1, got {n_mc!r}")
    return int(n_mc)


def fatness(oracle: Any, z: Any, n_mc: int = 10_000, rng: Any = None) -> np.ndarray:
    """Monte Carlo ``α_i(S, z) = Pr_{x∼μ_{z,S}}[x^{⊕i} ∈ S]`` for every coordinate: ``float [n]`` in [0, 1]."""
    _check_oracle(oracle)
    z = check_params(z, oracle)
    n_mc = _check_mc(n_mc)
    X = sample_truncated_product(z, oracle, n_mc, rng=as_rng(rng))
    fast = getattr(oracle, "flip_feasible_all", None)
    if fast is not None:
        return np.asarray(fast(X), dtype=bool).mean(axis=0)
    return np.array([_flip_feasible(oracle, X, i).mean() for i in range(z.size)])


def influence(oracle: Any, z: Any, i: int, n_mc: int = 10_000, rng: Any = None) -> float:
    """Monte Carlo ``Inf_i(1_S) = Pr_{x∼μ_z}[1_S(x) ≠ 1_S(x^{⊕i})]`` under the untruncated product ``μ_z``."""
    _check_oracle(oracle)
    z = check_params(z, oracle)
    if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < z.size:
        raise ValueError(f"i must be a coordinate index in [0, {z.size}), got {i!r}")
    n_mc = _check_mc(n_mc)
    X = sample_product(z, n_mc, rng=as_rng(rng))
    return float(np.mean(query(oracle, X) != _flip_feasible(oracle, X, int(i))))
