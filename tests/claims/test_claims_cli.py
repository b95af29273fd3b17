"""The ``neurips26`` command: list, usage errors and exit codes."""

import pytest

from neurips26.cli import main


def test_list_prints_all_19_papers(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.count("\nP") == 19
    assert "spherelatent" in out and "not implemented yet" in out


def test_check_unknown_paper_exits_2(capsys):
    assert main(["check", "nope"]) == 2
    assert "unknown paper 'nope'" in capsys.readouterr().err


def test_check_unimplemented_paper_exits_2(capsys):
    assert main(["check", "spherelatent"]) == 2
    assert "not implemented yet: spherelatent" in capsys.readouterr().err


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


def test_paper_without_tools_exits_2(capsys):
    assert main(["spherelatent", "anything"]) == 2
    assert "has no command-line tools" in capsys.readouterr().err
