"""The claim check's declared rules decide as their sentences say (on hand-made evidence)."""

from neurips26.claims import Evidence
from neurips26.snndelay import check


def _c1(rows):
    table = {b: {"gain": g, "spread": s, "n_seeds": n, "per_d0": [], "per_d8": []} for b, (g, s, n) in rows.items()}
    return check.CLAIMS[0].rule(Evidence(values=[r[0] for r in rows.values()], details={"by_budget": table}))


def test_paper_declares_five_claims():
    assert check.PAPER.slug == "snndelay" and check.PAPER.id == "P11"
    assert [c.id for c in check.CLAIMS] == ["C1", "C2", "C3", "C4", "C5"]
    for claim in check.CLAIMS:
        assert claim.rule.criterion


def test_c1_rule():
    assert _c1({"a": (0.05, 0.01, 2), "b": (0.04, 0.02, 2)}).label == "supported"
    assert _c1({"a": (0.05, 0.01, 2), "b": (-0.01, 0.02, 2)}).label == "not supported"
    assert _c1({"a": (0.05, 0.01, 2), "b": (0.01, 0.02, 2)}).label == "inconclusive"
    assert _c1({"a": (0.05, float("nan"), 1)}).label == "inconclusive"


def test_c2_rule():
    rule = check.CLAIMS[1].rule
    ok = Evidence(values=[0.01, 0.0], details={"gain_to_cover": [0.1, 0.08]})
    growing = Evidence(values=[0.01, 0.06], details={"gain_to_cover": [0.1, 0.08]})
    no_gain = Evidence(values=[0.01, 0.0], details={"gain_to_cover": [0.1, 0.01]})
    assert rule(ok).label == "supported"
    assert rule(growing).label == "not supported"
    assert rule(no_gain).label == "not supported"


def test_c3_c4_need_trained_models():
    c3, c4 = check.CLAIMS[2].rule, check.CLAIMS[3].rule
    assert c3(Evidence(values=[-0.1], details={"excess_drop": [-0.1], "train_steps": 20})).label == "inconclusive"
    assert c3(Evidence(values=[0.1], details={"excess_drop": [0.05], "train_steps": 200})).label == "supported"
    assert c4(Evidence(values=[2.0], details={"ratio_tcn": [0.9], "train_steps": 200})).label == "not supported"
    assert c4(Evidence(values=[2.0], details={"ratio_tcn": [1.5], "train_steps": 200})).label == "supported"
