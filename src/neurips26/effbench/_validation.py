"""Input checks shared by the effbench estimators: the answer-matrix domain (0/1 or [0, 1], missing answers),
the question budget and scikit-learn's ``check_array`` contract. Types, ranks, ranges and finiteness are
declared with :mod:`neurips26.constraints`."""

from __future__ import annotations

import numpy as np

from neurips26.constraints import AnyOf, ArrayLike, Int, Real, check_arguments

_MATRIX = ArrayLike(ndim=2, finite=False)  # NaN/inf are located below, with the model and question
_VECTOR = ArrayLike(ndim=1)


def check_columns(arr: np.ndarray, name: str, columns: tuple[int, str] | None) -> None:
    """``columns = (n, what)``: ``arr`` must have ``n`` columns (``what`` says which: "the coreset", ...)."""
    if columns is not None and arr.shape[1] != columns[0]:
        n, what = columns
        raise ValueError(f"{name} must have {n} columns{f' ({what})' if what else ''}, got {arr.shape[1]}")


def check_matrix(S, *, name: str = "S", binary: bool | None = None, min_rows: int = 1,
                 allow_nan: bool = False, columns: tuple[int, str] | None = None) -> np.ndarray:
    """Validate a score matrix ``(models, questions)`` and return it as float64.

    ``binary=True`` requires entries in {0, 1}; ``False`` requires [0, 1]; ``None`` accepts either.
    ``allow_nan``: ``NaN`` marks a missing answer (inf is still refused; the domain check reads the others).
    ``columns``: ``(n, what)``, the number of columns required (see :func:`check_columns`).
    """
    check_arguments("", {name: _MATRIX}, {name: S})
    arr = np.asarray(S, dtype=np.float64)
    if arr.shape[0] < min_rows or arr.shape[1] < 1:
        raise ValueError(f"{name} needs at least {min_rows} models and 1 question, got shape {arr.shape}")
    check_columns(arr, name, columns)
    bad_cells = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
    if bad_cells.any():
        bad = np.argwhere(bad_cells)[0]
        what = "an inf" if allow_nan else "a NaN/inf"
        raise ValueError(f"{name} has {what} entry at (model {bad[0]}, question {bad[1]}); "
                         "impute or drop it first")
    if allow_nan:
        seen = ~np.isnan(arr)
        if not seen.any(1).all():
            raise ValueError(f"{name}: model {int(np.argmin(seen.any(1)))} has no answer at all (every entry "
                             "NaN); drop it")
        arr = arr.copy()
        check_matrix(np.where(seen, arr, 0.0), name=name, binary=binary, min_rows=min_rows)
        return arr
    if binary:
        off = ~((arr == 0) | (arr == 1))
        if off.any():
            i, j = np.argwhere(off)[0]
            raise ValueError(f"{name} must be 0/1 in binary mode, got {arr[i, j]!r} at (model {i}, question {j})")
    elif binary is False and (arr.min() < 0 or arr.max() > 1):
        negative = " (Negative values in data are not scores)" if arr.min() < 0 else ""
        raise ValueError(f"{name} entries must lie in [0, 1]{negative}, got range [{arr.min()}, {arr.max()}]")
    return arr


def is_binary(arr: np.ndarray) -> bool:
    return bool(np.all((arr == 0) | (arr == 1)))


def resolve_budget(n_questions, n_total: int, *, name: str = "n_questions") -> int:
    """An int ``1 <= n <= N`` or a fraction in ``(0, 1]`` of ``N`` (rounded, at least 1) -> int."""
    check_arguments("", {name: AnyOf(Int(low=1, high=n_total), Real(0, 1, closed="right"))},
                    {name: n_questions})
    if np.asarray(n_questions).dtype.kind in "iu":  # a count (numpy ints and 0-d integer arrays too)
        return int(n_questions)
    return max(1, int(round(float(n_questions) * n_total)))


def check_target(y, n_rows: int, *, name: str = "y") -> np.ndarray:
    return check_vector(y, name=name, length=n_rows)


