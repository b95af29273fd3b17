"""The claim-check framework: registry, decisions, records (atomic, never overwritten), reports."""

import json
from pathlib import Path

import pytest

from neurips26.claims import (
    CATALOG,
    Claim,
    Evidence,
    Paper,
    Verdict,
    lookup,
    measure_claims,
    new_run_dir,
    rules,
    verdict_table,
    write_json_atomic,
    write_report,
)
from neurips26.claims import runner as runner_module
from neurips26.claims.registry import load_paper, resolve
from neurips26.claims.spec import CheckContext


def test_catalog_lists_19_unique_papers():
    assert [entry.id for entry in CATALOG] == [f"P{i:02d}" for i in range(1, 20)]
    assert len({entry.slug for entry in CATALOG}) == 19


def test_lookup_by_slug_and_id_and_unknown():
    assert lookup("effbench").id == "P12"
    assert lookup("p12").slug == "effbench"
    with pytest.raises(ValueError, match="unknown paper 'nope'"):
        lookup("nope")


def test_resolve_rejects_all_mixed_with_names():
    with pytest.raises(ValueError, match="'all' cannot be combined"):
        resolve(["all", "effbench"])


def test_load_paper_of_unimplemented_paper_says_so():
    from neurips26.claims import CATALOG, is_implemented

    missing = [entry.slug for entry in CATALOG if not is_implemented(entry)]
    if not missing:
        pytest.skip("every paper is implemented")
    with pytest.raises(LookupError, match="not implemented yet"):
        load_paper(missing[0])


def test_evidence_statistics_match_numpy():
    ev = Evidence([1.0, 2.0, 4.0])
    assert ev.mean == pytest.approx(7 / 3)
    assert ev.std == pytest.approx(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) ** 0.5 / 2 ** 0.5)
    assert ev.sem == pytest.approx(ev.std / 3 ** 0.5)
    assert Evidence([5.0]).std == 0.0


def test_verdict_rejects_unknown_label():
    with pytest.raises(ValueError, match="verdict label"):
        Verdict("maybe", "x")


def _toy_paper(measure_c1, measure_c2=None, measure_c3=None):
    """Three claims: C1 mean > 0, C2 mean > 10, C3 decided at full only."""
    same = measure_c1
    claims = (
        Claim("C1", "x is positive", "x > 0", "x", rule=rules.threshold(">", 0, min_n=1), measure=measure_c1),
        Claim("C2", "y is large", "y > 10", "y", rule=rules.threshold(">", 10, min_n=1), measure=measure_c2 or same),
        Claim("C3", "only at full", "-", "z", rule=rules.threshold(">", 0, min_n=1), measure=measure_c3 or same,
              scales=("full",)),
    )
    return Paper(id="P12", slug="effbench", claims=claims)


def _ctx(tmp_path, scale="quick"):
    return CheckContext(scale=scale, seeds=[0, 1], device="cpu", out_dir=tmp_path, show_progress=False)


def test_measure_claims_applies_the_declared_rules(tmp_path):
    paper = _toy_paper(lambda ctx: Evidence([1.0, 2.0]), lambda ctx: Evidence([3.0]))
    results = {r["id"]: r for r in measure_claims(paper, _ctx(tmp_path))}
    assert results["C1"]["verdict"] == "supported"
    assert results["C2"]["verdict"] == "not supported"
    assert results["C3"]["verdict"] == "inconclusive" and "not decided at scale" in results["C3"]["reason"]


def test_empty_evidence_is_inconclusive_and_a_non_evidence_is_an_error(tmp_path):
    paper = _toy_paper(lambda ctx: Evidence([]), lambda ctx: 3.0)
    results = measure_claims(paper, _ctx(tmp_path))
    assert results[0]["verdict"] == "inconclusive" and "no evidence" in results[0]["reason"]
    assert results[1]["verdict"] == "inconclusive" and "must return an Evidence" in results[1]["error"]


def test_v1_claims_are_refused():
    with pytest.raises(ValueError, match="needs rule="):
        Claim("C1", "s", "v", "m")
    with pytest.raises(ValueError, match="needs measure="):
        Claim("C1", "s", "v", "m", rule=rules.threshold(">", 0, min_n=1))


def test_paper_rejects_duplicate_claim_ids():
    claim = Claim("C1", "s", "v", "m", rule=rules.threshold(">", 0, min_n=1), measure=lambda ctx: Evidence([1.0]))
    with pytest.raises(ValueError, match="unique"):
        Paper(id="P12", slug="effbench", claims=(claim, claim))


def test_new_run_dir_never_reuses_a_folder(tmp_path):
    dirs = {new_run_dir(tmp_path, "smoke") for _ in range(20)}
    assert len(dirs) == 20 and all(d.is_dir() for d in dirs)


