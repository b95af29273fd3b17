"""Render a run folder's records into ``report.md`` and a self-contained ``report.html``."""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .runner import verdict_table


def load_records(run_dir: Path) -> list[dict[str, Any]]:
    """All paper records (``<slug>.json`` with a ``paper_id``) of a run folder, in paper order."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run folder {run_dir} does not exist")
    records = []
    for path in sorted(run_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not valid JSON: {err}") from err
        if isinstance(data, dict) and "paper_id" in data:
            records.append(data)
    if not records:
        raise FileNotFoundError(f"no result records (*.json with a paper_id) in {run_dir}")
    return sorted(records, key=lambda record: record["paper_id"])


def render_markdown(records: list[dict[str, Any]], run_dir: Path) -> str:
    lines = [f"# neurips26 claim-check report: {Path(run_dir).name}", "", "## Summary", "",
             "| paper | claim | verdict | measured | paper value |", "|---|---|---|---|---|"]
    for record in records:
        label = f"{record['paper_id']} `{record['slug']}`"
        if record.get("status") != "ok":
            detail = record.get("refusal") or record.get("error") or ""
            lines.append(f"| {label} | - | **{record.get('status')}** | {_md(detail)} | |")
            continue
        for claim in record["claims"]:
            measured = (claim["measured"] or {}).get("summary", "not measured")
            lines.append(f"| {label} | {claim['id']} | **{claim['verdict']}** | {_md(measured)} | "
                         f"{_md(claim['paper_value'])} |")
    for record in records:
        lines += ["", f"## {record['paper_id']} {record['slug']}: {record.get('title', '')}", ""]
        lines.append(f"scale `{record['scale']}`, seeds {record.get('seeds')}, device {record.get('device')}, "
                     f"started {record['start_time']}, {record['duration_s']:.1f} s")
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
                      f"- measured: {(claim['measured'] or {}).get('summary', 'not measured')}",
                      f"- reason: {claim['reason']}"]
        for note in record.get("notes", []):
            lines.append(f"- note: {note}")
        for plot in record.get("plots", []):
            lines += ["", f"![{plot}]({plot})"]
    return "\n".join(lines) + "\n"


def render_html(records: list[dict[str, Any]], run_dir: Path) -> str:
    """The same content as the markdown, with plots embedded as base64 so the file stands alone."""
    run_dir = Path(run_dir)
    esc = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'>",
             f"<title>neurips26 report {esc(run_dir.name)}</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px}"
             ".supported{color:#176e2c}.not-supported{color:#a31515}.inconclusive{color:#8a6d00}"
             "pre{background:#f4f4f4;padding:6px;overflow:auto}</style></head><body>",
             f"<h1>neurips26 claim-check report: {esc(run_dir.name)}</h1>",
             "<h2>Summary</h2><pre>", esc(verdict_table(records)), "</pre>"]
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
                     "<th>criterion</th><th>reason</th></tr>")
        for claim in record["claims"]:
            css = claim["verdict"].replace(" ", "-")
            measured = (claim["measured"] or {}).get("summary", "not measured")
            parts.append(f"<tr><td title='{esc(claim['statement'])}'>{esc(claim['id'])}</td>"
                         f"<td class='{css}'><b>{esc(claim['verdict'])}</b></td><td>{esc(measured)}</td>"
                         f"<td>{esc(claim['paper_value'])}</td><td>{esc(claim['criterion'])}</td>"
                         f"<td>{esc(claim['reason'])}</td></tr>")
        parts.append("</table>")
        for note in record.get("notes", []):
            parts.append(f"<p>{esc(note)}</p>")
        for plot in record.get("plots", []):
            path = run_dir / plot
            if path.suffix.lower() == ".png" and path.is_file():
                data = base64.b64encode(path.read_bytes()).decode("ascii")
                parts.append(f"<figure><img src='data:image/png;base64,{data}' style='max-width:100%'>"
                             f"<figcaption>{esc(plot)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(run_dir: Path) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into ``run_dir`` (atomically); returns both paths."""
    run_dir = Path(run_dir)
    records = load_records(run_dir)
    md_path = _write_text_atomic(run_dir / "report.md", render_markdown(records, run_dir))
    html_path = _write_text_atomic(run_dir / "report.html", render_html(records, run_dir))
    return md_path, html_path


def _write_text_atomic(path: Path, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    return path


def _md(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")
