"""The analysis summary as report.md and report.html (figures linked as the PNGs next to them)."""

from __future__ import annotations

import html
import json
from typing import Any

from minikafka.deploy.analysis.acl_denials import DENIAL_COLUMNS, denial_lines, denial_rows
from minikafka.deploy.analysis.failover import BROKER_FAILOVER_COLUMNS as FAILOVER_COLUMNS
from minikafka.deploy.analysis.failover import CONTROLLER_FAILOVER_COLUMNS as CONTROLLER_COLUMNS
from minikafka.deploy.analysis.kraft_summary import kraft_lines

Summary = dict[str, Any]

LATENCY_COLUMNS = ("acks", "acknowledged", "mean_ms", "p50_ms", "p99_ms", "p999_ms", "max_ms")
REPLICA_COLUMNS = ("tp", "node", "log_start_offset", "log_end_offset", "high_watermark", "torn_tail")
CUT_COLUMNS = ("started", "fault", "target", "one_way", "healed", "seconds")
INCIDENT_COLUMNS = ("ts", "kind", "event", "node", "tp", "detail")
CORRUPT_COLUMNS = ("tp", "node", "segment", "position", "base_offset", "last_offset", "stored_crc", "computed_crc")


def _cell(value: Any) -> str:
    """A number as people read it (one decimal for a float), and "n/a" for a value the run did not give."""
    if isinstance(value, float):
        return f"{value:.1f}"
    if value is None:
        return "n/a"
    return str(value)


VERDICT_TITLES = {
    "pass": "PASSED",
    "fail": "FAILED",
    "incomplete": "INCOMPLETE",
    "nothing to check": "NOTHING TO CHECK",
}


def verdict_title(summary: Summary) -> str:
    return VERDICT_TITLES[summary["verdict"]]


def final_read_line(summary: Summary) -> str:
    f = summary["final_read"]
    return (
        f"acks=all acknowledged {f['acknowledged']}: read back {f['read']}, lost {f['lost']}"
        + (f" ({f['lost_to_unclean_elections']} to unclean elections)" if f.get("lost_to_unclean_elections") else "")
        + f", unknown {f['unknown']} (no final read reached them)"
    )


def compaction_line(summary: Summary) -> str | None:
    """The log cleaners' work (None when no log was cleaned)."""
    c = summary.get("compaction") or {}
    if not c.get("cleanings"):
        return None
    return (
        f"{c['cleanings']} cleanings of {c['partitions']} partition logs: {c['bytes_before']} bytes to "
        f"{c['bytes_after']}, {c['records_before']} records to {c['records_after']}, "
        f"{c['tombstones_removed']} tombstones removed, longest {c['max_duration_ms']} ms"
    )


def incomplete_lines(summary: Summary) -> list[str]:
    return [
        f"{p['topic']}-{p['partition']}: {p['unknown']} unknown (offsets {p['first_offset']}..{p['last_offset']}): "
        f"{p['reason']}"
        for p in summary["final_read"]["incomplete_partitions"]
    ]


def malformed_lines(summary: Summary) -> list[str]:
    lines = []
    for entry in summary["malformed_lines"]["files"]:
        first = ", ".join(f"line {m['line']} ({m['problem']})" for m in entry["first"])
        lines.append(f"{entry['file']}: {entry['lines']} malformed lines skipped" + (f": {first}" if first else ""))
    return lines


def summary_lines(summary: Summary) -> list[str]:
    """What `minikafka analyze` prints: each invariant, the final read, skipped lines, failover and the verdict."""
    lines = [f"{v['verdict'].upper():5} {v['name']:<28} violations {v['violations']}" for v in summary["invariants"]]
    lines.append(f"final read: {final_read_line(summary)}")
    lines += [f"  incomplete: {line}" for line in incomplete_lines(summary)]
    lines += [f"compaction: {line}" for line in [compaction_line(summary)] if line]
    lines += [f"skipped: {line}" for line in malformed_lines(summary)]
    lines.append(f"failover: {_failover_line(summary)}")
    lines += [f"controller quorum: {line}" for line in kraft_lines(summary)]
    lines += [f"ACL denied: {line}" for line in denial_lines(summary)]
    lines.append(f"analysis took {_cell(summary['analysis_seconds'])} s")
    lines.append(f"report: {summary.get('report', 'n/a')}")
    lines.append(f"verdict: {verdict_title(summary)}")
    return lines


