"""``TruncatedBooleanProduct``: the scikit-learn estimator for truncated pseudo-likelihood GD (TruncPL-GD).

``fit(X)`` takes samples of ``μ_{z*,S}`` (rows of ``X`` in S), asks the membership oracle only about
modified samples (flips or pair completions), and minimises the composite loss of
:mod:`.pseudolikelihood` by projected gradient descent on ``[-W, W]^n``. It never samples from the model.

Standard errors (inferred from the Fisher information of a logit): for ``r = 1``
``se_i = 1 / sqrt(N_i σ(ẑ_i)(1 - σ(ẑ_i)))``; for ``r = 2`` the composite-likelihood sandwich
``H^{-1} J H^{-1}`` (``H`` the Hessian, ``J`` the outer product of per-sample scores), since
overlapping pair blocks are not independent.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.special import expit
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..constraints import Bool, Choice, Int, Real, check_arguments
from .oracles import ORACLE
from .pseudolikelihood import (
    _composite_stats,
    block_hessian,
    check_samples,
    composite_loss,
    identifiability,
    lbfgs_box,
    logistic_variance,
    make_blocks,
    per_sample_scores,
    projected_gd,
    singleton_closed_form,
)
from .samplers import COUNT, as_rng, log_mass, sample_product, sample_truncated_product

__all__ = ["TruncatedBooleanProduct", "UnidentifiableWarning"]

SOLVERS = ("gd", "closed_form", "lbfgs")
MIN_BLOCK_RATE = 0.01


class UnidentifiableWarning(UserWarning):
    """The data do not determine every coordinate: a coordinate with no information at all (its estimate
    is NaN), or a direction along which the loss is flat (e.g. the all-ones direction on an exact weight
    slice, where only differences ``z_i - z_j`` are identified; standard errors are NaN there)."""


POSITIVE = Real(low=0.0, closed="neither")
class TruncatedBooleanProduct(BaseEstimator):
    """Natural parameters of a Boolean product distribution from samples truncated to ``S``.

    ``μ_z(x) ∝ exp⟨z, x⟩`` on ``{0,1}^n``; the samples follow ``μ_{z*,S}``. The estimate minimises the
    truncated composite likelihood over singletons (``block_order=1``) or pairs (``block_order=2``).

    Args:
        oracle: membership oracle of S, ``oracle(X [m, n]) -> bool [m]`` (see :mod:`.oracles`).
        block_order: ``r ∈ {1, 2}``: 1 for sets where single flips stay in S (weight bands, halfspaces),
            2 for sets of minimum distance 2 (parity).
        width_bound: ``W > 0``, the box ``[-W, W]^n`` the estimate lives in (``W ≥ ‖z*‖_∞`` assumed).
        solver: ``"gd"`` (projected GD from 0, step ``1/L̂``), ``"closed_form"`` (``r = 1`` only:
            ``clip(logit(K_i/N_i), ±W)``) or ``"lbfgs"`` (SciPy L-BFGS-B with the same box).
        pairs: ``r = 2`` blocks: ``"cyclic"`` ``(i, i+1 mod n)``, ``"all"`` (``n ≤ 64``) or an int array ``[B, 2]``.
        tol: stop when the projected-gradient mapping ``‖(z_k - z_{k+1})/η‖_∞ ≤ tol`` (GD) / ``gtol`` (L-BFGS).
        max_iter: iteration cap (a ``ConvergenceWarning`` when reached).

    Attributes:
        natural_params_ ``[n]`` (NaN where unidentifiable), probs_ ``σ(ẑ) [n]``, fatness_ ``N_i/m [n]``
        (flip-feasibility rate under the truncated law), n_informative_ ``N_i [n]``, stderr_ ``[n]``,
        blocks_ ``[B, r]``, block_informative_ ``N_B [B]``, n_oracle_calls_ (membership questions, the
        ``m`` checks of the input included), n_iter_, converged_, n_clipped_ (identified coordinates at
        ``±W``), unidentifiable_ (indices nothing pins: NaN estimates), null_space_ ``[k, n]`` (orthonormal
        flat directions of the loss; ``⟨c, z⟩`` is identified iff ``c`` is orthogonal to them), identified_
        ``bool [n]`` (coordinate identified on its own), n_features_in_.
    """

    def __init__(self, oracle: Any = None, block_order: int = 1, width_bound: float = 8.0, solver: str = "gd",
                 pairs: Any = "cyclic", tol: float = 1e-7, max_iter: int = 10_000):
        self.oracle = oracle
        self.block_order = block_order
        self.width_bound = width_bound
        self.solver = solver
        self.pairs = pairs
        self.tol = tol
        self.max_iter = max_iter

    # ------------------------------------------------------------------------------------------ checks
    #: every parameter but ``pairs`` (checked by make_blocks), declared once (checked by ``fit`` first)
    _constraints = {"oracle": ORACLE, "block_order": Int(low=1, high=2), "width_bound": POSITIVE,
                    "solver": Choice(*SOLVERS), "tol": POSITIVE, "max_iter": Int(low=1)}

    def _validated(self) -> tuple[int, float, str, float, int]:
        check_arguments("TruncatedBooleanProduct", self._constraints,
                        {name: getattr(self, name) for name in self._constraints})
        if self.solver == "closed_form" and self.block_order != 1:
            raise ValueError('solver="closed_form" exists only for block_order=1; use "gd" or "lbfgs"')
        return int(self.block_order), float(self.width_bound), self.solver, float(self.tol), int(self.max_iter)

    # ------------------------------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any = None) -> TruncatedBooleanProduct:
        """Fit on ``X [m, n]`` (0/1 samples, every row in S); ``y`` is ignored. Returns ``self``."""
        r, width, solver, tol, max_iter = self._validated()
        Xb = check_samples(X, self.oracle)
        m, n = Xb.shape
        blocks = make_blocks(n, r, self.pairs)
        stats = _composite_stats(Xb, self.oracle, blocks)

        if solver == "closed_form":
            z, n_iter, converged = singleton_closed_form(stats, width), 0, True
        elif solver == "gd":
            z, n_iter, converged = projected_gd(stats, width, tol, max_iter)
        else:
            z, n_iter, converged = lbfgs_box(stats, width, tol, max_iter)
        if not converged:
            warnings.warn(f"{solver} stopped after max_iter = {max_iter} iterations before reaching tol = {tol}",
                          ConvergenceWarning, stacklevel=2)

        ident = identifiability(stats)
        # a null direction on one coordinate alone: nothing is known about it (N_i = 0, or only its
        # partners were pinned) -> NaN; on several: their signed combinations are known, the level is not
        alone = [c[0][0] for c in ident.components if c[0].size == 1]
        empty = np.flatnonzero(stats.n_informative == 0).tolist()
        unident = np.array(sorted(set(alone) | set(empty)), dtype=np.int64)
        z = np.asarray(z, dtype=np.float64).copy()
        z[unident] = np.nan
        if unident.size:
            warnings.warn(f"coordinates {unident[:20].tolist()}{' ...' if unident.size > 20 else ''} carry no "
                          "information (no feasible flip/completion in S pins them): not identifiable, set to NaN",
                          UnidentifiableWarning, stacklevel=2)
        shared = [c for c in ident.components if c[0].size > 1]
        if shared:
            warnings.warn(f"the loss is flat along {len(shared)} direction(s): {ident.describe(shared)}; "
                          "natural_params_ is the representative orthogonal to them, stderr_ is NaN for the "
                          f"{int(sum(c[0].size for c in shared))} coordinates involved (see null_space_, identified_)",
                          UnidentifiableWarning, stacklevel=2)
        if r == 2 and stats.n_block.min() / m < MIN_BLOCK_RATE:
            b = int(np.argmin(stats.n_block))
            warnings.warn(f"pair block {blocks[b].tolist()} is informative in only {stats.n_block[b]} of {m} samples "
                          f"(< {MIN_BLOCK_RATE:.0%}); its coordinates are poorly determined", UserWarning, stacklevel=2)

        self.natural_params_ = z
        self.probs_ = expit(z)
        self.n_informative_ = stats.n_informative.copy()
        self.fatness_ = stats.n_informative / m
        self.blocks_ = blocks
        self.block_informative_ = stats.n_block.copy()
        self.n_oracle_calls_ = int(m + stats.n_oracle_calls)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        ok = np.isfinite(z)
        self.n_clipped_ = int(np.sum(np.abs(z[ok]) >= width * (1 - 1e-9)))
        self.unidentifiable_ = unident
        self.null_space_ = ident.null_space
        self.identified_ = ident.identified.copy()
        self.stderr_ = self._stderr(z, stats, ident)
        self.n_features_in_ = n
        self.n_samples_ = m
        return self

    def _stderr(self, z: np.ndarray, stats, ident) -> np.ndarray:
        """Per-coordinate standard errors (see the module docstring); NaN where not identified.

        With null directions ``V`` (orthonormal rows) the sandwich uses the pseudo-inverse on the identified
        subspace, ``H⁺ = (H + VᵀV)⁻¹ - VᵀV`` (exact because ``H V = 0``); it is then valid for every
        identified coordinate, and the others get NaN.
        """
        ok = ident.identified & np.isfinite(z)
        if stats.r == 1:
            with np.errstate(divide="ignore"):
                se = 1.0 / np.sqrt(stats.n_informative * logistic_variance(np.where(np.isfinite(z), z, 0.0)))
            se[~ok] = np.nan
            return se
        zz = np.where(np.isfinite(z), z, 0.0)
        se = np.full(z.size, np.nan)
        S = per_sample_scores(zz, stats)
        if S is None or not ok.any():
            return se
        V = ident.null_space
        H = block_hessian(zz, stats)
        try:
            Hpinv = np.linalg.inv(H + V.T @ V) - V.T @ V
        except np.linalg.LinAlgError:
            return se
        cov = Hpinv @ (S.T @ S) @ Hpinv
        se[ok] = np.sqrt(np.clip(np.diag(cov)[ok], 0, None))
        return se

    # ------------------------------------------------------------------------------------------ use
    def score(self, X: Any, y: Any = None) -> float:
        """Mean composite (pseudo-)log-likelihood per sample of ``X`` (rows in S), ``-ℓ̂(ẑ)``, in nats.

        Unidentified coordinates are scored at 0 (their blocks then contribute ``-log |C_B|``).
        """
        check_is_fitted(self)
        Xb = check_samples(X, self.oracle)
        if Xb.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xb.shape[1]} columns, the model was fitted on {self.n_features_in_}")
        stats = _composite_stats(Xb, self.oracle, self.blocks_, keep_codes_max=0)
        return -composite_loss(np.nan_to_num(self.natural_params_), stats)

    def _usable_params(self, truncated: bool) -> np.ndarray:
        """``ẑ`` for the model's law; refuses NaN coordinates (and, untruncated, flat directions)."""
        check_is_fitted(self)
        check_arguments("TruncatedBooleanProduct", {"truncated": Bool()}, {"truncated": truncated})
        if self.unidentifiable_.size:
            raise ValueError(f"coordinates {self.unidentifiable_[:20].tolist()} were not identified (NaN): the fitted "
                             "law is undefined there")
        if not truncated and self.null_space_.shape[0]:
            raise ValueError("the untruncated law μ_ẑ is not identified along the loss's flat directions "
                             f"({self.null_space_.shape[0]} of them, see null_space_); use truncated=True")
        return self.natural_params_

    def score_samples(self, X: Any, truncated: bool = True) -> np.ndarray:
        """``log μ_{ẑ,S}(x)`` (``truncated=True``) or ``log μ_ẑ(x)`` for every row of ``X [m, n]``: ``float [m]``, nats.

        ``log μ_{ẑ,S}(x) = ⟨ẑ, x⟩ - Σ_i log(1 + e^{ẑ_i}) - log μ_ẑ(S)`` on S (``-inf`` off S); ``log μ_ẑ(S)`` comes
        from the exact DP (band, parity, halfspace) or enumeration (``n ≤ 20``).
        """
        z = self._usable_params(truncated)
        Xb = check_samples(X, lambda A: np.ones(A.shape[0], dtype=bool))
        if Xb.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xb.shape[1]} columns, the model was fitted on {self.n_features_in_}")
        log_p = Xb @ z - np.logaddexp(0.0, z).sum()
        if not truncated:
            return log_p
        inside = np.asarray(self.oracle(Xb), dtype=bool)
        return np.where(inside, log_p - log_mass(z, self.oracle), -np.inf)

    def predict_proba(self, X: Any, truncated: bool = True) -> np.ndarray:
        """Probability of every row of ``X [m, n]`` under the fitted law ``μ_{ẑ,S}`` (or ``μ_ẑ``): ``float [m]``.

        A density estimator has no classes: this is the probability mass function, ``exp(score_samples)``.
        """
        return np.exp(self.score_samples(X, truncated))

    def sample(self, n_samples: int = 1, truncated: bool = True, random_state: Any = None) -> np.ndarray:
        """``n_samples`` draws of the fitted ``μ_{ẑ,S}`` (exact DP where the oracle has one, else capped
        rejection) or of ``μ_ẑ``: ``int8 [n_samples, n]``."""
        z = self._usable_params(truncated)
        check_arguments("TruncatedBooleanProduct.sample", {"n_samples": COUNT}, {"n_samples": n_samples})
        m = int(n_samples)
        rng = as_rng(random_state)
        return sample_truncated_product(z, self.oracle, m, rng=rng) if truncated else sample_product(z, m, rng=rng)

    def confidence_intervals(self, level: float = 0.95, union: bool = True) -> np.ndarray:
        """Normal-approximation intervals ``ẑ ± q · se``: ``[n, 2]``.

        ``union=True`` (Bonferroni) makes all ``n`` intervals hold together with probability ``≥ level``
        asymptotically (``q = Φ^{-1}(1 - (1 - level)/(2n))``); ``False`` gives per-coordinate ones. Rows of
        clipped coordinates (at ``±W``) are not trustworthy; rows of unidentified ones are NaN.
        """
        check_is_fitted(self)
        check_arguments("TruncatedBooleanProduct.confidence_intervals",
                        {"level": Real(low=0.0, high=1.0, closed="neither")}, {"level": level})
        lv = float(level)
        n = self.natural_params_.size
        alpha = (1 - lv) / (n if union else 1)
        q = norm.ppf(1 - alpha / 2)
        return np.stack([self.natural_params_ - q * self.stderr_, self.natural_params_ + q * self.stderr_], axis=1)
