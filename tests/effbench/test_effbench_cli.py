"""`neurips26 effbench select|predict`: the happy path and every bad-input path (one line, exit 2)."""

import numpy as np
import pytest

from neurips26.effbench import EfficientBenchmark
from neurips26.effbench.cli import main


@pytest.fixture()
def files(tmp_path):
    from neurips26.data import load_effbench
    from neurips26.data.testing import require_dataset

    require_dataset("effbench/correctness")

    S = load_effbench("mmlu")[0][:, :120].astype(int)
    src, tgt = S[:50], S[50:]
    np.savez(tmp_path / "src.npz", scores=src)
    np.savez(tmp_path / "two.npz", a=src, b=src)
    header = ",".join(f"q{j}" for j in range(120))
    np.savetxt(tmp_path / "src.csv", src, fmt="%d", delimiter=",", header=header, comments="")
    np.savetxt(tmp_path / "tgt.csv", tgt, fmt="%d", delimiter=",")
    return tmp_path, src, tgt


def _one_line_error(capsys, rc, needle):
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert needle in err
    return err


def test_select_then_predict_matches_the_api(files, capsys):
    d, src, tgt = files
    assert main(["select", "--matrix", str(d / "src.csv"), "--budget", "0.1", "--out", str(d / "m")]) == 0
    assert (d / "m" / "coreset.json").is_file() and (d / "m" / "predictor.npz").is_file()
    capsys.readouterr()
    assert main(["predict", "--model", str(d / "m"), "--answers", str(d / "tgt.csv")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    printed = np.array([float(line.split("\t")[1]) for line in lines])
    expected = EfficientBenchmark.load(d / "m").predict_full(tgt)
    np.testing.assert_allclose(printed, expected, atol=1e-6)
    # coreset-only answers work too
    bench = EfficientBenchmark.load(d / "m")
    np.savez(d / "core.npz", x=tgt[:, bench.coreset_])
    assert main(["predict", "--model", str(d / "m"), "--answers", str(d / "core.npz")]) == 0
    assert main(["select", "--matrix", str(d / "two.npz"), "--key", "b", "--budget", "12",
                 "--out", str(d / "m2"), "--folds", "5"]) == 0


@pytest.mark.parametrize("mutate, needle", [
    (lambda S: S.astype(float) * 0.5, "0/1"),
    (lambda S: np.where(np.arange(S.size).reshape(S.shape) == 7, np.nan, S), "NaN"),
])
def test_select_bad_entries(files, capsys, mutate, needle):
    d, src, _ = files
    np.savez(d / "bad.npz", x=mutate(src))
    rc = main(["select", "--matrix", str(d / "bad.npz"), "--budget", "0.1", "--out", str(d / "o")])
    _one_line_error(capsys, rc, needle)


@pytest.mark.parametrize("budget, needle", [("0", "budget"), ("1.5", "(0, 1]"), ("-0.2", "(0, 1]"),
                                            ("121", "120 questions: --budget must be an int <= 120, got 121"),
                                            ("abc", "budget"), ("nan", "(0, 1]")])
def test_select_bad_budget(files, capsys, budget, needle):
    d, *_ = files
    rc = main(["select", "--matrix", str(d / "src.npz"), "--budget", budget, "--out", str(d / "o")])
    _one_line_error(capsys, rc, needle)


def test_select_fewer_models_than_folds(files, capsys):
    d, *_ = files
    rc = main(["select", "--matrix", str(d / "src.npz"), "--budget", "0.1", "--out", str(d / "o"), "--folds", "60"])
    _one_line_error(capsys, rc, "50 source models: --folds must be an int <= 50, got 60")


@pytest.mark.parametrize("args, needle", [
    (["--matrix", "two.npz"], "--key"),
    (["--matrix", "two.npz", "--key", "zz"], "no array 'zz'"),
    (["--matrix", "missing.npz"], "file not found"),
    (["--matrix", "src.txt"], ".npz or .csv"),
    (["--matrix", "src.csv", "--key", "a"], "--key applies"),
])
def test_select_bad_files(files, capsys, args, needle):
    d, *_ = files
    (d / "src.txt").write_text("1,0\n")
    args = [a if not a.endswith((".npz", ".txt", ".csv")) else str(d / a) for a in args]
    rc = main(["select", *args, "--budget", "0.1", "--out", str(d / "o")])
    _one_line_error(capsys, rc, needle)


def test_select_ragged_csv_and_missing_option(files, capsys):
    d, *_ = files
    (d / "ragged.csv").write_text("1,0,1\n0,1\n")
    rc = main(["select", "--matrix", str(d / "ragged.csv"), "--budget", "0.5", "--out", str(d / "o")])
    _one_line_error(capsys, rc, "different lengths")
    rc = main(["select", "--matrix", str(d / "src.npz"), "--out", str(d / "o")])
    _one_line_error(capsys, rc, "--budget")


def test_predict_bad_inputs(files, capsys):
    d, src, tgt = files
    assert main(["select", "--matrix", str(d / "src.npz"), "--budget", "0.1", "--out", str(d / "m")]) == 0
    capsys.readouterr()
    np.savez(d / "wrong.npz", x=tgt[:, :50])
    rc = main(["predict", "--model", str(d / "m"), "--answers", str(d / "wrong.npz")])
    _one_line_error(capsys, rc, "answers have 50 questions; the model expects 120")
    np.savez(d / "nan.npz", x=np.where(tgt == 1, np.nan, tgt))
    rc = main(["predict", "--model", str(d / "m"), "--answers", str(d / "nan.npz")])
    _one_line_error(capsys, rc, "NaN")
    np.savez(d / "half.npz", x=tgt * 0.5)
    rc = main(["predict", "--model", str(d / "m"), "--answers", str(d / "half.npz")])
    _one_line_error(capsys, rc, "0/1")
    rc = main(["predict", "--model", str(d / "nowhere"), "--answers", str(d / "tgt.csv")])
    _one_line_error(capsys, rc, "predictor.json")


def test_top_level_dispatch_exit_code(files, capsys):
    from neurips26.cli import main as top_main

    d, *_ = files
    rc = top_main(["effbench", "select", "--matrix", str(d / "src.npz"), "--budget", "2.0", "--out", str(d / "o")])
    _one_line_error(capsys, rc, "(0, 1]")
