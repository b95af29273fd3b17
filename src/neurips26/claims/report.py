"""Render a run folder's records into ``report.md`` and a self-contained ``report.html``.

The summary is one table, paper × claim: the verdict (coloured in HTML), what we measured next to the
paper's number, and the reason the rule gave (as text, and on hover). Each paper then gets its claims
in full and its plots with captions. :func:`render_comparison` shows which verdicts and numbers
changed between two runs.

Records are read as strict JSON (no ``NaN``/``Infinity`` tokens, no number that overflows a double, no
duplicate key) and checked against the record layout (:func:`validate_record`: ``status`` one of ok, refused
or error, ``paper_id`` a string, every verdict one of the known ones, ...) before anything is written; a
bad record is a ``ValueError`` naming the file and the field. ``report.md`` and ``report.html`` are both
written to temporary files first and then renamed, so a failure leaves neither half-written.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from ..data.integrity import pid_alive
from .records import IN_PROGRESS
from .spec import CLAIM_KINDS, VERDICTS

#: the values of a record's ``status``
STATUSES: tuple[str, ...] = ("ok", "refused", "error")

_CSS = ("body{font-family:system-ui,sans-serif;max-width:1200px;margin:auto;padding:0 12px;color:#222}"
        "table{border-collapse:collapse;margin:8px 0;max-width:100%;table-layout:auto}"
        "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left;"
        "overflow-wrap:anywhere;word-break:break-word}th{background:#f0f0f0}"
        ".v{font-weight:bold;white-space:nowrap}.supported{background:#dff3e3;color:#145c26}"
        ".not-supported{background:#f9dede;color:#8f1414}.inconclusive{background:#fdf3d1;color:#6b5300}"
        ".skipped{background:#e8e8e8;color:#444}.error{background:#f9dede;color:#8f1414}"
        ".reason{font-size:90%;color:#444;max-width:36em}pre{background:#f4f4f4;padding:6px;overflow:auto}"
        "figcaption{font-size:90%;color:#444}")


def resolve_run_dir(path: Path) -> Path:
    """A run folder, or the parent given to ``check --out``: then its newest run folder with records."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise FileNotFoundError(f"run folder {path} is a file, not a folder")
    if not path.is_dir():
        raise FileNotFoundError(f"run folder {path} does not exist")
    if any(path.glob("*.json")):
        return path
    runs = sorted((child for child in path.iterdir() if child.is_dir() and any(child.glob("*.json"))),
                  key=lambda child: child.name)
    if not runs:
        raise FileNotFoundError(f"no result records (*.json with a paper_id) in {path} or its run folders")
    return runs[-1]


def interrupted_runs(root: Path) -> list[Path]:
    """Run folders under ``root`` (or ``root`` itself) that still carry the in-progress marker."""
    root = Path(root)
    candidates = [root, *(child for child in root.iterdir() if child.is_dir())] if root.is_dir() else []
    return sorted(child for child in candidates if (child / IN_PROGRESS).exists())


