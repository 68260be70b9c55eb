"""A rolled segment's flush, as Kafka schedules it: in the background when the log has one (the recovery point and
its checkpoint move only once the fsync is done, and not at all if the log was cut meanwhile), at once without one
or with the simulated page cache."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from storage_helpers import batch_of
from structlog.testing import capture_logs

from minikafka.storage.checkpoint import OffsetCheckpoint
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import RECOVERY_POINT_FILE, PartitionLog

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


class Jobs:
    """A background that runs nothing until the test says so."""

    def __init__(self) -> None:
        self.pending: list[tuple[Callable[[], None], Callable[[], None]]] = []

    def __call__(self, work: Callable[[], None], then: Callable[[], None]) -> None:
        self.pending.append((work, then))

    def run_all(self) -> None:
        while self.pending:
            work, then = self.pending.pop(0)
            work()
            then()


def rolled_log(tmp_path: Path, jobs: Jobs | None, config: LogConfig = SMALL) -> PartitionLog:
    """A log whose appends just rolled one segment (its flush still pending when `jobs` holds it)."""
    log = PartitionLog.open(tmp_path / "topic-0", config, 0, background=jobs)
    while len(log.segments) == 1:
        log.append_as_leader(batch_of([b"0123456789" * 5]), 1, now_ms=0)
    return log


def checkpointed_recovery_point(tmp_path: Path) -> int | None:
    return OffsetCheckpoint(tmp_path / "topic-0" / RECOVERY_POINT_FILE, "topic-0").read()


def test_the_recovery_point_moves_once_the_background_flush_is_done(tmp_path: Path) -> None:
    jobs = Jobs()
    log = rolled_log(tmp_path, jobs)
    rolled_end = log.segments[1].base_offset
    assert len(jobs.pending) == 1
    assert log.recovery_point == 0 and log.segments[0].dirty  # not vouched for until the fsync is done
    assert checkpointed_recovery_point(tmp_path) in (None, 0)
    jobs.run_all()
    assert log.recovery_point == rolled_end
    assert checkpointed_recovery_point(tmp_path) == rolled_end
    assert not log.segments[0].dirty


def test_a_background_flush_finished_after_the_log_was_cut_moves_nothing(tmp_path: Path) -> None:
    jobs = Jobs()
    log = rolled_log(tmp_path, jobs)
    log.truncate_to(2)
    log.append_as_leader(batch_of([b"new"]), 2, now_ms=0)  # below the rolled end again, and unflushed
    jobs.run_all()
    assert log.recovery_point == 0
    assert checkpointed_recovery_point(tmp_path) in (None, 0)


def test_a_flush_before_the_background_one_covers_the_rolled_segment(tmp_path: Path) -> None:
    jobs = Jobs()
    log = rolled_log(tmp_path, jobs)
    log.flush(now_ms=0)
    assert not log.segments[0].dirty and log.recovery_point == log.log_end_offset
    jobs.run_all()  # finishing later moves nothing back
    assert log.recovery_point == log.log_end_offset


def test_the_background_fsync_outlives_the_closed_log(tmp_path: Path) -> None:
    jobs = Jobs()
    log = rolled_log(tmp_path, jobs)
    log.close()
    with capture_logs() as events:
        jobs.run_all()  # its own descriptors: the closed segment's are gone
    assert not [e for e in events if e["event"] == "rolled_segment_flush_failed"]


def test_a_failed_background_fsync_leaves_the_segment_to_the_next_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = Jobs()
    log = rolled_log(tmp_path, jobs)

    def failing_fsync(_fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)  # only the job runs meanwhile
    with capture_logs() as events:
        jobs.run_all()
    monkeypatch.undo()
    failed = [e for e in events if e["event"] == "rolled_segment_flush_failed"]
    assert failed and failed[0]["base_offset"] == 0 and "Input/output error" in failed[0]["error"]
    assert log.recovery_point == 0 and log.segments[0].dirty
    log.flush(now_ms=0)
    assert not log.segments[0].dirty and log.recovery_point == log.log_end_offset


@pytest.mark.parametrize(
    ("background", "config"),
    [(False, SMALL), (True, LogConfig(segment_bytes=400, index_interval_bytes=100, simulate_page_cache=True))],
    ids=["no background", "simulated page cache"],
)
def test_otherwise_a_roll_flushes_at_once(tmp_path: Path, background: bool, config: LogConfig) -> None:
    jobs = Jobs()
    log = rolled_log(tmp_path, jobs if background else None, config)
    assert not jobs.pending
    assert log.recovery_point == log.segments[1].base_offset
    assert checkpointed_recovery_point(tmp_path) == log.segments[1].base_offset
    assert not log.segments[0].dirty
