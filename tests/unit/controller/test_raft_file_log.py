"""The Raft metadata log on disk: entries batched per epoch run, truncation at any entry, reopening."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.common.record_batch import iter_batches
from minikafka.kraft_controller.raft.file_log import RaftFileLog
from minikafka.kraft_controller.raft.messages import LogEntry, SnapshotId


def entries(start: int, count: int, epoch: int) -> list[LogEntry]:
    return [LogEntry(offset, epoch, b"r%d" % offset) for offset in range(start, start + count)]


def batches(log: RaftFileLog) -> list[tuple[int, int, int, bool]]:
    """(base offset, last offset, epoch, control) of every batch on disk."""
    data = log.log.read(log.start_offset, 1 << 20)
    return [(b.base_offset, b.last_offset, b.partition_leader_epoch, b.is_control) for b in iter_batches(data)]


@pytest.fixture
def log(tmp_path: Path) -> RaftFileLog:
    opened = RaftFileLog(tmp_path, 1 << 20, 0)
    yield opened
    opened.close()


def test_one_batch_per_epoch_run_and_control_entries_alone(log: RaftFileLog) -> None:
    marker = LogEntry(0, 1, b"", control=True)
    log.append([marker, *entries(1, 5, 1), LogEntry(6, 2, b"", control=True), *entries(7, 3, 2)], 0)
    assert batches(log) == [(0, 0, 1, True), (1, 5, 1, False), (6, 6, 2, True), (7, 9, 2, False)]
    assert log.load_entries() == [marker, *entries(1, 5, 1), LogEntry(6, 2, b"", control=True), *entries(7, 3, 2)]


@pytest.mark.parametrize("cut", [0, 1, 3, 5, 6, 8, 10])
def test_truncation_keeps_every_entry_below_the_cut(tmp_path: Path, cut: int) -> None:
    written = entries(0, 5, 1) + entries(5, 5, 2)
    log = RaftFileLog(tmp_path, 1 << 20, 0)
    log.append(written[:5], 0)
    log.append(written[5:], 0)
    log.truncate(cut, "diverging epoch")
    assert log.end_offset == cut
    assert log.load_entries() == written[:cut]
    log.append(entries(cut, 2, 3), 0)  # the log continues exactly at the cut
    log.close()
    reopened = RaftFileLog(tmp_path, 1 << 20, 0)
    assert reopened.load_entries() == written[:cut] + entries(cut, 2, 3)
    assert reopened.log.epoch_cache.latest_epoch == 3
    reopened.close()


def test_entries_from_reads_from_inside_a_batch(log: RaftFileLog) -> None:
    log.append(entries(0, 10, 1), 0)
    assert log.entries_from(4) == entries(4, 6, 1)
    assert log.entries_from(4, 7) == entries(4, 3, 1)


def test_a_detached_fsync_records_the_log_clean_only_if_nothing_was_written_since(log: RaftFileLog) -> None:
    segment = log.log.active_segment
    log.append(entries(0, 3, 1), 0, flush=False)
    assert segment.dirty
    fsync, then = log.detached_fsync(0)
    fsync()
    then()
    assert not segment.dirty and log.log.recovery_point == 3 and log.log.unflushed_messages == 0

    log.append(entries(3, 2, 1), 0, flush=False)
    fsync, then = log.detached_fsync(0)
    log.append(entries(5, 1, 1), 0, flush=False)  # after the fsync was taken: not covered by it
    fsync()
    then()
    assert segment.dirty and log.log.recovery_point == 3 and log.log.unflushed_messages > 0
    assert log.load_entries() == entries(0, 6, 1)


def test_a_snapshot_deletes_the_segments_below_its_end(tmp_path: Path) -> None:
    log = RaftFileLog(tmp_path, 300, 0)  # small segments: a few entries each
    for start in range(0, 60, 5):
        log.append(entries(start, 5, 1), 0)
    segments = len(log.log.segments)
    log.save_snapshot(SnapshotId(40, 1), b"image at 40")
    assert log.start_offset == 40
    assert 1 < len(log.log.segments) < segments
    assert all(s.base_offset <= 40 for s in log.log.segments[:1])
    on_disk = sorted(int(p.stem) for p in log.directory.glob("*.log"))
    assert on_disk[0] <= 40 < (on_disk[1] if len(on_disk) > 1 else 60) and len(on_disk) == len(log.log.segments)
    assert log.load_entries() == entries(40, 20, 1)
    log.close()
    reopened = RaftFileLog(tmp_path, 300, 0)
    assert reopened.start_offset == 40 and reopened.load_entries() == entries(40, 20, 1)
    reopened.close()