_REQUIRED = ("paper_id", "slug", "scale", "status", "start_time", "duration_s")


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"bare {token} token (strict JSON has no NaN or Infinity; the writer stores null)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:30]} overflows a double")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def read_strict_json(path: Path) -> Any:
    """The JSON value in ``path``, strictly: UTF-8, no ``NaN``/``Infinity``, finite numbers, unique keys.

    Raises ``ValueError`` naming the file (and ``FileNotFoundError`` when it is absent).
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder where a record file belongs")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text ({err.reason} at byte {err.start})") from err
    except FileNotFoundError:
        raise
    except OSError as err:
        raise ValueError(f"{path} cannot be read ({err.strerror or err})") from err
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from err
    except RecursionError as err:
        raise ValueError(f"{path} is not a record: nested too deeply") from err
    except ValueError as err:  # a hook's refusal, or an integer with too many digits
        raise ValueError(f"{path} is not strict JSON: {str(err).splitlines()[0]}") from err


def _type_name(value: Any) -> str:
    return "null" if value is None else {dict: "object", list: "array", str: "string", bool: "boolean",
                                         int: "number", float: "number"}.get(type(value), type(value).__name__)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond a double
        return False


class _Checker:
    """Field checks of one record: each failure is a ``ValueError`` '<file>: field <where> must be ..., got ...'."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, want: str, value: Any) -> None:
        shown = repr(value) if isinstance(value, str | int | float | bool) or value is None else _type_name(value)
        raise ValueError(f"{self.path}: field {where} must be {want}, got {shown[:80]}")

    def string(self, obj: dict, key: str, where: str, *, required: bool = True, nullable: bool = False) -> None:
        if key not in obj:
            if required:
                raise ValueError(f"{self.path}: missing field {where}")
            return
        if not (isinstance(obj[key], str) or (nullable and obj[key] is None)):
            self.fail(where, "a string" + (" or null" if nullable else ""), obj[key])

    def number(self, obj: dict, key: str, where: str, *, required: bool = True, nullable: bool = False) -> None:
        if key not in obj:
            if required:
                raise ValueError(f"{self.path}: missing field {where}")
            return
        if not (_is_number(obj[key]) or (nullable and obj[key] is None)):
            self.fail(where, "a finite number" + (" or null" if nullable else ""), obj[key])

    def choice(self, obj: dict, key: str, where: str, choices: tuple[str, ...], *, required: bool = True) -> None:
        if key not in obj:
            if required:
                raise ValueError(f"{self.path}: missing field {where}")
            return
        if not (isinstance(obj[key], str) and obj[key] in choices):
            self.fail(where, "one of " + ", ".join(repr(c) for c in choices), obj[key])

    def array(self, obj: dict, key: str, where: str, *, required: bool = False) -> list:
        if key not in obj:
            if required:
                raise ValueError(f"{self.path}: missing field {where}")
            return []
        if not isinstance(obj[key], list):
            self.fail(where, "an array", obj[key])
        return obj[key]

    def obj(self, value: Any, where: str, *, nullable: bool = False) -> None:
        if not (isinstance(value, dict) or (nullable and value is None)):
            self.fail(where, "an object" + (" or null" if nullable else ""), value)


def validate_record(data: Any, path: Path) -> dict[str, Any]:
    """``data`` if it has the layout the report reads, else ``ValueError`` naming ``path`` and the field."""
    check = _Checker(Path(path))
    check.obj(data, "(the record)")
    missing = [key for key in _REQUIRED if key not in data]
    if data.get("status") == "ok" and "claims" not in data:
        missing.append("claims")
    if missing:
        raise ValueError(f"{path} is not a complete result record: missing {', '.join(missing)}")
    for key in ("paper_id", "slug", "scale", "start_time"):
        check.string(data, key, key)
    check.choice(data, "status", "status", STATUSES)
    check.number(data, "duration_s", "duration_s")
    check.number(data, "cpu_s", "cpu_s", required=False)
    check.string(data, "title", "title", required=False)
    for key in ("refusal", "error", "traceback"):
        check.string(data, key, key, required=False, nullable=True)
    for i, note in enumerate(check.array(data, "notes", "notes")):
        if not isinstance(note, str):
            check.fail(f"notes[{i}]", "a string", note)
    for i, plot in enumerate(check.array(data, "plots", "plots")):
        if isinstance(plot, dict):
            check.string(plot, "path", f"plots[{i}].path")
            check.string(plot, "caption", f"plots[{i}].caption", required=False)
        elif not isinstance(plot, str):
            check.fail(f"plots[{i}]", "a path or an object with a path", plot)
    for i, tuned in enumerate(check.array(data, "tuning", "tuning")):
        where = f"tuning[{i}]"
        check.obj(tuned, where)
        for key in ("arm", "split"):
            check.string(tuned, key, f"{where}.{key}")
        check.number(tuned, "size", f"{where}.size")
        check.number(tuned, "best_score", f"{where}.best_score", nullable=True)
        if "best" not in tuned:
            raise ValueError(f"{path}: missing field {where}.best")
    claims = check.array(data, "claims", "claims", required=data["status"] == "ok")
    for i, claim in enumerate(claims):
        _validate_claim(check, claim, f"claims[{i}]")
    return data


