"""The claim check: declared claims and rules decide as their sentences say (hand-made evidence), the controls
are wired as the protocol states, and the spec's budgets build (shapes only: the gpu scale is never trained here)."""

import numpy as np
import pytest
import torch

from neurips26.claims import Evidence
from neurips26.snndelay import DelayedLinear, ResidualDelaySNN, check, count_core_params


def test_paper_declares_five_claims():
    assert check.PAPER.slug == "snndelay" and check.PAPER.id == "P11"
    assert [c.id for c in check.CLAIMS] == ["C1", "C2", "C3", "C4", "C5"]
    for claim in check.CLAIMS:
        assert claim.rule.criterion
        assert claim.preconditions, claim.id  # every claim reads trained models


def _items(mean, n=100, sd=0.05, seed=0):
    return list(np.random.default_rng(seed).normal(mean, sd, n))


def test_c1_needs_both_the_constant_control_and_d0():
    rule = check.CLAIMS[0].rule
    both = Evidence(values=_items(0.05), details={"vs_d0": _items(0.08, seed=1)})
    only_d0 = Evidence(values=_items(0.0), details={"vs_d0": _items(0.08, seed=1)})  # any delay would do
    worse = Evidence(values=_items(-0.05), details={"vs_d0": _items(0.08, seed=1)})
    assert rule(both).label == "supported"
    assert rule(only_d0).label == "inconclusive"
    assert rule(worse).label == "not supported"
    assert rule(Evidence(values=_items(0.05, n=10), details={"vs_d0": _items(0.08, n=10)})).label == "inconclusive"


def test_c2_rule_per_sigma():
    rule = check.CLAIMS[1].rule
    ok = Evidence(values=[0.1], details={"to_cover": {"s1": _items(0.1)}, "past_cover": {"s1 D8": _items(0.0)}})
    growing = Evidence(values=[0.1], details={"to_cover": {"s1": _items(0.1)}, "past_cover": {"s1 D8": _items(0.1)}})
    no_gain = Evidence(values=[0.0], details={"to_cover": {"s1": _items(0.0)}, "past_cover": {"s1 D8": _items(0.0)}})
    assert rule(ok).label == "supported"
    assert rule(growing).label == "not supported"
    assert rule(no_gain).label == "not supported"


def test_c3_c4_c5_rules():
    c3, c4, c5 = check.CLAIMS[2].rule, check.CLAIMS[3].rule, check.CLAIMS[4].rule
    assert c3(Evidence(values=_items(0.1))).label == "supported"
    assert c3(Evidence(values=_items(-0.1))).label == "not supported"
    assert c4(Evidence(values=list(np.exp(_items(np.log(5.0)))))).label == "supported"
    assert c4(Evidence(values=list(np.exp(_items(np.log(1.2)))))).label == "not supported"
    assert c5(Evidence(values=_items(0.05))).label == "supported"


def test_c3_matches_checkpoints_by_test_loss_not_steps():
    ck = lambda losses: [{"step": 10 * (i + 1), "test_loss": v} for i, v in enumerate(losses)]  # noqa: E731
    m = check._matched({"d0": {"checkpoints": ck([3.0, 2.5, 2.2, 2.0])},
                        "d8": {"checkpoints": ck([2.9, 2.1, 1.8, 1.6])}})
    assert m["target"] == 2.0
    assert m["d0"]["step"] == 40 and m["d8"]["step"] == 20  # d8's earlier checkpoint has d0's final loss


def test_per_item_gains_average_to_the_per_difference():
    a = {"errors": [1, 4, 0], "ref_lengths": [10, 20, 30]}
    b = {"errors": [3, 4, 5], "ref_lengths": [10, 20, 30]}
    runs = {"x": {"d8": {0: a}, "d0": {0: b}}}
    gains = check._per_item(runs, "d8", "d0")
    assert np.mean(gains) == pytest.approx((12 - 5) / 60)


def test_controls_are_wired():
    """const4: every connection at 4; narrow2: U{0..2}; d8: U{0..8}; all with d0's trainable parameters."""
    models = {arm: check.build_arm(arm, 16, 24, 2, seed=0) for arm in check.SNN_ARMS}
    delays = {arm: [m.delays for m in mod.modules() if isinstance(m, DelayedLinear)] for arm, mod in models.items()}
    assert all(int(d.max()) == 0 for d in delays["d0"])
    assert all(bool((d == 4).all()) for d in delays["const4"])
    assert all(int(d.max()) <= 2 and len(d.unique()) == 3 for d in delays["narrow2"])
    assert all(int(d.max()) <= 8 and len(d.unique()) == 9 for d in delays["d8"])
    counts = {arm: count_core_params(m) for arm, m in models.items()}
    assert len(set(counts.values())) == 1
    # same seed -> same initial weights in every SNN arm (only the delays differ)
    torch.testing.assert_close(models["d0"].stem.weight, models["d8"].stem.weight)
    assert set(check.SETTINGS["full"].arms) >= {"d0", "d8", "const4", "narrow2", "gru", "tcn", "mlp"}


@pytest.mark.parametrize("budget,nominal", [("500k", 0.55e6), ("2M", 2.0e6), ("5M", 4.5e6)])
def test_gpu_budgets_build_shapes_only(budget, nominal):
    """The spec's budgets at F = 256 (gpu scale): core parameter counts and output shapes; not trained here."""
    hidden, n_layers = check.SETTINGS["gpu"].budgets[budget]
    model = ResidualDelaySNN(256, hidden, n_layers, max_delay=8, n_days=4)
    assert abs(count_core_params(model) - nominal) / nominal < 0.1
    with torch.no_grad():
        out = model(torch.randn(2, 6, 256), torch.tensor([0, 3]))
    assert out.shape == (2, 6, 41)
