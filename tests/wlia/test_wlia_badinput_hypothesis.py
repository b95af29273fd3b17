"""wlia properties over drawn distributions and scores (issue 16, shared strategies in tests/_strategies.py)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _strategies import FAST, bad_numbers, finite_arrays, probability_vectors, with_one_nonfinite
from neurips26.wlia import label_distribution_metrics, scores_to_distribution

SCORES = finite_arrays(st.integers(1, 8), low=-100, high=100)


@FAST
@given(p=probability_vectors(), data=st.data())
def test_metrics_are_bounded_symmetric_and_zero_at_equality(p, data):
    q = data.draw(probability_vectors(min_size=p.size, max_size=p.size))
    m, back = label_distribution_metrics(p, q), label_distribution_metrics(q, p)
    assert 0 <= m["js"] <= 1 + 1e-12 and 0 <= m["l1"] <= 2 + 1e-12 and 0 <= m["linf"] <= 1 + 1e-12
    assert 0 <= m["cos"] <= 1 + 1e-12
    assert all(m[k] == pytest.approx(back[k], abs=1e-12) for k in m)
    same = label_distribution_metrics(p, p)
    assert same["js"] == pytest.approx(0, abs=1e-12) and same["l1"] == 0 and same["cos"] == pytest.approx(1)


@FAST
@given(s=SCORES, estimator=st.sampled_from(["linear", "softmax", "zero_aware"]))
def test_scores_map_onto_the_simplex_and_keep_the_order(s, estimator):
    p = scores_to_distribution(s, estimator)
    assert p.shape == s.shape and np.all(p >= 0) and p.sum() == pytest.approx(1.0)
    order = np.argsort(s, kind="stable")
    assert np.all(np.diff(p[order]) >= -1e-12)  # a larger score never gets less mass


@FAST
@given(drawn=with_one_nonfinite(SCORES))
def test_scores_with_a_nonfinite_entry_are_refused(drawn):
    s, _, _ = drawn
    with pytest.raises(ValueError, match="scores"):
        scores_to_distribution(s)


@FAST
@given(bad=bad_numbers())
def test_every_bad_temperature_is_refused(bad):
    with pytest.raises((ValueError, TypeError), match="temperature"):
        scores_to_distribution(np.array([1.0, 2.0]), "softmax", bad)
