"""The pre-registered decision rules of the effbench claim check, on hand-made evidence."""

import math

import pytest

from neurips26.claims import CheckContext, Evidence, measure_claims
from neurips26.data import DatasetNotFoundError
from neurips26.effbench import check
from neurips26.effbench.check import CLAIMS, PAPER, _c2_decision_inputs, _c4_decision_inputs

RULE = {c.id: c.rule for c in CLAIMS}


def test_paper_declares_six_claims_each_with_a_measure():
    assert PAPER.id == "P12" and PAPER.slug == "effbench"
    assert [c.id for c in CLAIMS] == ["C1", "C2", "C3", "C4", "C5", "C6"]
    assert all(c.measure is not None and c.criterion for c in CLAIMS) and PAPER.run is None


def _c1(*gains):
    return Evidence(values=list(gains), details={"improved": [float(g > 0) for g in gains]})


def test_c1_thresholds():
    assert RULE["C1"](_c1(1, 1, 1, -1)).label == "supported"  # 3/4
    assert RULE["C1"](_c1(1, 1, -1)).label == "supported"  # exactly 2/3
    assert RULE["C1"](_c1(1, -1, -1, -1)).label == "not supported"  # 1/4
    assert RULE["C1"](_c1(1, 1, -1, -1)).label == "inconclusive"  # 1/2
    assert RULE["C1"](_c1(1, 1, 1, -1, -1)).label == "inconclusive"  # 3/5: between 1/2 and 2/3
    assert RULE["C1"](_c1(1, 0, 0, 0)).label == "not supported"  # no gain is not a gain
    assert RULE["C1"](_c1(1)).label == "inconclusive"


def _per_m(mrmr, best, se_best, tau_ok, rival_diff, rival_se, n_cells=10):
    return {"n_cells": n_cells, "gap_to_best_minus_se": mrmr - best - se_best,
            "mrmr_tau": 0.8, "top_other_tau": 0.7 if tau_ok else 0.9,
            "vs": {"Random++": {"mean_diff": rival_diff, "se_diff": rival_se},
                   "AnchorPts++": {"mean_diff": -1.0, "se_diff": 0.1}}}


def _c2(per_m):
    return Evidence(values=[0.0], details={"per_M": per_m, **_c2_decision_inputs(per_m)})


def test_c2_rules():
    good = {"30": _per_m(2.0, 2.0, 0.1, True, -0.5, 0.1), "50": _per_m(2.0, 2.0, 0.1, True, -0.5, 0.1)}
    assert RULE["C2"](_c2(good)).label == "supported"
    within = dict(good, **{"30": _per_m(2.09, 2.0, 0.1, True, -0.5, 0.1)})  # 0.09 behind, SE 0.1
    assert RULE["C2"](_c2(within)).label == "supported"
    worse = dict(good, **{"50": _per_m(2.5, 2.0, 0.1, False, 0.5, 0.1)})  # Random++ ahead by 5 SE
    assert RULE["C2"](_c2(worse)).label == "not supported"
    tau_lost = dict(good, **{"50": _per_m(2.0, 2.0, 0.1, False, -0.5, 0.1)})
    assert RULE["C2"](_c2(tau_lost)).label == "inconclusive"
    behind = dict(good, **{"30": _per_m(2.5, 2.0, 0.1, True, -0.5, 0.1)})  # best other > 1 SE ahead
    assert RULE["C2"](_c2(behind)).label == "inconclusive"
    assert RULE["C2"](_c2({"30": good["30"]})).label == "inconclusive"
    few = {"30": good["30"], "50": _per_m(2.5, 2.0, 0.1, False, 0.5, 0.1, n_cells=1)}  # too few before refuting
    assert RULE["C2"](_c2(few)).label == "inconclusive"


def _c3(*ratios):
    return Evidence(values=list(ratios), details={"log10_ratio": [math.log10(r) for r in ratios]})


def test_c3_geometric_mean_rule():
    assert RULE["C3"](_c3(20.0, 8.0)).label == "supported"  # geometric mean 12.6
    assert RULE["C3"](_c3(5.0, 8.0)).label == "not supported"  # 6.3
    assert RULE["C3"](_c3(100.0, 0.9)).label == "not supported"  # arithmetic mean 50, geometric 9.5
    assert RULE["C3"](_c3(10.0)).label == "supported"


def _c4(phi, n_seeds=3):
    details = {"n_seeds": n_seeds, **(_c4_decision_inputs(phi) if n_seeds >= 2 else {})}
    return Evidence(values=[phi["mRMR"] - phi["AnchorPts"]] if n_seeds >= 2 else [], details=details)


