"""The ``neurips26`` command: ``list``, ``check``, ``report`` and each paper's own tools.

    neurips26 list
    neurips26 check [SLUG ...|all] [--scale smoke|quick|full|gpu] [--seeds N] [--out DIR] [--download] [--record]
    neurips26 report RUN_DIR|OUT_DIR [--compare OTHER_RUN_DIR]
    neurips26 report --readme [SLUG ...]     # regenerate the README verdict tables from results/
    neurips26 data list|fetch NAME|all|verify|path NAME
    neurips26 <slug> ...          # a paper's tools, e.g. ``neurips26 effbench select ...``

Exit codes: 0 when every check ran or skipped claims whose data is absent (a "not supported" verdict
is a result, not an error), 1 when a check or one of its claims crashed, 2 for bad usage or input
(one line on stderr, argparse's errors included; ``--help`` prints the usage).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from . import __version__
from .claims import CATALOG, SCALES, is_implemented, of_record, resolve, run_checks, verdict_table, write_report
from .claims.catalog import lookup
from .claims.records import IN_PROGRESS
from .claims.report import interrupted_runs, load_records, render_comparison, resolve_run_dir, validate_record
from .claims.runner import makespan_minutes


class UsageError(Exception):
    """Bad usage or input: ``main`` prints it as one line on stderr and returns 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``neurips26 check: argument --seeds: ...``), not usage + error."""

    def error(self, message: str):
        hint = " (see --help)" if "--help" not in message else ""
        raise UsageError(f"{self.prog}: {' '.join(message.split())}{hint}")


def _paper_cli(slug: str):
    """The ``main(argv) -> int`` of ``neurips26.<slug>.cli`` when that paper ships tools."""
    name = f"neurips26.{slug}.cli"
    try:
        if importlib.util.find_spec(name) is None:
            return None
    except ModuleNotFoundError:
        return None
    return importlib.import_module(name).main


def _record_cell(slug: str, scale: str) -> tuple[str, str]:
    """(verdicts, minutes) of a paper's record at ``scale`` for ``list``."""
    try:
        record = of_record.load_of_record(slug, scale)
        if record is not None:
            validate_record(record, of_record.record_path(slug, scale))
    except (ValueError, OSError, TypeError, KeyError) as err:
        return " ".join(f"unreadable ({err})".split())[:60], "-"
    if record is None:
        return "-", "-"
    counts = record.get("tally") or {}
    text = (f"S{counts.get('supported', 0)} N{counts.get('not supported', 0)} I{counts.get('inconclusive', 0)}"
            + (f" sanity {counts.get('sanity_passed', 0)}/{counts['sanity']}" if counts.get("sanity") else "")
            + f" {record['start_time'][:10]}" + (" stale" if of_record.is_stale(record) else ""))
    return text, f"{record.get('duration_s', 0) / 60:.1f}"


def _cmd_list(_: argparse.Namespace) -> int:
    rows = [("id", "slug", "method", "status", "quick (of record)", "min", "full (of record)", "min")]
    for entry in CATALOG:
        quick, quick_min = _record_cell(entry.slug, "quick")
        full, full_min = _record_cell(entry.slug, "full")
        rows.append((entry.id, entry.slug, entry.method,
                     "implemented" if is_implemented(entry) else "not implemented yet", quick, quick_min, full,
                     full_min))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    from .claims.catalog import DISCOVERY_ERRORS

    for slug, why in DISCOVERY_ERRORS.items():
        print(f"not registered: {slug}: {why}", file=sys.stderr)
    return 1 if DISCOVERY_ERRORS else 0


