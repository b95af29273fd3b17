"""The wlia claim check's pre-registered rules on hand-made evidence."""

from neurips26.claims import Evidence
from neurips26.wlia.check import CLAIMS, PAPER, Sweep

RULE = {c.id: c.rule for c in CLAIMS}


def test_paper_declares_five_measured_claims():
    assert PAPER.slug == "wlia" and [c.id for c in CLAIMS] == ["C1", "C2", "C3", "C4", "C5"]
    assert all(c.measure is not None for c in CLAIMS) and PAPER.run is None


def test_c1_every_cell_below_one_and_mean_at_most_0_7():
    assert RULE["C1"](Evidence(values=[0.2, 0.3, 0.9, 0.5])).label == "supported"
    assert RULE["C1"](Evidence(values=[0.1, 0.1, 0.1, 1.0])).label == "not supported"  # worst cell = 1
    assert RULE["C1"](Evidence(values=[0.8, 0.7, 0.75, 0.9])).label == "not supported"  # mean 0.79
    assert RULE["C1"](Evidence(values=[0.1, 0.1, 0.1])).label == "inconclusive"


def test_c2_c3_paired_two_standard_errors():
    for cid in ("C2", "C3"):
        assert RULE[cid](Evidence(values=[0.1, 0.12, 0.09, 0.11])).label == "supported"
        assert RULE[cid](Evidence(values=[-0.1, -0.12, -0.09, -0.11])).label == "not supported"
        assert RULE[cid](Evidence(values=[0.1, -0.1, 0.05, -0.04])).label == "inconclusive"
        assert RULE[cid](Evidence(values=[0.1, 0.1, 0.1])).label == "inconclusive"


def test_c4_ratio_and_accuracy_drop_c5_ratio():
    assert RULE["C4"](Evidence(values=[3.0, 2.5], details={"acc_drop_pt": [0.5, 0.9]})).label == "supported"
    assert RULE["C4"](Evidence(values=[3.0, 2.5], details={"acc_drop_pt": [0.5, 1.7]})).label == "not supported"
    assert RULE["C4"](Evidence(values=[1.5, 2.0], details={"acc_drop_pt": [0.0, 0.0]})).label == "not supported"
    assert RULE["C4"](Evidence(values=[3.0], details={"acc_drop_pt": [5.0]})).label == "inconclusive"
    assert RULE["C5"](Evidence(values=[2.0, 2.2])).label == "supported"
    assert RULE["C5"](Evidence(values=[0.7, 0.8])).label == "not supported"


def test_sweep_pairs_each_seed_with_its_own_undefended_run():
    settings, seeds = [("a", "m"), ("b", "m")], [0, 1]
    runs = {(lam, s, seed): {"wlia": (1 + lam) * (seed + 1) * (1 + i)}
            for lam in (0.0, 1.0) for i, s in enumerate(settings) for seed in seeds}
    runs[(1.0, ("b", "m"), 1)]["wlia"] *= 3  # seed 1, setting b: ratio 6 instead of 2
    sweep = Sweep(runs=runs, settings=settings, seeds=seeds, table=[], chosen={})
    assert sweep.per_seed(1.0, lambda on, off: on["wlia"] / off["wlia"]) == [2.0, 4.0]
