"""A well-formed history line with a 64 MiB value (the largest record `produce --record-size` makes) is read and
checked like any other; a line beyond what the analysis reads is skipped with its reason named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_fixtures import clean_run

from minikafka.deploy.analysis.history import PRODUCE_SHAPE
from minikafka.deploy.analysis.malformed import MAX_STRING_CHARS, line_problem
from minikafka.deploy.analysis.report import analyze

BIG = 64 * 1024 * 1024
pytestmark = pytest.mark.spark


def _with_value(path: Path, offset: int, value: str) -> None:
    """Give the line of `offset` another value (the produced and the consumed line alike)."""
    lines = []
    for text in path.read_text().splitlines():
        document = json.loads(text)
        if document.get("offset") == offset and "value" in document:
            document["value"] = value
        lines.append(json.dumps(document))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.timeout(900)  # parsing and digesting 128 MiB of JSON on a shared 2-core machine
def test_a_64_mib_value_is_read_and_checked(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run_dir = clean_run().write(tmp_path / "run")
    for name in ("produce-0.jsonl", "consume-final.jsonl"):
        _with_value(run_dir / "history" / name, 3, "x" * BIG)
    out = tmp_path / "report"
    out.mkdir()
    summary = analyze(spark, run_dir, out)
    assert summary["malformed_lines"]["lines"] == 0, summary["malformed_lines"]
    assert summary["verdict"] == "pass", [v for v in summary["invariants"] if v["verdict"] != "pass"]
    assert summary["produce_latency"][0]["acknowledged"] == 6


def test_a_string_beyond_what_the_analysis_reads_is_named() -> None:
    too_long = "x" * (MAX_STRING_CHARS + 1)
    line = json.dumps({"ts": "2026-11-22T18:00:09Z", "topic": "t", "acks": "all", "value": too_long})
    assert line_problem(line, PRODUCE_SHAPE) == (
        f"'value' is a string of {MAX_STRING_CHARS + 1} characters, above the {MAX_STRING_CHARS} the analysis reads"
    )
