"""The ``neurips26`` command: ``list``, ``check``, ``report`` and each paper's own tools.

    neurips26 list
    neurips26 check [SLUG ...|all] [--scale smoke|quick|full|gpu] [--seeds N] [--out DIR]
    neurips26 report RUN_DIR
    neurips26 <slug> ...          # a paper's tools, e.g. ``neurips26 effbench select ...``

Exit codes: 0 when every check ran (a "not supported" verdict is a result, not an error),
1 when a check crashed, 2 for bad usage or input.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from .claims import CATALOG, SCALES, is_implemented, resolve, run_checks, verdict_table, write_report
from .claims.catalog import lookup
from .claims.report import load_records


def _paper_cli(slug: str):
    """The ``main(argv) -> int`` of ``neurips26.<slug>.cli`` when that paper ships tools."""
    name = f"neurips26.{slug}.cli"
    try:
        if importlib.util.find_spec(name) is None:
            return None
    except ModuleNotFoundError:
        return None
    return importlib.import_module(name).main


def _cmd_list(_: argparse.Namespace) -> int:
    rows = [("id", "slug", "method", "status")]
    for entry in CATALOG:
        rows.append((entry.id, entry.slug, entry.method,
                     "implemented" if is_implemented(entry) else "not implemented yet"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        entries = resolve(args.papers)
    except ValueError as err:
        print(f"neurips26 check: {err}", file=sys.stderr)
        return 2
    missing = [entry.slug for entry in entries if not is_implemented(entry)]
    if missing:
        print(f"neurips26 check: not implemented yet: {', '.join(missing)} (see `neurips26 list`)",
              file=sys.stderr)
        return 2
    if not entries:
        print("neurips26 check: no paper is implemented yet", file=sys.stderr)
        return 2
    run_dir, runs = run_checks(entries, scale=args.scale, out_root=Path(args.out), n_seeds=args.seeds,
                               show_progress=not args.no_progress)
    print(verdict_table([run.record for run in runs]))
    md_path, _ = write_report(run_dir)
    print(f"\nrun folder: {run_dir}\nreport: {md_path}")
    if any(run.status == "error" for run in runs):
        return 1
    if all(run.status == "refused" for run in runs):
        return 2
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    try:
        md_path, html_path = write_report(Path(args.run_dir))
    except (FileNotFoundError, ValueError) as err:
        print(f"neurips26 report: {err}", file=sys.stderr)
        return 2
    print(verdict_table(load_records(Path(args.run_dir))))
    print(f"\nwrote {md_path} and {html_path}")
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from err
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="neurips26", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the 19 papers and which are implemented").set_defaults(func=_cmd_list)
    check = sub.add_parser("check", help="run claim checks into a new run folder")
    check.add_argument("papers", nargs="*", default=["all"], help="slugs or ids (default: all)")
    check.add_argument("--scale", choices=SCALES, default="quick", help="experiment size (default quick)")
    check.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (default: per paper)")
    check.add_argument("--out", default="runs", help="parent folder of run folders (default ./runs)")
    check.add_argument("--no-progress", action="store_true", help="no progress bars")
    check.set_defaults(func=_cmd_check)
    report = sub.add_parser("report", help="render report.md and report.html of a run folder")
    report.add_argument("run_dir")
    report.set_defaults(func=_cmd_report)
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
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
