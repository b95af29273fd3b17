"""The ``neurips26`` command: list, usage errors and exit codes."""

import pytest

from neurips26.claims import CATALOG, is_implemented
from neurips26.cli import main

# A paper not implemented yet, whichever it is today (tests must not hinge on which papers have landed).
UNIMPLEMENTED = next((entry.slug for entry in CATALOG if not is_implemented(entry)), None)
needs_unimplemented = pytest.mark.skipif(UNIMPLEMENTED is None, reason="every paper is implemented")


def test_list_prints_all_19_papers(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.count("\nP") == 19
    if UNIMPLEMENTED:
        assert UNIMPLEMENTED in out and "not implemented yet" in out


def test_check_unknown_paper_exits_2(capsys):
    assert main(["check", "nope"]) == 2
    assert "unknown paper 'nope'" in capsys.readouterr().err


@needs_unimplemented
def test_check_unimplemented_paper_exits_2(capsys):
    assert main(["check", UNIMPLEMENTED]) == 2
    assert f"not implemented yet: {UNIMPLEMENTED}" in capsys.readouterr().err


@pytest.mark.parametrize("argv, expected", [
    (["check", "effbench", "--seeds", "0"], "neurips26 check: argument --seeds: expected a positive integer, got 0"),
    (["check", "effbench", "--scale", "huge"], "neurips26 check: argument --scale: invalid choice: 'huge'"),
    (["check", "--frobnicate"], "neurips26: unrecognized arguments: --frobnicate"),
    ([], "neurips26: the following arguments are required: COMMAND"),
    (["frobnicate"], "neurips26: argument COMMAND: invalid choice: 'frobnicate'"),
    (["report", "--compare"], "neurips26 report: argument --compare: expected one argument"),
])
def test_usage_errors_are_one_line_on_stderr_and_exit_2(argv, expected, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(expected) and captured.err.count("\n") == 1, captured.err
    assert "usage:" not in captured.err


def test_help_still_prints_the_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--help"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("usage: neurips26 check")


def test_report_of_missing_folder_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


@needs_unimplemented
def test_paper_without_tools_exits_2(capsys):
    assert main([UNIMPLEMENTED, "anything"]) == 2
    assert "has no command-line tools" in capsys.readouterr().err


def test_version_and_help_list_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("neurips26 ")
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("list", "check", "report", "data", "effbench", "anongames"):
        assert f"\n    {command}" in out, command


@pytest.mark.parametrize("bad", ["abc", "0", "-1", ""])
def test_check_refuses_a_bad_thread_count_in_one_line(bad, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("OMP_NUM_THREADS", bad)
    assert main(["check", "groupshift", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "OMP_NUM_THREADS" in err and len(err.splitlines()) == 1


def test_check_refuses_an_out_path_that_is_a_file_or_unwritable(tmp_path, capsys):
    target = tmp_path / "a_file"
    target.write_text("x")
    assert main(["check", "groupshift", "--out", str(target)]) == 2
    assert "--out" in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        import os

        if os.access(locked, os.W_OK):  # root ignores permission bits
            pytest.skip("running as a user that can write anywhere")
        assert main(["check", "groupshift", "--out", str(locked / "runs")]) == 2
        assert "--out" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)


def test_report_of_a_record_with_missing_fields_exits_2_in_one_line(tmp_path, capsys):
    (tmp_path / "tst.json").write_text('{"paper_id": "P01", "slug": "tst"}')
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "missing" in err and len(err.splitlines()) == 1


def test_report_names_interrupted_runs_and_check_cleans_stale_temp_files(tmp_path, capsys):
    import json

    from neurips26.claims.records import IN_PROGRESS

    run = tmp_path / "20260101-000000-smoke-abcdef"
    run.mkdir()
    (run / IN_PROGRESS).write_text("{}")
    stale = run / ".tst.json.x1.tmp"
    stale.write_text("partial")
    record = {"schema": 2, "paper_id": "P07", "slug": "groupshift", "scale": "smoke", "status": "error",
              "error": "killed", "start_time": "t", "duration_s": 1.0}
    (run / "groupshift.json").write_text(json.dumps(record))
    assert main(["report", str(tmp_path)]) == 0
    assert "interrupted" in capsys.readouterr().err
    monkeypatch_env = {"OMP_NUM_THREADS": "1"}
    import os

    old = {k: os.environ.get(k) for k in monkeypatch_env}
    os.environ.update(monkeypatch_env)
    try:
        from neurips26.cli import _clean_stale_temp_files

        _clean_stale_temp_files(tmp_path)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert not stale.exists() and (run / "groupshift.json").exists()


def _record(**fields):
    record = {"schema": 3, "paper_id": "P07", "slug": "groupshift", "title": "t", "scale": "smoke", "status": "ok",
              "start_time": "2026-12-01T00:00:00+00:00", "duration_s": 1.5, "cpu_s": 1.0, "seeds": [0],
              "claims": [{"id": "C1", "kind": "paper", "statement": "s", "paper_value": "2x", "metric": "m",
                          "criterion": "c", "measured": {"summary": "1.9x"}, "preconditions": [
                              {"name": "p", "met": True, "criterion": "c", "measured": None}],
                          "verdict": "supported", "reason": "r"}],
              "tuning": [{"arm": "a", "split": "validation", "size": 4, "best": {"lr": 1}, "best_score": None}],
              "notes": ["n"], "plots": [{"path": "p.png", "caption": "c"}]}
    record.update(fields)
    return record


def _run(tmp_path, text):
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "groupshift.json").write_text(text, encoding="utf-8")
    return run


def test_report_of_a_valid_record_writes_both_files(tmp_path, capsys):
    import json

    run = _run(tmp_path, json.dumps(_record()))
    assert main(["report", str(run)]) == 0
    assert (run / "report.md").is_file() and (run / "report.html").is_file()
    assert "score -" in (run / "report.md").read_text()  # a null best score (the writer's NaN) renders
    assert sorted(p.name for p in run.iterdir()) == ["groupshift.json", "report.html", "report.md"]


@pytest.mark.parametrize("text, expected", [
    ('{"paper_id": "P07", "status": 3}', "missing slug"),
    (None, "field status must be one of 'ok', 'refused', 'error', got 3"),
    ("paper_id", "field paper_id must be a string, got array"),
    ("verdict", "field claims[0].verdict must be one of 'supported', 'not supported', 'inconclusive', 'skipped', "
                "got 'maybe'"),
    ('{"paper_id": "P07", "duration_s": NaN}', "bare NaN token"),
    ('{"paper_id": "P07", "duration_s": -Infinity}', "bare -Infinity token"),
    ('{"paper_id": "P07", "duration_s": 1e999}', "overflows a double"),
    ('{"paper_id": "P07", "paper_id": "P08"}', "duplicate key 'paper_id'"),
    ('{"paper_id": "P07", ', "is not valid JSON"),
    ("duration", "field duration_s must be a finite number"),
    ("claims", "field claims must be an array, got object"),
    ("met", "field claims[0].preconditions[0].met must be true or false, got 'yes'"),
])
def test_report_refuses_a_bad_record_in_one_line_and_writes_nothing(text, expected, tmp_path, capsys):
    import json

    bad = {None: _record(status=3), "paper_id": _record(paper_id=["P07"]), "duration": _record(duration_s=10**400),
           "claims": _record(claims={"C1": {}})}
    if text == "verdict":
        bad[text] = _record()
        bad[text]["claims"][0]["verdict"] = "maybe"
    if text == "met":
        bad[text] = _record()
        bad[text]["claims"][0]["preconditions"][0]["met"] = "yes"
    run = _run(tmp_path, json.dumps(bad[text]) if text in bad else text)
    assert main(["report", str(run)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("neurips26 report: ") and expected in captured.err, captured.err
    assert str(run / "groupshift.json") in captured.err or "missing" in captured.err
    assert sorted(p.name for p in run.iterdir()) == ["groupshift.json"]


def test_report_where_report_md_is_a_folder_exits_2_and_writes_nothing(tmp_path, capsys):
    import json

    run = _run(tmp_path, json.dumps(_record()))
    (run / "report.md").mkdir()
    assert main(["report", str(run)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "report.md is a folder" in captured.err
    assert not (run / "report.html").exists() and sorted(p.name for p in run.iterdir()) == ["groupshift.json",
                                                                                             "report.md"]
    assert main(["report", str(run / "groupshift.json")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_report_with_a_bad_compare_folder_writes_nothing(tmp_path, capsys):
    import json

    run = _run(tmp_path, json.dumps(_record()))
    assert main(["report", str(run), "--compare", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in run.iterdir()) == ["groupshift.json"]


def test_a_record_file_that_is_a_folder_or_not_utf8_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "groupshift.json").mkdir(parents=True)
    assert main(["report", str(run)]) == 2
    assert "is a folder where a record file belongs" in capsys.readouterr().err
    (run / "groupshift.json").rmdir()
    (run / "groupshift.json").write_bytes(b'{"paper_id": "\xff"}')
    assert main(["report", str(run)]) == 2
    assert "is not UTF-8" in capsys.readouterr().err


def test_check_keeps_the_temporaries_of_a_live_run_and_removes_those_of_a_dead_one(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from neurips26.claims.records import IN_PROGRESS
    from neurips26.cli import _clean_stale_temp_files

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    for name, pid in (("live", os.getpid()), ("dead", int(dead.stdout))):
        (tmp_path / name).mkdir()
        (tmp_path / name / IN_PROGRESS).write_text(json.dumps({"pid": pid}))
        (tmp_path / name / ".tst.json.abc.tmp").write_text("partial")
    _clean_stale_temp_files(tmp_path)
    assert (tmp_path / "live" / ".tst.json.abc.tmp").exists() and not (tmp_path / "dead" / ".tst.json.abc.tmp").exists()


def test_list_shows_an_unreadable_record_of_record_in_its_row(monkeypatch, capsys):
    from neurips26.claims import of_record

    def bad(slug, scale, root=None):
        if slug == "groupshift" and scale == "quick":
            return {"slug": "groupshift", "scale": "quick", "claims": [{"verdict": "maybe"}], "start_time": 3,
                    "seeds": [0], "cpu_s": 1.0, "source_sha256": "x"}
        return None

    monkeypatch.setattr(of_record, "load_of_record", bad)
    assert main(["list"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if " groupshift " in line)
    assert "unreadable (" in row and "\n" not in row
