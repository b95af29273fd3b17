"""Claim checks fanned out: local worker processes and Ray tasks write the same records as a sequential run
(verdicts, measured values, preconditions, metrics), apart from what measures the machine (clocks, memory,
load); a worker that dies costs its own paper, never the run."""

import json
import os
import re
from pathlib import Path

import pytest

from neurips26.claims import lookup, run_checks
from neurips26.claims.runner import _fan_out
from neurips26.cli import main

PAPERS = ["wlia", "fwdsvd"]  # ~17 CPU-s together at smoke; fwdsvd has a CPU-time and a peak-RSS claim

# what measures the machine rather than the method: clocks, memory, load (and what is derived from them)
_MACHINE_KEY = re.compile(r"(?i)(_s$|cpu|time|timing|load|memory|rss|peak|mib|duration|over_budget|machine)")
_TIMED_UNIT = re.compile(r"(?i)(cpu time|wall|rss|memory|seconds|latency|throughput)")


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not _MACHINE_KEY.search(k)}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _comparable(record):
    record = dict(record)
    # the checkout's HEAD may move between the runs (a shared checkout); the paper's sources are compared by
    # source_sha256
    record["git"] = {k: v for k, v in (record.get("git") or {}).items() if k != "commit"}
    claims = []
    for claim in record.pop("claims"):
        unit = (claim.get("measured") or {}).get("unit") or ""
        if _TIMED_UNIT.search(unit):  # a timing or memory claim: its numbers differ run to run
            claim = {k: claim[k] for k in ("id", "kind", "statement", "criterion", "verdict")}
        claims.append(_strip(claim))
    return {**_strip(record), "claims": claims}


