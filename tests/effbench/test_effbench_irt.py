"""2PL IRT: MAP fit recovers planted parameters; ability estimates solve their score equation."""

import numpy as np
import pytest

from neurips26.effbench import IRTParams, estimate_ability, fit_irt_2pl


def _synthetic(m=400, n=60, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(m, 1))
    a = rng.lognormal(0.0, 0.3, size=(n, 1))
    b = rng.normal(size=n)
    P = 1 / (1 + np.exp(-(theta @ a.T - b)))
    return (rng.random((m, n)) < P).astype(float), theta, a, b


def test_map_fit_recovers_planted_2pl():
    S, theta, a, b = _synthetic()
    fit = fit_irt_2pl(S, 1)
    assert np.corrcoef(fit.theta[:, 0], theta[:, 0])[0, 1] > 0.9
    assert np.corrcoef(fit.b, b)[0, 1] > 0.95
    assert np.corrcoef(fit.a[:, 0], a[:, 0])[0, 1] > 0.6
    assert fit.a.mean() > 0  # sign convention


def test_adam_reference_configuration_decreases_loss():
    S, *_ = _synthetic(m=60, n=30)
    short = fit_irt_2pl(S, 3, optimizer="adam", steps=5)
    long = fit_irt_2pl(S, 3, optimizer="adam", steps=300)
    assert long.loss < short.loss and long.theta.shape == (60, 3) and long.a.shape == (30, 3)


def test_ability_estimate_is_posterior_mode_and_tracks_truth():
    rng = np.random.default_rng(1)
    n = 300
    params = IRTParams(theta=np.zeros((1, 1)), a=rng.lognormal(0, 0.3, (n, 1)), b=rng.normal(size=n),
                       loss=0.0, steps=0)
    theta = rng.normal(size=(50, 1))
    Y = (rng.random((50, n)) < params.proba(theta)).astype(float)
    items = np.arange(n)
    est = estimate_ability(Y, items, params)
    # score equation of the MAP: sum_j (y_j - p_j) a_j - theta = 0
    grad = (Y - params.proba(est)) @ params.a - est
    assert np.max(np.abs(grad)) < 1e-8
    assert np.corrcoef(est[:, 0], theta[:, 0])[0, 1] > 0.95


@pytest.mark.parametrize("kwargs, match", [({"dims": 0}, "dims"), ({"optimizer": "sgd"}, "optimizer"),
                                           ({"steps": 0}, "steps")])
def test_bad_irt_settings(kwargs, match):
    S, *_ = _synthetic(m=20, n=10)
    with pytest.raises(ValueError, match=match):
        fit_irt_2pl(S, **kwargs)


def test_irt_requires_binary():
    with pytest.raises(ValueError, match="0/1"):
        fit_irt_2pl(np.full((5, 4), 0.5))
