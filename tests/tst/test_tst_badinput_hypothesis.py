"""tst properties over drawn shapes (issue 16, shared strategies in tests/_strategies.py)."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from _strategies import FAST, bad_counts, bad_numbers
from neurips26.tst import TSTSchedule, fold_bags, multi_hot_cross_entropy, multi_hot_cross_entropy_reference


@FAST
@given(b=st.integers(1, 3), s=st.integers(1, 4), L=st.integers(1, 5))
def test_fold_bags_shapes_and_contents(b, s, L):
    ids = torch.arange(b * s * (L + 1)).view(b, s * (L + 1))
    inputs, targets = fold_bags(ids, s)
    assert inputs.shape == targets.shape == (b, L, s)
    assert torch.equal(torch.cat([inputs, targets[:, -1:]], 1).reshape(b, -1), ids)  # bags tile the row
    assert torch.equal(inputs[:, 1:], targets[:, :-1])  # target bag j is input bag j + 1


@FAST
@given(b=st.integers(1, 2), L=st.integers(1, 4), s=st.integers(1, 3), V=st.integers(2, 7), seed=st.integers(0, 99))
def test_mce_equals_the_dense_reference(b, L, s, V, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, L, V, generator=g, dtype=torch.float64)
    targets = torch.randint(0, V, (b, L, s), generator=g)
    torch.testing.assert_close(multi_hot_cross_entropy(logits, targets),
                               multi_hot_cross_entropy_reference(logits, targets).double(), rtol=1e-6, atol=1e-6)


@FAST
@given(bad=bad_counts(low=1))
def test_every_bad_bag_size_is_refused(bad):
    with pytest.raises((ValueError, TypeError), match="s|bag"):
        fold_bags(torch.zeros(1, 8, dtype=torch.long), bad)


@FAST
@given(bad=bad_numbers())
def test_every_bad_fraction_is_refused(bad):
    if bad is False:  # bool refused too, but False == 0 is a tidy special case worth naming
        bad = math.nan
    with pytest.raises((ValueError, TypeError), match="superposition_fraction"):
        TSTSchedule(10, 4, bad)
