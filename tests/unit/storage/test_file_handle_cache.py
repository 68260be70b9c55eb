"""The bounded cache of open segment files: many partition logs share a few descriptors, and every log operation
(append, read through the index, flush, roll, truncation, retention, recovery after a clean or an unclean close)
answers as it does with every file open."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from storage_helpers import batch_of, values_read

from minikafka.storage import file_handle_cache
from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

# Small segments and a dense index: rolls and index lookups happen within a few appends.
SMALL = LogConfig(segment_bytes=600, index_interval_bytes=100)
BOUND = 8
PARTITIONS = 24


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def value(partition: int, index: int) -> bytes:
    return f"p{partition}-v{index}".encode() * 4


def open_logs(tmp_path: Path, files: FileHandleCache, config: LogConfig = SMALL) -> list[PartitionLog]:
    return [PartitionLog.open(tmp_path / f"t-{p}", config, 0, files=files) for p in range(PARTITIONS)]


def append_rounds(logs: list[PartitionLog], rounds: range, most_open: list[int]) -> None:
    """Round-robin appends (the worst order for an LRU cache), noting the most descriptors open after each."""
    for index in rounds:
        for partition, log in enumerate(logs):
            info = log.append_as_leader(batch_of([value(partition, index)]), 1, now_ms=0)
            assert info.first_offset == index
            most_open[0] = max(most_open[0], open_files())


def expected(partition: int, count: int, start: int = 0) -> list[tuple[int, bytes | None]]:
    return [(i, value(partition, i)) for i in range(start, count)]


def read_all(log: PartitionLog, start: int = 0) -> list[tuple[int, bytes | None]]:
    """Every record from `start`, one fetch per batch (each read goes through the index of some segment)."""
    records: list[tuple[int, bytes | None]] = []
    offset = start
    while offset < log.log_end_offset:
        got = values_read(log.read(offset, 1, max_offset=log.log_end_offset))
        records.extend(got)
        offset = got[-1][0] + 1
    return records


def test_many_partitions_share_a_few_descriptors_and_answer_as_with_all_open(tmp_path: Path) -> None:
    before = open_files()
    files = FileHandleCache(BOUND)
    most_open = [0]
    logs = open_logs(tmp_path, files)
    append_rounds(logs, range(30), most_open)
    assert all(len(log.segments) > 3 for log in logs)  # rolled: reads cross segments and indexes
    for partition, log in enumerate(logs):
        assert read_all(log) == expected(partition, 30)
        most_open[0] = max(most_open[0], open_files())
    for log in logs:
        log.flush(0)
        assert not any(segment.dirty for segment in log.segments)
    assert len(files) <= BOUND and files.evictions > PARTITIONS
    assert most_open[0] <= before + BOUND  # the files of 24 partitions, 4+ segments each, through 8 descriptors
    for log in logs:
        log.close(0)
    assert open_files() == before and len(files) == 0


def test_truncation_retention_and_recovery_through_the_cache(tmp_path: Path) -> None:
    before = open_files()
    files = FileHandleCache(BOUND)
    most_open = [0]
    logs = open_logs(tmp_path, files)
    append_rounds(logs, range(20), most_open)
    for log in logs:
        log.high_watermark = log.log_end_offset
        assert log.truncate_to(15) == 15
        log.delete_before(5, reason="test")
    append_rounds(logs, range(15, 25), most_open)
    for log in logs[: PARTITIONS // 2]:
        log.close(0)  # clean: the next open trusts the indexes
    for log in logs[PARTITIONS // 2 :]:
        log.abandon()  # a crash: the next open scans and recovers the active segment
    assert open_files() == before
    reopened = open_logs(tmp_path, FileHandleCache(BOUND))
    for partition, log in enumerate(reopened):
        assert log.log_start_offset >= 5 and log.log_end_offset == 25
        assert read_all(log, log.log_start_offset) == expected(partition, 25, log.log_start_offset)
        most_open[0] = max(most_open[0], open_files())
    assert most_open[0] <= before + BOUND
    for log in reopened:
        log.delete()
    assert open_files() == before


def test_a_flush_after_eviction_fsyncs_the_file_through_a_new_descriptor(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    files = FileHandleCache(1)
    first, second = (PartitionLog.open(tmp_path / f"t-{p}", LogConfig(), 0, files=files) for p in range(2))
    first.append_as_leader(batch_of([b"unflushed"]), 1, now_ms=0)
    second.append_as_leader(batch_of([b"evicts the first log's files"]), 1, now_ms=0)
    log_file = first.active_segment.log
    assert not files.is_open(log_file) and log_file.dirty  # closed, and still owed an fsync
    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    first.flush(0)
    assert str(log_file.path) in synced and not log_file.dirty
    for log in (first, second):
        log.close(0)


def test_a_closed_segment_file_is_never_opened_again(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), 0, files=FileHandleCache(4))
    log.append_as_leader(batch_of([b"x"]), 1, now_ms=0)
    segment = log.active_segment
    log.abandon()
    with pytest.raises(OSError) as closed:
        segment.log.read(0, 10)
    assert closed.value.errno == errno.EBADF


def test_out_of_descriptors_the_cache_gives_back_its_own_and_retries(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    files = FileHandleCache(100)
    logs = [PartitionLog.open(tmp_path / f"t-{p}", LogConfig(), 0, files=files) for p in range(6)]
    assert len(files) == 12
    real_open = os.open

    def limited(path: object, flags: int, mode: int = 0o777) -> int:
        if len(files) >= 12:  # the process limit, below the cache's bound
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, flags, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(file_handle_cache.os, "open", limited)
    extra = PartitionLog.open(tmp_path / "t-extra", LogConfig(), 0, files=files)
    extra.append_as_leader(batch_of([b"opened"]), 1, now_ms=0)
    assert len(files) <= 12 and files.evictions >= 6
    for log in logs:
        log.append_as_leader(batch_of([b"still writable"]), 1, now_ms=0)
        assert values_read(log.read(0, 10**6, max_offset=1)) == [(0, b"still writable")]
    monkeypatch.undo()  # the limit stood for the cache's files alone; closing writes checkpoints too
    for log in [*logs, extra]:
        log.close(0)


def test_out_of_descriptors_with_none_of_its_own_the_open_fails(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    files = FileHandleCache(100)

    def none_left(path: object, flags: int, mode: int = 0o777) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(file_handle_cache.os, "open", none_left)
    with pytest.raises(OSError) as failed:
        PartitionLog.open(tmp_path / "t-0", LogConfig(), 0, files=files)
    assert failed.value.errno == errno.EMFILE and len(files) == 0