def test_c4_rules():
    assert RULE["C4"](_c4({"mRMR": 0.3, "AnchorPts": 0.2, "Random": 0.01})).label == "supported"
    assert RULE["C4"](_c4({"mRMR": 0.1, "AnchorPts": 0.2, "Random": 0.01})).label == "not supported"
    assert RULE["C4"](_c4({"mRMR": 0.3, "AnchorPts": -0.1, "Random": 0.01})).label == "not supported"
    assert RULE["C4"](_c4({"mRMR": 0.3, "AnchorPts": 0.2, "Random": -0.06})).label == "not supported"
    assert RULE["C4"](_c4({"mRMR": 0.3, "AnchorPts": 0.2, "Random": 0.01}, n_seeds=1)).label == "inconclusive"


def test_absent_correctness_matrices_skip_every_claim(monkeypatch, tmp_path):
    def absent():
        raise DatasetNotFoundError("effbench/correctness", [], "neurips26 data fetch effbench/correctness")

    monkeypatch.setattr(check, "effbench_names", absent)
    ctx = CheckContext(scale="quick", seeds=[0, 1], device="cpu", out_dir=tmp_path, show_progress=False)
    records = measure_claims(PAPER, ctx)
    assert [r["verdict"] for r in records] == ["skipped"] * 6
    assert not any(r.get("error") for r in records)


# ---- protocol 2026-12-01: benchpred peers, random split, MI estimators
def test_random_split_is_a_disjoint_half():

    src, tgt = check.random_split(11, 3)
    assert len(src) == 5 and len(tgt) == 6 and set(src).isdisjoint(tgt) and sorted([*src, *tgt]) == list(range(11))
    assert (check.random_split(11, 3)[0] == src).all() and not (check.random_split(11, 4)[0] == src).all()


def test_binned_relevance_matches_counting_mi():
    import numpy as np

    rng = np.random.default_rng(0)
    S = (rng.random((40, 7)) < 0.4).astype(float)
    y = S.mean(1) + 0.01 * rng.random(40)
    ours = check.binned_relevance(S, y, bins=4)
    edges = np.quantile(y, [0.25, 0.5, 0.75])
    b = [int(sum(v >= e for e in edges)) for v in y]
    for j in range(S.shape[1]):
        mi = 0.0
        for u in (0, 1):
            for v in set(b):
                puv = sum(1 for i in range(40) if S[i, j] == u and b[i] == v) / 40
                pu = sum(1 for i in range(40) if S[i, j] == u) / 40
                pv = b.count(v) / 40
                if puv > 0:
                    mi += puv * math.log(puv / (pu * pv))
        assert ours[j] == pytest.approx(mi, abs=1e-12)


def test_mrmr_binned_picks_the_most_relevant_first_and_no_repeats():
    import numpy as np

    rng = np.random.default_rng(1)
    S = (rng.random((30, 12)) < 0.5).astype(float)
    idx = check.mrmr_binned(S, 5)
    assert idx[0] == int(np.argmax(check.binned_relevance(S, S.mean(1)))) and len(set(idx.tolist())) == 5


def test_c5_c6_rules():
    assert RULE["C5"](Evidence(values=[-1.0, -1.2, -0.9, -1.1])).label == "supported"
    assert RULE["C5"](Evidence(values=[1.0, 1.2, 0.9, 1.1])).label == "not supported"
    assert RULE["C6"](Evidence(values=[-1.0, 1.0, 0.1, -0.2])).label == "inconclusive"


def test_without_benchpred_c5_still_runs_and_c6_has_no_evidence(monkeypatch, tmp_path):
    """benchpred cannot be installed beside torch 2 (it pins torch < 2 through py-irt): CI has none."""
    from neurips26.claims import lookup, run_checks
    from neurips26.data.testing import require_dataset
    from neurips26.effbench import check

    require_dataset("effbench/correctness")
    monkeypatch.setattr(check, "_benchpred_version", lambda: "not installed")
    _, runs = run_checks([lookup("effbench")], scale="smoke", out_root=tmp_path, show_progress=False)
    claims = {c["id"]: c for c in runs[0].record["claims"]}
    assert runs[0].claim_errors == 0, [c.get("error") for c in claims.values()]
    assert claims["C5"]["measured"]["n"] > 0
    assert claims["C6"]["verdict"] == "inconclusive"
    assert any("benchpred is not installed" in note for note in runs[0].record["notes"])