def test_write_json_atomic_refuses_overwrite_and_leaves_no_temp_files(tmp_path):
    path = write_json_atomic(tmp_path / "r.json", {"a": 1})
    with pytest.raises(FileExistsError):
        write_json_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1}
    write_json_atomic(path, {"a": 3}, overwrite=True)
    assert json.loads(path.read_text()) == {"a": 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_write_json_atomic_cleans_up_on_failure(tmp_path):
    with pytest.raises(TypeError):
        write_json_atomic(tmp_path / "bad.json", {"x": object()})
    assert list(tmp_path.iterdir()) == []


def _run_with(monkeypatch, tmp_path, paper, scale="quick"):
    monkeypatch.setattr(runner_module, "load_paper", lambda name: paper)
    return runner_module.run_checks([lookup("effbench")], scale=scale, out_root=tmp_path, show_progress=False)


def test_run_writes_a_complete_record_and_report_with_embedded_plot(monkeypatch, tmp_path):
    def measure_c1(ctx):
        fig, ax = ctx.figure()
        ax.plot([0, 1], [0, 1])
        ctx.save_figure(fig, "line.png")
        ctx.metrics["m"] = 1
        return Evidence([float(s + 1) for s in ctx.seeds])

    run_dir, runs = _run_with(monkeypatch, tmp_path, _toy_paper(measure_c1, lambda ctx: Evidence([20.0])))
    record = json.loads((run_dir / "effbench.json").read_text())
    assert runs[0].status == "ok" and record["status"] == "ok"
    for key in ("paper_id", "slug", "scale", "seeds", "device", "versions", "start_time", "duration_s",
                "cpu_s", "load", "machine", "source_sha256", "tally", "metrics", "claims", "plots"):
        assert key in record
    assert record["seeds"] == [0, 1, 2]  # the default for quick
    assert record["claims"][0]["measured"]["mean"] == pytest.approx(2.0)
    assert record["claims"][0]["kind"] == "paper"
    assert record["plots"] == [{"path": "effbench/line.png", "caption": ""}]
    md, html = write_report(run_dir)
    assert "| P12 `effbench` | C1 | **supported**" in md.read_text()
    assert "data:image/png;base64," in html.read_text()
    assert "supported" in verdict_table([record])


def test_a_crashing_measure_makes_its_claim_inconclusive_with_the_error(monkeypatch, tmp_path):
    def boom(ctx):
        raise RuntimeError("boom")

    run_dir, runs = _run_with(monkeypatch, tmp_path, _toy_paper(boom))
    assert runs[0].status == "ok" and runs[0].claim_errors == 2
    record = json.loads((run_dir / "effbench.json").read_text())
    for claim in record["claims"][:2]:  # C3 is decided at full only: never measured
        assert claim["verdict"] == "inconclusive"
        assert "RuntimeError: boom" in claim["error"] and "Traceback" in claim["traceback"]


def test_a_paper_that_cannot_load_becomes_an_error_record(monkeypatch, tmp_path):
    from neurips26.claims import catalog, runner

    def broken(slug):
        raise ImportError("no such module")

    monkeypatch.setattr(runner, "load_paper", broken)
    _, runs = runner.run_checks([catalog.lookup("effbench")], scale="quick", out_root=tmp_path)
    assert runs[0].status == "error" and "ImportError: no such module" in runs[0].record["error"]


def test_gpu_scale_is_refused_without_cuda(monkeypatch, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    _, runs = _run_with(monkeypatch, tmp_path, _toy_paper(lambda ctx: pytest.fail("must not run")), scale="gpu")
    assert runs[0].status == "refused" and "CUDA" in runs[0].record["refusal"]


def test_report_of_a_folder_without_records_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="no result records"):
        write_report(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_report(tmp_path / "missing")


def test_runs_do_not_overwrite_each_other(monkeypatch, tmp_path):
    paper = _toy_paper(lambda ctx: Evidence([1.0]))
    first, _ = _run_with(monkeypatch, tmp_path, paper)
    second, _ = _run_with(monkeypatch, tmp_path, paper)
    assert first != second and (first / "effbench.json").exists() and (second / "effbench.json").exists()
    assert Path(first).parent == Path(second).parent


def test_torch_threads_restores_the_previous_count_even_on_error():
    import torch

    from neurips26.claims import torch_threads

    before = torch.get_num_threads()
    with pytest.raises(RuntimeError):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_save_figure_writes_into_the_paper_folder_and_closes(tmp_path):
    import matplotlib.pyplot as plt

    from neurips26.claims import CheckContext

    ctx = CheckContext(scale="smoke", seeds=[0], device="cpu", out_dir=tmp_path / "p")
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    path = ctx.save_figure(fig, "a.png")
    assert path == tmp_path / "p" / "a.png" and path.stat().st_size > 0
    assert not plt.fignum_exists(fig.number)
