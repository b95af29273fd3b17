"""effbench properties over drawn answer matrices (issue 16, shared strategies in tests/_strategies.py)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _badinput import BadInput, check_bad_inputs
from _strategies import FAST, bad_counts, binary_matrices, finite_arrays, with_one_nonfinite
from neurips26.effbench import RandomSelector, binned_split, nogueira_stability, plugin_mi_binary


@FAST
@given(drawn=with_one_nonfinite(binary_matrices(min_rows=3)))
def test_selector_refuses_a_nonfinite_entry_anywhere_and_keeps_state(drawn):
    S, (i, j), _ = drawn
    sel = RandomSelector(1).fit(np.zeros((3, 2)))
    err = check_bad_inputs(sel.fit, BadInput("nonfinite", (S,), names="X"), target=sel)
    assert "NaN" in str(err) or "infinity" in str(err)


@FAST
@given(acc=finite_arrays(st.integers(3, 30), low=0.0, high=1.0), data=st.data())
def test_binned_split_partitions_the_models(acc, data):
    n_source = data.draw(st.integers(1, acc.size - 1))
    bins = data.draw(st.integers(1, 12))
    src, tgt = binned_split(acc, n_source, bins=bins, rng=0)
    assert len(src) == n_source and np.array_equal(np.sort(np.concatenate([src, tgt])), np.arange(acc.size))


@FAST
@given(bad=bad_counts(low=1))
def test_binned_split_refuses_every_bad_bin_count(bad):
    with pytest.raises((ValueError, TypeError), match="bins"):
        binned_split(np.linspace(0, 1, 10), 3, bins=bad)


@FAST
@given(S=binary_matrices(min_rows=2, max_rows=15), data=st.data())
def test_plugin_mi_matches_the_2x2_table_and_is_symmetric(S, data):
    """Independent reference: the plug-in MI from the counts of each 2x2 table, by hand; I(x; x) = H(x)."""
    j = data.draw(st.integers(0, S.shape[1] - 1))
    x = S[:, j]
    got = plugin_mi_binary(S, x)
    m = S.shape[0]
    for k in range(S.shape[1]):
        mi = 0.0
        for a in (0, 1):
            for b in (0, 1):
                pab = np.mean((x == a) & (S[:, k] == b))
                if pab > 0:
                    mi += pab * np.log(pab / (np.mean(x == a) * np.mean(S[:, k] == b)))
        assert got[k] == pytest.approx(mi, abs=1e-12)
    assert plugin_mi_binary(S[:, [j]], S[:, 0])[0] == pytest.approx(got[0], abs=1e-12)
    assert m >= 2


@FAST
@given(sets=st.lists(st.lists(st.integers(0, 9), min_size=1, max_size=5), min_size=2, max_size=6))
def test_nogueira_stability_is_at_most_one_and_one_for_identical_sets(sets):
    phi = nogueira_stability(sets, 10)
    assert phi <= 1.0 + 1e-12
    assert nogueira_stability([sets[0]] * len(sets), 10) == pytest.approx(1.0)
