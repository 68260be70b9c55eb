"""A partition whose files cannot be opened for want of file descriptors (EMFILE, ENFILE) fails alone with
KAFKA_STORAGE_ERROR and keeps no file of it open; the log directory stays online (a disk error still takes it
offline, as Kafka does), and the partition opens once descriptors are free again. With segment files opened on
use and bounded (minikafka.log.max.open.files), a file limit below two per partition fails none."""

from __future__ import annotations

import errno
import os
import resource
import uuid
from pathlib import Path

import pytest

from minikafka.broker.log_manager import LogManager, TopicPartition, effective_max_open_files
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import Record, build_batch, iter_batches
from minikafka.storage import partition_log
from minikafka.storage.log_config import LogConfig

TOPIC_ID = uuid.uuid4()


def failing_once(code: int) -> object:
    """The transaction index's load, the last file an open reads (a new log's as well), fails the first time."""
    real = partition_log.LogTransactions.load
    calls = [0]

    def load(self: partition_log.LogTransactions, *args: object) -> None:
        calls[0] += 1
        if calls[0] == 1:
            real(self, *args)  # a segment is open when the next file fails
            raise OSError(code, "Too many open files" if code == errno.EMFILE else "I/O error")
        real(self, *args)

    return load


def test_out_of_files_fails_one_partition_and_not_the_directory(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(partition_log.LogTransactions, "load", failing_once(errno.EMFILE))
    closed: list[object] = []
    real_abandon = partition_log.PartitionLog.abandon
    monkeypatch.setattr(partition_log.PartitionLog, "abandon", lambda log: (closed.append(log), real_abandon(log)))
    logs = LogManager(tmp_path, lambda _topic: LogConfig())
    tp = TopicPartition("orders", 0)
    with pytest.raises(KafkaError) as failed:
        logs.get_or_create(tp, TOPIC_ID, 0)
    assert failed.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert not logs.offline and logs.unopened == {tp: TOPIC_ID}
    assert len(closed) == 1  # the half-opened log's segments were closed
    assert logs.get_or_create(TopicPartition("orders", 1), TOPIC_ID, 0) is not None  # the directory is online
    assert logs.get_or_create(tp, TOPIC_ID, 0) is not None and logs.unopened == {}  # opened again later


def test_a_disk_error_still_takes_the_directory_offline(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(partition_log.LogTransactions, "load", failing_once(errno.EIO))
    logs = LogManager(tmp_path, lambda _topic: LogConfig())
    with pytest.raises(KafkaError):
        logs.get_or_create(TopicPartition("orders", 0), TOPIC_ID, 0)
    assert logs.offline and logs.unopened == {}


def test_a_file_limit_below_two_per_partition_fails_no_partition(tmp_path: Path) -> None:
    """The process may open 40 more files; 100 partitions, two files each, all open and take writes and reads,
    their segment files bounded by minikafka.log.max.open.files."""
    open_now = len(os.listdir("/proc/self/fd"))
    logs = LogManager(tmp_path, lambda _topic: LogConfig(), max_open_files=16)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 40, hard))
    try:
        for partition in range(100):
            log = logs.get_or_create(TopicPartition("crowded", partition), TOPIC_ID, 0)
            log.append_as_leader(build_batch([Record(f"value {partition}".encode())]), 1, now_ms=0)
        for partition in range(100):
            log = logs.get_or_create(TopicPartition("crowded", partition), TOPIC_ID, 0)
            (batch,) = iter_batches(log.read(0, 10**6, max_offset=1))
            assert [r.value for r in batch.records()] == [f"value {partition}".encode()]
        assert len(os.listdir("/proc/self/fd")) <= open_now + 16
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        logs.close_all(0)
    assert logs.unopened == {} and not logs.offline


def test_the_bound_on_open_segment_files_is_capped_at_a_quarter_of_the_file_limit() -> None:
    assert effective_max_open_files(1000, 20000) == 1000
    assert effective_max_open_files(1000, 1024) == 256
    assert effective_max_open_files(1000, -1) == 1000  # RLIM_INFINITY: no cap
    assert effective_max_open_files(1000, 2) == 1
