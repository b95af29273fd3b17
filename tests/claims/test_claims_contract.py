"""The claim-check contract, checked for every implemented paper (like scikit-learn's ``check_estimator``).

Static part (cheap): ``PAPER`` matches the catalog, every claim has a rule from ``claims.rules``, its own
``measure`` and a kind; a claim comparing trained models carries preconditions and a tuning statement;
criteria are sentences. Records of record (``results/<slug>/``): valid, of this paper, within budget, and the
README tables are what they generate. Dynamic part: the paper's ``smoke`` check runs in
a fresh run folder and its record is validated: strict JSON, the schema's fields, a verdict, criterion and
reason for every claim, no claim that crashed, every plot a PNG on disk.
"""

from __future__ import annotations

import json
import math

import pytest

from neurips26.claims import CLAIM_KINDS, SCALES, implemented, load_paper, lookup, of_record, rules, run_checks
from neurips26.claims.records import IN_PROGRESS, RECORD_SCHEMA, package_root
from neurips26.claims.spec import VERDICTS

SLUGS = [entry.slug for entry in implemented()]
RECORD_FIELDS = ("schema", "paper_id", "slug", "title", "scale", "seeds", "device", "versions", "start_time",
                 "duration_s", "budget_s", "status", "claims", "metrics", "notes", "plots")
CLAIM_FIELDS = ("id", "statement", "paper_value", "metric", "criterion", "measured", "verdict", "reason")


@pytest.mark.parametrize("slug", SLUGS)
def test_paper_declares_v3_claims(slug):
    paper = load_paper(slug)
    assert paper.claims, f"{slug}: no claims"
    assert set(paper.default_seeds) >= {"smoke", "quick", "full"}, f"{slug}: default seeds per scale"
    for claim in paper.claims:
        assert isinstance(claim.rule, rules.Rule), f"{slug} {claim.id}: criterion must come from claims.rules"
        assert callable(claim.measure), f"{slug} {claim.id}: no measure"
        assert claim.criterion.strip() and claim.statement.strip() and claim.metric.strip()
        assert set(claim.scales) <= set(SCALES)
        assert claim.kind in CLAIM_KINDS
        if claim.compares_trained:
            assert claim.preconditions, f"{slug} {claim.id}: a comparison of trained models needs preconditions"
            assert claim.tuning.strip(), f"{slug} {claim.id}: tuning='equal' or the reason a baseline is untuned"
    assert any(claim.kind == "paper" for claim in paper.claims), f"{slug}: no claim of the paper itself"


RECORDED = [(slug, scale) for slug in SLUGS for scale in of_record.RECORD_SCALES
            if of_record.record_path(slug, scale).is_file()]


@pytest.mark.parametrize(("slug", "scale"), RECORDED)
def test_record_of_record_is_valid_and_within_budget(slug, scale):
    record = of_record.load_of_record(slug, scale)  # raises for a corrupt record or one of another paper
    assert record["schema"] == RECORD_SCHEMA and record["status"] == "ok"
    assert [c["id"] for c in record["claims"]] == [c.id for c in load_paper(slug).claims], \
        f"{slug} {scale}: the record's claims are not the declared ones: re-run with --record"
    if scale == "quick":
        assert record["cpu_s"] <= record["budget_s"], f"{slug}: quick took {record['cpu_s']:.0f} CPU-s"
    if scale == "full":
        assert record["cpu_s"] <= load_paper(slug).budget_s("full"), f"{slug}: full over its budget"


@pytest.mark.parametrize("slug", sorted({slug for slug, _ in RECORDED}))
def test_readme_verdict_table_is_generated_from_the_records(slug):
    readme = (package_root(slug) / "README.md").read_text(encoding="utf-8")
    assert readme == of_record.paper_readme_text(slug), (
        f"{slug}: README verdict table differs from results/{slug}/: run `neurips26 report --readme {slug}`")


def test_top_readme_table_is_generated_from_the_records():
    from neurips26.claims.records import repository_root

    root = repository_root()
    if root is None:
        pytest.skip("not a checkout")
    assert (root / "README.md").read_text(encoding="utf-8") == of_record.top_readme_text(), (
        "the README's paper table differs from results/: run `neurips26 report --readme`")


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

