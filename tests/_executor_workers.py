"""Stand-in workers for the executor tests (importable by spawned processes and Ray workers, which cannot
import a test module under --import-mode=importlib)."""

import os
import time

import numpy as np

from neurips26.claims import preconditions, rules
from neurips26.claims.records import RECORD_SCHEMA, write_json_atomic
from neurips26.claims.runner import PaperRun
from neurips26.claims.spec import Claim, Evidence, Paper
from neurips26.data import DatasetNotFoundError


def die_for_fwdsvd(entry, scale, run_dir, n_seeds, threads):
    """fwdsvd's worker dies hard (as an out-of-memory kill would); any other paper gets a trivial record."""
    if entry.slug == "fwdsvd":
        time.sleep(4.0)  # let the other paper finish first
        os._exit(3)
    record = {"schema": RECORD_SCHEMA, "paper_id": entry.id, "slug": entry.slug, "title": entry.title,
              "scale": scale, "status": "ok", "claims": [], "start_time": "-", "duration_s": 0.0, "cpu_s": 0.0}
    path = write_json_atomic(run_dir / f"{entry.slug}.json", record)
    return PaperRun(entry=entry, status="ok", record=record, path=path)


# ---------------------------------------------------------------- a toy paper whose seeds are independent
# (tests/claims/test_claims_seeds.py, and the seed-task executor tests through toy_loader)
def _value(seed: int) -> float:
    return float(np.random.default_rng(seed).normal(1.0, 0.1))


def m_speedup(ctx):  # one value per seed; a list detail and an equal scalar detail
    return Evidence(values=[2.0 + _value(s) for s in ctx.seeds], unit="x",
                    details={"per_seed": [{"seed": s} for s in ctx.seeds], "setting": "n=8"})


def m_curves(ctx):
    return Evidence(values=[1.0 for _ in ctx.seeds], details={"curves": [[3.0, 2.0, 1.0, 1.0, 1.0] for _ in ctx.seeds]})


def m_fails_on_seed_1(ctx):
    if 1 in ctx.seeds:
        raise RuntimeError("seed 1 diverged")
    return Evidence(values=[1.0 for _ in ctx.seeds])


def m_absent(ctx):
    raise DatasetNotFoundError("toy/absent", ["/nowhere"], "neurips26 data fetch toy/absent")


def m_per_seed_scalar(ctx):  # breaks the declaration: a non-list detail that differs between seeds
    return Evidence(values=[1.0 for _ in ctx.seeds], details={"best_seed": max(ctx.seeds)})


def m_precondition_gap(ctx):
    return Evidence(values=[0.5 + 0.01 * s for s in ctx.seeds])


CLAIMS = (
    Claim(id="C1", statement="fast", paper_value="3x", metric="speed-up (x)",
          rule=rules.threshold(">=", 2.5, min_n=3), measure=m_speedup,
          preconditions=(preconditions.beats_reference("beats chance", m_precondition_gap, margin=0.1, min_n=3),
                         preconditions.converged("converged", m_curves, delta=0.01, k=2, min_n=3))),
    Claim(id="C2", statement="stable", paper_value="-", metric="-", rule=rules.threshold(">=", 0.5, min_n=1),
          measure=m_fails_on_seed_1),
    Claim(id="C3", statement="on data", paper_value="-", metric="-", rule=rules.threshold(">=", 0.5, min_n=1),
          measure=m_speedup, preconditions=(preconditions.headroom("data", m_absent, at_least=0.1, min_n=1),)),
    Claim(id="C4", statement="odd", paper_value="-", metric="-", rule=rules.threshold(">=", 0.5, min_n=1),
          measure=m_per_seed_scalar),
    Claim(id="C5", statement="full only", paper_value="-", metric="-", rule=rules.threshold(">=", 0.5, min_n=1),
          measure=m_speedup, scales=("full",)),
)
PAPER = Paper(id="P99", slug="toy", claims=CLAIMS, independent_seeds=True)




def toy_loader(slug):
    """``loader`` for ``_fan_out``: the toy paper, whatever the slug (the entry only names the record)."""
    return PAPER