def _validate_claim(check: _Checker, claim: Any, where: str) -> None:
    check.obj(claim, where)
    for key in ("id", "statement", "paper_value", "metric", "criterion", "reason"):
        check.string(claim, key, f"{where}.{key}")
    check.choice(claim, "verdict", f"{where}.verdict", VERDICTS)
    check.choice(claim, "kind", f"{where}.kind", CLAIM_KINDS, required=False)
    for key in ("error", "fix", "traceback"):
        check.string(claim, key, f"{where}.{key}", required=False, nullable=True)
    if "measured" not in claim:
        raise ValueError(f"{check.path}: missing field {where}.measured")
    check.obj(claim["measured"], f"{where}.measured", nullable=True)
    if claim["measured"] is not None:
        check.string(claim["measured"], "summary", f"{where}.measured.summary", required=False)
    for j, pre in enumerate(check.array(claim, "preconditions", f"{where}.preconditions")):
        at = f"{where}.preconditions[{j}]"
        check.obj(pre, at)
        check.string(pre, "name", f"{at}.name")
        check.string(pre, "criterion", f"{at}.criterion")
        if not isinstance(pre.get("met"), bool):
            check.fail(f"{at}.met", "true or false", pre.get("met"))
        check.obj(pre.get("measured"), f"{at}.measured", nullable=True)
        if isinstance(pre.get("measured"), dict):
            check.string(pre["measured"], "summary", f"{at}.measured.summary", required=False)


def load_records(run_dir: Path) -> list[dict[str, Any]]:
    """All paper records (``<slug>.json`` with a ``paper_id``) of a run folder, in paper order.

    ``run_dir`` may also be the ``--out`` folder of ``neurips26 check``: its newest run is read.
    Raises ``ValueError`` for a file that is not strict JSON or not a valid record (naming the file and
    the field); JSON files without a ``paper_id`` (not records) are left out.
    """
    run_dir = resolve_run_dir(Path(run_dir))
    records = []
    for path in sorted(run_dir.glob("*.json")):
        data = read_strict_json(path)
        if not (isinstance(data, dict) and "paper_id" in data):
            continue
        records.append(validate_record(data, path))
    if not records:
        raise FileNotFoundError(f"no result records (*.json with a paper_id) in {run_dir}")
    return sorted(records, key=lambda record: record["paper_id"])


def _plots(record: dict[str, Any]) -> list[dict[str, str]]:
    """Plots as ``{"path", "caption"}`` (v1 records held bare paths)."""
    return [{"path": p["path"], "caption": p.get("caption", "")} if isinstance(p, dict)
            else {"path": str(p), "caption": ""} for p in record.get("plots", [])]


def _measured(claim: dict[str, Any]) -> str:
    if claim.get("error"):
        return f"error: {claim['error']}"
    if claim.get("verdict") == "skipped":
        return f"skipped; fix: {claim.get('fix') or '-'}"
    return (claim.get("measured") or {}).get("summary", "not measured")


def render_markdown(records: list[dict[str, Any]], run_dir: Path) -> str:
    lines = [f"# neurips26 claim-check report: {Path(run_dir).name}", "", "## Summary", "",
             "Implementation checks (`kind: sanity`: true by construction or checks of our code) are marked and "
             "never counted among the paper's verdicts.", "",
             "| paper | claim | verdict | measured | paper value | reason |", "|---|---|---|---|---|---|"]
    for record in records:
        label = f"{record['paper_id']} `{record['slug']}`"
        if record.get("status") != "ok":
            detail = record.get("refusal") or record.get("error") or ""
            lines.append(f"| {label} | - | **{record.get('status')}** | {_md(detail)} | | |")
            continue
        for claim in record["claims"]:
            cid = claim["id"] + (" (sanity)" if claim.get("kind") == "sanity" else "")
            lines.append(f"| {label} | {cid} | **{claim['verdict']}** | {_md(_measured(claim))} | "
                         f"{_md(claim['paper_value'])} | {_md(claim['reason'])} |")
    for record in records:
        lines += ["", f"## {record['paper_id']} {record['slug']}: {record.get('title', '')}", ""]
        lines.append(f"scale `{record['scale']}`, seeds {record.get('seeds')}, device {record.get('device')}, "
                     f"started {record['start_time']}, {record['duration_s']:.1f} s wall"
                     + (f", {record['cpu_s']:.1f} CPU-s (budget {record.get('budget_s')})"
                        if "cpu_s" in record else ""))
        for tuned in record.get("tuning", []):
            score = "-" if tuned["best_score"] is None else f"{tuned['best_score']:.4g}"
            lines.append(f"- tuned arm {tuned['arm']} on {tuned['split']}: {tuned['size']} configurations, chose "
                         f"{tuned['best']} (score {score})")
        if record.get("status") != "ok":
            lines += ["", f"**{record.get('status')}**: {record.get('refusal') or record.get('error')}"]
            if record.get("traceback"):
                lines += ["", "```", record["traceback"].rstrip(), "```"]
            continue
        for claim in record["claims"]:
            lines += ["", f"### {claim['id']}: {claim['verdict']}", "",
                      f"- paper: {claim['statement']} ({claim['paper_value']})",
                      f"- metric: {claim['metric']}",
                      f"- criterion (fixed before the run): {claim['criterion']}",
                      f"- measured: {_measured(claim)}",
                      f"- reason: {claim['reason']}"]
            if claim.get("kind") == "sanity":
                lines.insert(len(lines) - 5, "- kind: sanity (implementation check, not counted)")
            for pre in claim.get("preconditions", []):
                value = (pre.get("measured") or {}).get("summary", "not measured")
                lines.append(f"- precondition {pre['name']}: {'met' if pre['met'] else 'NOT MET'} ({value}; "
                             f"needs {pre['criterion']})")
            if claim.get("traceback"):
                lines += ["", "```", claim["traceback"].rstrip(), "```"]
        for note in record.get("notes", []):
            lines.append(f"- note: {note}")
        for plot in _plots(record):
            lines += ["", f"![{plot['caption'] or plot['path']}]({plot['path']})"]
            if plot["caption"]:
                lines += ["", f"*{plot['caption']}*"]
    return "\n".join(lines) + "\n"


