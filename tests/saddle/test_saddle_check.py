"""The claim check's own pieces: its decision on the chain ratio, the per-method span bound, the slope interval.

References: numpy's least-squares fit and scipy's t quantile (the interval), a hand-built support log, the
claims' declared ids.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from neurips26.claims import Evidence
from neurips26.saddle import ChainHardInstance, CostCounter, decoupled_method
from neurips26.saddle.check import (
    ARMS,
    CLAIMS,
    LB_SLOPE_MAX,
    PAPER,
    _decide_c4,
    _slope_interval,
    _support_rounds,
)


def test_claims_are_declared_once_with_kinds():
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids)) and PAPER.slug == "saddle"
    assert {c.id for c in CLAIMS if c.kind == "sanity"} == {"C4s"}


def test_every_compared_arm_gets_the_same_number_of_configurations():
    assert len({len(grid) for _, grid in ARMS.values()}) == 1


def test_slope_interval_matches_numpy_and_scipy():
    rng = np.random.default_rng(0)
    x = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    y = 3.0 * x ** 0.3 * np.exp(0.05 * rng.standard_normal(5))
    slope, lo, hi = _slope_interval(list(x), list(y))
    assert slope == pytest.approx(np.polyfit(np.log(x), np.log(y), 1)[0], rel=1e-12)
    resid = np.log(y) - np.polyval(np.polyfit(np.log(x), np.log(y), 1), np.log(x))
    se = np.sqrt((resid ** 2).sum() / 3 / ((np.log(x) - np.log(x).mean()) ** 2).sum())
    assert hi - slope == pytest.approx(stats.t.ppf(0.975, 3) * se, rel=1e-9)
    assert slope - lo == pytest.approx(hi - slope, rel=1e-12)


@pytest.mark.parametrize("ci,verdict", [((-0.3, 0.1), "supported"), ((0.25, 0.6), "not supported"),
                                        ((-0.1, 0.5), "inconclusive")])
def test_c4_decides_on_the_interval_not_on_the_point(ci, verdict):
    ev = Evidence(values=[sum(ci) / 2], details={"ci95": list(ci)})
    assert _decide_c4(ev).label == verdict
    assert LB_SLOPE_MAX == 0.2


def test_support_rounds_is_the_first_round_reaching_the_coordinate():
    log = [(0, "x", 0, -1), (1, "y", 0, 0), (2, "x", 1, 0), (4, "x", 2, 1), (6, "y", 3, 2)]
    assert _support_rounds(log, 2) == 4
    assert _support_rounds(log, 9) is None


def test_ours_activates_a_chain_coordinate_every_two_rounds():
    # the reason the per-method span bound is twice the one-coordinate-per-round bound
    h = ChainHardInstance(60, 1.0, 0.2)
    c = CostCounter(h, record_support=True)
    decoupled_method(h, np.zeros(60), np.zeros(60), max_rounds=40, tol=1e-300, counter=c)
    for k in (4, 10, 16):
        assert _support_rounds(c.support_log, k) == 2 * k