def _invariant_rows(summary: Summary) -> list[list[str]]:
    return [
        [v["name"], v["verdict"].upper(), str(v["violations"]), _cell(v["checked"]), v["description"]]
        for v in summary["invariants"]
    ]


def _failover_line(summary: Summary) -> str:
    f = summary["failover"]
    if not f["leader_losses"]:
        return "no partition leader was lost to a fault, so there was no failover to time"
    return f"{f['leader_losses']} partition leaders lost to faults; " + "; ".join(
        _timed(what, f[f"{key}_p50"], f[f"{key}_max"], missing)
        for what, key, missing in (
            ("new leader committed", "new_leader_ms", "no new leader was committed after any of them"),
            ("first acknowledged write", "first_ack_ms", "no write to those partitions was acknowledged after them"),
        )
    )


def _timed(what: str, p50: float | None, maximum: float | None, missing: str) -> str:
    """`what p50 X ms (max Y)`, or what happened instead when nothing was timed (no n/a with a unit)."""
    return missing if p50 is None else f"{what} p50 {_cell(p50)} ms (max {_cell(maximum)})"


DENIALS_TITLE = "ACL denials (authorization_failed, per principal)"


def _denial_table_rows(summary: Summary) -> list[list[str]]:
    """Each denial with its nodes joined (the summary holds them as a list)."""
    rows = [{**row, "nodes": ", ".join(row["nodes"])} for row in denial_rows(summary)]
    return _table_rows(rows, DENIAL_COLUMNS)


