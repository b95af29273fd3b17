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


def test_check_rejects_bad_seed_count_and_scale(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "effbench", "--seeds", "0"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["check", "effbench", "--scale", "huge"])
    assert exc.value.code == 2


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
