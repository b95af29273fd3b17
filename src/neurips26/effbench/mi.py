"""Mutual-information estimators used by mRMR, vectorised over the columns of a score matrix.

Three estimators, all in nats:

* :func:`ross_mi` - binary (discrete) question ``x`` against a continuous target ``y``: the kNN
  estimator of Ross (2014), the one behind ``sklearn.feature_selection.mutual_info_classif``.
* :func:`ksg_mi` - continuous ``x`` against continuous ``y``: Kraskov-Stoegbauer-Grassberger
  (2004) algorithm 1, the one behind ``mutual_info_regression``.
* :func:`plugin_mi_binary` - binary against binary: the plug-in MI of the 2x2 contingency table.

The kNN estimators compare every pair of models, so one column costs ``O(M^2)``; columns are
processed in chunks so that at most about 4 M doubles are alive at once.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

from ._validation import check_int, check_matrix, check_vector

_CHUNK_ELEMENTS = 4_000_000


def jitter_target(y: np.ndarray, random_state: int | None = 0) -> np.ndarray:
    """Scale ``y`` by its standard deviation and add 1e-10-sized Gaussian noise, exactly as
    scikit-learn does for continuous variables before a kNN MI estimate.

    Ties in ``y`` (many models share a score) otherwise make kNN distances zero and the estimate
    depends on tie order. ``y``: ``(M,)`` floats; returns ``(M,)``.
    """
    y = check_vector(y, name="y")
    std = y.std()
    scaled = y / std if std > 0 else y.copy()
    rng = np.random.RandomState(random_state)
    noise = rng.standard_normal(size=(y.shape[0], 1))[:, 0]
    return scaled + 1e-10 * max(1.0, float(np.mean(np.abs(scaled)))) * noise


def _chunks(n_columns: int, n_rows: int):
    step = max(1, _CHUNK_ELEMENTS // max(1, n_rows * n_rows))
    for start in range(0, n_columns, step):
        yield slice(start, min(n_columns, start + step))


def ross_mi(X: np.ndarray, y: np.ndarray, *, k: int = 3) -> np.ndarray:
    """MI between each discrete column of ``X`` and the continuous ``y`` (Ross 2014), in nats.

    For a point ``i`` with label ``x_i``: ``d_i`` = distance in ``y`` to its ``k_i``-th nearest
    neighbour with the same label (``k_i = min(k, N_{x_i} - 1)``), ``m_i`` = number of points of any
    label within ``d_i`` (self included, strictly closer), and

    .. math:: I = \\psi(M) + \\langle\\psi(k_i)\\rangle - \\langle\\psi(N_{x_i})\\rangle
              - \\langle\\psi(m_i)\\rangle,

    clipped at 0. Points whose label occurs once are dropped (as scikit-learn does).

    Args:
        X: ``(M, N)`` discrete values (0/1 here), one column per question.
        y: ``(M,)`` continuous target; jitter it first (:func:`jitter_target`) when it has ties.
        k: neighbours, ``k >= 1``.
    Returns:
        ``(N,)`` MI estimates in nats, ``>= 0``.
    """
    X = check_matrix(X, name="X")
    y = check_vector(y, name="y", length=X.shape[0])
    k = check_int(k, name="k", low=1)
    n_models, n_cols = X.shape
    # D[i, j] = |y_i - y_j|, shared by every column: [M, M]
    D = np.abs(y[:, None] - y[None, :])
    eye = np.eye(n_models, dtype=bool)
    out = np.zeros(n_cols)
    for cols in _chunks(n_cols, n_models):
        Xc = X[:, cols].T  # [C, M]
        same = Xc[:, :, None] == Xc[:, None, :]  # [C, M, M]
        count = same.sum(-1)  # N_{x_i}, self included: [C, M]
        kept = count > 1
        k_i = np.minimum(k, count - 1)
        # distance to the k_i-th same-label neighbour (self excluded)
        Dsame = np.where(same & ~eye, D[None], np.inf)
        Dsame.sort(axis=-1)
        radius = np.take_along_axis(Dsame, np.maximum(k_i - 1, 0)[..., None], axis=-1)[..., 0]
        radius = np.nextafter(radius, 0)
        # m_i: kept points (any label) at distance <= radius (just below d_i), self included
        within = (D[None] <= radius[..., None]) & kept[:, None, :]
        m_i = within.sum(-1)
        n_eff = kept.sum(-1)
        # every kept point has k_i >= 1 and m_i >= 1 (itself), so the digammas below are finite
        psi_k = np.where(kept, digamma(np.maximum(k_i, 1)), 0.0).sum(-1)
        psi_n = np.where(kept, digamma(np.maximum(count, 1)), 0.0).sum(-1)
        psi_m = np.where(kept, digamma(np.maximum(m_i, 1)), 0.0).sum(-1)
        mi = digamma(np.maximum(n_eff, 1)) + (psi_k - psi_n - psi_m) / np.maximum(n_eff, 1)
        mi = np.where(n_eff > 0, mi, 0.0)
        out[cols] = np.maximum(mi, 0.0)
    return out


def ksg_mi(X: np.ndarray, y: np.ndarray, *, k: int = 3) -> np.ndarray:
    """MI between each continuous column of ``X`` and the continuous ``y`` (KSG algorithm 1), nats.

    With the max-norm in the joint space, ``r_i`` = distance to the ``k``-th joint neighbour,
    ``n_x(i)``, ``n_y(i)`` = points strictly within ``r_i`` in each marginal (self excluded):

    .. math:: I = \\psi(M) + \\psi(k) - \\langle\\psi(n_x + 1)\\rangle - \\langle\\psi(n_y + 1)\\rangle.

    Jitter both sides first when they have ties. ``X``: ``(M, N)``; ``y``: ``(M,)``; returns ``(N,)``.
    """
    X = check_matrix(X, name="X")
    y = check_vector(y, name="y", length=X.shape[0])
    k = check_int(k, name="k", low=1)
    n_models, n_cols = X.shape
    if k >= n_models:
        raise ValueError(f"k must be smaller than the number of rows ({n_models}), got {k}")
    Dy = np.abs(y[:, None] - y[None, :])
    eye = np.eye(n_models, dtype=bool)
    out = np.zeros(n_cols)
    for cols in _chunks(n_cols, n_models):
        Xc = X[:, cols].T  # [C, M]
        Dx = np.abs(Xc[:, :, None] - Xc[:, None, :])  # [C, M, M]
        joint = np.where(eye, np.inf, np.maximum(Dx, Dy[None]))
        radius = np.partition(joint, k - 1, axis=-1)[..., k - 1]
        radius = np.nextafter(radius, 0)[..., None]
        n_x = (Dx <= radius).sum(-1) - 1
        n_y = (Dy[None] <= radius).sum(-1) - 1
        mi = digamma(n_models) + digamma(k) - digamma(n_x + 1).mean(-1) - digamma(n_y + 1).mean(-1)
        out[cols] = np.maximum(mi, 0.0)
    return out


def plugin_mi_binary(X: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Plug-in MI (nats) of the 2x2 table between each 0/1 column of ``X`` ``(M, N)`` and ``x`` ``(M,)``.

    .. math:: I = \\sum_{a,b \\in \\{0,1\\}} p_{ab} \\log \\frac{p_{ab}}{p_a p_b}, \\quad 0 \\log 0 = 0.
    """
    X = check_matrix(X, name="X", binary=True)
    x = check_vector(x, name="x", length=X.shape[0])
    if not np.all((x == 0) | (x == 1)):
        raise ValueError("x must be 0/1 (one answer per model)")
    m = X.shape[0]
    n11 = x @ X
    n1_ = x.sum()
    n_1 = X.sum(0)
    table = np.stack([m - n1_ - n_1 + n11, n_1 - n11, n1_ - n11, n11])  # (00, 01, 10, 11): [4, N]
    row = np.stack([m - n1_, m - n1_, n1_, n1_])[:, None] * np.ones_like(table)
    col = np.stack([m - n_1, n_1, m - n_1, n_1])
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(table > 0, table / m * np.log(table * m / (row * col)), 0.0)
    return np.maximum(terms.sum(0), 0.0)
