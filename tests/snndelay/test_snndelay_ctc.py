"""CTC decoding, PER, forced alignment and boundary uncertainty against brute force; loss validation."""

import itertools
from functools import cache

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.snndelay import (
    boundary_uncertainty,
    ctc_forced_align,
    ctc_greedy_decode,
    ctc_loss,
    ctc_min_length,
    edit_distance,
    phoneme_error_rate,
)
from neurips26.snndelay.ctc import _edit_distance_dp


def _collapse(path):
    out, prev = [], None
    for v in path:
        if v != prev and v != 0:
            out.append(v)
        prev = v
    return out


def _levenshtein_recursive(a, b):
    @cache
    def d(i, j):
        if i == 0 or j == 0:
            return i + j
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))

    return d(len(a), len(b))


seqs = st.lists(st.integers(1, 4), max_size=7)


@settings(max_examples=60, deadline=None)
@given(a=seqs, b=seqs)
def test_edit_distance_matches_recursion(a, b):
    expected = _levenshtein_recursive(tuple(a), tuple(b))
    assert edit_distance(a, b) == expected
    assert _edit_distance_dp(a, b) == expected


def test_phoneme_error_rate_is_summed_edits_over_summed_lengths():
    hyps, refs = [[1, 2, 3], [4], []], [[1, 3], [4, 4, 5], [2]]
    edits = sum(_levenshtein_recursive(tuple(h), tuple(r)) for h, r in zip(hyps, refs))
    assert phoneme_error_rate(hyps, refs) == pytest.approx(edits / 6)
    with pytest.raises(ValueError, match="same length"):
        phoneme_error_rate([[1]], [[1], [2]])


def test_greedy_decode_matches_manual_argmax_collapse():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 12, 5, generator=g)
    lengths = [12, 7, 0]
    got = ctc_greedy_decode(logits, lengths)
    for k in range(3):
        path = [int(np.argmax(logits[k, t].numpy())) for t in range(lengths[k])]
        assert got[k] == _collapse(path)
    # blank separates repeats; repeats merge
    onehot = torch.nn.functional.one_hot(torch.tensor([[1, 1, 0, 1, 2, 2, 0]]), 3).float()
    assert ctc_greedy_decode(onehot) == [[1, 1, 2]]


def _brute_force_best_path(lp, target):
    t_len, c = lp.shape
    best, best_path = -np.inf, None
    for path in itertools.product(range(c), repeat=t_len):
        if _collapse(path) == list(target):
            score = sum(lp[t, p] for t, p in enumerate(path))
            if score > best:
                best, best_path = score, path
    return best, best_path


@pytest.mark.parametrize("seed, t_len, target", [(0, 5, [1, 2]), (1, 6, [2, 2]), (2, 6, [1, 3, 1]),
                                                  (3, 4, [3]), (4, 7, [1, 1, 2]), (5, 3, [2, 2])])
def test_forced_align_matches_brute_force(seed, t_len, target):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(t_len, 4)) * 2
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    best, _ = _brute_force_best_path(lp, target)
    path = ctc_forced_align(torch.tensor(lp), target)
    assert _collapse(path) == target
    assert sum(lp[t, p] for t, p in enumerate(path)) == pytest.approx(best, abs=1e-12)


def test_forced_align_rejects_short_input_and_bad_labels():
    with pytest.raises(ValueError, match="too short"):
        ctc_forced_align(np.zeros((2, 4)), [1, 1])
    with pytest.raises(ValueError, match="labels"):
        ctc_forced_align(np.zeros((5, 4)), [0, 1])


def test_boundary_uncertainty_on_constructed_posteriors():
    # confident everywhere except one frame just at each label onset
    t_len, c = 12, 4
    target = [1, 2, 3]
    p = np.full((t_len, c), 0.01)
    labels = [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
    for t, v in enumerate(labels):
        p[t, v] = 0.97
    for onset in (4, 8):
        p[onset] = [0.1, 0.3, 0.3, 0.3]
    p /= p.sum(1, keepdims=True)
    res = boundary_uncertainty([torch.tensor(np.log(p))], [target], window=1)
    assert res.n_boundary == 6 and res.n_interior == 6  # frames 3-5 and 7-9
    ent = -(p * np.log(p)).sum(1)
    near = [3, 4, 5, 7, 8, 9]
    assert res.boundary_entropy == pytest.approx(ent[near].mean())
    assert res.interior_entropy == pytest.approx(np.delete(ent, near).mean())
    assert res.boundary_entropy > res.interior_entropy
    assert res.boundary_one_minus_max == pytest.approx((1 - p.max(1))[near].mean())


def test_ctc_min_length_counts_repeats():
    assert ctc_min_length([1, 2, 3]) == 3
    assert ctc_min_length([1, 1, 2, 2, 2]) == 8


def test_ctc_loss_validation_and_value():
    logits = torch.randn(2, 6, 41)
    loss = ctc_loss(logits, [[1, 2], [40]], [6, 4])
    ref = torch.nn.functional.ctc_loss(logits.log_softmax(-1).transpose(0, 1), torch.tensor([1, 2, 40]),
                                       torch.tensor([6, 4]), torch.tensor([2, 1]), zero_infinity=True)
    torch.testing.assert_close(loss, ref)
    with pytest.raises(ValueError, match="1..40"):
        ctc_loss(logits, [[0, 2], [3]], [6, 6])
    with pytest.raises(ValueError, match="1..40"):
        ctc_loss(logits, [[41], [3]], [6, 6])
    with pytest.raises(ValueError, match="too short"):
        ctc_loss(logits, [[1, 1, 1, 1], [3]], [6, 6])
    with pytest.raises(ValueError, match="empty"):
        ctc_loss(logits, [[], [3]], [6, 6])
