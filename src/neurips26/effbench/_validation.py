"""Input checks shared by the effbench estimators: one place, one wording."""

from __future__ import annotations

import numbers

import numpy as np


def check_matrix(S, *, name: str = "S", binary: bool | None = None, min_rows: int = 1,
                 allow_nan: bool = False) -> np.ndarray:
    """Validate a score matrix ``(models, questions)`` and return it as float64.

    ``binary=True`` requires entries in {0, 1}; ``False`` requires [0, 1]; ``None`` accepts either.
    ``allow_nan``: ``NaN`` marks a missing answer (inf is still refused; the domain check reads the others).
    """
    if isinstance(S, (str, bytes)) or S is None:
        raise TypeError(f"{name} must be a 2-D array of scores (models, questions), got {type(S).__name__}")
    try:
        arr = np.asarray(S, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric 2-D array (models, questions); {err}") from err
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (models, questions), got shape {arr.shape}")
    if arr.shape[0] < min_rows or arr.shape[1] < 1:
        raise ValueError(f"{name} needs at least {min_rows} models and 1 question, got shape {arr.shape}")
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
    elif binary is False and arr.min() < 0:
        raise ValueError(f"{name} entries must lie in [0, 1] (Negative values in data are not scores), got "
                         f"range [{arr.min()}, {arr.max()}]")
    elif binary is False and arr.max() > 1:
        raise ValueError(f"{name} entries must lie in [0, 1], got range [{arr.min()}, {arr.max()}]")
    return arr


def is_binary(arr: np.ndarray) -> bool:
    return bool(np.all((arr == 0) | (arr == 1)))


def resolve_budget(n_questions, n_total: int, *, name: str = "n_questions") -> int:
    """An int ``1 <= n <= N`` or a fraction in ``(0, 1]`` of ``N`` (rounded, at least 1) -> int."""
    if isinstance(n_questions, bool) or not isinstance(n_questions, numbers.Real):
        raise TypeError(f"{name} must be an int count or a float fraction in (0, 1], got {n_questions!r}")
    if isinstance(n_questions, numbers.Integral):
        n = int(n_questions)
        if not 1 <= n <= n_total:
            raise ValueError(f"{name} must be between 1 and the number of questions ({n_total}), got {n}")
        return n
    frac = float(n_questions)
    if not (0.0 < frac <= 1.0) or not np.isfinite(frac):
        raise ValueError(f"{name} as a fraction must lie in (0, 1], got {frac}")
    return max(1, int(round(frac * n_total)))


def check_target(y, n_rows: int, *, name: str = "y") -> np.ndarray:
    arr = np.asarray(y, dtype=np.float64)
    if arr.shape != (n_rows,):
        raise ValueError(f"{name} must have shape ({n_rows},) to match the matrix rows, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got a NaN/inf entry")
    return arr


# -- the scikit-learn contract: check_array / validate_data, then the answer-matrix domain ------------------
def sk_check(X, y=None, *, name: str = "X", min_samples: int = 1, y_required: bool = False,
             estimator=None, binary: bool | None = None, scores01: bool = False, allow_nan: bool = False):
    """Validate like scikit-learn (sparse, complex, empty, 1-D, non-finite refused; a ``(M, 1)`` ``y`` is
    raveled with a ``DataConversionWarning``) and then the domain: ``binary=True`` 0/1 entries, ``scores01``
    entries in [0, 1]. Mutates nothing (``validate_data(..., reset=True)`` is the caller's commit step).

    ``allow_nan``: ``NaN`` entries of ``X`` are missing answers (kept; inf still refused).
    Returns ``X`` ``(M, N)`` float64, or ``(X, y)`` when ``y`` is given / required. Messages name ``name``.
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


def check_int(value, *, name: str, low: int | None = None, high: int | None = None) -> int:
    """An int (numpy ints too, never a bool or a float) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
        raise ValueError(f"{name} must be an int in {bounds}, got {value}")
    return value


def check_real(value, *, name: str, positive: bool = False, nonnegative: bool = False) -> float:
    """A finite real number (never a bool); ``positive`` > 0, ``nonnegative`` >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if nonnegative and not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return float(value)


def check_vector(v, *, name: str, length: int | None = None, min_length: int = 1) -> np.ndarray:
    """A finite 1-D float64 array (``length`` entries when given)."""
    if isinstance(v, (str, bytes)) or v is None:
        raise TypeError(f"{name} must be a 1-D array of numbers, got {type(v).__name__}")
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a 1-D array of numbers; {err}") from err
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have {length} entries (one per row), got {arr.shape[0]}")
    if arr.shape[0] < min_length:
        raise ValueError(f"{name} needs at least {min_length} entries, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has a NaN/inf entry at {int(np.argmin(np.isfinite(arr)))}")
    return arr


def check_indices(idx, *, name: str, n: int) -> np.ndarray:
    """A 1-D integer array of indices in ``[0, n)``."""
    arr = np.asarray(idx)
    if arr.ndim != 1 or not (arr.dtype.kind in "iu" or arr.size == 0):
        raise ValueError(f"{name} must be a 1-D array of int indices, got dtype {arr.dtype}, shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{name} must lie in [0, {n}), got range [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)
