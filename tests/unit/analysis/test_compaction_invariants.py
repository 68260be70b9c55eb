"""CompactedLatestValueKept: a compacted history whose final read holds every key's latest acknowledged value passes
(the replaced records are not lost writes); doctored ones that lost a latest value, or brought a deleted key back,
fail with the offending key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from minikafka.deploy.analysis import compaction
from minikafka.deploy.analysis import history_invariants as inv
from minikafka.deploy.analysis.events import load_events
from minikafka.deploy.analysis.history import consumed_records, load_produced, read_consume_files, read_ends

pytestmark = pytest.mark.spark

TS = "2026-11-28T10:00:00.000001Z"


def produced(offset: int, key: str, value: str) -> dict:
    return {
        "ts": TS,
        "topic": "c",
        "partition": 0,
        "offset": offset,
        "key": key,
        "value": value,
        "acks": "all",
        "error": None,
        "latency_ms": 1.0,
    }


def consumed(offset: int, key: str, value: str | None) -> dict:
    return {"topic": "c", "partition": 0, "offset": offset, "key": key, "value": value, "leader_epoch": 1}


def read_end(position: int) -> dict:
    return {
        "type": "read_end",
        "topic": "c",
        "partition": 0,
        "start_offset": 0,
        "position": position,
        "high_watermark": position,
        "reached": True,
        "error": None,
    }


PRODUCED = [produced(0, "a", "a1"), produced(1, "b", "b1"), produced(2, "a", "a2"), produced(3, "b", "b2")]
# The cleaner removed offsets 0 and 1 (replaced by 2 and 3).
COMPACTED_READ = [consumed(2, "a", "a2"), consumed(3, "b", "b2"), read_end(4)]
CLEANED_EVENT = {"ts": TS, "node": "broker-1", "level": "info", "event": "log_cleaned", "partition": "c-0"}


def write_run(tmp_path: Path, reads: dict[str, list[dict]], produce: list[dict] = PRODUCED) -> Path:
    (tmp_path / "history").mkdir(parents=True)
    (tmp_path / "logs").mkdir()
    (tmp_path / "history" / "produce-0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in produce))
    for name, lines in reads.items():
        (tmp_path / "history" / f"consume-{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tmp_path / "logs" / "broker-1.jsonl").write_text(json.dumps(CLEANED_EVENT) + "\n")
    return tmp_path


def check(spark, run: Path) -> tuple[list[dict], int]:  # noqa: ANN001
    lines = read_consume_files(spark, run).rows
    compacted = compaction.compacted_topics(load_events(spark, run))
    found = compaction.latest_value_lost(
        load_produced(spark, run), consumed_records(lines), read_ends(lines), compacted
    )
    superseded = compaction.superseded(load_produced(spark, run), compacted, consumed_records(lines))
    return [row.asDict() for row in found.collect()], superseded.count()


def unreplaced_lost(spark, run: Path) -> int:  # noqa: ANN001
    """How many acknowledged writes NoCommittedRecordLost finds lost once the replaced ones are set aside."""
    produce, lines = load_produced(spark, run), read_consume_files(spark, run).rows
    replaced = compaction.superseded(
        produce, compaction.compacted_topics(load_events(spark, run)), consumed_records(lines)
    )
    may_be_lost = produce.join(replaced, ["topic", "partition", "offset"], "left_anti")
    return inv.lost_writes(may_be_lost, consumed_records(lines)).count()


def test_a_compacted_read_with_every_latest_value_passes_and_replaced_records_are_not_lost(spark, tmp_path) -> None:  # noqa: ANN001
    run = write_run(tmp_path, {"final": COMPACTED_READ})
    violations, superseded = check(spark, run)
    assert violations == [] and superseded == 2
    assert unreplaced_lost(spark, run) == 0
    produce, lines = load_produced(spark, run), read_consume_files(spark, run).rows
    assert inv.lost_writes(produce, consumed_records(lines)).count() == 2  # what the plain check would say


def test_a_doctored_final_read_missing_a_latest_value_fails(spark, tmp_path) -> None:  # noqa: ANN001
    # An earlier read saw everything; the final one lost key b's latest value (only its replaced one is left).
    early = [consumed(n, p["key"], p["value"]) for n, p in enumerate(PRODUCED)] + [read_end(4)]
    doctored = [consumed(1, "b", "b1"), consumed(2, "a", "a2"), read_end(5)]
    violations, _ = check(spark, write_run(tmp_path, {"early": early, "final": doctored}))
    assert [(v["key"], v["acked_offset"], v["read_offset"], v["read_value"]) for v in violations] == [("b", 3, 1, "b1")]


def test_a_deleted_key_may_vanish_but_not_come_back(spark, tmp_path) -> None:  # noqa: ANN001
    # Key a's latest record is a tombstone (a null value).
    with_tombstone = [*PRODUCED, {**produced(4, "a", "x"), "value": None}]
    vanished = [consumed(3, "b", "b2"), read_end(5)]
    run = write_run(tmp_path / "vanished", {"final": vanished}, with_tombstone)
    lines = read_consume_files(spark, run).rows
    produce = load_produced(spark, run)
    # The producer history cannot hold a null value (a required field): build the tombstone row directly.
    tombstone = produce.limit(1).withColumns(
        {"offset": F.lit(4).cast("long"), "value": F.lit(None).cast("string"), "key": F.lit("a")}
    )
    produce = produce.unionByName(tombstone)
    compacted = compaction.compacted_topics(load_events(spark, run))
    found = compaction.latest_value_lost(produce, consumed_records(lines), read_ends(lines), compacted)
    assert found.count() == 0  # a is gone entirely: allowed
    resurrected = spark.createDataFrame(
        # the replaced value of a back, its tombstone gone
        [
            ("c", 0, 2, "a", "a2", 1, None, None, None, "consume-final", 0),
            ("c", 0, 3, "b", "b2", 1, None, None, None, "consume-final", 1),
        ],
        consumed_records(lines).schema,
    )
    found = compaction.latest_value_lost(produce, resurrected, read_ends(lines), compacted)
    assert [(r["key"], r["read_value"]) for r in found.collect()] == [("a", "a2")]


def test_a_later_write_replaces_a_record_only_once_acknowledged_with_acks_all_or_read(spark, tmp_path) -> None:  # noqa: ANN001
    # a2, acknowledged by the leader alone, was truncated away; a cleaner that had removed a1 on its account lost it.
    produce = [produced(0, "a", "a1"), {**produced(1, "a", "a2"), "acks": "1"}]
    truncated = write_run(tmp_path / "truncated", {"final": [read_end(2)]}, produce)
    violations, superseded = check(spark, truncated)
    assert superseded == 0 and unreplaced_lost(spark, truncated) == 1
    assert [(v["key"], v["acked_offset"]) for v in violations] == [("a", 0)]
    # The same write read back was committed: a1 may be gone.
    kept = write_run(tmp_path / "kept", {"final": [consumed(1, "a", "a2"), read_end(2)]}, produce)
    assert check(spark, kept) == ([], 1) and unreplaced_lost(spark, kept) == 0


def test_a_tombstone_a_read_saw_keeps_its_key_deleted_whoever_wrote_it(spark, tmp_path) -> None:  # noqa: ANN001
    # A tombstone of a at offset 4 that no acks=all producer wrote (acks=1, say) was read: it was committed.
    early = [consumed(n, p["key"], p["value"]) for n, p in enumerate(PRODUCED)] + [consumed(4, "a", None), read_end(5)]
    back = write_run(
        tmp_path / "back", {"early": early, "final": [consumed(2, "a", "a2"), consumed(3, "b", "b2"), read_end(5)]}
    )
    violations, _ = check(spark, back)
    assert [(v["key"], v["acked_offset"], v["acked_value"], v["read_value"]) for v in violations] == [
        ("a", 4, None, "a2")
    ]
    # The key gone with its tombstone is fine.
    gone = write_run(tmp_path / "gone", {"early": early, "final": [consumed(3, "b", "b2"), read_end(5)]})
    assert check(spark, gone)[0] == []
