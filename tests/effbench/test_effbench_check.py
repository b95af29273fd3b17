"""The pre-registered decision rules of the effbench claim check (claims v3), on hand-made evidence."""

import numpy as np

from neurips26.claims import CheckContext, Evidence, measure_claims
from neurips26.data import DatasetNotFoundError
from neurips26.effbench import check
from neurips26.effbench.check import C2_RIVALS, C2_SIZES, C8_PAIRS, CLAIMS, PAPER, PEERS

RULE = {c.id: c.rule for c in CLAIMS}
CLAIM = {c.id: c for c in CLAIMS}


def test_paper_declares_its_claims_with_kinds_preconditions_and_tuning():
    assert PAPER.id == "P12" and PAPER.slug == "effbench"
    assert [c.id for c in CLAIMS] == ["C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8"]
    assert CLAIM["C8"].kind == "sanity" and all(CLAIM[c].kind == "paper" for c in ("C1", "C2", "C5", "C6"))
    for cid in ("C1", "C2", "C5", "C6"):  # comparisons of fitted predictors: preconditions and a tuning reason
        assert CLAIM[cid].compares_trained and CLAIM[cid].preconditions and CLAIM[cid].tuning
    assert set(CLAIM["C2"].scales) == set(CLAIM["C5"].scales) == {"full", "gpu"}  # decided at full


def _shifted(center, n, spread=0.3, seed=0):
    return list(center + spread * np.random.default_rng(seed).standard_normal(n))


def test_c1_needs_the_interval_and_the_share():
    good = _shifted(1.0, 16)
    assert RULE["C1"](Evidence(values=good, details={"improved": [1.0] * 16})).label == "supported"
    bad = _shifted(-1.0, 16)
    assert RULE["C1"](Evidence(values=bad, details={"improved": [0.0] * 16})).label == "not supported"
    # a mean gain carried by few cells: the interval holds, the share (8/16 < 2/3) does not
    assert RULE["C1"](Evidence(values=good, details={"improved": [1.0] * 8 + [0.0] * 8})).label == "inconclusive"
    assert RULE["C1"](Evidence(values=good[:4], details={"improved": [1.0] * 4})).label == "inconclusive"  # n < 8


def _c2(diff):
    return Evidence(values=[0.0], details={check._c2_key(M, r): diff(M, r) for M in C2_SIZES for r in C2_RIVALS})


def test_c2_mrmr_must_beat_every_rival_at_both_sizes():
    assert RULE["C2"](_c2(lambda M, r: _shifted(-1.0, 40))).label == "supported"
    one_loss = _c2(lambda M, r: _shifted(1.0, 40) if (M, r) == (50, "gp-IRT++") else _shifted(-1.0, 40))
    assert RULE["C2"](one_loss).label == "not supported"
    tie = _c2(lambda M, r: _shifted(0.0, 40, spread=1.0) if r == "Random++" else _shifted(-1.0, 40))
    assert RULE["C2"](tie).label == "inconclusive"
    # better, but by less than the margin of 0.1 pp with a tight interval: not the claimed lead
    small = _c2(lambda M, r: _shifted(-0.02, 40, spread=0.01))
    assert RULE["C2"](small).label == "not supported"
    assert RULE["C2"](_c2(lambda M, r: _shifted(-1.0, 10))).label == "inconclusive"  # fewer than 16 cells


def test_c3_c7_ratio_interval():
    for cid in ("C3", "C7"):
        assert RULE[cid](Evidence(values=[30.0, 28.0, 33.0, 31.0, 29.0])).label == "supported"
        assert RULE[cid](Evidence(values=[4.6, 4.7, 4.5, 4.8, 4.6])).label == "not supported"
        assert RULE[cid](Evidence(values=[2.0, 50.0, 3.0, 40.0, 10.0])).label == "inconclusive"
        assert RULE[cid](Evidence(values=[30.0, 28.0])).label == "inconclusive"


