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


@pytest.fixture
def fresh_spark(_spark_sessions):  # noqa: ANN001, ANN201 - a new SparkSession on the worker's JVM
    """A new Spark context, as `minikafka analyze` starts with: the worker's shared one keeps what thousands of
    earlier jobs left in its status store, and a 64 MiB value, held as UTF-16 and more than once, needs most of the
    2 GiB heap (a run with the heaviest test modules first failed here with OutOfMemoryError)."""
    from minikafka.deploy.analysis.spark import spark_session

    for session in _spark_sessions:
        session.stop()
    _spark_sessions.clear()
    _spark_sessions.append(spark_session("local[2]", "minikafka-tests"))
    return _spark_sessions[0]


@pytest.mark.timeout(900)  # parsing and digesting 128 MiB of JSON on a shared 2-core machine
def test_a_64_mib_value_is_read_and_checked(fresh_spark, tmp_path: Path) -> None:  # noqa: ANN001
    run_dir = clean_run().write(tmp_path / "run")
    for name in ("produce-0.jsonl", "consume-final.jsonl"):
        _with_value(run_dir / "history" / name, 3, "x" * BIG)
    out = tmp_path / "report"
    out.mkdir()
    summary = analyze(fresh_spark, run_dir, out)
    assert summary["malformed_lines"]["lines"] == 0, summary["malformed_lines"]
    assert summary["verdict"] == "pass", [v for v in summary["invariants"] if v["verdict"] != "pass"]
    assert summary["produce_latency"][0]["acknowledged"] == 6


def test_a_string_beyond_what_the_analysis_reads_is_named() -> None:
    too_long = "x" * (MAX_STRING_CHARS + 1)
    line = json.dumps({"ts": "2026-11-22T18:00:09Z", "topic": "t", "acks": "all", "value": too_long})
    assert line_problem(line, PRODUCE_SHAPE) == (
        f"'value' is a string of {MAX_STRING_CHARS + 1} characters, above the {MAX_STRING_CHARS} the analysis reads"
    )
