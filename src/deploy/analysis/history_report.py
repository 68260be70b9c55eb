"""The history part of `minikafka analyze`: every client-history invariant's verdict, as JSON and Markdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deploy.analysis import history_invariants as inv
from deploy.analysis.history import load_consumed, load_produced
from deploy.analysis.spark import spark_session
from deploy.analysis.verdict import Verdict, verdict_from


def history_verdicts(spark: Any, run_dir: Path) -> list[Verdict]:
    produced = load_produced(spark, run_dir).cache()
    consumed = load_consumed(spark, run_dir).cache()
    acked = inv.acknowledged(produced).count()
    return [
        verdict_from(
            "NoCommittedRecordLost",
            "every acks=all acknowledged record is read back at its offset with its value (lost-write)",
            inv.lost_writes(produced, consumed),
            checked=acked,
        ),
        verdict_from("InconsistentOffsets", "no offset holds two values", inv.inconsistent_offsets(produced, consumed)),
        verdict_from("AbortedRead", "no definitely failed send is ever read", inv.aborted_reads(produced, consumed)),
        verdict_from(
            "NonmonotonicPoll",
            "each consumer reads a partition's offsets in increasing order",
            inv.nonmonotonic_polls(consumed),
        ),
        verdict_from(
            "Duplicates",
            "no value at two offsets (allowed without idempotence: a retried send)",
            inv.duplicates(consumed),
            severity="anomaly",
        ),
    ]


def write_history_report(run_dir: Path, out_dir: Path | None = None, master: str = "local[2]") -> Path:
    """Run the checks and write summary.json and report.md under RUN/report (or `out_dir`); returns report.md."""
    out = out_dir or run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    spark = spark_session(master)
    try:
        verdicts = history_verdicts(spark, run_dir)
    finally:
        spark.stop()
    summary = {
        "run_dir": str(run_dir),
        "passed": all(v.passed or v.severity != "invariant" for v in verdicts),
        "invariants": [v.to_json() for v in verdicts],
        "not_checked_yet": "event-log invariants (ISR, epochs, HWM, Raft leaders, log matching): issue #7",
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    lines = [
        f"# minikafka run report: {run_dir.name}",
        "",
        "| invariant | verdict | violations | checked |",
        "|---|---|---|---|",
    ]
    for verdict in summary["invariants"]:
        lines.append(
            f"| {verdict['name']} | {verdict['verdict']} | {verdict['violations']} | "
            f"{verdict['checked'] if verdict['checked'] is not None else ''} |"
        )
    for verdict in summary["invariants"]:
        if verdict["offending_rows"]:
            lines += ["", f"## {verdict['name']}: offending rows (first {len(verdict['offending_rows'])})", ""]
            lines += [f"- `{json.dumps(row, default=str)}`" for row in verdict["offending_rows"]]
    lines += ["", f"Not checked yet: {summary['not_checked_yet']}.", ""]
    (out / "report.md").write_text("\n".join(lines))
    return out / "report.md"