def _verdict_cell(claim: dict[str, Any]) -> str:
    css = "error" if claim.get("error") else claim["verdict"].replace(" ", "-")
    label = "error" if claim.get("error") else claim["verdict"]
    return f"<td class='v {css}' title='{html.escape(claim['reason'], quote=True)}'>{html.escape(label)}</td>"


def _summary_table(records: list[dict[str, Any]]) -> list[str]:
    esc = html.escape
    parts = ["<table><tr><th>paper</th><th>claim</th><th>verdict</th><th>measured</th><th>paper value</th>"
             "<th>reason</th></tr>"]
    for record in records:
        label = f"{esc(record['paper_id'])} <code>{esc(record['slug'])}</code>"
        if record.get("status") != "ok":
            detail = record.get("refusal") or record.get("error") or ""
            parts.append(f"<tr><td>{label}</td><td>-</td><td class='v error'>{esc(record.get('status', ''))}"
                         f"</td><td colspan='3'>{esc(detail)}</td></tr>")
            continue
        claims = record["claims"]
        for i, claim in enumerate(claims):
            first = f"<td rowspan='{len(claims)}'>{label}</td>" if i == 0 else ""
            parts.append(f"<tr>{first}<td title='{esc(claim['statement'], quote=True)}'>{esc(claim['id'])}</td>"
                         f"{_verdict_cell(claim)}<td>{esc(_measured(claim))}</td>"
                         f"<td>{esc(claim['paper_value'])}</td><td class='reason'>{esc(claim['reason'])}</td></tr>")
    parts.append("</table>")
    return parts


