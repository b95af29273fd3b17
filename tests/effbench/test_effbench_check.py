"""The pre-registered decision rules of the effbench claim check, on hand-made evidence."""

from neurips26.claims import Evidence
from neurips26.effbench.check import CLAIMS, PAPER, _decide_c1, _decide_c2, _decide_c3, _decide_c4


def test_paper_declares_four_claims():
    assert PAPER.id == "P12" and PAPER.slug == "effbench"
    assert [c.id for c in CLAIMS] == ["C1", "C2", "C3", "C4"]


def test_c1_thresholds():
    assert _decide_c1(Evidence(values=[1, 1, 1, -1])).label == "supported"  # 3/4
    assert _decide_c1(Evidence(values=[1, -1, -1, -1])).label == "not supported"  # 1/4
    assert _decide_c1(Evidence(values=[1, 1, -1, -1])).label == "inconclusive"  # 1/2
    assert _decide_c1(Evidence(values=[1])).label == "inconclusive"


def _per_m(mrmr, best, se_best, tau_ok, rival_diff, rival_se):
    entry = {"n_cells": 10, "within_1se_of_best": mrmr - best <= se_best, "top_tau": tau_ok, "mrmr_rmse": mrmr,
             "best": "X", "best_rmse": best, "se_best": se_best,
             "runner_up": "X", "runner_up_rmse": best, "runner_up_se": se_best, "mrmr_tau": 0.8, "top_other_tau": 0.7,
             "vs": {"Random++": {"mean_diff": rival_diff, "se_diff": rival_se},
                    "AnchorPts++": {"mean_diff": -1.0, "se_diff": 0.1}}}
    return entry


def test_c2_rules():
    good = {"30": _per_m(2.0, 2.0, 0.1, True, -0.5, 0.1), "50": _per_m(2.0, 2.0, 0.1, True, -0.5, 0.1)}
    assert _decide_c2(Evidence(values=[0.0], details={"per_M": good})).label == "supported"
    worse = dict(good, **{"50": _per_m(2.5, 2.0, 0.1, False, 0.5, 0.1)})
    assert _decide_c2(Evidence(values=[0.0], details={"per_M": worse})).label == "not supported"
    tau_lost = dict(good, **{"50": _per_m(2.0, 2.0, 0.1, False, -0.5, 0.1)})
    assert _decide_c2(Evidence(values=[0.0], details={"per_M": tau_lost})).label == "inconclusive"
    assert _decide_c2(Evidence(values=[], details={"per_M": {"30": good["30"]}})).label == "inconclusive"


def test_c3_and_c4_rules():
    assert _decide_c3(Evidence(values=[20.0, 8.0])).label == "supported"  # geometric mean 12.6
    assert _decide_c3(Evidence(values=[5.0, 8.0])).label == "not supported"
    phi = {"mRMR": 0.3, "AnchorPts": 0.2, "Random": 0.01}
    assert _decide_c4(Evidence(values=[0.1], details={"mean_phi": phi, "n_seeds": 3})).label == "supported"
    bad = {"mRMR": 0.1, "AnchorPts": 0.2, "Random": 0.01}
    assert _decide_c4(Evidence(values=[0.1], details={"mean_phi": bad, "n_seeds": 3})).label == "not supported"
    assert _decide_c4(Evidence(values=[], details={"mean_phi": phi, "n_seeds": 1})).label == "inconclusive"
