"""PartitionLog: offsets, epochs, reads, rolls, truncation, retention, flush policy, checkpoints, recovery."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from storage_helpers import BAD_BATCHES, BAD_CASES, batch_of, values_read
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import (
    CorruptRecordError,
    Record,
    build_batch,
    iter_batches,
    set_base_offset,
    set_partition_leader_epoch,
)
from minikafka.storage.checkpoint import CheckpointError
from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.log_config import LogConfig
from minikafka.storage.offset_index import OffsetIndex
from minikafka.storage.partition_log import PartitionLog

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


def open_log(tmp_path: Path, config: LogConfig = SMALL, now_ms: int = 0, topic_id: str | None = None) -> PartitionLog:
    return PartitionLog.open(tmp_path / "topic-0", config, now_ms, topic_id)


def fill(log: PartitionLog, batches: int, epoch: int = 1, per_batch: int = 2) -> None:
    for i in range(batches):
        log.append_as_leader(batch_of([b"%d-%d" % (i, j) for j in range(per_batch)]), epoch, now_ms=i)


def test_leader_append_assigns_offsets_and_stamps_epoch(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append_as_leader(batch_of([b"a", b"b"]), leader_epoch=4, now_ms=0)
    second = log.append_as_leader(batch_of([b"c", b"d", b"e"]), leader_epoch=4, now_ms=1)
    assert (first.first_offset, first.last_offset, first.record_count) == (0, 1, 2)
    assert (second.first_offset, second.last_offset, second.record_count) == (2, 4, 3)
    data = log.read(0, 10_000)
    assert [b.partition_leader_epoch for b in iter_batches(data)] == [4, 4]
    assert values_read(data) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]
    assert log.log_end_offset == 5 and log.latest_epoch == 4


@pytest.mark.parametrize("role", ["leader", "follower"])
def test_corrupt_append_writes_nothing(tmp_path: Path, role: str) -> None:
    log = open_log(tmp_path)
    good = batch_of([b"a"])
    damaged = bytearray(good if role == "leader" else good + good)  # a follower's second batch is the bad one
    set_base_offset(damaged, len(damaged) - len(good), 0 if role == "leader" else 1)
    damaged[-1] ^= 1
    with capture_logs() as events, pytest.raises(CorruptRecordError) as raised:
        if role == "leader":
            log.append_as_leader(bytes(damaged), 1, 0)
        else:
            log.append_as_follower(bytes(damaged), 0)
    assert raised.value.code is ErrorCode.CORRUPT_MESSAGE
    (rejected,) = [e for e in events if e["event"] == "log_append_rejected"]
    assert rejected["reason"] == "corrupt_message" and "CRC" in rejected["actual"] and rejected["role"] == role
    assert log.log_end_offset == 0 and log.size_bytes == 0


@pytest.mark.parametrize(("case", "origin"), BAD_CASES)
def test_a_refused_batch_leaves_the_partition_writable_and_readable(tmp_path: Path, case: str, origin: str) -> None:
    log = open_log(tmp_path, LogConfig())
    log.append_as_leader(batch_of([b"before"]), 1, 0)
    size = log.size_bytes
    bad = bytearray(BAD_BATCHES[case].make())
    with pytest.raises(KafkaError) as raised:
        if origin == "client":
            log.append_as_leader(bytes(bad), 1, 1)
        else:
            set_base_offset(bad, 0, 1)  # where the log ends, as a leader would place it (outside the CRC)
            log.append_as_follower(bytes(bad), 1)
    assert raised.value.code.name == BAD_BATCHES[case].error, raised.value.message
    assert (log.log_end_offset, log.size_bytes) == (1, size)
    log.append_as_leader(batch_of([b"after"]), 1, 2)
    assert values_read(log.read(0, 10**6)) == [(0, b"before"), (1, b"after")]
    log.close()
    assert values_read(open_log(tmp_path, LogConfig()).read(0, 10**6)) == [(0, b"before"), (1, b"after")]


def test_an_offset_jump_already_in_the_log_rolls_instead_of_overflowing_the_index(tmp_path: Path) -> None:
    # As a log written before batches were validated may hold: a batch claiming 2^31 offsets for one record.
    log = open_log(tmp_path, LogConfig(index_interval_bytes=1))
    log.append_as_leader(batch_of([b"good"]), 1, 0)
    jump = bytearray(build_batch([Record(b"bad")], base_offset=1))
    jump[23:27] = (2**31 - 1).to_bytes(4, "big")  # last offset delta; the CRC is not checked on this path
    log._append(bytes(jump), 1, 2**31, 1, 0, 0)
    after = log.append_as_leader(batch_of([b"after"]), 1, 1)  # its index entry would be 2^31 above the base
    assert after.first_offset == 2**31 + 1 and log.active_segment.base_offset == 2**31 + 1
    assert values_read(log.read(0, 1)) == [(0, b"good")]
    assert values_read(log.read(2**31 + 1, 10**6)) == [(2**31 + 1, b"after")]


def test_the_offset_index_refuses_an_entry_beyond_32_bits_and_writes_nothing(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "index", base_offset=10, files=FileHandleCache())
    with pytest.raises(ValueError, match="32 bits"):
        index.append(10 + 2**31, 0)
    assert len(index) == 0 and (tmp_path / "index").stat().st_size == 0
    index.append(10 + 2**31 - 1, 0)
    assert index.entries() == [(10 + 2**31 - 1, 0)]
    index.close()


def test_an_empty_follower_takes_a_batch_its_leaders_log_start_falls_inside(tmp_path: Path) -> None:
    """DeleteRecords moved the leader's log start into a batch: a follower that restarted empty at that log start
    is sent the whole batch, and starts again at its first offset (as Kafka's follower does) rather than refusing
    it on every fetch."""
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader(batch_of([b"r"] * 10), 1, 0)
    follower = open_log(tmp_path / "follower")
    follower.truncate_fully_and_start_at(6)
    follower.append_as_follower(leader.read(6, 10_000), 0)
    assert (follower.log_start_offset, follower.log_end_offset) == (0, 10)
    with pytest.raises(KafkaError):  # a log holding data still refuses a batch below its end
        follower.append_as_follower(leader.read(6, 10_000), 0)


def test_follower_append_keeps_leader_offsets_and_epochs(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader(batch_of([b"a"]), 1, 0)
    leader.append_as_leader(batch_of([b"b", b"c"]), 3, 0)
    follower = open_log(tmp_path / "follower")
    follower.append_as_follower(leader.read(0, 10_000), 0)
    assert follower.log_end_offset == 3
    assert follower.epoch_cache.entries == leader.epoch_cache.entries
    with pytest.raises(KafkaError):
        follower.append_as_follower(leader.read(1, 10_000), 0)  # starts below the LEO


def test_read_rules_first_batch_whole_max_bytes_max_offset_and_range(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig())
    fill(log, 5, per_batch=3)
    sizes = [b.size for b in iter_batches(log.read(0, 10**6))]
    assert values_read(log.read(4, 1))[0][0] == 3  # the batch holding offset 4, whole despite max_bytes=1
    assert len(list(iter_batches(log.read(0, sizes[0] + sizes[1])))) == 2
    assert [b.base_offset for b in iter_batches(log.read(0, 10**6, max_offset=9))] == [0, 3, 6]
    assert log.read(15, 100) == b""
    with pytest.raises(KafkaError) as raised:
        log.read(16, 100)
    assert raised.value.code is ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_read_after_the_first_partition_takes_only_whole_batches_that_fit(tmp_path: Path) -> None:
    """first_whole=False (a Fetch's later partitions, Kafka's minOneMessage off): a batch that does not fit is not
    read, from memory, from a segment file, or from a later segment."""
    log = open_log(tmp_path)  # 400-byte segments: the batches span several
    fill(log, 8, per_batch=3)
    assert len(log.segments) > 1
    sizes = [b.size for b in iter_batches(log.read(0, 10**6, max_offset=log.log_end_offset))]
    for max_offset in (None, log.log_end_offset):  # a follower's read (memory first), a consumer's (files)
        assert log.read(0, sizes[0] - 1, max_offset, first_whole=False) == b""
        assert log.read(0, 0, max_offset, first_whole=False) == b""
        assert len(log.read(0, sizes[0], max_offset, first_whole=False)) == sizes[0]
        newest = log.log_end_offset - 3
        assert log.read(newest, 1, max_offset, first_whole=False) == b""
        assert len(log.read(newest, 1, max_offset)) > 0  # the first partition's read: its first batch whole
    last_of_first_segment = log.segments[1].base_offset - 3
    assert log.read(last_of_first_segment, 1, log.log_end_offset, first_whole=False) == b""


def test_a_read_of_the_newest_append_serves_what_the_file_holds(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig())
    fill(log, 3, per_batch=2)
    # Two batches in one append: as a follower gets them from its leader (a producer sends one).
    from_leader = bytearray(batch_of([b"x", b"y"]) + batch_of([b"z"]))
    for position, base_offset in ((0, 6), (len(batch_of([b"x", b"y"])), 8)):
        set_base_offset(from_leader, position, base_offset)
        set_partition_leader_epoch(from_leader, position, 2)
    newest = log.append_as_follower(bytes(from_leader), now_ms=3)
    segment = log.active_segment
    on_disk = segment.log.read(0, segment.size)
    tail = log.read(newest.first_offset, 10**6)
    assert tail == on_disk[len(on_disk) - len(tail) :] and values_read(tail) == [(6, b"x"), (7, b"y"), (8, b"z")]
    # The limits still apply: the HWM below the newest batches, max_bytes below their size.
    assert log.read(6, 10**6, max_offset=8) == log.read(6, 10**6)[: len(batch_of([b"x", b"y"]))]
    assert values_read(log.read(6, 1)) == [(6, b"x"), (7, b"y")]
    log.truncate_to(8)  # the newest append is cut: reads come from the file again
    assert values_read(log.read(6, 10**6)) == [(6, b"x"), (7, b"y")]
    from_leader = bytearray(batch_of([b"w"]))
    set_base_offset(from_leader, 0, 8)
    set_partition_leader_epoch(from_leader, 0, 2)
    log.append_as_follower(bytes(from_leader), 4)
    assert values_read(log.read(8, 10**6)) == [(8, b"w")]
    log.roll(now_ms=5)  # a rolled segment's newest append is read back from its file
    assert values_read(log.read(8, 10**6)) == [(8, b"w")]
    log.close()
    reopened = open_log(tmp_path, LogConfig())
    assert values_read(reopened.read(6, 10**6)) == [(6, b"x"), (7, b"y"), (8, b"w")]


def test_rolls_by_size_and_by_time(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=400, segment_ms=1000))
    fill(log, 10)
    assert len(log.segments) > 1
    names = sorted(p.name for p in (tmp_path / "topic-0").glob("*.log"))
    assert names == [f"{s.base_offset:020d}.log" for s in log.segments]
    count = len(log.segments)
    log.append_as_leader(batch_of([b"late"]), 1, now_ms=10_000)
    assert len(log.segments) == count + 1


def test_a_segment_whose_offset_index_is_full_rolls(tmp_path: Path) -> None:
    """segment.index.bytes: an index of 16 bytes holds two 8-byte entries; the next append rolls, as Kafka rolls
    a segment whose index isFull."""
    log = open_log(tmp_path, LogConfig(index_interval_bytes=1, segment_index_bytes=16))
    fill(log, 3)
    assert len(log.segments) == 1 and len(log.active_segment.index) == 2
    fill(log, 1)
    assert [s.base_offset for s in log.segments] == [0, 6]


def test_segment_jitter_rolls_each_segment_up_to_that_much_early(tmp_path: Path) -> None:
    """segment.jitter.ms: a draw per segment below min(segment.jitter.ms, segment.ms), as Kafka's
    randomSegmentJitter; the segment rolls once its age reaches segment.ms less that draw."""
    log = open_log(tmp_path, LogConfig(segment_ms=1000, segment_jitter_ms=5000))
    log._random = random.Random(7)
    jitter = random.Random(7).randrange(1000)
    log.append_as_leader(batch_of([b"a"]), 1, now_ms=0)
    log.append_as_leader(batch_of([b"b"]), 1, now_ms=999 - jitter)
    assert len(log.segments) == 1
    log.append_as_leader(batch_of([b"c"]), 1, now_ms=1000 - jitter)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_truncate_drops_later_segments_and_epochs_and_logs(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 4, epoch=1)
    fill(log, 4, epoch=2)
    assert log.end_offset_for_epoch(1) == (1, 8)
    with capture_logs() as events:
        assert log.truncate_to(5, reason="diverging_epoch") == 4  # whole batches: offset 5 sits in batch 4-5
    assert [e for e in events if e["event"] == "log_truncated"][0]["reason"] == "diverging_epoch"
    assert log.log_end_offset == 4 and log.latest_epoch == 1
    assert values_read(log.read(0, 10**6))[-1][0] == 3
    log.append_as_leader(batch_of([b"new"]), 3, 0)
    assert values_read(log.read(4, 100)) == [(4, b"new")]


def test_a_truncation_at_the_log_end_drops_an_epoch_cached_with_no_data(tmp_path: Path) -> None:
    """A leader cached epoch 5 at its log end and lost leadership before appending: a truncation to (or past) the
    log end removes that entry, so the log's latest epoch is again the one its last batch carries."""
    log = open_log(tmp_path)
    fill(log, 2, epoch=3)
    log.assign_epoch_start_offset(5, log.log_end_offset)
    assert log.latest_epoch == 5 and log.end_offset_for_epoch(4) == (3, 4)
    assert log.truncate_to(log.log_end_offset + 7) == 4
    assert log.latest_epoch == 3 and log.end_offset_for_epoch(3) == (3, 4)


def test_end_offset_for_epoch_as_kafka(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert log.end_offset_for_epoch(1) == (-1, -1)
    fill(log, 2, epoch=2)
    fill(log, 2, epoch=5)
    assert log.end_offset_for_epoch(1) == (1, 0)  # older than every epoch: where the first starts
    assert log.end_offset_for_epoch(2) == (2, 4)
    assert log.end_offset_for_epoch(4) == (2, 4)  # largest epoch <= 4
    assert log.end_offset_for_epoch(5) == (5, 8)  # latest: the LEO
    assert log.end_offset_for_epoch(6) == (-1, -1)


def test_retention_by_bytes_and_time_stops_at_hwm_and_active(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=400, retention_bytes=800, retention_ms=-1))
    fill(log, 20)
    assert log.delete_retention(now_ms=0) == 0  # nothing below the high watermark yet
    log.high_watermark = log.log_end_offset
    deleted = log.delete_retention(now_ms=0)
    assert deleted > 0 and log.size_bytes <= 800 + 400
    assert log.log_start_offset == log.segments[0].base_offset
    with pytest.raises(KafkaError):
        log.read(0, 100)
    timed = open_log(tmp_path / "t", LogConfig(segment_bytes=400, retention_ms=1000))
    for i in range(10):
        timed.append_as_leader(batch_of([b"x" * 50], timestamp_ms=i), 1, i)
    timed.high_watermark = timed.log_end_offset
    timed.delete_retention(now_ms=100_000)
    assert len(timed.segments) == 1  # the active segment stays


def test_flush_policy_by_messages_and_time(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(flush_interval_messages=4, flush_interval_ms=1000))
    log.append_as_leader(batch_of([b"a", b"b", b"c"]), 1, 0)
    assert log.recovery_point == 0
    log.append_as_leader(batch_of([b"d"]), 1, 0)
    assert log.recovery_point == 4
    log.append_as_leader(batch_of([b"e"]), 1, 10)
    assert not log.maybe_flush(500)
    assert log.maybe_flush(1500) and log.recovery_point == 5


def test_checkpoints_survive_clean_reopen(tmp_path: Path) -> None:
    log = open_log(tmp_path, topic_id="id-1")
    fill(log, 6, epoch=2)
    log.high_watermark = 7
    expected = log.read(0, 10**6)
    log.close()
    again = open_log(tmp_path, topic_id="id-1")
    assert (again.log_end_offset, again.high_watermark, again.recovery_point, again.latest_epoch) == (12, 7, 12, 2)
    assert again.read(0, 10**6) == expected
    again.close()
    with pytest.raises(KafkaError) as raised:
        open_log(tmp_path, topic_id="id-2")
    assert raised.value.code is ErrorCode.INCONSISTENT_TOPIC_ID


def test_corrupt_checkpoint_names_the_file(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 2, epoch=1)
    log.close()
    (tmp_path / "topic-0" / "leader-epoch-checkpoint").write_text("0\n3\n1 0\n")
    with pytest.raises(CheckpointError, match="leader-epoch-checkpoint"):
        open_log(tmp_path)


def test_missing_index_is_rebuilt(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(index_interval_bytes=100))
    fill(log, 10)
    expected = log.read(0, 10**6)
    log.close()
    index = tmp_path / "topic-0" / "00000000000000000000.index"
    index.unlink()
    again = open_log(tmp_path, LogConfig(index_interval_bytes=100))
    assert index.stat().st_size > 0
    assert again.read(0, 10**6) == expected
    assert values_read(again.read(13, 10))[0][0] == 12


def test_simulated_page_cache_reads_unflushed_and_loses_them_on_crash(tmp_path: Path) -> None:
    config = LogConfig(simulate_page_cache=True)
    log = open_log(tmp_path, config)
    fill(log, 3)
    log.flush(0)
    fill(log, 2)
    segment_file = tmp_path / "topic-0" / "00000000000000000000.log"
    assert segment_file.stat().st_size < log.size_bytes  # the tail is only in memory
    assert values_read(log.read(6, 10**6))[0][0] == 6
    log.abandon()
    with capture_logs() as events:
        again = open_log(tmp_path, config)
    assert again.log_end_offset == 6
    assert any(e["event"] == "log_recovered" for e in events)
