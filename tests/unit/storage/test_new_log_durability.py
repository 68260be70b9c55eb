"""A new partition log costs no fsync to create and an empty one none to close cleanly (a broker takes on and stops
thousands of them at once); what a new log wrote without an fsync (its partition.metadata, a leader epoch's start)
is made durable by its first flush, before any data it describes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from storage_helpers import batch_of, values_read

from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import (
    CLEAN_SHUTDOWN_FILE,
    LEADER_EPOCH_FILE,
    PARTITION_METADATA_FILE,
    PartitionLog,
)

TOPIC_ID = "8a0b3f53-0b4e-4bd4-9f4e-0f0c8f5b9a11"


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every file or directory fsynced, in order."""
    synced: list[str] = []
    real_fsync = os.fsync

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return synced


def test_a_new_log_and_its_leader_epoch_cost_no_fsync(tmp_path: Path, fsyncs: list[str]) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), 0, TOPIC_ID)
    log.assign_epoch_start_offset(0, 0)
    assert fsyncs == []
    assert (tmp_path / "t-0" / PARTITION_METADATA_FILE).read_text().endswith(f"topic_id: {TOPIC_ID}\n")
    log.close(0)


def test_the_first_flush_makes_the_metadata_and_the_epoch_durable_before_the_data(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, LogConfig(), 0, TOPIC_ID)
    log.assign_epoch_start_offset(3, 0)
    log.append_as_leader(batch_of([b"v"]), 3, now_ms=0)
    log.flush(0)
    metadata, epochs = str(directory / PARTITION_METADATA_FILE), str(directory / LEADER_EPOCH_FILE)
    data = str(log.active_segment.log.path)
    assert metadata in fsyncs and epochs in fsyncs and data in fsyncs
    assert fsyncs.index(metadata) < fsyncs.index(data) and fsyncs.index(epochs) < fsyncs.index(data)
    assert str(directory) in fsyncs[: fsyncs.index(data)]  # their renames too
    fsyncs.clear()
    log.flush(0)  # nothing left owed
    assert metadata not in fsyncs and epochs not in fsyncs
    log.close(0)


def test_an_empty_log_closes_and_reopens_cleanly_without_an_fsync(tmp_path: Path, fsyncs: list[str]) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, LogConfig(), 0, TOPIC_ID)
    log.assign_epoch_start_offset(2, 0)
    log.close(0)
    assert fsyncs == []
    assert (directory / CLEAN_SHUTDOWN_FILE).exists()
    reopened = PartitionLog.open(directory, LogConfig(), 0, TOPIC_ID)
    assert reopened.topic_id == TOPIC_ID and reopened.log_end_offset == 0
    assert fsyncs == []  # nor does opening it again (its epoch, past the log end, is cut unsynced)
    reopened.close(0)


def test_a_log_with_data_is_still_flushed_and_snapshotted_on_close(tmp_path: Path, fsyncs: list[str]) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, LogConfig(), 0, TOPIC_ID)
    log.assign_epoch_start_offset(0, 0)
    log.append_as_leader(batch_of([b"kept"]), 0, now_ms=0)
    log.close(0)
    assert str(log.active_segment.log.path) in fsyncs
    assert list(directory.glob("*.snapshot"))
    reopened = PartitionLog.open(directory, LogConfig(), 0, TOPIC_ID)
    assert values_read(reopened.read(0, 10**6)) == [(0, b"kept")]
    reopened.close(0)
