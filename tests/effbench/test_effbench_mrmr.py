"""mRMR greedy order against a naive reference built on scikit-learn's estimators; input validation."""

import numpy as np
import pytest
from scipy.special import digamma
from sklearn.feature_selection._mutual_info import _compute_mi_cd
from sklearn.metrics import mutual_info_score

from neurips26.effbench import MRMRSelector, jitter_target


def _naive_ross(c, d, k):
    """Ross (2014) written out point by point with exact 1-D distances."""
    labels, counts = np.unique(d, return_counts=True)
    count = dict(zip(labels.tolist(), counts.tolist()))
    kept = [i for i in range(len(c)) if count[d[i]] > 1]
    psi_k, psi_n, psi_m = [], [], []
    for i in kept:
        same = sorted(abs(c[j] - c[i]) for j in kept if j != i and d[j] == d[i])
        k_i = min(k, count[d[i]] - 1)
        radius = np.nextafter(same[k_i - 1], 0)
        m_i = sum(abs(c[j] - c[i]) <= radius for j in kept)
        psi_k.append(digamma(k_i))
        psi_n.append(digamma(count[d[i]]))
        psi_m.append(digamma(m_i))
    if not kept:
        return 0.0
    return max(0.0, digamma(len(kept)) + np.mean(psi_k) - np.mean(psi_n) - np.mean(psi_m))


def test_naive_ross_agrees_with_sklearn_where_sklearn_is_exact():
    rng = np.random.default_rng(5)
    c = rng.integers(0, 9, size=25).astype(float)
    d = (rng.random(25) < 0.4).astype(float)
    assert _naive_ross(c, d, 3) == pytest.approx(_compute_mi_cd(c, d, 3), abs=1e-12)


def _naive_mrmr(S, n, k, scheme="MIQ"):
    """Textbook greedy mRMR: point-by-point Ross relevance, sklearn's plug-in MI for redundancy.

    (sklearn's own Ross kernel is not used on jittered ties: its neighbour radius comes from a
    squared-norm expansion that loses the 1e-10 jitter to rounding.)
    """
    y = jitter_target(S.mean(1), 0)
    rel = np.array([_naive_ross(y, S[:, j], k) for j in range(S.shape[1])])
    rel[np.ptp(S, axis=0) == 0] = 0.0
    selected = [int(np.argmax(rel))]
    while len(selected) < n:
        best, best_score = None, -np.inf
        for j in range(S.shape[1]):
            if j in selected:
                continue
            red = np.mean([mutual_info_score(S[:, j], S[:, s]) for s in selected])
            score = rel[j] / (red + 1e-10) if scheme == "MIQ" else rel[j] - red
            if score > best_score + 1e-12:
                best, best_score = j, score
        selected.append(best)
    return selected


def _toy():
    # 12 models, 5 questions; q0 tracks the score, q1 duplicates q0, q2 is weaker but different,
    # q3 is noise, q4 is constant
    rng = np.random.default_rng(3)
    base = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1], dtype=float)
    other = np.array([0, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1], dtype=float)
    noise = (rng.random(12) < 0.5).astype(float)
    S = np.column_stack([base, base, other, noise, np.ones(12)])
    extra = np.column_stack([base, other, other, base] * 3)[:, :10]  # extra columns shape the score
    return np.column_stack([S, extra])[:, :5], np.column_stack([S, extra])


def test_miq_order_on_hand_made_matrix():
    S5, S = _toy()
    sel = MRMRSelector(5, mi_k=3).fit(S5)
    # the duplicate of the first pick is fully redundant, so it is not the second pick; the constant
    # question comes last
    assert sel.selected_[0] in (0, 1)
    assert sel.selected_[1] not in (0, 1)
    assert sel.selected_[-1] == 4
    assert sel.selected_.tolist() == _naive_mrmr(S5, 5, 3)


@pytest.mark.parametrize("scheme", ["MIQ", "MID"])
def test_order_equals_naive_reference_on_real_answers(scheme):
    from neurips26.data import load_effbench
    from neurips26.data.testing import require_dataset

    require_dataset("effbench/correctness")

    S = load_effbench("mmlu")[0][:40, :40].astype(float)
    ours = MRMRSelector(8, scheme=scheme, mi_k=3).fit(S).selected_.tolist()
    assert ours == _naive_mrmr(S, 8, 3, scheme)


def test_relevance_only_scheme_is_sorted_relevance():
    _, S = _toy()
    sel = MRMRSelector(6, scheme="MI").fit(S)
    rel = sel.relevance_[sel.selected_]
    assert np.all(np.diff(rel) <= 1e-15)


def test_deterministic_and_selector_contract():
    _, S = _toy()
    a = MRMRSelector(0.5).fit(S)
    b = MRMRSelector(0.5).fit(S)
    np.testing.assert_array_equal(a.selected_, b.selected_)
    assert a.get_support().sum() == a.n_select_ == 8  # round(0.5 * 15)
    assert a.transform(S).shape == (12, 8)
    assert len(set(a.selected_.tolist())) == 8


def test_continuous_mode_runs_with_ksg():
    rng = np.random.default_rng(0)
    S = rng.random((30, 20))
    sel = MRMRSelector(5, mi="auto").fit(S)
    assert not sel.binary_ and sel.selected_.size == 5


@pytest.mark.parametrize("kwargs, X, match", [
    ({"n_questions": 0.0}, None, r"n_questions must be an int in \[1, 15\] or a finite number in \(0, 1\]"),
    ({"n_questions": 1.5}, None, r"n_questions must be an int in \[1, 15\] or a finite number in \(0, 1\]"),
    ({"n_questions": 0}, None, r"n_questions must be an int in \[1, 15\]"),
    ({"n_questions": 99}, None, r"n_questions must be an int in \[1, 15\]"),
    ({"n_questions": "a"}, None, "n_questions must be an int"),
    ({"scheme": "MAX"}, None, "scheme"),
    ({"mi": "lnc"}, None, "mi must"),
    ({"mi_k": 0}, None, "mi_k"),
    ({"mi": "ross"}, "half", "0/1"),
    ({}, "nan", "no answer at all"),  # one NaN is a missing answer; a model without any is refused
    ({}, "inf", "inf"),
    ({}, "1d", "2D"),
])
def test_bad_input_raises_naming_the_argument(kwargs, X, match):
    _, S = _toy()
    if X == "half":
        S = S * 0.5
    elif X == "nan":
        S = S.copy()
        S[2, :] = np.nan
    elif X == "inf":
        S = S.copy()
        S[2, 3] = np.inf
    elif X == "1d":
        S = S[:, 0]
    with pytest.raises((ValueError, TypeError), match=match):
        MRMRSelector(**{"n_questions": 2, **kwargs}).fit(S)


def test_bad_target_shape():
    _, S = _toy()
    with pytest.raises(ValueError, match="shape"):
        MRMRSelector(2).fit(S, np.zeros(3))
