"""``neurips26 data`` subcommands through ``main(argv)``."""

import pytest

from neurips26.data.cli import main


def test_usage_errors_exit_2_with_one_line(capsys):
    for argv in ([], ["frobnicate"], ["fetch"], ["fetch", "a", "b"], ["path", "mnist"], ["list", "x"],
                 ["fetch", "mnist"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("neurips26 data:"), (argv, err)
    assert main(["--help"]) == 0


def test_list_and_path_and_verify_on_an_empty_search_path(isolated, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("planetoid/cora", "shakespeare", "smollm2-135m", "minilm-l6-v2", "tinyshakespeare"):
        assert name in out
    assert out.count("absent") >= 9 and "Apache-2.0" in out and "MIT" in out
    assert main(["path", "planetoid/cora"]) == 1
    assert "absent" in capsys.readouterr().err
    assert main(["verify"]) == 0
    assert "fix: neurips26 data fetch planetoid/cora" in capsys.readouterr().out


def test_path_of_a_present_dataset(tmp_path, monkeypatch, capsys):
    (tmp_path / "tinyshakespeare").mkdir()
    text = "First Citizen:\nBefore we proceed any further, hear me speak.\n"
    (tmp_path / "tinyshakespeare" / "input.txt").write_text(text)
    monkeypatch.setenv("NEURIPS26_DATA", str(tmp_path))
    assert main(["verify"]) == 1  # a file that is not the registered one is reported as corrupt
    assert "tinyshakespeare: CORRUPT" in capsys.readouterr().out


def test_fetch_failure_exits_1(isolated, monkeypatch, capsys):
    from neurips26.data import registry
    from neurips26.data.spec import Dataset, FileSpec, Upstream

    entry = Dataset("fake-text", "fake/input.txt", "nowhere", "none", "0" * 64,
                    files=(FileSpec("fake/input.txt", "0" * 64, 1),),
                    upstream=Upstream({"fake/input.txt": "http://example.com/input.txt"}, {"fake/input.txt": None}))
    monkeypatch.setitem(registry.DATASETS, entry.name, entry)
    assert main(["fetch", "fake-text"]) == 1  # refused before any connection: not https, not 127.0.0.1
    assert "fake-text: FAILED refusing to download" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["tinyshakespeare", "cvrplib_x_small"])
def test_path_prints_the_resolved_path(name, capsys):
    from neurips26.data.testing import require_dataset

    path = require_dataset(name)
    assert main(["path", name]) == 0
    assert capsys.readouterr().out.strip() == str(path)
