"""A follower's reads answered from the appends kept in memory give exactly what the file gives, a consumer's read
(below the HWM) always goes to the file, and the kept appends never outlive the bytes they stand for (truncation, a
roll, a follower's append of a view, the size limit)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from storage_helpers import batch_of

from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.recent_appends import RecentAppends
from minikafka.storage.segment import LogSegment


def leader_log(tmp_path: Path, batches: int) -> PartitionLog:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), 0)
    for number in range(batches):
        log.append_as_leader(batch_of([bytes([number]) * (100 + number), b"second"]), 1, number)
    return log


def test_every_read_from_memory_matches_the_file(tmp_path: Path) -> None:
    log = leader_log(tmp_path, 8)
    cases = list(itertools.product(range(0, log.log_end_offset + 1), (1, 150, 400, 1 << 20)))
    from_memory = {case: log.read(*case) for case in cases}
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig(), 0)  # keeps nothing: every read is a file read
    for case, data in from_memory.items():
        assert data == reopened.read(*case), case


def test_a_consumers_read_goes_to_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = leader_log(tmp_path, 3)
    files: list[int] = []
    monkeypatch.setattr(LogSegment, "read", lambda *args, **kwargs: files.append(1) or b"")
    log.read(4, 1 << 20)
    assert not files
    log.read(4, 1 << 20, max_offset=6)
    assert files


def test_a_read_from_memory_is_the_appended_bytes_themselves(tmp_path: Path) -> None:
    log = leader_log(tmp_path, 3)
    assert log.read(4, 1 << 20) is log.read(4, 1 << 20)  # the newest batch, no copy


def test_kept_appends_stop_at_the_limit_and_at_an_append_not_kept() -> None:
    a, b, c, d = (batch_of([bytes([n]) * 20]) for n in range(4))
    recent = RecentAppends(limit=len(a) * 2 + 1)
    recent.add(0, 0, a)
    recent.add(1, len(a), b)
    recent.add(2, len(a) * 2, c)  # over the limit: the oldest goes
    assert recent.read(0, 1 << 20) is None
    assert recent.read(1, 1 << 20) == b + c and recent.read(2, 1 << 20) is c
    assert recent.read(1, len(b) + 1) == b and recent.read(1, 1) == b  # the first batch always whole
    recent.add(3, len(a) * 3, memoryview(d))  # a view is not kept, and what was kept no longer reaches the end
    assert recent.read(1, 1 << 20) is None and recent.read(3, 1 << 20) is None
    assert recent.last is not None and recent.last.position == len(a) * 3 and recent.last.data is None
    recent.add(4, len(a) * 4, a + b)  # two batches in one append (a follower's): not kept
    assert recent.read(4, 1 << 20) is None


def test_truncation_and_a_roll_forget_the_kept_appends(tmp_path: Path) -> None:
    log = leader_log(tmp_path, 4)
    end = log.log_end_offset
    log.truncate_to(4, "test")
    assert log.read(4, 1 << 20) == b"" and log.read(2, 1 << 20) == log.read(2, 1 << 20)
    assert log.active_segment.read_recent(6, 1 << 20) is None and end == 8
    log.append_as_leader(batch_of([b"new"]), 2, 10)
    assert log.active_segment.read_recent(4, 1 << 20) is not None
    log.roll(11)
    rolled = log.segments[-2]
    assert rolled.read_recent(4, 1 << 20) is None
