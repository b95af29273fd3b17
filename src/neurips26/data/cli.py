"""``neurips26 data list | fetch NAME|all [--force] | verify | path NAME`` (wired into ``neurips26``).

``verify`` prints one line per dataset (``ok PATH``, ``absent (fix: ...)`` or ``CORRUPT FILE ...; expected
sha256 ..., actual sha256 ...; fix: ...``); ``fetch NAME --force`` fetches again and replaces a corrupt copy
with one rename. Exit codes: 0 success; 1 a fetch failed, a dataset is corrupt, or ``path`` of an absent or
corrupt dataset (one line on stderr); 2 usage error (one line on stderr).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from . import registry
from .fetch import fetch_all, status, verify_all

USAGE = "usage: neurips26 data {list | fetch NAME|all [--force] | verify | path NAME}"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _usage(message: str) -> int:
    print(f"neurips26 data: {message}; {USAGE}", file=sys.stderr)
    return 2


def cmd_list() -> int:
    rows = [("name", "size", "license", "how", "where")]
    for name, entry in registry.DATASETS.items():
        st = status(name)
        if st.state == "ok":
            where = str(st.path)
        elif st.state == "absent":
            where = "absent"
        else:
            where = f"CORRUPT {st.path or ''} (details: neurips26 data verify; fix: {entry.fix} --force)"
        how = "pypi (on first use)" if entry.pypi else "url (data fetch)"
        rows.append((name, _size(entry.size), entry.license.split(" (")[0], how, where))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4])
    for name, what in registry.PACKAGED.items():
        print(f"{name}: {what}")
    return 0


def cmd_fetch(target: str, *, force: bool = False) -> int:
    names = list(registry.DATASETS) if target == "all" else [target]
    results = fetch_all(progress=sys.stderr.isatty(), names=names, force=force)
    failed = 0
    for name, res in results.items():
        if res.state == "ok":
            print(f"{name}: ok {res.path}")
        else:
            failed += 1
            print(f"{name}: FAILED {_one_line(res.message)}", file=sys.stderr)
    return 1 if failed else 0


def cmd_verify() -> int:
    bad = 0
    for st in verify_all():
        if st.state == "ok":
            print(f"{st.name}: ok {st.path}")
        elif st.state == "absent":
            print(f"{st.name}: absent (fix: {_one_line(st.message)})")
        else:
            bad += 1
            print(f"{st.name}: CORRUPT {_one_line(st.message)}")
    return 1 if bad else 0


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def cmd_path(name: str) -> int:
    st = status(name)
    if st.state != "ok":
        print(f"{name}: {st.state} ({_one_line(st.message)})", file=sys.stderr)
        return 1
    print(st.path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``main(["fetch", "planetoid/cora"]) -> exit code``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        if not args:
            return _usage("missing subcommand")
        print(USAGE)
        return 0
    command, rest = args[0], args[1:]
    if command in ("list", "verify"):
        if rest:
            return _usage(f"'{command}' takes no arguments, got {rest}")
        return cmd_list() if command == "list" else cmd_verify()
    if command in ("fetch", "path"):
        force = command == "fetch" and "--force" in rest
        rest = [arg for arg in rest if not (force and arg == "--force")]
        options = [arg for arg in rest if arg.startswith("-")]
        if options:
            allowed = "--force" if command == "fetch" else "no options"
            return _usage(f"'{command}' takes {allowed}, got {options[0]!r}")
        if len(rest) != 1:
            return _usage(f"'{command}' takes exactly one NAME, got {rest}")
        name = rest[0]
        if name not in registry.DATASETS and not (command == "fetch" and name == "all"):
            return _usage(f"unknown dataset {name!r} (registered: {', '.join(registry.DATASETS)})")
        return cmd_fetch(name, force=force) if command == "fetch" else cmd_path(name)
    return _usage(f"unknown subcommand {command!r}")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
