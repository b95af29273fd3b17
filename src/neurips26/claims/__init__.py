"""The claim-check framework shared by every paper.

A paper declares its claims (statement, paper value, metric, the rule that decides it and the function
that measures it) in ``neurips26.<slug>.check`` as a :class:`Paper`; :func:`run_checks` measures them
claim by claim at a scale, writes one strict-JSON record per paper into a fresh run folder and the CLI
prints the verdicts. :mod:`.rules` holds the decision rules, :mod:`.measure` the shared timing, slope
and memory measurements. ``docs/CHECK_TEMPLATE.md`` shows how to write a check.
"""

from . import measure, rules
from .catalog import CATALOG, CatalogEntry, lookup
from .records import new_run_dir, write_json_atomic
from .registry import implemented, is_implemented, load_paper, resolve
from .report import load_records, write_report
from .runner import (
    configure_threads,
    decide_claims,
    measure_claims,
    run_checks,
    run_paper,
    torch_threads,
    verdict_table,
)
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
    "implemented", "inconclusive", "is_implemented", "load_paper", "load_records", "lookup", "measure",
    "measure_claims", "rules",
    "new_run_dir", "resolve", "run_checks", "run_paper", "supported_if", "torch_threads", "verdict_table",
    "write_json_atomic", "write_report",
]
