"""chaos --compacted-keys' pieces: the producers' keys, the quick count of latest values lost, the log's size on disk
and the cleaners' figures from their events."""

from __future__ import annotations

import json
from pathlib import Path

from minikafka.deploy.compacted_workload import (
    cleaner_totals,
    compaction_lines,
    latest_values_lost,
    log_bytes,
    record_key,
)
from minikafka.deploy.local_cluster import NodeSpec


def _sent(offset: int | None, key: str, value: str, error: str | None = None, partition: int = 0) -> dict:
    return {"topic": "t", "partition": partition, "offset": offset, "key": key, "value": value, "acks": "all",
            "error": error}  # fmt: skip


def _read(offset: int, key: str, value: str, partition: int = 0) -> dict:
    return {"topic": "t", "partition": partition, "offset": offset, "key": key, "value": value}


def _end(position: int, partition: int = 0) -> dict:
    return {"type": "read_end", "topic": "t", "partition": partition, "start_offset": 0, "position": position,
            "high_watermark": position, "reached": True}  # fmt: skip


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_record_keys_take_each_key_in_turn_from_the_producers_first() -> None:
    assert [record_key(i, 4, 0) for i in range(5)] == [b"key-0", b"key-1", b"key-2", b"key-3", b"key-0"]
    assert [record_key(i, 4, 2) for i in range(3)] == [b"key-2", b"key-3", b"key-0"]


def test_a_key_whose_older_value_is_read_instead_of_its_latest_is_lost(tmp_path: Path) -> None:
    history = _write(
        tmp_path / "produce-p0.jsonl",
        [_sent(0, "a", "v0"), _sent(1, "b", "v1"), _sent(2, "a", "v2"), _sent(3, "b", "v3"), _sent(None, "c", "", "E")],
    )
    kept = _write(tmp_path / "kept.jsonl", [_read(2, "a", "v2"), _read(3, "b", "v3"), _end(4)])
    counts = latest_values_lost([history], kept)
    assert (counts.keys, counts.lost_latest) == (2, 0)
    assert counts.written_bytes == len("av0bv1av2bv3")
    resurrected = _write(tmp_path / "old.jsonl", [_read(0, "a", "v0"), _read(3, "b", "v3"), _end(4)])
    assert latest_values_lost([history], resurrected).lost_latest == 1
    missing = _write(tmp_path / "missing.jsonl", [_read(2, "a", "v2"), _end(4)])
    assert latest_values_lost([history], missing).lost_latest == 1
    other_value = _write(tmp_path / "other.jsonl", [_read(2, "a", "zz"), _read(3, "b", "v3"), _end(4)])
    assert latest_values_lost([history], other_value).lost_latest == 1


def test_a_later_unacknowledged_write_of_the_key_or_an_unreached_offset_is_not_a_loss(tmp_path: Path) -> None:
    history = _write(tmp_path / "produce-p0.jsonl", [_sent(0, "a", "v0"), _sent(5, "b", "v5")])
    read = _write(tmp_path / "read.jsonl", [_read(4, "a", "late"), _end(5)])  # offset 5 of b: not reached
    counts = latest_values_lost([history], read)
    assert (counts.lost_latest, counts.unread_latest) == (0, 1)


def test_log_bytes_sum_the_topics_segments_over_every_replica(tmp_path: Path) -> None:
    brokers = [NodeSpec(node_id, "broker", "127.0.0.1", 0, tmp_path) for node_id in (1, 2)]
    for broker, sizes in zip(brokers, ([10, 20], [5]), strict=True):
        replica = broker.data_dir / "chaos-0"
        replica.mkdir(parents=True)
        for n, size in enumerate(sizes):
            (replica / f"{n:020d}.log").write_bytes(b"x" * size)
        (replica / f"{0:020d}.index").write_bytes(b"i" * 100)
    (brokers[0].data_dir / "chaos-txn-0").mkdir()
    (brokers[0].data_dir / "chaos-txn-0" / f"{0:020d}.log").write_bytes(b"y" * 1000)
    assert log_bytes(brokers, "chaos") == (35, 2)


def test_cleaner_totals_sum_the_topics_log_cleaned_events(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    events = tmp_path / "logs" / "broker-1.jsonl"
    lines = [
        json.dumps({"event": "log_cleaned", "partition": "chaos-0", "bytes_before": 100, "bytes_after": 40}),
        json.dumps({"event": "log_cleaned", "partition": "chaos-txn-1", "bytes_before": 7, "bytes_after": 1}),
        json.dumps({"event": "log_cleaned", "partition": "chaos-2", "bytes_before": 50, "bytes_after": 10}),
        '{"event": "log_cleaned", "partition": "chaos-1", "bytes_be',  # cut by a kill
    ]
    events.write_text("\n".join(lines) + "\n")
    assert cleaner_totals(tmp_path, "chaos") == (2, 150, 50)


def test_compaction_lines_show_the_log_against_what_was_written() -> None:
    counts = {"keys": 3, "lost_latest": 0, "unread_latest": 0, "written_bytes": 900, "log_bytes": 300, "replicas": 3,
              "cleanings": 2, "cleaned_bytes_before": 1000, "cleaned_bytes_after": 200}  # fmt: skip
    text = compaction_lines(counts)
    assert "3 keys, 0 latest acknowledged values not read back, 0 beyond where the final read" in text
    assert "2 log_cleaned, 1000 bytes cleaned down to 200" in text
    assert "300 bytes on disk over 3 replicas (100 each on average) for 900 bytes" in text
