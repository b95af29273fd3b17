"""Render a run folder's records into ``report.md`` and a self-contained ``report.html``.

The summary is one table, paper × claim: the verdict (coloured in HTML), what we measured next to the
paper's number, and the reason the rule gave (as text, and on hover). Each paper then gets its claims
in full and its plots with captions. :func:`render_comparison` shows which verdicts and numbers
changed between two runs.
"""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .records import IN_PROGRESS

_CSS = ("body{font-family:system-ui,sans-serif;max-width:1200px;margin:auto;padding:0 12px;color:#222}"
        "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:4px 8px;"
        "vertical-align:top;text-align:left}th{background:#f0f0f0}"
        ".v{font-weight:bold;white-space:nowrap}.supported{background:#dff3e3;color:#145c26}"
        ".not-supported{background:#f9dede;color:#8f1414}.inconclusive{background:#fdf3d1;color:#6b5300}"
        ".skipped{background:#e8e8e8;color:#444}.error{background:#f9dede;color:#8f1414}"
        ".reason{font-size:90%;color:#444}pre{background:#f4f4f4;padding:6px;overflow:auto}"
        "figcaption{font-size:90%;color:#444}")


def resolve_run_dir(path: Path) -> Path:
    """A run folder, or the parent given to ``check --out``: then its newest run folder with records."""
    path = Path(path)
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


def load_records(run_dir: Path) -> list[dict[str, Any]]:
    """All paper records (``<slug>.json`` with a ``paper_id``) of a run folder, in paper order.

    ``run_dir`` may also be the ``--out`` folder of ``neurips26 check``: its newest run is read.
    Raises ``ValueError`` for a file that is not a valid record (naming the file and the field).
    """
    run_dir = resolve_run_dir(Path(run_dir))
    records = []
    for path in sorted(run_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not valid JSON: {err}") from err
        if not (isinstance(data, dict) and "paper_id" in data):
            continue
        missing = [key for key in _REQUIRED if key not in data]
        if data.get("status") == "ok" and not isinstance(data.get("claims"), list):
            missing.append("claims")
        if missing:
            raise ValueError(f"{path} is not a complete result record: missing {', '.join(missing)}")
        records.append(data)
    if not records:
        raise FileNotFoundError(f"no result records (*.json with a paper_id) in {run_dir}")
    return sorted(records, key=lambda record: record["paper_id"])


def _plots(record: dict[str, Any]) -> list[dict[str, str]]:
    """Plots as ``{"path", "caption"}`` (v1 records held bare paths)."""
    return [p if isinstance(p, dict) else {"path": str(p), "caption": ""} for p in record.get("plots", [])]


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
                     + (f", {record['cpu_s']:.1f} CPU-s (budget {record.get('budget_s')})" if "cpu_s" in record else ""))
        for tuned in record.get("tuning", []):
            lines.append(f"- tuned arm {tuned['arm']} on {tuned['split']}: {tuned['size']} configurations, chose "
                         f"{tuned['best']} (score {tuned['best_score']:.4g})")
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
            path = run_dir / plot["path"]
            if path.suffix.lower() == ".png" and path.is_file():
                data = base64.b64encode(path.read_bytes()).decode("ascii")
                caption = plot["caption"] or plot["path"]
                parts.append(f"<figure><img src='data:image/png;base64,{data}' style='max-width:100%' "
                             f"alt='{esc(caption, quote=True)}'><figcaption>{esc(caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


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


def write_report(run_dir: Path) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into the run folder (atomically); returns both paths.

    ``run_dir`` may be the ``--out`` folder of ``neurips26 check``: its newest run is reported.
    """
    run_dir = resolve_run_dir(Path(run_dir))
    records = load_records(run_dir)
    md_path = _write_text_atomic(run_dir / "report.md", render_markdown(records, run_dir))
    html_path = _write_text_atomic(run_dir / "report.html", render_html(records, run_dir))
    return md_path, html_path


def _write_text_atomic(path: Path, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _md(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")
