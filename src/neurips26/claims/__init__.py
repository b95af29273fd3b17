"""The claim-check framework shared by every paper.

A paper declares its claims (statement, paper value, metric, kind, preconditions, the rule that decides it
and the function that measures it) in ``neurips26.<slug>.check`` as a :class:`Paper`; :func:`run_checks`
measures them claim by claim at a scale, writes one strict-JSON record per paper into a fresh run folder and
the CLI prints the verdicts. :mod:`.rules` holds the decision rules (with :mod:`.stats` for their intervals),
:mod:`.preconditions` the ready-made preconditions, :mod:`.tuning` equal tuning of every arm, :mod:`.measure`
the shared timing, slope and memory measurements, :mod:`.of_record` the committed verdicts of record and the
README tables generated from them. ``docs/CHECK_TEMPLATE.md`` shows how to write a check.
"""

from . import measure, preconditions, rules, stats
from .catalog import CATALOG, CatalogEntry, lookup
from .records import new_run_dir, write_json_atomic
from .registry import implemented, is_implemented, load_paper, resolve
from .report import load_records, write_report
from .runner import (
    configure_threads,
    measure_claims,
    run_checks,
    run_paper,
    tally,
    torch_threads,
    verdict_table,
)
from .spec import (
    CLAIM_KINDS,
    SCALE_BUDGET_S,
    SCALES,
    CheckContext,
    Claim,
    Evidence,
    Paper,
    Precondition,
    ScaleRefused,
    Verdict,
    inconclusive,
    supported_if,
)
from .tuning import Tuned, tune, tune_arms

__all__ = [
    "CATALOG", "CLAIM_KINDS", "CatalogEntry", "CheckContext", "Claim", "Evidence", "Paper", "Precondition",
    "SCALES", "SCALE_BUDGET_S", "ScaleRefused", "Tuned", "Verdict", "configure_threads", "implemented",
    "is_implemented", "load_paper", "load_records", "lookup", "measure", "measure_claims", "new_run_dir",
    "preconditions", "resolve", "rules", "run_checks", "run_paper", "stats", "tally", "torch_threads", "tune",
    "tune_arms", "verdict_table", "inconclusive", "supported_if", "write_json_atomic", "write_report",
]
