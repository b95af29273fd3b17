"""The claim-check contract, checked for every implemented paper (like scikit-learn's ``check_estimator``).

Static part (cheap): ``PAPER`` matches the catalog, every claim has a rule from ``claims.rules`` and its
own ``measure``, no v1 ``run()``, criteria are sentences. Dynamic part: the paper's ``smoke`` check runs in
a fresh run folder and its record is validated: strict JSON, the schema's fields, a verdict, criterion and
reason for every claim, no claim that crashed, every plot a PNG on disk.
"""

from __future__ import annotations

import json
import math

import pytest

from neurips26.claims import SCALES, implemented, load_paper, lookup, rules, run_checks
from neurips26.claims.records import IN_PROGRESS, RECORD_SCHEMA
from neurips26.claims.spec import VERDICTS

SLUGS = [entry.slug for entry in implemented()]
RECORD_FIELDS = ("schema", "paper_id", "slug", "title", "scale", "seeds", "device", "versions", "start_time",
                 "duration_s", "budget_s", "status", "claims", "metrics", "notes", "plots")
CLAIM_FIELDS = ("id", "statement", "paper_value", "metric", "criterion", "measured", "verdict", "reason")


@pytest.mark.parametrize("slug", SLUGS)
def test_paper_declares_v2_claims(slug):
    paper = load_paper(slug)
    assert paper.run is None, f"{slug}: v1 run() left; give each claim a measure"
    assert paper.claims, f"{slug}: no claims"
    assert set(paper.default_seeds) >= {"smoke", "quick", "full"}, f"{slug}: default seeds per scale"
    for claim in paper.claims:
        assert isinstance(claim.rule, rules.Rule), f"{slug} {claim.id}: criterion must come from claims.rules"
        assert callable(claim.measure), f"{slug} {claim.id}: no measure"
        assert claim.criterion.strip() and claim.statement.strip() and claim.metric.strip()
        assert set(claim.scales) <= set(SCALES)


def _strict_load(path):
    def refuse(token):
        raise AssertionError(f"{path.name}: non-strict JSON token {token}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


@pytest.mark.parametrize("slug", SLUGS)
def test_smoke_check_writes_a_valid_record(slug, tmp_path):
    run_dir, runs = run_checks([lookup(slug)], scale="smoke", out_root=tmp_path, show_progress=False)
    assert not (run_dir / IN_PROGRESS).exists()
    record = _strict_load(run_dir / f"{slug}.json")
    assert record.get("status") == "ok", f"{slug}: {record.get('error')}\n{record.get('traceback', '')}"
    missing = [key for key in RECORD_FIELDS if key not in record]
    assert not missing, f"{slug}: record lacks {missing}"
    assert record["schema"] == RECORD_SCHEMA and record["scale"] == "smoke"
    declared = [claim.id for claim in load_paper(slug).claims]
    assert [claim["id"] for claim in record["claims"]] == declared
    for claim in record["claims"]:
        assert all(key in claim for key in CLAIM_FIELDS), f"{slug} {claim['id']}: fields"
        assert claim["verdict"] in VERDICTS
        assert claim["criterion"].strip() and claim["reason"].strip()
        assert "error" not in claim, f"{slug} {claim['id']} crashed: {claim['error']}\n{claim.get('traceback')}"
        if claim["verdict"] == "skipped":
            assert claim.get("fix"), f"{slug} {claim['id']}: a skip must name its fix"
        measured = claim["measured"]
        if measured is not None:
            for value in measured["values"]:
                assert value is None or math.isfinite(value)
    for plot in record["plots"]:
        path = run_dir / plot["path"]
        assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{slug}: plot {plot['path']}"
        assert isinstance(plot["caption"], str)

