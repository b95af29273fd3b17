"""Verdicts of record: the last ``quick`` and ``full`` record of each paper, committed under ``results/<slug>/``,
and the README tables generated from them (so a published verdict is always what the code produced).

    neurips26 check tst --scale full --record     # run, then copy the record (+ plots) to results/tst/full.json
    neurips26 report --readme                     # regenerate every README table from results/
    neurips26 list                                # the recorded verdicts, their age, "stale" when sources changed

A record is *stale* when the sha256 of its paper's ``.py`` sources differs from the sources installed now.
Tables live between markers (``<!-- verdicts:start -->`` / ``<!-- verdicts:end -->`` in a paper's README,
``<!-- papers:start -->`` / ``<!-- papers:end -->`` in the top-level README); everything outside them is
written by hand. Every write is atomic, so a README is never half-written.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from .catalog import CATALOG, CatalogEntry
from .records import package_root, repository_root, source_digest, write_json_atomic
from .registry import is_implemented

RECORD_SCALES: tuple[str, ...] = ("quick", "full", "gpu")
PAPER_MARKERS = ("<!-- verdicts:start -->", "<!-- verdicts:end -->")
BENCH_MARKERS = ("<!-- bench:start -->", "<!-- bench:end -->")
TOP_MARKERS = ("<!-- papers:start -->", "<!-- papers:end -->")
_SHORT = {"supported": "S", "not supported": "N", "inconclusive": "I", "skipped": "skipped"}


def results_root() -> Path:
    """``$NEURIPS26_RESULTS``, else ``results/`` of the checkout this package runs from."""
    env = os.environ.get("NEURIPS26_RESULTS")
    if env:
        return Path(env)
    root = repository_root()
    if root is None:
        raise FileNotFoundError("no results folder: this install is not a git checkout; set NEURIPS26_RESULTS")
    return root / "results"


def record_path(slug: str, scale: str, root: Path | None = None) -> Path:
    if scale not in RECORD_SCALES:
        raise ValueError(f"scale of record must be one of {RECORD_SCALES}, got {scale!r}")
    return (root or results_root()) / slug / f"{scale}.json"


def save_of_record(record: dict[str, Any], run_dir: Path, root: Path | None = None) -> Path:
    """Make a run's record the paper's verdict of record at its scale: ``results/<slug>/<scale>.json`` and its
    plots under ``results/<slug>/<scale>/`` (paths in the copy are relative to ``results/<slug>/``).

    Refuses records that did not finish (``status`` other than ok) or that no verdict can come from.
    """
    slug, scale = record.get("slug"), record.get("scale")
    if record.get("status") != "ok":
        raise ValueError(f"{slug}: only a finished run can be of record (status {record.get('status')!r})")
    target = record_path(slug, scale, root)
    plot_dir = target.parent / scale
    copy = json.loads(json.dumps(record))
    staged = []
    for plot in copy.get("plots", []):
        source = Path(run_dir) / plot["path"]
        if source.is_file():
            staged.append((source, plot_dir / source.name))
            plot["path"] = f"{scale}/{source.name}"
    if plot_dir.exists():  # the previous record's plots belong to it; the new run brings its own
        shutil.rmtree(plot_dir)
    for source, dest in staged:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp")
        shutil.copyfile(source, tmp)
        os.replace(tmp, dest)
    return write_json_atomic(target, copy, overwrite=True)


def _read_json(path: Path) -> Any:
    """A committed JSON file, or ``ValueError`` naming it when it does not decode."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from err


