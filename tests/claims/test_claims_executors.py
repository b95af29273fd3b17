"""Claim checks fanned out: local worker processes and Ray tasks write the same records as a sequential run."""

import json

import pytest

from neurips26.claims import lookup, run_checks

PAPERS = ["wlia", "fwdsvd"]


def _verdicts(run_dir):
    out = {}
    for slug in PAPERS:
        record = json.loads((run_dir / f"{slug}.json").read_text())
        assert record["status"] == "ok", record.get("error")
        out[slug] = [(c["id"], c["verdict"], c.get("error")) for c in record["claims"]]
    return out


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    run_dir, _ = run_checks([lookup(s) for s in PAPERS], scale="smoke", out_root=tmp_path_factory.mktemp("seq"),
                            show_progress=False)
    return _verdicts(run_dir)


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_fanned_out_runs_write_the_sequential_records(executor, tmp_path, sequential):
    if executor == "ray":
        pytest.importorskip("ray")
    run_dir, runs = run_checks([lookup(s) for s in PAPERS], scale="smoke", out_root=tmp_path,
                               show_progress=False, executor=executor, jobs=2)
    assert [run.entry.slug for run in runs] == PAPERS
    assert _verdicts(run_dir) == sequential
    assert not (run_dir / ".in-progress").exists()


def test_bad_executor_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="executor"):
        run_checks([lookup("wlia")], scale="smoke", out_root=tmp_path, executor="threads")
    with pytest.raises(ValueError, match="jobs"):
        run_checks([lookup("wlia")], scale="smoke", out_root=tmp_path, executor="local", jobs=0)
