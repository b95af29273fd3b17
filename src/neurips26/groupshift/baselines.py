"""What GroupShift is compared with: retraining from scratch, the plain warm start, and skglm's GroupLasso.

(a) ``cold_refit``: the same working-set BCD and certificate as GroupShift, from ``w = 0`` on ``G'``.
(b) ``warm_refit``: the same solver on ``G'`` from ``w_old`` (it starts with a full gap pass and grows the
    working set from the support of ``w_old``); it is given the old fit's Lipschitz cache too, so the
    comparison isolates GroupShift's locality (certificates + working set seeded by the primitives).
(c) ``skglm_group_lasso``: skglm's ``GroupLasso`` (p = 2 only, squared loss), cold or warm, as external peer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .partition import as_partition
from .solver import SolveResult, resolve_weights, solve_group_l1


def cold_refit(X: Any, y: Any, new_groups: Any, alpha: float, p: float = 2.0, *, weights: Any = "auto",
               loss: str = "squared", fit_intercept: bool = False, tol: float = 1e-8,
               max_epochs: int = 50_000) -> SolveResult:
    """Retrain from scratch on ``new_groups`` (fresh Lipschitz constants). Returns a :class:`SolveResult`."""
    return solve_group_l1(X, y, new_groups, alpha, p, weights=weights, loss=loss, fit_intercept=fit_intercept,
                          tol=tol, max_epochs=max_epochs, lipschitz_cache={})


def warm_refit(X: Any, y: Any, w_old: Any, new_groups: Any, alpha: float, p: float = 2.0, *,
               weights: Any = "auto", loss: str = "squared", fit_intercept: bool = False, tol: float = 1e-8,
               max_epochs: int = 50_000, lipschitz_cache: dict | None = None) -> SolveResult:
    """The same solver on ``new_groups`` started from ``w_old [d]``."""
    return solve_group_l1(X, y, new_groups, alpha, p, weights=weights, loss=loss, fit_intercept=fit_intercept,
                          w0=np.asarray(w_old, dtype=float), tol=tol, max_epochs=max_epochs,
                          lipschitz_cache=lipschitz_cache)


def skglm_group_lasso(X: Any, y: Any, groups: Any, alpha: float, *, weights: Any = "auto",
                      fit_intercept: bool = False, tol: float = 1e-10, w0: np.ndarray | None = None,
                      max_iter: int = 200, max_epochs: int = 50_000):
    """Fit skglm's ``GroupLasso`` (objective ``‖y - Xw‖²/(2n) + α Σ ω_g ‖w_g‖_2``) and return the estimator.

    ``w0`` presets ``coef_`` with ``warm_start=True``. ``groups`` as for our estimators; weights ``"auto"``
    = ``√|g|`` (our p = 2 convention). skglm's ``tol`` bounds its KKT violation, not a duality gap.
    """
    from skglm import GroupLasso

    X = np.asarray(X, dtype=np.float64)
    part = as_partition(groups, X.shape[1])
    wts = resolve_weights(weights, part, 2.0)
    est = GroupLasso(groups=[g.tolist() for g in part.groups], alpha=alpha, weights=wts, tol=tol,
                     fit_intercept=fit_intercept, max_iter=max_iter, max_epochs=max_epochs,
                     warm_start=w0 is not None)
    if w0 is not None:
        est.coef_ = np.array(w0, dtype=np.float64)
        est.intercept_ = 0.0
    return est.fit(X, np.asarray(y, dtype=np.float64))
