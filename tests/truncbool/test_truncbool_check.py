"""The claim check's declared rules decide as their criteria say, on hand-made evidence (the measurements
themselves run in CI through `neurips26 check all --scale smoke`)."""

import pytest

from neurips26.claims import Evidence
from neurips26.truncbool import check


def _c1(b, spread=1.2, n_exp=0.1, mass=-20.0):
    return Evidence(values=[b], details={"b": b, "spread": spread, "n_exponent": n_exp, "log10_min_mass": mass})


@pytest.mark.parametrize("ev, label", [
    (_c1(-0.5), "supported"),
    (_c1(-0.35), "not supported"),        # b > -0.4: refuted
    (_c1(-0.42), "inconclusive"),         # between support and refutation
    (_c1(-0.6), "inconclusive"),          # faster than 1/sqrt(m): not the claimed rate, not a refutation
    (_c1(-0.5, n_exp=0.3), "not supported"),
    (_c1(-0.5, spread=3.0), "inconclusive"),
    (_c1(-0.5, mass=-5.0), "inconclusive"),  # the grid never reached a tiny mass
])
def test_c1_rule(ev, label):
    assert check.CLAIMS[0].rule(ev).label == label


def test_c3_rule():
    rule = check.CLAIMS[2].rule
    assert rule(Evidence(values=[0.7, 1.6], details={"slope_gap": 0.9, "censored": 0})).label == "supported"
    assert rule(Evidence(values=[0.7, 0.5], details={"slope_gap": -0.2, "censored": 0})).label == "not supported"
    assert rule(Evidence(values=[0.7, 1.6], details={"slope_gap": 0.9, "censored": 1})).label == "inconclusive"


def test_paper_declared():
    assert check.PAPER.id == "P03" and check.PAPER.slug == "truncbool"
    assert [c.id for c in check.CLAIMS] == ["C1", "C2", "C3"]
    assert all(c.criterion for c in check.CLAIMS)
