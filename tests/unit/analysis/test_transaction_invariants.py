"""Each transactional invariant passes on a clean history and fails, with the offending row, on one violation:
AbortedRead under read_committed, TornTransaction, LastStableOffsetMonotonic, and NoCommittedRecordLost for a
committed transaction's records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minikafka.deploy.analysis import history_invariants as inv
from minikafka.deploy.analysis import transaction_invariants as txn
from minikafka.deploy.analysis.events import load_events
from minikafka.deploy.analysis.history import consumed_records, load_produced, read_consume_files, read_ends

pytestmark = pytest.mark.spark

TOPIC = "chaos-txn"


def txn_line(transaction: int, partition: int, offset: int, end: str, acknowledged: bool = True) -> dict:
    return {
        "ts": "2026-11-28T13:30:00.000001Z",
        "topic": TOPIC,
        "partition": partition,
        "offset": offset,
        "value": f"t0-{transaction}-{partition}-{offset}",
        "acks": "all",
        "error": None,
        "latency_ms": 2.0,
        "idempotent": True,
        "transactional_id": "chaos-txn-0",
        "transaction": transaction,
        "transaction_end": end,
        "end_acknowledged": acknowledged,
    }


def read_line(produced: dict) -> dict:
    return {k: produced[k] for k in ("topic", "partition", "offset", "value")} | {"key": None, "leader_epoch": 0}


def read_end(partition: int, position: int, isolation: str = "read_committed") -> dict:
    return {
        "type": "read_end",
        "topic": TOPIC,
        "partition": partition,
        "start_offset": 0,
        "position": position,
        "high_watermark": position,
        "reached": True,
        "error": None,
        "log_end": position,
        "isolation_level": isolation,
    }


# Transaction 0 committed over partitions 0 and 1 (offsets 0-1 each, markers at 2); transaction 1 aborted (3-4,
# markers at 5); transaction 2's commit was sent and not acknowledged (6-7).
PRODUCED = [
    *(txn_line(0, p, o, "commit") for p in (0, 1) for o in (0, 1)),
    *(txn_line(1, p, o, "abort") for p in (0, 1) for o in (3, 4)),
    *(txn_line(2, p, o, "commit", acknowledged=False) for p in (0, 1) for o in (6, 7)),
]
COMMITTED_READ = [read_line(line) for line in PRODUCED if line["transaction"] in (0, 2)]
ENDS = [read_end(0, 9), read_end(1, 9)]


def write_run(tmp_path: Path, consumed: list[dict], produced: list[dict] = PRODUCED) -> Path:
    history = tmp_path / "history"
    history.mkdir(parents=True)
    (history / "produce-txn-t0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in produced))
    (history / "consume-txn-final.jsonl").write_text("".join(json.dumps(x) + "\n" for x in consumed))
    return tmp_path


def frames(spark, run: Path):  # noqa: ANN001, ANN202
    lines = read_consume_files(spark, run).rows
    return load_produced(spark, run), consumed_records(lines), read_ends(lines)


def test_a_clean_transactional_history_passes(spark, tmp_path: Path) -> None:  # noqa: ANN001
    produced, consumed, ends = frames(spark, write_run(tmp_path, COMMITTED_READ + ENDS))
    assert txn.aborted_transaction_reads(produced, consumed, ends).count() == 0
    assert txn.aborted_records_checked(produced, ends).count() == 4
    reads = txn.commit_transaction_reads(produced, consumed, ends)
    assert txn.torn_transactions(reads).count() == 0
    assert sorted((r["transaction"], r["read"], r["covered"]) for r in reads.collect()) == [(0, 4, 4), (2, 4, 4)]


def test_an_aborted_transaction_read_committed_is_found(spark, tmp_path: Path) -> None:  # noqa: ANN001
    leaked = read_line(txn_line(1, 1, 4, "abort"))
    produced, consumed, ends = frames(spark, write_run(tmp_path, [*COMMITTED_READ, leaked, *ENDS]))
    rows = txn.aborted_transaction_reads(produced, consumed, ends).collect()
    assert [(r["partition"], r["offset"], r["error"]) for r in rows] == [
        (1, 4, "read_committed read a record of aborted transaction chaos-txn-0#1")
    ]


def test_an_aborted_transaction_read_uncommitted_is_allowed(spark, tmp_path: Path) -> None:  # noqa: ANN001
    everything = [read_line(line) for line in PRODUCED]
    uncommitted = [read_end(0, 9, "read_uncommitted"), read_end(1, 9, "read_uncommitted")]
    produced, consumed, ends = frames(spark, write_run(tmp_path, everything + uncommitted))
    assert txn.aborted_transaction_reads(produced, consumed, ends).count() == 0


def test_a_committed_transaction_read_in_part_is_torn(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # Partition 1's records of transaction 0 are missing though the read went through them.
    consumed = [c for c in COMMITTED_READ if not (c["partition"] == 1 and c["offset"] < 2)]
    produced, consumed_df, ends = frames(spark, write_run(tmp_path, consumed + ENDS))
    rows = txn.torn_transactions(txn.commit_transaction_reads(produced, consumed_df, ends)).collect()
    assert [(r["transaction"], r["read"], [(m["partition"], m["offset"]) for m in r["missing"]]) for r in rows] == [
        (0, 2, [(1, 0), (1, 1)])
    ]


def test_an_unacknowledged_commit_read_in_part_is_torn_and_read_not_at_all_is_not(spark, tmp_path: Path) -> None:  # noqa: ANN001
    torn = [c for c in COMMITTED_READ if not (c["partition"] == 0 and c["offset"] == 7)]
    produced, consumed, ends = frames(spark, write_run(tmp_path / "torn", torn + ENDS))
    rows = txn.torn_transactions(txn.commit_transaction_reads(produced, consumed, ends)).collect()
    assert [(r["transaction"], r["end_acknowledged"]) for r in rows] == [(2, False)]
    none_read = [c for c in COMMITTED_READ if c["offset"] < 6]  # it may have been aborted: nothing, fine
    produced, consumed, ends = frames(spark, write_run(tmp_path / "none", none_read + ENDS))
    assert txn.torn_transactions(txn.commit_transaction_reads(produced, consumed, ends)).count() == 0


def test_a_read_that_stopped_short_covers_only_what_it_went_through(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # The read of partition 1 stopped at offset 1 (not reached): offset 1 is unknown there, not missing.
    consumed = [c for c in COMMITTED_READ if c["partition"] == 0 or c["offset"] == 0]
    short = {**read_end(1, 1), "high_watermark": 9, "reached": False, "log_end": None}
    produced, consumed_df, ends = frames(spark, write_run(tmp_path, [*consumed, read_end(0, 9), short]))
    reads = txn.commit_transaction_reads(produced, consumed_df, ends)
    assert txn.torn_transactions(reads).count() == 0
    assert sorted((r["transaction"], r["read"], r["covered"]) for r in reads.collect()) == [(0, 3, 3), (2, 2, 2)]


def test_a_committed_transaction_lost_is_a_lost_write_and_other_transactions_are_not(spark, tmp_path: Path) -> None:  # noqa: ANN001
    consumed = [c for c in COMMITTED_READ if c["offset"] == 0]  # transaction 2 not read
    produced, consumed_df, _ = frames(spark, write_run(tmp_path, consumed + ENDS))
    lost = inv.lost_writes(produced, consumed_df).collect()
    assert [(r["partition"], r["offset"]) for r in lost] == [(0, 1), (1, 1)]  # aborted and undecided: no promise


def hwm_event(at: int, high_watermark: int, last_stable_offset: int, leader_epoch: int = 3) -> dict:
    return {
        "ts": f"2026-11-28T13:30:{at:02d}.000000Z",
        "node": "broker-1",
        "level": "info",
        "event": "high_watermark_advanced",
        "partition": f"{TOPIC}-0",
        "high_watermark": high_watermark,
        "leader_epoch": leader_epoch,
        "log_end_offset": high_watermark,
        "last_stable_offset": last_stable_offset,
    }


def lso_rows(spark, tmp_path: Path, events: list[dict]) -> list:  # noqa: ANN001
    logs = tmp_path / "logs"
    logs.mkdir(parents=True)
    start = {"ts": "2026-11-28T13:29:59.000000Z", "node": "broker-1", "level": "info", "event": "broker_starting"}
    (logs / "broker-1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in [start, *events]))
    return txn.last_stable_offset_monotonic(load_events(spark, tmp_path)).collect()


def test_a_last_stable_offset_going_back_is_found(spark, tmp_path: Path) -> None:  # noqa: ANN001
    steady = [hwm_event(1, 10, 4), hwm_event(2, 20, 20), hwm_event(3, 30, 20)]
    assert lso_rows(spark, tmp_path / "steady", steady) == []
    # A new leader epoch starts again from its own LSO: only within one epoch must it not go back.
    assert lso_rows(spark, tmp_path / "new-epoch", [*steady, hwm_event(4, 31, 15, leader_epoch=4)]) == []
    rows = lso_rows(spark, tmp_path / "back", [*steady, hwm_event(4, 40, 12)])
    assert [(r["previous_last_stable_offset"], r["last_stable_offset"], r["problem"]) for r in rows] == [
        (20, 12, "went back")
    ]


def test_a_last_stable_offset_above_the_high_watermark_is_found(spark, tmp_path: Path) -> None:  # noqa: ANN001
    rows = lso_rows(spark, tmp_path, [hwm_event(1, 10, 4), hwm_event(2, 20, 21)])
    assert [(r["high_watermark"], r["last_stable_offset"], r["problem"]) for r in rows] == [
        (20, 21, "above the high watermark")
    ]
