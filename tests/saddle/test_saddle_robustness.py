"""The default inner rule, divergence detection and round-off constants (issue 43).

References: the exact-prox ablation (a linear solve per prox, so its rounds are the splitting's alone), the
eigenvalues of the game's matrices (numpy), and the definition of divergence (error above its start by 1e4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from neurips26.claims import measure
from neurips26.saddle import (
    QuadraticGame,
    decoupled_method,
    decoupled_sgda,
    extragradient,
    gda,
    optimistic_gda,
)

GRID = (10.0, 100.0, 1000.0)


def _rounds(rule: str | None, L: float, inner: str = "agd") -> int:
    g = QuadraticGame.random(10, 0.1, L, 0.1, L, 1.0, seed=0)
    z = np.zeros(10)
    kw = {} if rule is None else {"inner_rule": rule}
    r = decoupled_method(g, z, z, inner=inner, **kw)
    assert r.converged, r.reason
    return r.rounds


def test_default_inner_rule_keeps_rounds_flat_in_L_xx():
    ours = [_rounds(None, L) for L in GRID]
    exact = [_rounds(None, L, inner="exact") for L in GRID]
    # the rounds of the default (HPE) rule stay within 2x of the exact prox's at every L_xx ...
    assert all(o <= 2 * e for o, e in zip(ours, exact)), (ours, exact)
    # ... and their log-log slope over two decades of L_xx is at most 0.2 (EG's is ~1)
    assert measure.loglog_slope(GRID, ours).slope <= 0.2, ours


def test_relative_rule_is_the_one_whose_rounds_grow():
    rel = [_rounds("relative", L) for L in (10.0, 1000.0)]
    hpe = [_rounds("hpe", L) for L in (10.0, 1000.0)]
    assert rel[1] / rel[0] > hpe[1] / hpe[0]


def test_round_off_modulus_is_zero_and_the_default_step_refuses():
    g = QuadraticGame.random(4, 0.0, 2.0, 0.5, 2.0, 1.0)
    assert abs(np.linalg.eigvalsh(g.A)[0]) < 1e-12  # the smallest eigenvalue is round-off, not a modulus
    assert g.constants["mu_x"] == 0.0 and g.constants["mu_y"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="mu_x"):
        decoupled_method(g, np.zeros(4), np.zeros(4))


def test_round_off_modulus_given_explicitly_is_named_in_the_error():
    g = QuadraticGame.random(4, 0.0, 2.0, 0.5, 2.0, 1.0)
    h = QuadraticGame(g.A, g.B, g.C, g.a, g.c, constants={**g.constants, "mu_x": 5.9e-17})
    with pytest.raises(ValueError, match="round-off"):
        decoupled_method(h, np.zeros(4), np.zeros(4))


def test_the_old_exploding_step_is_flagged_within_a_few_rounds():
    # the step the round-off modulus used to produce: η_x = 0.5·√(0.5/5.9e-17)/1 ≈ 4.6e7
    g = QuadraticGame.random(4, 0.0, 2.0, 0.5, 2.0, 1.0)
    eta_x = 0.5 * math.sqrt(0.5 / 5.9e-17)
    r = decoupled_method(g, np.zeros(4), np.zeros(4), eta_x=eta_x, eta_y=0.5 * math.sqrt(5.9e-17 / 0.5))
    assert r.diverged and not r.converged
    assert r.rounds <= 10 and r.reason.startswith("diverged")


@pytest.mark.parametrize("solver", [extragradient, optimistic_gda, gda, decoupled_sgda])
def test_every_baseline_flags_a_diverging_step(solver):
    g = QuadraticGame.random(6, 0.1, 10.0, 0.1, 10.0, 1.0, seed=1)
    z = np.zeros(6)
    r = solver(g, z, z, lr=5.0, max_rounds=10**5)
    assert r.diverged and not r.converged and r.reason.startswith("diverged")
    assert r.rounds <= 200  # error 1e4x its start within a few dozen steps of a 50x-too-large step


def test_a_converged_run_says_so():
    g = QuadraticGame.random(6, 0.5, 5.0, 0.5, 5.0, 1.0, seed=2)
    r = extragradient(g, np.zeros(6), np.zeros(6))
    assert r.converged and r.reason == "converged"
    r = extragradient(g, np.zeros(6), np.zeros(6), max_rounds=4)
    assert not r.converged and not r.diverged and r.reason == "max_rounds reached"