# -- the scikit-learn contract: check_array / validate_data, then the answer-matrix domain ------------------
def sk_check(X, y=None, *, name: str = "X", min_samples: int = 1, y_required: bool = False,
             estimator=None, binary: bool | None = None, scores01: bool = False, allow_nan: bool = False,
             columns: tuple[int, str] | None = None):
    """Validate like scikit-learn (sparse, complex, empty, 1-D, non-finite refused; a ``(M, 1)`` ``y`` is
    raveled with a ``DataConversionWarning``) and then the domain: ``binary=True`` 0/1 entries, ``scores01``
    entries in [0, 1]. Mutates nothing (``validate_data(..., reset=True)`` is the caller's commit step).

    ``allow_nan``: ``NaN`` entries of ``X`` are missing answers (kept; inf still refused). ``columns``:
    ``(n, what)``, the number of columns required. Returns ``X`` ``(M, N)`` float64, or ``(X, y)`` when ``y`` is
    given / required. Messages name ``name``.
    """
    from sklearn.utils import check_array, column_or_1d

    if y is None and y_required:
        name_est = type(estimator).__name__ if estimator is not None else "this estimator"
        raise ValueError(f"{name_est} requires y to be passed, but the target y is None")
    try:
        arr = check_array(X, dtype=np.float64, ensure_min_samples=min_samples, input_name=name,
                          estimator=estimator, ensure_all_finite="allow-nan" if allow_nan else True)
    except ValueError as err:
        raise ValueError(err if name in str(err) else f"{name}: {err}") from err
    check_columns(arr, name, columns)
    if binary or scores01:
        check_matrix(arr, name=name, binary=True if binary else False, min_rows=min_samples, allow_nan=allow_nan)
    if y is None:
        return arr
    try:
        y_arr = column_or_1d(y, warn=True, dtype=np.float64)
    except ValueError as err:
        raise ValueError(f"y: {err}") from err
    return arr, check_target(y_arr, arr.shape[0])


def commit_features(estimator, X) -> None:
    """Set ``n_features_in_`` / ``feature_names_in_`` from the original ``X`` (after every check passed)."""
    from sklearn.utils.validation import validate_data

    validate_data(estimator, X, reset=True, skip_check_array=True)


def check_predict_input(estimator, X, *, name: str = "X", scores01: bool = False,
                        allow_nan: bool = False) -> np.ndarray:
    """``check_is_fitted`` (``NotFittedError``), then ``validate_data(reset=False)`` (column count and
    feature names as at fit time) and the domain check."""
    from sklearn.utils.validation import check_is_fitted, validate_data

    check_is_fitted(estimator)
    try:
        arr = validate_data(estimator, X, reset=False, dtype=np.float64,
                            ensure_all_finite="allow-nan" if allow_nan else True)
    except ValueError as err:
        raise ValueError(err if name in str(err) else f"{name}: {err}") from err
    if scores01:
        check_matrix(arr, name=name, binary=False, allow_nan=allow_nan)
    return arr


def check_vector(v, *, name: str, length: int | None = None, min_length: int = 1) -> np.ndarray:
    """A finite 1-D float64 array (``length`` entries when given)."""
    check_arguments("", {name: _VECTOR}, {name: v})
    arr = np.asarray(v, dtype=np.float64)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have shape ({length},) (one entry per row), got {arr.shape}")
    if arr.shape[0] < min_length:
        raise ValueError(f"{name} needs at least {min_length} entries, got {arr.shape[0]}")
    return arr


def check_indices(idx, *, name: str, n: int) -> np.ndarray:
    """A 1-D integer array of indices in ``[0, n)``."""
    arr = np.asarray(idx)
    if arr.ndim != 1 or not (arr.dtype.kind in "iu" or arr.size == 0):
        raise ValueError(f"{name} must be a 1-D array of int indices, got dtype {arr.dtype}, shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{name} must lie in [0, {n}), got range [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)