def _c4(mrmr, anchor, rand, n=12):
    rng = np.random.default_rng(0)
    noise = lambda: list(0.01 * rng.standard_normal(n))  # noqa: E731
    m, a, r = (np.add(v, noise()) for v in (np.full(n, mrmr), np.full(n, anchor), np.full(n, rand)))
    return Evidence(values=list(m - a), details={"phi_mrmr": list(m), "phi_anchor": list(a), "phi_random": list(r),
                                                "abs_phi_random": list(np.abs(r))})


def test_c4_paired_intervals_with_margin():
    assert RULE["C4"](_c4(0.3, 0.2, 0.0)).label == "supported"
    assert RULE["C4"](_c4(0.2, 0.3, 0.0)).label == "not supported"
    assert RULE["C4"](_c4(0.21, 0.2, 0.0)).label == "not supported"  # 0.01 ahead: under the 0.02 margin
    assert RULE["C4"](_c4(0.3, 0.2, 0.1)).label == "not supported"  # random is not ~0
    assert RULE["C4"](_c4(0.3, 0.2, 0.0, n=4)).label == "inconclusive"


def test_c5_interval_with_margin():
    assert RULE["C5"](Evidence(values=_shifted(-0.8, 40))).label == "supported"
    assert RULE["C5"](Evidence(values=_shifted(0.5, 40))).label == "not supported"
    assert RULE["C5"](Evidence(values=_shifted(-0.1, 40, spread=1.0))).label == "inconclusive"


def test_c6_every_peer_must_be_beaten_and_c8_is_an_equivalence():
    beaten = {check._c6_key(p): _shifted(-0.8, 40) for p in PEERS}
    assert RULE["C6"](Evidence(values=[0.0], details=beaten)).label == "supported"
    lost = dict(beaten, **{check._c6_key("bp:PCA"): _shifted(0.8, 40)})
    assert RULE["C6"](Evidence(values=[0.0], details=lost)).label == "not supported"
    same = {check._c8_key(a, b): _shifted(0.0, 40, spread=0.2) for a, b in C8_PAIRS}
    assert RULE["C8"](Evidence(values=[0.0], details=same)).label == "supported"
    off = dict(same, **{check._c8_key("AnchorPts", "bp:AnchorPts"): _shifted(2.0, 40, spread=0.2)})
    assert RULE["C8"](Evidence(values=[0.0], details=off)).label == "not supported"


def test_absent_correctness_matrices_skip_every_claim(monkeypatch, tmp_path):
    def absent():
        raise DatasetNotFoundError("effbench/correctness", [], "neurips26 data fetch effbench/correctness")

    monkeypatch.setattr(check, "effbench_names", absent)
    ctx = CheckContext(scale="quick", seeds=[0, 1], device="cpu", out_dir=tmp_path, show_progress=False)
    records = measure_claims(PAPER, ctx)
    # claims decided at quick are skipped with the fetch command; those decided at full are not run at quick
    assert [r["verdict"] for r in records] == ["skipped" if "quick" in c.scales else "inconclusive" for c in CLAIMS]
    assert not any(r.get("error") for r in records)


def test_without_benchpred_c6_and_c8_name_the_missing_peers(monkeypatch, tmp_path):
    from neurips26.claims import lookup, run_checks
    from neurips26.data.testing import require_dataset

    require_dataset("effbench/correctness")
    monkeypatch.setattr(check, "_benchpred_version", lambda: "not installed")
    _, runs = run_checks([lookup("effbench")], scale="smoke", out_root=tmp_path, show_progress=False)
    claims = {c["id"]: c for c in runs[0].record["claims"]}
    assert runs[0].claim_errors == 0, [c.get("error") for c in claims.values()]
    assert claims["C5"]["measured"]["n"] > 0
    for cid in ("C6", "C8"):
        assert claims[cid]["verdict"] == "inconclusive"
    assert any("benchpred not installed" in note or "--no-deps benchpred" in note for note in runs[0].record["notes"])
