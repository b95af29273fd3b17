"""The check's headroom probe and preconditions against known answers (separable / label-free data)."""

import torch

from neurips26.claims import Evidence
from neurips26.mobillm import check


def test_probe_reaches_one_on_separable_features_and_chance_without_signal():
    g = torch.Generator().manual_seed(0)
    y = torch.randint(2, (400,), generator=g)
    x = torch.randn(400, 3, 8, generator=g)
    x[:, 1, 0] += 4.0 * (2 * y - 1)  # one coordinate separates the classes
    acc = check._probe_accuracy(x[:300], y[:300], x[300:], y[300:])
    assert acc >= 0.98
    noise = check._probe_accuracy(x[:300, :, 1:], y[:300], x[300:, :, 1:], y[300:])  # the signal removed
    assert 0.35 <= noise <= 0.65


def test_headroom_precondition_refuses_a_task_at_its_ceiling():
    pre = check.HEADROOM
    assert pre.rule(Evidence(values=[0.60], unit="accuracy")).label != "supported"  # protocol 2's task
    assert pre.rule(Evidence(values=[0.86], unit="accuracy")).label == "supported"


def test_plateau_precondition_reads_accuracy_curves_higher_is_better():
    rising = [0.5, 0.6, 0.7, 0.8, 0.9]
    flat = [0.5, 0.8, 0.85, 0.85, 0.851, 0.851]
    ev = Evidence(values=[0.9, 0.851, 0.851], unit="accuracy", details={"curves": [rising, flat, flat]})
    assert check.PLATEAU.rule(ev).label != "supported"  # one peer still rising: not converged
    ev = Evidence(values=[0.851] * 3, unit="accuracy", details={"curves": [flat, flat, flat]})
    assert check.PLATEAU.rule(ev).label == "supported"
