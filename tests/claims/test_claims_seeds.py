"""Seeds as tasks (``Paper(independent_seeds=True)``): deciding each claim on the merged evidence of per-seed
measurements gives the record a sequential run on all seeds gives, failures and data misses included; a
measurement that breaks the declaration is an error of its claim, never a silent verdict."""

import pytest

from _executor_workers import CLAIMS, PAPER, _value
from neurips26.claims.runner import decide_measured, measure_claims
from neurips26.claims.seeds import SeedMergeError, measure_claim, merge_evidence, merge_seeds
from neurips26.claims.spec import CheckContext, Evidence, Paper


def _ctx(tmp_path, seeds, scale="quick"):
    return CheckContext(scale=scale, seeds=seeds, device="cpu", out_dir=tmp_path, show_progress=False,
                        log=lambda msg: None)


def _seeded(tmp_path, seeds, scale="quick"):
    per_seed = [[measure_claim(c, _ctx(tmp_path, [s], scale)) for c in CLAIMS] for s in seeds]
    ctx = _ctx(tmp_path, seeds, scale)
    return [decide_measured(c, merge_seeds(c, [p[i] for p in per_seed]), ctx) for i, c in enumerate(CLAIMS)]


def _strip(record):  # tracebacks name the frames that ran, which differ between the two paths
    return {k: v for k, v in record.items() if k != "traceback"}


@pytest.mark.parametrize("scale", ["quick", "smoke"])
def test_seed_tasks_give_the_sequential_record(tmp_path, scale):
    seeds = [0, 1, 2]
    sequential = measure_claims(PAPER, _ctx(tmp_path, seeds, scale))
    seeded = _seeded(tmp_path, seeds, scale)
    for a, b in zip(sequential[:3] + sequential[4:], seeded[:3] + seeded[4:], strict=True):
        assert _strip(a) == _strip(b)
    assert sequential[0]["measured"]["values"] == [2.0 + _value(s) for s in seeds]
    assert seeded[0]["measured"]["details"]["per_seed"] == [{"seed": s} for s in seeds]
    assert seeded[1]["error"] == "RuntimeError: seed 1 diverged"
    assert seeded[2]["verdict"] == "skipped" and "toy/absent" in seeded[2]["fix"]


def test_a_detail_that_differs_per_seed_makes_its_claim_an_error(tmp_path):
    seeded = _seeded(tmp_path, [0, 1])
    assert seeded[3]["verdict"] == "inconclusive"
    assert "SeedMergeError" in seeded[3]["error"] and "best_seed" in seeded[3]["error"]
    # the sequential run sees one value for the whole run and decides: the two paths differ only here, and
    # the seeded one says why instead of deciding on a merged value that no run measured
    assert measure_claims(PAPER, _ctx(tmp_path, [0, 1]))[3]["verdict"] == "supported"


def test_merge_evidence_concatenates_in_seed_order_and_refuses_mismatches():
    a = Evidence(values=[1.0], unit="x", details={"rows": [1], "k": 3}, missing=["cora"])
    b = Evidence(values=[2.0], unit="x", details={"rows": [2, 3], "k": 3}, missing=["cora", "pubmed"])
    merged = merge_evidence([a, b])
    assert merged.values == [1.0, 2.0] and merged.details == {"rows": [1, 2, 3], "k": 3}
    assert merged.missing == ("cora", "pubmed")
    with pytest.raises(SeedMergeError, match="unit"):
        merge_evidence([a, Evidence(values=[1.0], unit="s", details={"rows": [], "k": 3})])
    with pytest.raises(SeedMergeError, match="keys"):
        merge_evidence([a, Evidence(values=[1.0], unit="x", details={"rows": []})])


def test_independent_seeds_must_be_a_bool():
    with pytest.raises(TypeError, match="independent_seeds"):
        Paper(id="P99", slug="toy", claims=CLAIMS, independent_seeds="yes")
