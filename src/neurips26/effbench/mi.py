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

from neurips26.constraints import Int, check_arguments, validate

from ._validation import check_matrix, check_vector

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


@validate(k=Int(low=1))
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
    k = int(k)
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


@validate(k=Int(low=1))
def ksg_mi(X: np.ndarray, y: np.ndarray, *, k: int = 3) -> np.ndarray:
    """MI between each continuous column of ``X`` and the continuous ``y`` (KSG algorithm 1), nats.

    With the max-norm in the joint space, ``r_i`` = distance to the ``k``-th joint neighbour,
    ``n_x(i)``, ``n_y(i)`` = points strictly within ``r_i`` in each marginal (self excluded):

    .. math:: I = \\psi(M) + \\psi(k) - \\langle\\psi(n_x + 1)\\rangle - \\langle\\psi(n_y + 1)\\rangle.

    Jitter both sides first when they have ties. ``X``: ``(M, N)``; ``y``: ``(M,)``; returns ``(N,)``.
    """
    X = check_matrix(X, name="X")
    y = check_vector(y, name="y", length=X.shape[0])
    n_models, n_cols = X.shape
    check_arguments("ksg_mi", {"k": Int(high=n_models - 1)}, {"k": k})  # fewer neighbours than rows
    k = int(k)
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


# ---------------------------------------------------------------------------------------------------
# Missing answers: every estimate reads only the models that answered


def plugin_mi_binary_masked(X: np.ndarray, x: np.ndarray) -> np.ndarray:
    """:func:`plugin_mi_binary` where ``NaN`` marks a missing answer: the 2x2 table of column ``j`` counts only
    the models that answered both ``x`` and question ``j`` (pairwise deletion).

    With the observation masks ``o = [x observed]`` and ``O_j = [X_j observed]``, the table of column ``j`` is
    built from the ``m_j = sum_i o_i O_ij`` models of the pair; a pair with fewer than two such models has MI 0.
    ``X``: ``(M, N)`` 0/1/NaN; ``x``: ``(M,)`` 0/1/NaN; returns ``(N,)`` nats.
    """
    X = np.asarray(X, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    seen_X = ~np.isnan(X)  # O: [M, N]
    seen_x = ~np.isnan(x)  # o: [M]
    X0 = np.where(seen_X, X, 0.0)
    x0 = np.where(seen_x, x, 0.0)
    both = seen_X & seen_x[:, None]  # [M, N]
    m = both.sum(0).astype(np.float64)  # models of each pair
    n11 = x0 @ (X0 * both)  # x = 1 and X_j = 1
    n1_ = x0 @ both  # x = 1 (among the pair's models)
    n_1 = (X0 * both).sum(0)  # X_j = 1
    table = np.stack([m - n1_ - n_1 + n11, n_1 - n11, n1_ - n11, n11])  # (00, 01, 10, 11): [4, N]
    row = np.stack([m - n1_, m - n1_, n1_, n1_])
    col = np.stack([m - n_1, n_1, m - n_1, n_1])
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(table > 0, table / m * np.log(table * m / (row * col)), 0.0)
    return np.where(m >= 2, np.maximum(terms.sum(0), 0.0), 0.0)


def masked_columns(estimate, X: np.ndarray, y: np.ndarray, *, min_rows: int = 2) -> np.ndarray:
    """Apply a column-wise MI ``estimate(X, y) -> (N,)`` where ``NaN`` marks a missing answer (in ``X`` or ``y``).

    Each column ``j`` is estimated on the models where both ``X[:, j]`` and ``y`` are observed (pairwise
    deletion); columns observed wherever ``y`` is go through one vectorised call, the others one by one.
    A column with fewer than ``min_rows`` such models gets MI 0. ``X``: ``(M, N)``; ``y``: ``(M,)``;
    returns ``(N,)`` nats.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    rows_y = ~np.isnan(y)
    seen = ~np.isnan(X) & rows_y[:, None]  # [M, N]: both observed
    complete = seen.sum(0) == rows_y.sum()
    out = np.zeros(X.shape[1])
    if complete.any() and rows_y.sum() >= min_rows:
        out[complete] = estimate(X[rows_y][:, complete], y[rows_y])
    for j in np.flatnonzero(~complete):
        rows = seen[:, j]
        if rows.sum() >= min_rows:
            out[j] = estimate(X[rows, j:j + 1], y[rows])[0]
    return out


# ---------------------------------------------------------------------------------------------------
# Plug-in MI after binning the target (the naive estimator the paper improves on)


@validate(bins=Int(low=2))
def binned_relevance(S: np.ndarray, y: np.ndarray, bins: int = 10) -> np.ndarray:
    r"""Plug-in MI (nats) of each 0/1 column of ``S`` ``(M, N)`` with ``y`` ``(M,)`` cut into ``bins`` quantile
    bins ``b``:

    .. math:: \hat I(x; b) = \sum_{u, v} \hat p(u, v) \log \frac{\hat p(u, v)}{\hat p(u) \hat p(v)}.

    It throws away the order within a bin, which is why the paper prefers the kNN estimator
    (:func:`ross_mi`); kept as the naive reference of the MI-estimator comparison.
    """
    S = check_matrix(S, name="S", binary=True)
    y = check_vector(y, name="y", length=S.shape[0])
    bins = int(bins)
    edges = np.quantile(y, np.linspace(0, 1, bins + 1)[1:-1])
    b = np.searchsorted(edges, y, side="right")  # bin index in [0, bins)
    onehot = np.eye(int(b.max()) + 1)[b]  # [M, B]
    M = len(y)
    p1 = onehot.T @ S / M  # [B, N]: P(bin, x = 1)
    pb = onehot.mean(0)[:, None]  # [B, 1]: P(bin)
    p0 = pb - p1  # P(bin, x = 0)
    px1 = S.mean(0)[None, :]  # [1, N]: P(x = 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(p1 > 0, p1 * np.log(p1 / (pb * px1)), 0.0)
        t0 = np.where(p0 > 0, p0 * np.log(p0 / (pb * (1 - px1))), 0.0)
    return np.maximum((t1 + t0).sum(0), 0.0)
