"""What TruncPL-GD is compared against.

* :class:`NaiveBooleanProduct`: ``ẑ = logit(x̄)``, ignoring the truncation (biased under truncation).
  Fitted on *untruncated* samples it is the untruncated MLE, the minimax reference line
  (:class:`UntruncatedBooleanProduct`, same estimator, named for that use).
* :class:`TruncatedMLESGD`: our re-implementation of the FKT'20-style algorithm in delphi.ai's
  ``TruncatedBernoulli`` (we do not depend on delphi): projected SGD on the truncated negative
  log-likelihood, whose gradient ``E_{z,S}[x] - x`` needs *model samples at the current parameter*,
  drawn by rejection from ``μ_z`` (about ``1/μ_z(S)`` oracle calls per draw).
* :class:`ExactTruncatedMLE`: the truncated MLE itself, by enumerating S (``n ≤ 20``) and projected Newton;
  the statistical-efficiency gold standard.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from neurips26.constraints import Callable, Choice, Int, Optional, Real, check_arguments

from .estimator import POSITIVE
from .pseudolikelihood import check_samples
from .samplers import ENUM_MAX_N, RejectionLimitError, as_rng, enumerate_set, rejection_sample

__all__ = ["NaiveBooleanProduct", "UntruncatedBooleanProduct", "TruncatedMLESGD", "ExactTruncatedMLE",
           "RejectionLimitError"]


def _clipped_logit(mean: np.ndarray, width: float) -> np.ndarray:
    """``clip(logit(p), -W, W)`` with ``p ∈ {0, 1}`` mapped to ``∓W``."""
    with np.errstate(divide="ignore"):
        z = np.log(mean) - np.log1p(-mean)
    return np.clip(z, -width, width)


def _binary(X: Any, name: str = "X") -> np.ndarray:
    """0/1 samples without a membership check (for estimators that do not know S)."""
    return check_samples(X, lambda A: np.ones(A.shape[0], dtype=bool), name)


class NaiveBooleanProduct:
    """``ẑ_i = clip(logit(mean_t x_ti), ±W)``: the product MLE that ignores the truncation.

    Args:
        width_bound: ``W > 0`` (keeps all-0 / all-1 columns finite).

    Attributes: natural_params_ ``[n]``, probs_ ``[n]``.
    """

    def __init__(self, width_bound: float = 8.0):
        self.width_bound = width_bound

    def get_params(self, deep: bool = True) -> dict:
        return {"width_bound": self.width_bound}

    def fit(self, X: Any, y: Any = None) -> NaiveBooleanProduct:
        """Fit on ``X [m, n]`` in {0, 1}; returns ``self``."""
        check_arguments("NaiveBooleanProduct", {"width_bound": POSITIVE}, {"width_bound": self.width_bound})
        width = float(self.width_bound)
        Xb = _binary(X)
        self.natural_params_ = _clipped_logit(Xb.mean(axis=0), width)
        self.probs_ = expit(self.natural_params_)
        return self


class UntruncatedBooleanProduct(NaiveBooleanProduct):
    """The untruncated MLE, fitted on fresh samples of ``μ_{z*}`` (no truncation): the minimax line."""


class TruncatedMLESGD:
    """Projected SGD on the truncated NLL with rejection-sampled model draws (FKT'20 / delphi.ai style).

    ``ℓ(z) = -⟨z, x̄⟩ + log Σ_{x∈S} e^{⟨z,x⟩}``, ``∇ℓ(z) = E_{z,S}[x] - x̄``; each step estimates it by
    ``ȳ - x̄_batch`` with ``batch_size`` data rows and ``batch_size`` draws ``y ∼ μ_{z,S}`` (rejection from
    ``μ_z``; every candidate costs one oracle call). Step ``η_t = lr/√t``.

    Projection set (two variants):

    * ``alpha`` given (FKT'20 / delphi.ai): the ℓ2 ball around the empirical (naive) logits ``z_0``,
      ``K_ρ = {z : ‖z - z_0‖_2 ≤ ρ} ∩ [-W, W]^n`` with ``ρ = r · log(1/√α)``, where ``α`` is a *lower bound*
      on the mass ``μ_{z*}(S)`` that the user supplies (their assumption "S has mass ≥ α"; never the true
      mass, which no user knows). The projection onto the intersection is exact (:meth:`project`).
      Restart-until-interior: a trial of ``n_steps`` steps from ``z_0`` whose last iterate ends on the
      ball's surface means the ball may exclude ``z*``; the radius grows by ``rate`` (delphi: ``r ← 1.5 r``
      per trial) and SGD restarts from ``z_0``, at most ``n_trials`` trials.
    * ``alpha=None``: the ball-free variant, projected onto the box ``[-W, W]^n`` only (one trial).

    The output of a trial is the average of its last half of iterates (Polyak-Ruppert; inferred, it
    favours the baseline).

    Args:
        oracle: membership oracle of S.
        lr: ``η_0``. batch_size: data rows and model draws per step. radius: ``r`` of the ball.
        alpha: a lower bound on ``μ_{z*}(S)`` in (0, 1), or ``None`` for the ball-free variant.
        n_steps: SGD steps per trial. n_trials: at most this many trials (ball only). rate: radius growth
        per restart (> 1). width_bound: ``W``.
        max_tries: cap on rejection candidates per step. max_oracle_calls: optional cap on the total.
        on_limit: ``"raise"`` (:class:`RejectionLimitError` at a cap) or ``"stop"`` (keep the estimate so
            far and set ``limit_reached_``: a run that hits the budget is a failed run, not an error).
        random_state: seed or Generator.

    Attributes: natural_params_, probs_, n_oracle_calls_, n_steps_ (all trials), n_trials_, radius_ (final
    ρ, ``inf`` without a ball), interior_ (the last trial ended strictly inside the ball), limit_reached_,
    trajectory_ (list of ``{"trial", "step", "oracle_calls", "z_avg"}`` at steps 1, 2, 4, ... and the last of
    each trial; ``oracle_calls`` is cumulative over trials; ``z_avg`` averages the iterates after the
    previous checkpoint of the trial).
    """

    def __init__(self, oracle: Any = None, lr: float = 0.1, batch_size: int = 10, radius: float = 1.0,
                 alpha: float | None = None, n_steps: int = 2000, n_trials: int = 3, rate: float = 1.5,
                 width_bound: float = 8.0, max_tries: int = 10**6, max_oracle_calls: int | None = None,
                 on_limit: str = "raise", random_state: Any = None):
        self.oracle = oracle
        self.lr = lr
        self.batch_size = batch_size
        self.radius = radius
        self.alpha = alpha
        self.n_steps = n_steps
        self.n_trials = n_trials
        self.rate = rate
        self.width_bound = width_bound
        self.max_tries = max_tries
        self.max_oracle_calls = max_oracle_calls
        self.on_limit = on_limit
        self.random_state = random_state

    _PARAMS = ("oracle", "lr", "batch_size", "radius", "alpha", "n_steps", "n_trials", "rate", "width_bound",
               "max_tries", "max_oracle_calls", "on_limit", "random_state")

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in self._PARAMS}

    #: every parameter, declared once (checked by ``fit`` before anything changes)
    _constraints = {
        "oracle": Callable(), "lr": Real(low=0.0, closed="neither"), "batch_size": Int(low=1),
        "radius": Real(low=0.0, closed="neither"), "alpha": Optional(Real(low=0.0, high=1.0, closed="neither")),
        "n_steps": Int(low=1), "n_trials": Int(low=1), "rate": Real(low=1.0, closed="neither"),
        "width_bound": Real(low=0.0, closed="neither"), "max_tries": Int(low=1),
        "max_oracle_calls": Optional(Int(low=1)), "on_limit": Choice("raise", "stop"),
    }

    def _validated(self) -> tuple:
        check_arguments("TruncatedMLESGD", self._constraints, self.get_params())
        ints = {k: int(getattr(self, k)) for k in ("batch_size", "n_steps", "n_trials", "max_tries")}
        return float(self.lr), float(self.radius), float(self.width_bound), float(self.rate), ints

    @staticmethod
    def ball_radius(radius: float, alpha: float) -> float:
        """``ρ = r · log(1/√α)``: the FKT'20 / delphi.ai radius of the ball around the empirical logits."""
        return float(radius * 0.5 * np.log(1.0 / alpha))

    def fit(self, X: Any, y: Any = None) -> TruncatedMLESGD:
        """Fit on ``X [m, n]`` (rows in S); returns ``self``."""
        lr, radius, width, rate, ints = self._validated()
        rng = as_rng(self.random_state)
        Xb = check_samples(X, self.oracle).astype(np.float64)
        z0 = _clipped_logit(Xb.mean(axis=0), width)
        rho = self.ball_radius(radius, self.alpha) if self.alpha is not None else np.inf
        n_trials = ints["n_trials"] if self.alpha is not None else 1
        state = {"calls": 0, "rate": None, "trajectory": [], "limit": False, "steps": 0}
        z_hat, interior = z0, True
        for trial in range(n_trials):
            z_hat, z_last = self._trial(Xb, z0, rho, width, lr, ints, rng, trial, state)
            interior = not np.isfinite(rho) or np.linalg.norm(z_last - z0) < rho * (1 - 1e-9)
            if interior or state["limit"] or trial == n_trials - 1:
                break
            rho *= rate  # the trial ended on the surface: grow the ball, restart from z_0
        self.natural_params_ = z_hat
        self.probs_ = expit(z_hat)
        self.n_oracle_calls_ = int(state["calls"])
        self.n_steps_ = int(state["steps"])
        self.n_trials_ = trial + 1
        self.radius_ = float(rho)
        self.interior_ = bool(interior)
        self.limit_reached_ = bool(state["limit"])
        self.trajectory_ = state["trajectory"]
        return self

    def _trial(self, Xb, z0, rho, width, lr, ints, rng, trial, state):
        """One SGD run of ``n_steps`` from ``z_0`` inside ``K_ρ``: (Polyak average of the last half, last iterate)."""
        m, n = Xb.shape
        z = z0.copy()
        total, bs = ints["n_steps"], ints["batch_size"]
        running, last_ck = np.zeros(n), 0  # Σ of iterates since the last checkpoint
        tail_sum, tail_n, tail_from = np.zeros(n), 0, total // 2
        for t in range(1, total + 1):
            batch = Xb[rng.integers(0, m, bs)]
            try:
                draws, tries = rejection_sample(z, self.oracle, bs, rng, ints["max_tries"], rate_hint=state["rate"])
            except RejectionLimitError as err:
                if self.on_limit == "raise":
                    raise RejectionLimitError(f"TruncatedMLESGD step {t}: {err}") from None
                state["calls"] += ints["max_tries"]
                state["limit"] = True
                break
            state["calls"] += tries
            r_old = state["rate"]
            state["rate"] = bs / tries if r_old is None else 0.8 * r_old + 0.2 * bs / tries
            if self.max_oracle_calls is not None and state["calls"] > self.max_oracle_calls:
                if self.on_limit == "raise":
                    raise RejectionLimitError(f"TruncatedMLESGD used {state['calls']} oracle calls by step {t}, "
                                              f"over max_oracle_calls = {self.max_oracle_calls}")
                state["limit"] = True
                break
            # z ← Π_K(z - η_t (ȳ - x̄_batch)),  η_t = η_0 / √t
            z = self.project(z - lr / np.sqrt(t) * (draws.mean(axis=0) - batch.mean(axis=0)), z0, rho, width)
            state["steps"] += 1
            running += z
            if t > tail_from:
                tail_sum += z
                tail_n += 1
            if t & (t - 1) == 0 or t == total:
                state["trajectory"].append({"trial": trial, "step": t, "oracle_calls": state["calls"],
                                            "z_avg": running / (t - last_ck)})
                running, last_ck = np.zeros(n), t
        # a run stopped by its budget before the averaging window returns its current iterate
        return (tail_sum / tail_n if tail_n else z), z

    @staticmethod
    def project(z: np.ndarray, center: np.ndarray, rho: float, width: float) -> np.ndarray:
        """Exact Euclidean projection onto ``{y : ‖y - c‖_2 ≤ ρ} ∩ [-W, W]^n`` (``c`` inside the box).

        KKT: ``y(λ) = clip((z + λ c)/(1 + λ), -W, W)`` for the ball's multiplier ``λ ≥ 0``; ``‖y(λ) - c‖`` falls
        with ``λ``, so ``λ`` is found by bisection on ``‖y(λ) - c‖ = ρ`` (``λ = 0`` when the clipped point is
        already inside the ball).
        """
        y = np.clip(z, -width, width)
        if not np.isfinite(rho) or np.linalg.norm(y - center) <= rho:
            return y
        lo, hi = 0.0, 1.0
        while np.linalg.norm(np.clip((z + hi * center) / (1 + hi), -width, width) - center) > rho:
            hi *= 2.0
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if np.linalg.norm(np.clip((z + mid * center) / (1 + mid), -width, width) - center) > rho:
                lo = mid
            else:
                hi = mid
        return np.clip((z + hi * center) / (1 + hi), -width, width)


class ExactTruncatedMLE:
    """The truncated MLE by enumeration of S (``n ≤ 20``) and projected Newton on ``[-W, W]^n``.

    ``f(z) = log Σ_{x∈S} e^{⟨z,x⟩} - ⟨z, x̄⟩``, ``∇f = E_{z,S}[x] - x̄``, ``∇²f = Cov_{z,S}(x)``.
    At the optimum (inside the box) the truncated mean matches the sample mean.

    Args:
        oracle: membership oracle of S. width_bound: ``W``. tol: on the projected gradient (∞-norm).
        max_iter: Newton iterations.

    Attributes: natural_params_, probs_, n_iter_, converged_, n_oracle_calls_ (``2^n``, the enumeration).
    """

    def __init__(self, oracle: Any = None, width_bound: float = 8.0, tol: float = 1e-10, max_iter: int = 200):
        self.oracle = oracle
        self.width_bound = width_bound
        self.tol = tol
        self.max_iter = max_iter

    def get_params(self, deep: bool = True) -> dict:
        return {"oracle": self.oracle, "width_bound": self.width_bound, "tol": self.tol, "max_iter": self.max_iter}

    def fit(self, X: Any, y: Any = None) -> ExactTruncatedMLE:
        """Fit on ``X [m, n]`` (rows in S, ``n ≤ 20``); returns ``self``."""
        check_arguments("ExactTruncatedMLE", {"oracle": Callable(), "width_bound": POSITIVE, "tol": POSITIVE,
                                              "max_iter": Int(low=1)}, self.get_params())
        width, tol = float(self.width_bound), float(self.tol)
        Xb = check_samples(X, self.oracle)
        n = Xb.shape[1]
        if n > ENUM_MAX_N:
            raise ValueError(f"ExactTruncatedMLE enumerates S and needs n <= {ENUM_MAX_N}, got n = {n}")
        pts = enumerate_set(self.oracle, n).astype(np.float64)  # [|S|, n]
        xbar = Xb.mean(axis=0)
        z, it, ok = self._newton(pts, xbar, width, tol, int(self.max_iter))
        self.natural_params_, self.n_iter_, self.converged_ = z, it, ok
        self.probs_ = expit(z)
        self.n_oracle_calls_ = int(2 ** n + Xb.shape[0])
        return self

    @staticmethod
    def _objective(z: np.ndarray, pts: np.ndarray, xbar: np.ndarray):
        logw = pts @ z
        top = logw.max()
        w = np.exp(logw - top)
        zsum = w.sum()
        w /= zsum
        f = np.log(zsum) + top - z @ xbar
        mean = w @ pts
        return f, mean - xbar, (pts * w[:, None]).T @ pts - np.outer(mean, mean)

    def _newton(self, pts, xbar, width, tol, max_iter):
        z = np.zeros(pts.shape[1])
        for it in range(1, max_iter + 1):
            f, g, H = self._objective(z, pts, xbar)
            # active bounds: at -W pushing down or at +W pushing up
            active = ((z <= -width) & (g > 0)) | ((z >= width) & (g < 0))
            pg = np.where(active, 0.0, g)
            if np.max(np.abs(pg)) <= tol:
                return z, it - 1, True
            free = ~active
            d = np.zeros_like(z)
            Hf = H[np.ix_(free, free)] + 1e-12 * np.eye(int(free.sum()))
            d[free] = -np.linalg.solve(Hf, g[free])
            step = 1.0
            while True:  # Armijo backtracking on the projected path
                z_new = np.clip(z + step * d, -width, width)
                f_new = self._objective(z_new, pts, xbar)[0]
                if f_new <= f + 1e-4 * g @ (z_new - z) or step < 1e-12:
                    break
                step *= 0.5
            if np.max(np.abs(z_new - z)) <= 1e-15:
                return z_new, it, np.max(np.abs(pg)) <= max(tol, 1e-8)
            z = z_new
        return z, max_iter, False