def load_of_record(slug: str, scale: str, root: Path | None = None) -> dict[str, Any] | None:
    """The committed record of ``slug`` at ``scale``, or None when there is none.

    Raises ``ValueError`` naming the file and the field for a corrupt record or one of another paper or scale.
    """
    path = record_path(slug, scale, root)
    if not path.is_file():
        return None
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a record must be a JSON object, got {type(data).__name__}")
    for key, want in (("slug", slug), ("scale", scale)):
        if data.get(key) != want:
            raise ValueError(f"{path}: field {key!r} is {data.get(key)!r}, expected {want!r} (a record of "
                             "another paper or scale)")
    for key in ("claims", "start_time", "seeds", "cpu_s", "source_sha256"):
        if key not in data:
            raise ValueError(f"{path}: missing field {key!r} (not a claims-v3 record of record)")
    if not isinstance(data["claims"], list) or not all(isinstance(c, dict) and "verdict" in c for c in data["claims"]):
        raise ValueError(f"{path}: field 'claims' must be a list of claim records with a verdict")
    return data


def is_stale(record: dict[str, Any]) -> bool:
    """The paper's sources changed since the record was made."""
    try:
        return record.get("source_sha256") != source_digest(record["slug"])
    except LookupError:
        return True


def _md(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _measured(claim: dict[str, Any]) -> str:
    if claim.get("error"):
        return f"error: {claim['error']}"
    if claim["verdict"] == "skipped":
        return f"skipped ({claim.get('fix') or 'data absent'})"
    return (claim.get("measured") or {}).get("summary", "not measured")


def _provenance(record: dict[str, Any]) -> str:
    git = record.get("git") or {}
    commit = (git.get("commit") or "unknown")[:10] + (" (uncommitted changes)" if git.get("dirty") else "")
    seeds = record.get("seeds") or []
    load = (record.get("load") or {}).get("start")
    load_text = f", load {load[0]:.2f}" if load else ""
    return (f"`{record['scale']}`: {record['start_time'][:10]}, commit {commit}, {len(seeds)} seed(s), "
            f"{record.get('cpu_s', 0):.0f} CPU-s (budget {record.get('budget_s')}), "
            f"{record.get('duration_s', 0):.0f} s "
            f"wall{load_text}")


def render_paper_table(slug: str, root: Path | None = None) -> str | None:
    """The verdict table of one paper from its records of record (None when it has none)."""
    records = {scale: load_of_record(slug, scale, root) for scale in RECORD_SCALES}
    records = {scale: rec for scale, rec in records.items() if rec is not None}
    if not records:
        return None
    scales = list(records)
    main = records.get("full") or records.get("quick") or records[scales[0]]
    lines = ["Verdicts of record, generated by `neurips26 report --readme` from "
             + ", ".join(f"`results/{slug}/{s}.json`" for s in scales) + " (do not edit by hand).", ""]
    stale = " — **stale**: the sources changed since"
    lines += [f"- {_provenance(records[s])}" + (stale if is_stale(records[s]) else "") for s in scales]
    lines.append("")
    header = ["claim", "kind"] + [f"{s}" for s in scales] + [f"measured ({main['scale']})", "paper", "reason "
                                                             f"({main['scale']})"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    ids = [c["id"] for c in main["claims"]]
    for scale in scales:
        ids += [c["id"] for c in records[scale]["claims"] if c["id"] not in ids]
    by_scale = {s: {c["id"]: c for c in records[s]["claims"]} for s in scales}
    for cid in ids:
        ref = next(by_scale[s][cid] for s in [main["scale"], *scales] if cid in by_scale[s])
        cells = [cid, ref.get("kind", "paper")]
        cells += [_SHORT.get(by_scale[s][cid]["verdict"], by_scale[s][cid]["verdict"]) if cid in by_scale[s] else "-"
                  for s in scales]
        cells += [_md(_measured(ref)), _md(ref.get("paper_value", "")), _md(ref.get("reason", ""))]
        lines.append("| " + " | ".join(cells) + " |")
    pre_lines = []
    for claim in main["claims"]:
        for pre in claim.get("preconditions", []):
            value = (pre.get("measured") or {}).get("summary", "not measured")
            pre_lines.append(f"- {claim['id']}: {_md(pre['name'])}: {'met' if pre['met'] else '**not met**'} "
                             f"({_md(value)}; needs {_md(pre['criterion'])})")
    if pre_lines:
        lines += ["", f"Preconditions ({main['scale']}):", "", *pre_lines]
    return "\n".join(lines)


def _verdict_summary(record: dict[str, Any]) -> str:
    claims = record["claims"]
    paper = [c for c in claims if c.get("kind", "paper") == "paper"]
    sanity = [c for c in claims if c.get("kind") == "sanity"]
    counts = {label: sum(c["verdict"] == label for c in paper) for label in _SHORT}
    text = " · ".join(f"{_SHORT[k]} {v}" for k, v in counts.items() if v or k != "skipped")
    if sanity:
        text += f"; sanity {sum(c['verdict'] == 'supported' for c in sanity)}/{len(sanity)}"
    per_claim = ", ".join(f"{c['id']} {_SHORT.get(c['verdict'], c['verdict'])}" for c in paper)
    return f"{text} ({per_claim})" if per_claim else text


def _entry_cell(entry: CatalogEntry, root: Path | None) -> str:
    for scale in ("full", "quick"):
        record = load_of_record(entry.slug, scale, root)
        if record is None:
            continue
        stale = " — stale" if is_stale(record) else ""
        return (f"{scale} ({record['start_time'][:10]}, {len(record.get('seeds') or [])} seed(s)): "
                f"{_verdict_summary(record)}{stale}")
    return "no verdict of record yet"


def render_top_table(root: Path | None = None) -> str:
    """The top-level README's paper table: one row per paper with its verdict of record (full where it exists)."""
    lines = ["| id | method | slug | status | verdict of record |", "|---|---|---|---|---|"]
    for entry in CATALOG:
        status = "implemented" if is_implemented(entry) else "not implemented yet"
        link = f"[`{entry.slug}`](src/neurips26/{entry.slug}/README.md)"
        lines.append(f"| {entry.id} | {_md(entry.method)} | {link} | {status} | {_md(_entry_cell(entry, root))} |")
    return "\n".join(lines)


def replace_between(text: str, markers: tuple[str, str], body: str, *, append_heading: str | None = None) -> str:
    """``text`` with the part between ``markers`` replaced by ``body``. Without markers, the block is appended
    under ``append_heading`` (when given) or a ``ValueError`` is raised."""
    start, end = markers
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        return head + block + tail
    if start in text or end in text:
        raise ValueError(f"only one of the markers {markers} is present")
    if append_heading is None:
        raise ValueError(f"the markers {markers} are absent")
    return text.rstrip() + f"\n\n{append_heading}\n\n{block}\n"


def _write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def load_bench(slug: str, root: Path | None = None) -> dict[str, Any] | None:
    """The committed benchmark record ``results/<slug>/bench.json``, or None."""
    path = (root or results_root()) / slug / "bench.json"
    if not path.is_file():
        return None
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("slug") != slug or data.get("kind") != "bench":
        raise ValueError(f"{path}: not a benchmark record of {slug} (fields 'kind'/'slug')")
    return data


def _num(value: Any, spec: str) -> str:
    """A number of a bench row for the table; ``None`` is a ratio JSON could not hold (``ours = 0``: infinite)."""
    return "∞ (ours = 0)" if value is None else format(value, spec)


def render_bench_table(record: dict[str, Any]) -> str:
    """The performance table of a paper's README from its ``bench.json``."""
    load = (record.get("load") or {}).get("start")
    lines = [f"Benchmark of record (`results/{record['slug']}/bench.json`, generated; {record['start_time'][:10]}, "
             f"{record['threads']} thread(s), {record['repeats']} interleaved pairs, {record.get('clock', 'process')} clock"
             + (f", load {load[0]:.2f}" if load else "") + f"): {record['description']}"]
    counts = [row for row in record["rows"] if row.get("kind") == "count"]
    timings = [row for row in record["rows"] if row.get("kind") != "count"]
    if timings:
        lines += ["", "| comparison | peer | ours | peer | speed-up (peer / ours) [95% interval] "
                      "| ours / machine limit |", "|---|---|---|---|---|---|"]
    for row in timings:
        if row["peer_kind"] == "published":
            lines.append(f"| {row['name']} | {row['peer']} (published: {row['source']}) | {row.get('ours', '')} | "
                         f"{row['published']} | - | - |")
            continue
        limit = f"{row['ours_over_limit']:.2f}x" if "ours_over_limit" in row else "-"
        kind = "real" if row["peer_kind"] == "real" else "our re-implementation"
        lines.append(f"| {row['name']} | {row['peer']} ({kind}) | {row['ours_s'] * 1e3:.3g} ms | "
                     f"{row['peer_s'] * 1e3:.3g} ms | {row['speedup']:.3g}x [{row['lo']:.3g}, {row['hi']:.3g}] | "
                     f"{limit} |")
    if counts:
        lines += ["", "Work and quality counts (deterministic, no clock):", "",
                  "| comparison | peer | ours | peer | peer / ours | unit |", "|---|---|---|---|---|---|"]
        for row in counts:
            kind = "real" if row["peer_kind"] == "real" else "our re-implementation"
            better = "lower is better" if row.get("lower_is_better", True) else "higher is better"
            lines.append(f"| {row['name']} | {row['peer']} ({kind}) | {_num(row['ours'], '.4g')} | "
                         f"{_num(row['peer_value'], '.4g')} | {_num(row['ratio'], '.3g')} | {row['unit']} ({better}) |")
    for row in record.get("scalings", []):
        lines.append(f"\nScaling, {row['name']}: log-log slope {row['slope']:.3g} (R² {row['r2']:.3f}) over sizes "
                     f"{row['sizes']}; the paper claims {row['claimed']}.")
    return "\n".join(lines)


def paper_readme_text(slug: str, root: Path | None = None) -> str | None:
    """The paper README with its verdict and benchmark tables regenerated (None when it has neither record)."""
    table = render_paper_table(slug, root)
    bench = load_bench(slug, root)
    if table is None and bench is None:
        return None
    path = package_root(slug) / "README.md"
    text = path.read_text(encoding="utf-8") if path.is_file() else f"# {slug}\n"
    if table is not None:
        text = replace_between(text, PAPER_MARKERS, table, append_heading="## Verdicts of record")
    if bench is not None:
        text = replace_between(text, BENCH_MARKERS, render_bench_table(bench),
                               append_heading="## Performance of record")
    return text


def top_readme_text(root: Path | None = None) -> str:
    path = (repository_root() or Path.cwd()) / "README.md"
    return replace_between(path.read_text(encoding="utf-8"), TOP_MARKERS, render_top_table(root))


def write_readmes(slugs: list[str] | None = None, *, top: bool = True, root: Path | None = None) -> list[Path]:
    """Regenerate the verdict tables (the papers in ``slugs``, default all with records, and the top table).

    Every text is rendered before any file is written, so a corrupt record changes nothing. Returns the files
    whose content changed.
    """
    targets = [entry.slug for entry in CATALOG] if slugs is None else slugs
    texts: dict[Path, str] = {}
    for slug in targets:
        text = paper_readme_text(slug, root)
        if text is not None:
            texts[package_root(slug) / "README.md"] = text
    if top:
        texts[(repository_root() or Path.cwd()) / "README.md"] = top_readme_text(root)
    changed = []
    for path, text in texts.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            _write_text_atomic(path, text)
            changed.append(path)
    return changed


def expected_minutes(slug: str, scale: str, root: Path | None = None) -> float | None:
    """Minutes the last record at ``scale`` took (wall), for ``check``'s ETA; None without a record."""
    try:
        record = load_of_record(slug, scale, root)
    except ValueError:
        return None
    return None if record is None else float(record.get("duration_s", 0.0)) / 60.0


__all__ = ["BENCH_MARKERS", "PAPER_MARKERS", "RECORD_SCALES", "TOP_MARKERS", "expected_minutes", "is_stale",
           "load_bench", "load_of_record", "paper_readme_text", "record_path", "render_bench_table",
           "render_paper_table", "render_top_table", "replace_between", "results_root", "save_of_record",
           "top_readme_text", "write_readmes"]
