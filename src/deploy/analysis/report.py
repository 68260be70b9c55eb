"""`minikafka analyze`: run every Spark job over a run directory and write the report.

Entry point for the CLI, `chaos` and `demo`: `analyze_run(run_dir, out_dir, master)` returns the summary dict
(also written to `<out>/summary.json`; `summary["passed"]` is false when an invariant failed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deploy.analysis.history_report import write_history_report


def analyze_run(run_dir: Path, out_dir: Path | None = None, master: str = "local[2]") -> dict[str, Any]:
    report = write_history_report(run_dir, out_dir, master)
    summary: dict[str, Any] = json.loads((report.parent / "summary.json").read_text())
    summary["report"] = str(report)
    return summary
