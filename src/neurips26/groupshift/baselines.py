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

from ..constraints import validate
from .partition import as_partition
from .solver import ALPHA, COUNT, TOL, XY, SolveResult, resolve_weights, solve_group_l1


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


@validate(**XY, alpha=ALPHA)
def skglm_group_lasso(X: Any, y: Any, groups: Any, alpha: float, *, weights: Any = "auto",
                      fit_intercept: bool = False, tol: float = 1e-10, w0: np.ndarray | None = None,
                      max_iter: int = 200, max_epochs: int = 50_000):
    """Fit skglm's ``GroupLasso`` (objective ``‖y - Xw‖²/(2n) + α Σ ω_g ‖w_g‖_2``) and return the estimator.

    ``w0`` presets ``coef_`` with ``warm_start=True``. ``groups`` as for our estimators; weights ``"auto"``
    = ``√|g|`` (our p = 2 convention). skglm's ``tol`` bounds its KKT violation, not a duality gap.
    """
    from skglm import GroupLasso

    from .solver import _validate_Xy

    alpha = float(alpha)
    X, y = _validate_Xy(X, y, "squared")
    part = as_partition(groups, X.shape[1])
    wts = resolve_weights(weights, part, 2.0)
    est = GroupLasso(groups=[g.tolist() for g in part.groups], alpha=alpha, weights=wts, tol=tol,
                     fit_intercept=fit_intercept, max_iter=max_iter, max_epochs=max_epochs,
                     warm_start=w0 is not None)
    if w0 is not None:
        est.coef_ = np.array(w0, dtype=np.float64)
        est.intercept_ = 0.0
    return est.fit(X, np.asarray(y, dtype=np.float64))


@validate(**XY, alpha=ALPHA, tol=TOL, switch_tol=TOL, max_epochs=COUNT)
def cold_newton_refit(X: Any, y: Any, new_groups: Any, alpha: float, *, tol: float = 1e-8,
                      switch_tol: float = 1e-4, max_epochs: int = 50_000) -> SolveResult:
    """Extra baseline (not in the paper): retrain from scratch with BCD to ``switch_tol``, then the same
    active-set Newton step groupshift uses, then the same certificate. p = 2, squared loss, no intercept.

    It tells how much of groupshift's gain is the second-order endpoint step rather than the partition transition.
    ``n_flops`` counts both phases.
    """
    from .shift import _active_set_newton
    from .solver import Problem, _group_norms, _validate_Xy

    alpha, tol, switch_tol, max_epochs = float(alpha), float(tol), float(switch_tol), int(max_epochs)
    X, y = _validate_Xy(X, y, "squared")
    part = as_partition(new_groups, X.shape[1])
    wts = resolve_weights("auto", part, 2.0)
    prob = Problem(X, y, part, wts, alpha, 2.0, "squared", lipschitz_cache={})
    rough = prob.solve(None, tol=max(switch_tol, tol), max_epochs=max_epochs)
    seed = np.flatnonzero(_group_norms(rough.coef, part.labels_, part.n_groups, 2.0)).tolist()
    n_cols = sum(part.groups[k].size for k in seed)
    w = rough.coef
    epochs = rough.n_epochs
    if seed and n_cols + n_cols ** 2 / X.shape[0] <= 200:  # the same cost rule as groupshift
        w_newton, _ = _active_set_newton(prob, w, seed)
        if w_newton is not None:
            w = w_newton
    res = prob.solve(w, tol=tol, max_epochs=max_epochs, ws_init=seed or None)
    res.n_epochs += epochs
    return res