def render_html(records: list[dict[str, Any]], run_dir: Path) -> str:
    """The same content as the markdown, with plots embedded as base64 so the file stands alone."""
    run_dir = Path(run_dir)
    esc = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'>",
             f"<title>neurips26 report {esc(run_dir.name)}</title><style>{_CSS}</style></head><body>",
             f"<h1>neurips26 claim-check report: {esc(run_dir.name)}</h1>",
             "<p>Verdicts come from rules fixed in code before the run; hover a verdict for its reason.</p>",
             "<h2>Summary</h2>", *_summary_table(records)]
    for record in records:
        parts.append(f"<h2>{esc(record['paper_id'])} {esc(record['slug'])}: {esc(record.get('title', ''))}</h2>")
        parts.append(f"<p>scale {esc(record['scale'])}, seeds {esc(str(record.get('seeds')))}, device "
                     f"{esc(str(record.get('device')))}, {record['duration_s']:.1f} s</p>")
        if record.get("status") != "ok":
            detail = record.get("refusal") or record.get("error") or ""
            parts.append(f"<p><b>{esc(record.get('status', ''))}</b>: {esc(detail)}</p>")
            if record.get("traceback"):
                parts.append(f"<pre>{esc(record['traceback'])}</pre>")
            continue
        parts.append("<table><tr><th>claim</th><th>verdict</th><th>measured</th><th>paper</th>"
                     "<th>criterion (fixed before the run)</th><th>reason</th></tr>")
        for claim in record["claims"]:
            parts.append(f"<tr><td title='{esc(claim['statement'], quote=True)}'>{esc(claim['id'])}</td>"
                         f"{_verdict_cell(claim)}<td>{esc(_measured(claim))}</td>"
                         f"<td>{esc(claim['paper_value'])}</td><td>{esc(claim['criterion'])}</td>"
                         f"<td class='reason'>{esc(claim['reason'])}</td></tr>")
        parts.append("</table>")
        for note in record.get("notes", []):
            parts.append(f"<p>{esc(note)}</p>")
        for plot in _plots(record):
            png = _plot_bytes(run_dir, plot["path"])
            if png is not None:
                data = base64.b64encode(png).decode("ascii")
                caption = plot["caption"] or plot["path"]
                parts.append(f"<figure><img src='data:image/png;base64,{data}' style='max-width:100%' "
                             f"alt='{esc(caption, quote=True)}'><figcaption>{esc(caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _plot_bytes(run_dir: Path, relpath: str) -> bytes | None:
    """The bytes of a ``.png`` plot inside the run folder, or None (absent, unreadable, or outside the run)."""
    path = (run_dir / relpath).resolve()
    if path.suffix.lower() != ".png" or not path.is_relative_to(run_dir.resolve()):
        return None
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def render_comparison(records_a: list[dict[str, Any]], records_b: list[dict[str, Any]],
                      name_a: str = "A", name_b: str = "B") -> str:
    """A markdown table of every claim whose verdict or measured summary differs between two runs."""
    def index(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
        out = {}
        for record in records:
            if record.get("status") != "ok":
                out[(record["slug"], "-")] = {"verdict": record.get("status"), "summary": ""}
                continue
            for claim in record["claims"]:
                out[(record["slug"], claim["id"])] = {"verdict": claim["verdict"], "summary": _measured(claim)}
        return out

    a, b = index(records_a), index(records_b)
    lines = [f"| paper | claim | verdict {name_a} | verdict {name_b} | measured {name_a} | measured {name_b} |",
             "|---|---|---|---|---|---|"]
    changed = 0
    for key in sorted(set(a) | set(b)):
        left, right = a.get(key, {"verdict": "absent", "summary": ""}), b.get(key, {"verdict": "absent", "summary": ""})
        if left == right:
            continue
        changed += 1
        mark = "**" if left["verdict"] != right["verdict"] else ""
        lines.append(f"| {key[0]} | {key[1]} | {mark}{left['verdict']}{mark} | {mark}{right['verdict']}{mark} | "
                     f"{_md(left['summary'])} | {_md(right['summary'])} |")
    header = f"{changed} claim(s) differ between {name_a} and {name_b} (verdict changes in bold)."
    return header + ("\n\n" + "\n".join(lines) if changed else "") + "\n"


def write_report(run_dir: Path, records: list[dict[str, Any]] | None = None) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into the run folder (atomically); returns both paths.

    ``run_dir`` may be the ``--out`` folder of ``neurips26 check``: its newest run is reported. ``records``:
    the run's records when already loaded. Both files are rendered and written to temporary names before
    either is renamed into place; a ``report.md`` or ``report.html`` that is a folder is a ``ValueError``
    and nothing is written.
    """
    run_dir = resolve_run_dir(Path(run_dir))
    records = load_records(run_dir) if records is None else records
    targets = [run_dir / "report.md", run_dir / "report.html"]
    for target in targets:
        if target.exists() and not target.is_file():
            raise ValueError(f"{target} is a folder (or not a regular file); the report cannot replace it")
    texts = [render_markdown(records, run_dir), render_html(records, run_dir)]
    _clean_stale_report_temporaries(run_dir)
    temps: list[str] = []
    try:
        for target, text in zip(targets, texts):
            fd, tmp = tempfile.mkstemp(dir=run_dir, prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp")
            temps.append(tmp)
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        for tmp, target in zip(temps, targets):
            os.replace(tmp, target)
    except BaseException:
        for tmp in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise
    return targets[0], targets[1]


def _clean_stale_report_temporaries(run_dir: Path) -> None:
    """Remove ``.report.{md,html}.<pid>.*.tmp`` left by a killed report whose process is gone."""
    for tmp in list(run_dir.glob(".report.*.tmp")):
        parts = tmp.name.split(".")
        pid = parts[3] if len(parts) > 4 and parts[3].isdigit() else None
        if pid is not None and pid_alive(int(pid)):
            continue
        try:
            tmp.unlink()
        except OSError:
            pass




def _md(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")
