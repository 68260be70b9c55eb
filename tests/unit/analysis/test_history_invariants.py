"""Each history invariant passes on a clean history and fails, with the offending row, on a bad one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minikafka.deploy.analysis import history_invariants as inv
from minikafka.deploy.analysis.history import load_consumed, load_produced
from minikafka.deploy.analysis.verdict import verdict_from

pytestmark = pytest.mark.spark


def produced_line(
    offset: int | None, value: str, error: str | None = None, acks: str = "all", partition: int = 0
) -> dict:
    return {
        "ts": "2026-11-22T18:30:00.000001Z",
        "topic": "t",
        "partition": partition,
        "offset": offset,
        "value": value,
        "acks": acks,
        "error": error,
        "latency_ms": 1.5,
    }


def consumed_line(offset: int, value: str, partition: int = 0) -> dict:
    return {"topic": "t", "partition": partition, "offset": offset, "key": None, "value": value, "leader_epoch": 1}


def write_run(tmp_path: Path, produced: list[dict], consumed: list[dict]) -> Path:
    history = tmp_path / "history"
    history.mkdir(parents=True)
    (history / "produce-0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in produced))
    (history / "consume-final.jsonl").write_text("".join(json.dumps(x) + "\n" for x in consumed))
    return tmp_path


GOOD_PRODUCED = [
    produced_line(0, "a"),
    produced_line(1, "b"),
    produced_line(None, "c", "NOT_ENOUGH_REPLICAS"),
    produced_line(None, "d", "REQUEST_TIMED_OUT"),
    produced_line(2, "e"),
]
GOOD_CONSUMED = [consumed_line(0, "a"), consumed_line(1, "b"), consumed_line(2, "e"), consumed_line(3, "d")]


def frames(spark, run: Path):  # noqa: ANN001, ANN202
    return load_produced(spark, run), load_consumed(spark, run)


def test_clean_history_passes_every_check(spark, tmp_path: Path) -> None:  # noqa: ANN001
    produced, consumed = frames(spark, write_run(tmp_path, GOOD_PRODUCED, GOOD_CONSUMED))
    assert inv.lost_writes(produced, consumed).count() == 0
    assert inv.inconsistent_offsets(produced, consumed).count() == 0
    assert inv.duplicates(consumed).count() == 0
    assert inv.aborted_reads(produced, consumed).count() == 0
    assert inv.nonmonotonic_polls(consumed).count() == 0


def test_lost_write_is_found(spark, tmp_path: Path) -> None:  # noqa: ANN001
    consumed = [c for c in GOOD_CONSUMED if c["value"] != "b"]
    produced_df, consumed_df = frames(spark, write_run(tmp_path, GOOD_PRODUCED, consumed))
    verdict = verdict_from("NoCommittedRecordLost", "", inv.lost_writes(produced_df, consumed_df))
    assert not verdict.passed
    assert [(r["offset"], r["acked_value"]) for r in verdict.rows] == [(1, "b")]


def test_lost_write_when_offset_holds_another_value(spark, tmp_path: Path) -> None:  # noqa: ANN001
    consumed = [consumed_line(0, "a"), consumed_line(1, "z"), consumed_line(2, "e")]
    produced_df, consumed_df = frames(spark, write_run(tmp_path, GOOD_PRODUCED, consumed))
    rows = inv.lost_writes(produced_df, consumed_df).collect()
    assert [(r["offset"], r["acked_value"], r["read_values"]) for r in rows] == [(1, "b", ["z"])]
    assert [r["offset"] for r in inv.inconsistent_offsets(produced_df, consumed_df).collect()] == [1]


def test_duplicate_value_is_found(spark, tmp_path: Path) -> None:  # noqa: ANN001
    consumed = [*GOOD_CONSUMED, consumed_line(4, "d")]
    _, consumed_df = frames(spark, write_run(tmp_path, GOOD_PRODUCED, consumed))
    rows = inv.duplicates(consumed_df).collect()
    assert [r["value"] for r in rows] == ["d"]


def test_a_duplicate_of_an_idempotent_producer_fails_and_of_another_is_an_anomaly(spark, tmp_path: Path) -> None:  # noqa: ANN001
    produced = [{**line, "idempotent": line["value"] == "a"} for line in GOOD_PRODUCED]
    consumed = [*GOOD_CONSUMED, consumed_line(4, "a"), consumed_line(5, "b")]
    produced_df, consumed_df = frames(spark, write_run(tmp_path, produced, consumed))
    rows = inv.duplicates(consumed_df, produced_df).collect()
    assert [(r["value"], r["idempotent"]) for r in rows] == [("a", True), ("b", False)]
    from minikafka.deploy.analysis.report import history_checks

    checks = {c.name: c for c in history_checks(produced_df, consumed_df, inv.lost_writes(produced_df, consumed_df), 3)}
    assert [r["value"] for r in checks["Duplicates"].offending.collect()] == ["a"]
    assert checks["Duplicates"].severity == "invariant"
    assert [r["value"] for r in checks["DuplicatesWithoutIdempotence"].offending.collect()] == ["b"]
    assert checks["DuplicatesWithoutIdempotence"].severity == "anomaly"


def test_aborted_read_is_found(spark, tmp_path: Path) -> None:  # noqa: ANN001
    consumed = [*GOOD_CONSUMED, consumed_line(4, "c")]
    produced_df, consumed_df = frames(spark, write_run(tmp_path, GOOD_PRODUCED, consumed))
    rows = inv.aborted_reads(produced_df, consumed_df).collect()
    assert [(r["value"], r["error"], r["offset"]) for r in rows] == [("c", "NOT_ENOUGH_REPLICAS", 4)]


def test_nonmonotonic_poll_is_found(spark, tmp_path: Path) -> None:  # noqa: ANN001
    consumed = [consumed_line(0, "a"), consumed_line(2, "e"), consumed_line(1, "b")]
    _, consumed_df = frames(spark, write_run(tmp_path, GOOD_PRODUCED, consumed))
    rows = inv.nonmonotonic_polls(consumed_df).collect()
    assert [(r["previous_offset"], r["offset"]) for r in rows] == [(2, 1)]
