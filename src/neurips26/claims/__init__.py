"""The claim-check framework shared by every paper.

A paper declares its claims (statement, paper value, metric, pre-registered criterion and the rule
that decides it) in ``neurips26.<slug>.check`` as a :class:`Paper`; :func:`run_checks` runs them at
a scale, writes one JSON record per paper into a fresh run folder and the CLI prints the verdicts.
"""

from .catalog import CATALOG, CatalogEntry, lookup
from .records import new_run_dir, write_json_atomic
from .registry import implemented, is_implemented, load_paper, resolve
from .report import load_records, write_report
from .runner import configure_threads, decide_claims, run_checks, run_paper, torch_threads, verdict_table
from .spec import (
    SCALE_BUDGET_S,
    SCALES,
    CheckContext,
    CheckOutput,
    Claim,
    Evidence,
    Paper,
    ScaleRefused,
    Verdict,
    inconclusive,
    supported_if,
)

__all__ = [
    "CATALOG", "CatalogEntry", "CheckContext", "CheckOutput", "Claim", "Evidence", "Paper",
    "SCALES", "SCALE_BUDGET_S", "ScaleRefused", "Verdict", "configure_threads", "decide_claims",
    "implemented", "inconclusive", "is_implemented", "load_paper", "load_records", "lookup",
    "new_run_dir", "resolve", "run_checks", "run_paper", "supported_if", "torch_threads", "verdict_table",
    "write_json_atomic", "write_report",
]