def _md_table(header: tuple[str, ...] | list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _table_rows(records: list[dict[str, Any]], columns: tuple[str, ...]) -> list[list[str]]:
    return [[_cell(record.get(column)) for column in columns] for record in records]


# Shaded / marked on the timeline figure, and listed: (title, summary key, columns).
_TIMELINE_TABLES = (
    ("Network cuts (cut to heal)", "network_cuts", CUT_COLUMNS),
    ("Incidents: storage, replica sets, unclean elections", "incidents", INCIDENT_COLUMNS),
    ("Corrupt batches on disk after the run (CRC mismatch)", "corrupt_batches", CORRUPT_COLUMNS),
)


def render_markdown(summary: Summary) -> str:
    lines = [f"# minikafka run report: {verdict_title(summary)}", "", f"Run directory: `{summary['run_dir']}`", ""]
    lines += ["## Final read", "", final_read_line(summary), ""]
    lines += [f"- {line}" for line in incomplete_lines(summary)]
    lines += ["", f"Compaction: {line}", ""] if (line := compaction_line(summary)) else []
    if summary["malformed_lines"]["files"]:
        lines += ["", "## Malformed lines (skipped)", ""] + [f"- {line}" for line in malformed_lines(summary)]
    lines += ["", "## Invariants", ""]
    lines += _md_table(["invariant", "verdict", "violations", "checked", "what it means"], _invariant_rows(summary))
    lines += ["", "## Failover", "", _failover_line(summary), ""]
    lines += [f"Controller quorum: {line}" for line in kraft_lines(summary)] + [""] * bool(kraft_lines(summary))
    lines += _md_table(FAILOVER_COLUMNS, _table_rows(summary["failover"]["brokers"], FAILOVER_COLUMNS))
    if summary["failover"]["controllers"]:
        lines += ["", "KRaft leader lost:", ""]
        lines += _md_table(CONTROLLER_COLUMNS, _table_rows(summary["failover"]["controllers"], CONTROLLER_COLUMNS))
    lines += ["", "## Produce latency", ""]
    lines += _md_table(LATENCY_COLUMNS, _table_rows(summary["produce_latency"], LATENCY_COLUMNS))
    if summary["produce_errors"]:
        lines += [
            "",
            "Errors: "
            + ", ".join(f"{e['error']} {e['count']} ({e['definite']} definite)" for e in summary["produce_errors"]),
        ]
    for title, key, columns in _TIMELINE_TABLES:
        if summary.get(key):
            lines += ["", f"## {title}", ""] + _md_table(columns, _table_rows(summary[key], columns))
    if denial_rows(summary):
        lines += ["", f"## {DENIALS_TITLE}", ""] + _md_table(DENIAL_COLUMNS, _denial_table_rows(summary))
    lines += ["", "## Replica logs after the run", ""]
    lines += _md_table(REPLICA_COLUMNS, _table_rows(summary["replicas"], REPLICA_COLUMNS))
    lines += ["", "## Figures", ""]
    lines += [f"![{name}]({file})" for name, file in summary["figures"].items()]
    for v in summary["invariants"]:
        if v["offending_rows"]:
            lines += ["", f"## {v['name']}: offending rows (first {len(v['offending_rows'])} of {v['violations']})", ""]
            lines += [f"- `{json.dumps(row, default=str)}`" for row in v["offending_rows"]]
    lines += ["", f"Analysis took {_cell(summary['analysis_seconds'])} s.", ""]
    return "\n".join(lines)


def _html_table(header: tuple[str, ...] | list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for index, row in enumerate(rows):
        css = f' class="{classes[index]}"' if classes else ""
        body.append(f"<tr{css}>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render_html(summary: Summary) -> str:
    invariants = _invariant_rows(summary)
    details = [*incomplete_lines(summary), *malformed_lines(summary)]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>minikafka run report</title><style>",
        "body{font-family:sans-serif;margin:2em;max-width:1300px}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}tr.fail{background:#f8d7da}"
        "tr.warn{background:#fff3cd}tr.pass{background:#e8f5e9}img{max-width:100%;border:1px solid #ddd}"
        "pre{background:#f6f6f6;padding:6px;font-size:12px;overflow-x:auto}",
        "</style></head><body>",
        f"<h1>minikafka run report: {verdict_title(summary)}</h1>",
        f"<p>Run directory: <code>{html.escape(summary['run_dir'])}</code></p>",
        f"<h2>Final read</h2><p>{html.escape(final_read_line(summary))}</p>",
        "".join(f"<p>{html.escape(line)}</p>" for line in details),
        "<h2>Invariants</h2>",
        _html_table(
            ["invariant", "verdict", "violations", "checked", "what it means"],
            invariants,
            [v["verdict"] for v in summary["invariants"]],
        ),
    ]
    if "timeline" in summary["figures"]:
        parts.append(f"<h2>Timeline</h2><img src='{summary['figures']['timeline']}' alt='timeline'>")
    parts += [
        "<h2>Failover</h2>",
        f"<p>{html.escape(_failover_line(summary))}</p>",
        *(f"<p>Controller quorum: {html.escape(line)}</p>" for line in kraft_lines(summary)),
        _html_table(FAILOVER_COLUMNS, _table_rows(summary["failover"]["brokers"], FAILOVER_COLUMNS)),
    ]
    if summary["failover"]["controllers"]:
        parts.append(
            _html_table(CONTROLLER_COLUMNS, _table_rows(summary["failover"]["controllers"], CONTROLLER_COLUMNS))
        )
    if "failover" in summary["figures"]:
        parts.append(f"<img src='{summary['figures']['failover']}' alt='failover'>")
    parts += [
        "<h2>Clients</h2>",
        _html_table(LATENCY_COLUMNS, _table_rows(summary["produce_latency"], LATENCY_COLUMNS)),
    ]
    if summary["produce_errors"]:
        parts.append(
            _html_table(
                ("error", "count", "definite"), _table_rows(summary["produce_errors"], ("error", "count", "definite"))
            )
        )
    for name in ("latency", "throughput"):
        if name in summary["figures"]:
            parts.append(f"<img src='{summary['figures'][name]}' alt='{name}'>")
    for title, key, columns in _TIMELINE_TABLES:
        if summary.get(key):
            parts += [f"<h2>{title}</h2>", _html_table(columns, _table_rows(summary[key], columns))]
    if denial_rows(summary):
        parts += [f"<h2>{DENIALS_TITLE}</h2>", _html_table(DENIAL_COLUMNS, _denial_table_rows(summary))]
    parts += [
        "<h2>Replica logs after the run</h2>",
        _html_table(REPLICA_COLUMNS, _table_rows(summary["replicas"], REPLICA_COLUMNS)),
    ]
    for v in summary["invariants"]:
        if v["offending_rows"]:
            rows = "\n".join(json.dumps(row, default=str) for row in v["offending_rows"])
            parts.append(
                f"<h3>{html.escape(v['name'])}: offending rows (first {len(v['offending_rows'])} of "
                f"{v['violations']})</h3><pre>{html.escape(rows)}</pre>"
            )
    parts.append(f"<p>Analysis took {_cell(summary['analysis_seconds'])} s.</p></body></html>")
    return "\n".join(parts)
