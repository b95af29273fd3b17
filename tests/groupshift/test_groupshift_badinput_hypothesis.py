"""groupshift properties over drawn shapes and values (issue 16, shared strategies in tests/_strategies.py)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _strategies import FAST, bad_numbers, finite_arrays, finite_floats, shapes, with_one_nonfinite
from neurips26.groupshift import group_norms, prox_group_norm

VECTORS = finite_arrays(shapes(1, 1, max_side=8), low=-50, high=50)


@FAST
@given(v=VECTORS, t=finite_floats(0.0, 100.0))
def test_prox_p2_is_group_soft_thresholding(v, t):
    """Closed form for p = 2: ``max(0, 1 - t/‖v‖) v``."""
    norm = float(np.linalg.norm(v))
    expected = np.zeros_like(v) if norm <= t else (1 - t / norm) * v
    np.testing.assert_allclose(prox_group_norm(v, t, 2.0), expected, atol=1e-9 * max(1.0, norm))


@FAST
@given(v=VECTORS, t=finite_floats(0.0, 100.0), p=st.sampled_from([1.5, 2.0, 3.0, math.inf]))
def test_prox_shrinks_and_keeps_signs(v, t, p):
    """``prox`` never grows the vector, keeps each coordinate's sign, and is the identity at ``t = 0``."""
    x = prox_group_norm(v, t, p)
    assert np.linalg.norm(x) <= np.linalg.norm(v) * (1 + 1e-9) + 1e-12
    assert np.all(x * v >= -1e-9 * (1 + np.abs(v)))
    np.testing.assert_allclose(prox_group_norm(v, 0.0, p), v)


@FAST
@given(drawn=with_one_nonfinite(VECTORS))
def test_prox_refuses_any_nonfinite_entry(drawn):
    v, _, _ = drawn
    with pytest.raises(ValueError, match="v must be an array .* of finite values"):
        prox_group_norm(v, 0.5, 2.0)


@FAST
@given(bad=bad_numbers())
def test_prox_refuses_every_bad_threshold(bad):
    with pytest.raises((ValueError, TypeError), match="t must be"):
        prox_group_norm(np.ones(3), bad, 2.0)


@FAST
@given(v=VECTORS, data=st.data(), p=st.sampled_from([1.0, 2.0, 3.0, math.inf]))
def test_group_norms_equal_a_loop(v, data, p):
    k = data.draw(st.integers(1, v.size))
    labels = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=v.size, max_size=v.size)))
    got = group_norms(v, labels, k, p)
    ref = [np.linalg.norm(v[labels == g], ord=p) if (labels == g).any() else 0.0 for g in range(k)]
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@FAST
@given(v=VECTORS, t=st.one_of(finite_floats(0.0, 100.0), st.sampled_from([1e-300, 1e-100, 1e-20, 1e-12])),
       p=st.sampled_from([1.5, 3.0, math.inf]))
def test_prox_satisfies_the_optimality_conditions_without_hanging(v, t, p):
    """Independent check (Moreau): ``u = v - prox(v)`` lies in the dual ball ``‖u‖_q <= t`` and
    ``<u, x> = t ‖x‖_p``. Tiny thresholds hung (r^q underflowed) or raised IndexError (p = inf) before."""
    x = prox_group_norm(v, t, p)
    u = v - x
    q = 1.0 if math.isinf(p) else p / (p - 1)
    scale = max(1.0, float(np.abs(v).max()))
    assert np.linalg.norm(u, ord=q) <= t + 1e-9 * scale
    assert float(u @ x) == pytest.approx(t * np.linalg.norm(x, ord=p), abs=1e-8 * scale ** 2)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("v, t, p", [([1e-300, 1.0], 1e-300, 1.5), ([1e-300, 1.0], 1e-100, 3.0),
                                     ([1e-300, 1.0], 1e-100, math.inf), ([1e-300, 0.0], 100.0, 1.5),
                                     ([1e-10, 1.0], 1.0, 3.0)])
def test_prox_edge_cases_found_by_hypothesis(v, t, p):
    """Hung forever, raised IndexError / OverflowError or a brentq sign error before."""
    x = prox_group_norm(np.array(v), t, p)
    assert np.all(np.isfinite(x))
