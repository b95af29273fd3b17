"""The claim check's declared rules decide as their criteria say, on hand-made evidence, and its m*
interpolation agrees with a fine grid (the measurements themselves run in CI through
`neurips26 check all --scale smoke`)."""

import math

import numpy as np
import pytest

from neurips26.claims import Evidence
from neurips26.truncbool import check


def _c1(bs, spread=1.2, n_exp=0.1, mass=-20.0):
    return Evidence(values=bs, details={"b_per_seed": bs, "spread": spread, "n_exponent": n_exp,
                                        "log10_min_mass": mass})


@pytest.mark.parametrize("ev, label", [
    (_c1([-0.50, -0.51, -0.49]), "supported"),
    (_c1([-0.35, -0.33, -0.36]), "not supported"),        # b wholly above -0.4: refuted
    (_c1([-0.42, -0.43, -0.41]), "inconclusive"),         # between support and refutation
    (_c1([-0.62, -0.60, -0.61]), "inconclusive"),         # faster than 1/sqrt(m): not the claim, not a refutation
    (_c1([-0.3, -0.7, -0.5]), "inconclusive"),            # the interval is too wide to say
    (_c1([-0.50, -0.51, -0.49], n_exp=0.3), "not supported"),
    (_c1([-0.50, -0.51, -0.49], spread=3.0), "inconclusive"),
    (_c1([-0.50, -0.51, -0.49], mass=-5.0), "inconclusive"),  # the grid never reached a tiny mass
    (_c1([-0.5]), "inconclusive"),                        # one seed decides nothing
])
def test_c1_rule(ev, label):
    assert check.C1_RULE(ev).label == label


def _c2(ratios, growth=(0.2, 0.25, 0.3), eff=(1.1, 1.2)):
    return Evidence(values=ratios, details={"growth_gap": list(growth), "efficiency": list(eff)})


@pytest.mark.parametrize("ev, label", [
    (_c2([5, 8, 20, 50, 300, 900]), "supported"),
    (_c2([0.2, 0.3, 0.5, 0.4, 0.3, 0.6]), "not supported"),      # the peer needs fewer calls
    (_c2([5, 8, 20, 50, 300, 900], growth=(-0.1, 0.05, 0.2)), "inconclusive"),
    (_c2([5, 8, 20, 50, 300, 900], eff=(1.1, 2.5)), "not supported"),
    (_c2([5, 8, 20]), "inconclusive"),                          # too few cells
])
def test_c2_rule(ev, label):
    assert check.C2_RULE(ev).label == label


def test_c3_rule():
    rule = check.C3_RULE
    def ev(gap, censored=0):
        return Evidence(values=gap, details={"slope_gap_per_seed": gap, "censored": censored})

    assert rule(ev([0.4, 0.5, 0.45])).label == "supported"
    assert rule(ev([-0.4, -0.5, -0.45])).label == "not supported"
    assert rule(ev([0.4, 0.5, 0.45], censored=1)).label == "inconclusive"


def test_m_star_interpolation_against_a_fine_grid():
    """m* from a doubling grid, interpolated in log-log, against the crossing read off a fine grid of the
    same smooth curve err(m) = c · m^(-1/2) (exact on a power law) and of a curve with curvature."""
    for curve in (lambda m: 7.0 / np.sqrt(m), lambda m: 7.0 / np.sqrt(m) + 30.0 / m):
        coarse = [125 * 2**k for k in range(12)]
        fine = np.unique(np.round(np.geomspace(125, coarse[-1], 200_000)))
        truth = float(fine[np.argmax(curve(fine) <= 0.2)])
        got, status = check.m_star(coarse, [float(curve(m)) for m in coarse], 0.2)
        assert status == "ok" and got == pytest.approx(truth, rel=0.03)
    assert check.m_star([100, 200], [0.1, 0.05], 0.2) == (100.0, "below")
    assert check.m_star([100, 200], [0.5, 0.3], 0.2) == (200.0, "above")


def test_fisher_slopes_closed_form_on_the_cube():
    got = check.fisher_slopes([1, 2, 3])
    ref = np.polyfit([1, 2, 3], [-math.log(q * (1 - q)) for q in (1 / (1 + math.exp(-w)) for w in (1, 2, 3))], 1)[0]
    assert got["cube"] == pytest.approx(ref) and got["parity"] > got["cube"]


def test_mass_lower_bound_is_below_the_mass():
    for mu in (0.3, 0.1, 3.7e-3, 1e-5):
        a = check._mass_lower_bound(math.log(mu))
        assert a <= mu < 10 * a + 1e-15


def test_paper_declared():
    assert check.PAPER.id == "P03" and check.PAPER.slug == "truncbool"
    assert [c.id for c in check.CLAIMS] == ["C1", "C2", "C3"]
    assert check.CLAIMS[2].kind == "sanity" and check.CLAIMS[1].tuning == "equal"
    assert all(c.criterion for c in check.CLAIMS)
