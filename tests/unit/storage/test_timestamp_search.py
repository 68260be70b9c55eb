"""ListOffsets by timestamp in storage: the first record whose timestamp reaches the target, and MAX_TIMESTAMP."""

from __future__ import annotations

import struct
from pathlib import Path

from minikafka.common.record_batch import TIMESTAMP_TYPE_FLAG, Record, build_batch, crc32c, read_header
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.timestamp_search import TimestampAndOffset, search, search_batch

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


def batch(timestamps: list[int], base_offset: int = 0, epoch: int = 3, attributes: int = 0):
    records = [Record(b"v%d" % i, timestamp_ms=ts) for i, ts in enumerate(timestamps)]
    return read_header(build_batch(records, base_offset, epoch, attributes=attributes))


def test_first_record_reaching_the_target_not_the_first_batch_start() -> None:
    batches = [batch([10, 20], 0), batch([30, 25, 40], 2, epoch=4)]
    assert search(batches, 21, 0) == TimestampAndOffset(30, 2, 4)
    assert search(batches, 26, 0) == TimestampAndOffset(30, 2, 4)  # offset order, not the closest timestamp
    assert search(batches, 35, 0) == TimestampAndOffset(40, 4, 4)
    assert search(batches, 20, 0) == TimestampAndOffset(20, 1, 3)
    assert search(batches, 0, 0) == TimestampAndOffset(10, 0, 3)


def test_nothing_at_or_after_the_target_is_none() -> None:
    assert search([batch([10, 20], 0)], 21, 0) is None
    assert search([], 0, 0) is None


def test_records_below_the_starting_offset_are_skipped() -> None:
    assert search_batch(batch([50, 10, 60], 0), 40, starting_offset=1) == TimestampAndOffset(60, 2, 3)


def test_log_append_time_gives_every_record_the_batch_max_timestamp() -> None:
    stamped = batch([5, 7], 0, attributes=TIMESTAMP_TYPE_FLAG)
    assert search_batch(stamped, 6, 0) == TimestampAndOffset(7, 0, 3)


def test_a_batch_without_a_leader_epoch_answers_minus_one() -> None:
    assert search_batch(batch([5], 0, epoch=-1), 0, 0) == TimestampAndOffset(5, 0, -1)


def fill(log: PartitionLog, timestamps: list[list[int]], epoch: int = 2) -> None:
    for i, stamps in enumerate(timestamps):
        records = [Record(b"value-%d-%d" % (i, j), timestamp_ms=ts) for j, ts in enumerate(stamps)]
        log.append_as_leader(build_batch(records), epoch, now_ms=i)


def test_partition_log_searches_across_segments(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "topic-0", SMALL, 0, None)
    fill(log, [[100 + 10 * i, 105 + 10 * i] for i in range(20)])  # offsets 2i, 2i+1
    assert len(log.segments) > 2
    assert log.offset_for_timestamp(0) == TimestampAndOffset(100, 0, 2)
    assert log.offset_for_timestamp(151) == TimestampAndOffset(155, 11, 2)
    assert log.offset_for_timestamp(290) == TimestampAndOffset(290, 38, 2)
    assert log.offset_for_timestamp(296) is None


def test_partition_log_ignores_records_before_the_log_start(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "topic-0", SMALL, 0, None)
    fill(log, [[100, 200, 300]])
    log.log_start_offset = 1  # as after DeleteRecords inside the batch
    assert log.offset_for_timestamp(0) == TimestampAndOffset(200, 1, 2)


def test_max_timestamp_is_the_first_record_holding_the_largest_timestamp(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "topic-0", SMALL, 0, None)
    assert log.max_timestamp_offset() is None
    fill(log, [[10, 90], [50, 90, 20], [30]])
    assert log.max_timestamp_offset() == TimestampAndOffset(90, 1, 2)


def test_a_producers_claimed_max_timestamp_does_not_hide_the_largest_record(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "topic-0", SMALL, 0, None)
    fill(log, [[10, 90]])
    claims_2200 = bytearray(build_batch([Record(b"v", timestamp_ms=50), Record(b"w", timestamp_ms=70)]))
    struct.pack_into(">q", claims_2200, 35, 7_258_118_400_000)  # the header's max timestamp
    struct.pack_into(">I", claims_2200, 17, crc32c(bytes(claims_2200[21:])))
    log.append_as_leader(bytes(claims_2200), 2, now_ms=1)
    assert log.max_timestamp_offset() == TimestampAndOffset(90, 1, 2)
    assert [read_header(log.read(2, 1 << 20)).max_timestamp] == [70]


def test_lookup_survives_a_reopen(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "topic-0", SMALL, 0, None)
    fill(log, [[100 + 10 * i] for i in range(30)])
    log.close()
    reopened = PartitionLog.open(tmp_path / "topic-0", SMALL, 0, None)
    assert reopened.offset_for_timestamp(155) == TimestampAndOffset(160, 6, 2)
    assert reopened.max_timestamp_offset() == TimestampAndOffset(390, 29, 2)