def _differences(a, b, path=""):
    """Where two records differ, as paths (an empty list: equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in (_differences(a[k], b[k], f"{path}/{k}") if k in a and k in b else [f"{path}/{k} (one side)"])]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r:.60} != {b!r:.60}"]


def _records(run_dir):
    out = {}
    for slug in PAPERS:
        record = json.loads((run_dir / f"{slug}.json").read_text())
        assert record["status"] == "ok", record.get("error")
        out[slug] = _comparable(record)
    return out


@pytest.fixture(scope="module")
def one_thread():
    # the same torch thread count in the sequential run and in every worker (OMP_NUM_THREADS // jobs), so the
    # floating-point reductions, and hence the numbers, are the same
    mp = pytest.MonkeyPatch()
    mp.setenv("OMP_NUM_THREADS", "1")
    mp.setenv("RAY_USAGE_STATS_ENABLED", "0")  # the local Ray cluster reports nothing to anyscale
    yield
    mp.undo()


@pytest.fixture(scope="module")
def sequential(tmp_path_factory, one_thread):
    run_dir, _ = run_checks([lookup(s) for s in PAPERS], scale="smoke", out_root=tmp_path_factory.mktemp("seq"),
                            show_progress=False)
    records = _records(run_dir)
    assert any(c["verdict"] == "supported" for c in records["fwdsvd"]["claims"])  # something decided at smoke
    return records


def test_local_workers_write_the_sequential_records(tmp_path, sequential):
    run_dir, runs = run_checks([lookup(s) for s in PAPERS], scale="smoke", out_root=tmp_path,
                               show_progress=False, executor="local", jobs=2)
    assert [run.entry.slug for run in runs] == PAPERS
    assert _differences(_records(run_dir), sequential) == []
    assert not (run_dir / ".in-progress").exists()


def test_ray_tasks_from_the_cli_write_the_sequential_records(tmp_path, sequential, capsys):
    pytest.importorskip("ray")
    code = main(["check", *PAPERS, "--scale", "smoke", "--executor", "ray", "--jobs", "2", "--out", str(tmp_path),
                 "--no-progress"])
    assert code == 0, capsys.readouterr().err
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert _differences(_records(run_dir), sequential) == []
    assert (run_dir / "report.md").exists() and not (run_dir / ".in-progress").exists()


def test_a_dead_worker_costs_its_paper_only(tmp_path, one_thread):
    from _executor_workers import die_for_fwdsvd

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    runs = _fan_out([lookup(s) for s in PAPERS], scale="smoke", run_dir=run_dir, n_seeds=None, executor="local",
                    jobs=2, worker=die_for_fwdsvd)
    assert [(run.entry.slug, run.status) for run in runs] == [("wlia", "ok"), ("fwdsvd", "error")]
    lost = json.loads((run_dir / "fwdsvd.json").read_text())
    assert lost["status"] == "error" and "died before writing its record" in lost["error"]
    assert json.loads((run_dir / "wlia.json").read_text())["status"] == "ok"


def test_bad_executor_settings_are_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="executor"):
        run_checks([lookup("wlia")], scale="smoke", out_root=tmp_path, executor="threads")
    with pytest.raises(ValueError, match="jobs"):
        run_checks([lookup("wlia")], scale="smoke", out_root=tmp_path, executor="local", jobs=0)
    assert main(["check", "wlia", "--executor", "threads", "--out", str(tmp_path)]) == 2
    assert main(["check", "wlia", "--executor", "local", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert not any(tmp_path.iterdir())


def test_longest_papers_go_first_and_the_eta_counts_the_workers(monkeypatch):
    from neurips26.claims import of_record
    from neurips26.claims.runner import _longest_first, makespan_minutes

    took = {"wlia": 1.0, "fwdsvd": None, "tst": 5.0}
    monkeypatch.setattr(of_record, "expected_minutes", lambda slug, scale, root=None: took[slug])
    entries = [lookup(s) for s in ("wlia", "fwdsvd", "tst")]
    assert _longest_first(entries, "quick") == [2, 0, 1]  # tst, wlia, then fwdsvd (no record)
    assert _longest_first(entries, "smoke") == [0, 1, 2]  # no records at smoke: catalogue order
    assert makespan_minutes([10, 30, 10, 20], 2) == 40
    assert makespan_minutes([1, 2, 3], 1) == 6 and makespan_minutes([5], 4) == 5 and makespan_minutes([], 2) == 0
    with pytest.raises(ValueError, match="workers"):
        makespan_minutes([1], 0)


def test_gpu_scale_on_a_cluster_without_gpus_refuses_instead_of_waiting(tmp_path, one_thread):
    # each task would ask Ray for a whole GPU; with none in the cluster the tasks must still run (and refuse)
    pytest.importorskip("ray")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    _, runs = run_checks([lookup(s) for s in PAPERS], scale="gpu", out_root=tmp_path, show_progress=False,
                         executor="ray", jobs=2)
    assert [run.status for run in runs] == ["refused", "refused"]
    assert all(run.record["refusal"] for run in runs)


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_seed_tasks_decide_as_a_sequential_run(tmp_path, one_thread, executor):
    """A paper that declares its seeds independent runs each seed as its own task (local pool, Ray); the record
    holds each claim decided once on the merged evidence: the claims a sequential run on all seeds decides."""
    from _executor_workers import PAPER, toy_loader
    from neurips26.claims.runner import measure_claims
    from neurips26.claims.spec import CheckContext

    run_dir = tmp_path / "split"
    run_dir.mkdir()
    if executor == "ray":  # a cluster whose workers can import the toy paper (tests/ on their path)
        ray = pytest.importorskip("ray")
        tests = str(Path(__file__).parents[1])
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}})
    try:
        (run,) = _fan_out([lookup("wlia")], scale="quick", run_dir=run_dir, n_seeds=3, executor=executor, jobs=2,
                          loader=toy_loader)
    finally:
        if executor == "ray":
            ray.shutdown()
    assert run.status == "ok", run.record.get("error")
    record = json.loads((run_dir / "wlia.json").read_text())
    assert record["seed_tasks"] == 3 and record["seeds"] == [0, 1, 2]
    ctx = CheckContext(scale="quick", seeds=[0, 1, 2], device="cpu", out_dir=tmp_path, show_progress=False,
                       log=lambda msg: None)
    sequential = measure_claims(PAPER, ctx)
    strip = lambda claims: [{k: v for k, v in c.items() if k != "traceback"} for c in claims]  # noqa: E731
    assert strip(record["claims"])[:3] == strip(sequential)[:3]  # C4 breaks the declaration on purpose
    assert strip(record["claims"])[4] == strip(sequential)[4]
    assert "SeedMergeError" in record["claims"][3]["error"]
