"""Shared hypothesis strategies for shapes and values (issue 16), used by several papers' tests.

    from _strategies import FAST, finite_arrays, with_one_nonfinite, bad_numbers

    @FAST
    @given(X=finite_arrays(shapes(2, 2, min_side=2, max_side=6)))
    def test_property(X): ...

Everything is small on purpose: ``FAST`` runs 25 examples without a deadline (2-core CI machines), and the
shape strategies stay below a few dozen entries so a whole property test takes well under a second.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

#: a settings decorator for property tests: few examples, no deadline, tolerant of slow data generation
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: the non-finite values every numeric input must refuse
NONFINITE = (math.nan, math.inf, -math.inf)


def shapes(min_dims: int = 1, max_dims: int = 2, *, min_side: int = 1, max_side: int = 6) -> st.SearchStrategy:
    """Array shapes with ``min_dims..max_dims`` axes of ``min_side..max_side`` entries each."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def finite_floats(low: float = -1e3, high: float = 1e3, *, width: int = 64) -> st.SearchStrategy:
    """Finite floats in ``[low, high]`` (no NaN, no inf, no subnormals that make tolerances meaningless)."""
    return st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=width)


def finite_arrays(shape, *, low: float = -1e3, high: float = 1e3, dtype=np.float64) -> st.SearchStrategy:
    """float arrays of ``shape`` (a tuple or a strategy of tuples) with finite entries in ``[low, high]``."""
    return hnp.arrays(dtype, shape, elements=finite_floats(low, high, width=np.dtype(dtype).itemsize * 8))


def binary_matrices(min_rows: int = 2, max_rows: int = 12, min_cols: int = 2, max_cols: int = 10
                    ) -> st.SearchStrategy:
    """0/1 float64 matrices ``(rows, cols)`` (e.g. models x questions answer matrices)."""
    shape = st.tuples(st.integers(min_rows, max_rows), st.integers(min_cols, max_cols))
    return hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 1.0]))


def probability_vectors(min_size: int = 2, max_size: int = 8) -> st.SearchStrategy:
    """Non-negative vectors with a positive sum, normalised to sum 1 (a distribution over classes)."""
    raw = hnp.arrays(np.float64, st.integers(min_size, max_size), elements=finite_floats(0.0, 10.0))
    return raw.filter(lambda v: v.sum() > 1e-6).map(lambda v: v / v.sum())


@st.composite
def with_one_nonfinite(draw, arrays: st.SearchStrategy) -> tuple[np.ndarray, tuple[int, ...], float]:
    """A drawn array with one entry (at a drawn index) replaced by NaN, inf or -inf: ``(array, index, value)``."""
    arr = np.array(draw(arrays), dtype=np.float64, copy=True)
    index = tuple(draw(st.integers(0, n - 1)) for n in arr.shape)
    value = draw(st.sampled_from(NONFINITE))
    arr[index] = value
    return arr, index, value


def bad_numbers(*, allow_none: bool = False) -> st.SearchStrategy:
    """Values a finite-number argument must refuse: non-finite floats, bools, strings, containers
    (and ``None`` unless ``allow_none``)."""
    values = list(NONFINITE) + [True, False, "1", "nan", [1.0], (1.0,), {"x": 1}]
    if not allow_none:
        values.append(None)
    return st.sampled_from(values)


def bad_counts(low: int = 1) -> st.SearchStrategy:
    """Values an int argument ``>= low`` must refuse: ints below ``low``, floats (even integral), bools,
    strings and non-finite floats."""
    return st.one_of(st.integers(max_value=low - 1), st.sampled_from([1.5, float(low), True, "2", math.nan, None]))
