"""The emc claim check: its pre-registered rules on hand-made evidence, and Planetoid absence."""

from neurips26.claims import CheckContext, Evidence
from neurips26.data import DatasetNotFoundError
from neurips26.emc import check
from neurips26.emc.check import CLAIMS, PAPER

RULE = {c.id: c.rule for c in CLAIMS}


def test_paper_declares_four_measured_claims():
    assert PAPER.slug == "emc" and [c.id for c in CLAIMS] == ["C1", "C2", "C3", "C4"]
    assert all(c.measure is not None for c in CLAIMS)


def test_c1_two_thirds_of_cells_and_a_non_negative_mean():
    assert RULE["C1"](Evidence(values=[0.1, 0.0, -0.05])).label == "supported"  # 2/3, mean >= 0
    assert RULE["C1"](Evidence(values=[0.1, -0.01, -0.01])).label == "not supported"  # 1/3
    assert RULE["C1"](Evidence(values=[0.01, 0.01, -0.5])).label == "not supported"  # 2/3 but mean < 0
    assert RULE["C1"](Evidence(values=[0.1, 0.1])).label == "inconclusive"  # < 3 cells


def test_c2_c3_median_ratio():
    for cid in ("C2", "C3"):
        assert RULE[cid](Evidence(values=[2.5, 22.9, 2.5, 22.9, 5.0])).label == "supported"  # median 5
        assert RULE[cid](Evidence(values=[2.5, 22.9, 2.5])).label == "not supported"
        assert RULE[cid](Evidence(values=[50.0, 50.0])).label == "inconclusive"


def test_c4_comparative_interval():
    assert RULE["C4"](Evidence(values=[0.2, 0.25, 0.22])).label == "supported"
    assert RULE["C4"](Evidence(values=[-0.2, -0.25, -0.22])).label == "not supported"
    assert RULE["C4"](Evidence(values=[0.2, -0.3, 0.1])).label == "inconclusive"
    assert RULE["C4"](Evidence(values=[0.2, 0.1])).label == "inconclusive"


def test_c1_gcal_precondition_measured(monkeypatch, tmp_path):
    collapsed = {"gcal": {"AP": 0.1}, "source": {"AP": 0.4}, "emc": {"AP": 0.5}}
    monkeypatch.setattr(check, "_cells", lambda ctx: ({f"c{i}": collapsed for i in range(3)}, ""))
    ctx = CheckContext(scale="quick", seeds=[0, 1, 2], device="cpu", out_dir=tmp_path, show_progress=False)
    pre = CLAIMS[0].preconditions[0]
    assert pre.rule(pre.measure(ctx)).label != "supported"


def test_absent_planetoid_leaves_the_csbm_cells(monkeypatch, tmp_path):
    fake = {"gcal": {"AP": 0.5, "median_cpu_time_s": 1.0, "median_time_s": 1.0, "peak_bytes": 10.0},
            "emc": {"AP": 0.6, "median_cpu_time_s": 0.1, "median_time_s": 0.1, "peak_bytes": 1.0}}

    def streams(ctx, family):
        if family == "planetoid":
            raise DatasetNotFoundError("planetoid/cora", [], "neurips26 data fetch planetoid/cora")
        return {f"csbm/seed{s}": fake for s in ctx.seeds}

    monkeypatch.setattr(check, "_streams", streams)
    ctx = CheckContext(scale="quick", seeds=[0, 1, 2], device="cpu", out_dir=tmp_path, show_progress=False)
    ev = check.measure_c1(ctx)
    assert ev.details["cells"] == ["csbm/seed0", "csbm/seed1", "csbm/seed2"]
    assert "CSBM cells alone" in ev.note and RULE["C1"](ev).label == "supported"
    assert check.measure_c2(ctx).values == [10.0, 10.0, 10.0]
    assert check.measure_c3(ctx).values == [10.0, 10.0, 10.0]
    assert sum("Planetoid data absent" in n for n in ctx.notes) == 1