def _usage_error(command: str, message: str) -> int:
    print(f"neurips26 {command}: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _check_out_root(out: str) -> str | None:
    """Why ``--out`` cannot hold run folders, or None when it can (created if missing)."""
    root = Path(out)
    if root.exists() and not root.is_dir():
        return f"--out must be a folder, but {root} is an existing file"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return f"--out {root} cannot be created: {err.strerror or err}"
    if not os.access(root, os.W_OK | os.X_OK):
        return f"--out {root} is not writable"
    return None


def _run_is_live(run_dir: Path) -> bool:
    """The run folder's in-progress marker names a process that is still running (a concurrent check)."""
    marker = run_dir / IN_PROGRESS
    try:
        pid = json.loads(marker.read_text(encoding="utf-8")).get("pid")
    except (OSError, ValueError, AttributeError):
        return False
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    from .data.integrity import pid_alive

    return pid_alive(pid)


def _clean_stale_temp_files(root: Path) -> None:
    """Remove temporary record files a killed run left behind (``.<name>.*.tmp``), except in the folders of
    runs still in progress (their marker names a live process)."""
    for tmp in root.glob("*/.*.tmp"):
        if _run_is_live(tmp.parent):
            continue
        try:
            tmp.unlink()
        except OSError:
            pass


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        entries = resolve(args.papers)
    except ValueError as err:
        return _usage_error("check", str(err))
    raw_threads = os.environ.get("OMP_NUM_THREADS", "2")
    if not raw_threads.isdigit() or int(raw_threads) < 1:
        return _usage_error("check", f"OMP_NUM_THREADS must be a positive integer, got {raw_threads!r}")
    problem = _check_out_root(args.out)
    if problem:
        return _usage_error("check", problem)
    missing = [entry.slug for entry in entries if not is_implemented(entry)]
    if missing:
        print(f"neurips26 check: not implemented yet: {', '.join(missing)} (see `neurips26 list`)",
              file=sys.stderr)
        return 2
    if not entries:
        print("neurips26 check: no paper is implemented yet", file=sys.stderr)
        return 2
    _clean_stale_temp_files(Path(args.out))
    if args.record and args.scale not in of_record.RECORD_SCALES:
        return _usage_error("check", f"--record keeps quick, full and gpu runs, not {args.scale!r}")
    eta = [of_record.expected_minutes(entry.slug, args.scale) for entry in entries] if args.scale != "smoke" else []
    if eta and all(minutes is not None for minutes in eta):
        workers = args.jobs if args.executor != "sequential" else 1
        spread = (f" on {workers} workers ({sum(eta):.0f} min one after another)"
                  if workers > 1 and len(eta) > 1 else "")
        print(f"neurips26 check: about {makespan_minutes(eta, workers):.0f} min at {args.scale}{spread} "
              "(from the records of record)", file=sys.stderr)
    if args.download:
        fetch = _data_function("fetch_all")
        if fetch is None:
            return _usage_error("check", "--download needs neurips26.data.fetch_all, which this install lacks")
        failed = [f"{name}: {status.message}" for name, status in fetch(progress=not args.no_progress).items()
                  if status.state != "ok"]
        for line in failed:
            print(f"neurips26 check --download: could not fetch {line}", file=sys.stderr)
    try:
        run_dir, runs = run_checks(entries, scale=args.scale, out_root=Path(args.out), n_seeds=args.seeds,
                                   show_progress=not args.no_progress, executor=args.executor, jobs=args.jobs)
    except ValueError as err:
        return _usage_error("check", str(err))
    print(verdict_table([run.record for run in runs]))
    md_path, _ = write_report(run_dir)
    print(f"\nrun folder: {run_dir}\nreport: {md_path}")
    if args.record:
        for run in runs:
            if run.status != "ok" or run.claim_errors:
                print(f"neurips26 check --record: {run.entry.slug} not recorded (status {run.status}, "
                      f"{run.claim_errors} claim error(s))", file=sys.stderr)
                continue
            path = of_record.save_of_record(run.record, run_dir)
            print(f"verdict of record: {path}")
    skipped = [f"{run.entry.slug} {claim['id']}: {claim.get('fix') or claim['reason']}"
               for run in runs for claim in run.record.get("claims", []) if claim["verdict"] == "skipped"]
    if skipped:
        print("\nskipped for absent data (run the fix, then check again):\n  " + "\n  ".join(skipped))
    if any(run.status == "error" or run.claim_errors for run in runs):
        return 1
    if all(run.status == "refused" for run in runs):
        return 2
    return 0


def _cmd_report_readme(args: argparse.Namespace) -> int:
    try:
        slugs = [lookup(name).slug for name in args.run_dir] if args.run_dir else None
        changed = of_record.write_readmes(slugs, top=not slugs)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return _usage_error("report", str(err).replace("\n", " "))
    for path in changed:
        print(f"updated {path}")
    if not changed:
        print("README tables already match the records of record")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    if args.readme:
        return _cmd_report_readme(args)
    if len(args.run_dir) != 1:
        return _usage_error("report", f"give one RUN_DIR (or --readme [SLUG ...]), got {len(args.run_dir)}")
    # Everything is read and checked before anything is written or printed: a bad record, a --compare
    # folder without records or a report.md that is a folder is one line on stderr and no output at all.
    try:
        root = Path(args.run_dir[0])
        run_dir = resolve_run_dir(root)
        records = load_records(run_dir)
        other = load_records(Path(args.compare)) if args.compare else None
        interrupted = interrupted_runs(root)
        md_path, html_path = write_report(run_dir, records)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return _usage_error("report", str(err))
    for run in interrupted:
        print(f"note: {run} was interrupted (it still carries its in-progress marker)", file=sys.stderr)
    print(verdict_table(records))
    print(f"\nwrote {md_path} and {html_path}")
    if other is not None:
        print("\n" + render_comparison(other, records, name_a=Path(args.compare).name, name_b=run_dir.name))
    return 0


def _data_function(name: str):
    """A function of ``neurips26.data`` (``fetch_all``, the ``cli.main``), or None if absent."""
    try:
        module = importlib.import_module("neurips26.data" if name != "cli" else "neurips26.data.cli")
    except ModuleNotFoundError:
        return None
    return getattr(module, "main" if name == "cli" else name, None)


def _paper_tools() -> list[str]:
    """Slugs of the implemented papers that ship a ``cli`` module."""
    here = Path(__file__).resolve().parent
    return [entry.slug for entry in CATALOG if (here / entry.slug / "cli.py").is_file()]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from err
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="neurips26", description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n")[-1])
    parser.add_argument("--version", action="version", version=f"neurips26 {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="the 19 papers and which are implemented").set_defaults(func=_cmd_list)
    check = sub.add_parser("check", help="run claim checks into a new run folder")
    check.add_argument("papers", nargs="*", default=["all"], help="slugs or ids (default: all)")
    check.add_argument("--scale", choices=SCALES, default="quick", help="experiment size (default quick)")
    check.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (default: per paper)")
    check.add_argument("--out", default="runs", help="parent folder of run folders (default ./runs)")
    check.add_argument("--no-progress", action="store_true", help="no progress bars")
    check.add_argument("--download", action="store_true",
                       help="fetch every registered dataset first (canonical URLs; needs the internet)")
    check.add_argument("--executor", choices=("sequential", "local", "ray"), default="sequential",
                       help="run papers one after another (default), on --jobs local processes, or as Ray tasks "
                            "(a local cluster, or the one at $RAY_ADDRESS)")
    check.add_argument("--jobs", type=_positive_int, default=1, help="workers for --executor local|ray")
    check.add_argument("--record", action="store_true",
                       help="make each finished paper's record its verdict of record (results/<slug>/<scale>.json)")
    check.set_defaults(func=_cmd_check)
    report = sub.add_parser("report", help="render report.md and report.html of a run folder")
    report.add_argument("run_dir", nargs="*", help="a run folder, or the --out folder of check (its newest run); "
                        "with --readme: the papers to regenerate (default all, and the top-level table)")
    report.add_argument("--readme", action="store_true",
                        help="regenerate the README verdict tables from the records of record in results/")
    report.add_argument("--compare", metavar="OTHER_RUN", help="list the verdicts and numbers that changed")
    report.set_defaults(func=_cmd_report)
    # Dispatched in main() before parsing; listed here so --help shows every command.
    sub.add_parser("data", help="list, fetch, verify and locate datasets (neurips26 data --help)", add_help=False)
    for slug in _paper_tools():
        sub.add_parser(slug, help=f"{slug}'s own tools (neurips26 {slug} --help)", add_help=False)
    return parser


def _default_triton_interpreter() -> None:
    """Without a CUDA device, Triton kernels can only run in its interpreter, and the interpreter is
    chosen when triton is first imported: set ``TRITON_INTERPRET=1`` before anything imports it,
    unless the user decided otherwise."""
    if "TRITON_INTERPRET" in os.environ or "triton" in sys.modules:
        return
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in ("list", "report", "-h", "--help"):
        _default_triton_interpreter()
    if argv and argv[0] == "data":
        tool = _data_function("cli")
        if tool is None:
            return _usage_error("data", "this install has no data tools (neurips26.data.cli)")
        return int(tool(argv[1:]) or 0)
    if argv and argv[0] not in ("list", "check", "report") and not argv[0].startswith("-"):
        try:
            entry = lookup(argv[0])
        except ValueError:
            entry = None
        tool = _paper_cli(entry.slug) if entry else None
        if tool is not None:
            return int(tool(argv[1:]) or 0)
        if entry is not None:
            print(f"neurips26: {entry.slug} has no command-line tools"
                  + ("" if is_implemented(entry) else " (not implemented yet)"), file=sys.stderr)
            return 2
    try:
        args = build_parser().parse_args(argv)
    except UsageError as err:
        print(str(err), file=sys.stderr)
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
