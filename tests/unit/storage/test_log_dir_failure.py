"""Short writes and I/O errors on a log: nothing uncounted, the log directory goes offline (Kafka's
LogDirFailureChannel), every later use of a log there answers KAFKA_STORAGE_ERROR."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from storage_helpers import batch_of, values_read
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.storage import page_cache
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_dir_failure_channel import LogDirFailureChannel
from minikafka.storage.partition_log import PartitionLog


def short_pwrite(keep: int):  # noqa: ANN201
    """os.pwrite as a full disk does it: writes only the first `keep` bytes and returns that count."""

    real = os.pwrite

    def pwrite(fd: int, data: bytes, position: int) -> int:
        return real(fd, bytes(data)[:keep], position)

    return pwrite


def open_log(tmp_path: Path, failures: LogDirFailureChannel | None, simulate: bool = False) -> PartitionLog:
    config = LogConfig(simulate_page_cache=simulate)
    return PartitionLog.open(tmp_path / "topic-0", config, 0, None, None, failures)


@pytest.mark.parametrize("simulate", [False, True])
def test_a_short_write_fails_and_counts_no_byte_missing_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulate: bool
) -> None:
    log = open_log(tmp_path, None, simulate)
    log.append_as_leader(batch_of([b"acknowledged"]), 1, 0)
    log.flush(0)
    size = log.size_bytes
    monkeypatch.setattr(page_cache.os, "pwrite", short_pwrite(10))
    with pytest.raises(OSError) as raised:
        log.append_as_leader(batch_of([b"torn"]), 1, 1)
        log.flush(1)  # with the simulated page cache the write happens here
    assert raised.value.errno == errno.ENOSPC
    monkeypatch.undo()
    segment = log.active_segment
    on_disk = segment.log_path.stat().st_size
    assert segment.log.size - segment.log.unflushed_bytes == on_disk  # every byte counted is in the file
    assert on_disk == size  # the torn bytes were cut off


def test_a_short_write_takes_the_log_dir_offline_and_answers_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[tuple[Path, str]] = []
    failures = LogDirFailureChannel(lambda directory, reason: told.append((directory, reason)))
    log = open_log(tmp_path, failures)
    log.append_as_leader(batch_of([b"acknowledged"]), 1, 0)
    monkeypatch.setattr(page_cache.os, "pwrite", short_pwrite(10))
    with capture_logs() as events, pytest.raises(KafkaError) as raised:
        log.append_as_leader(batch_of([b"torn"]), 1, 1)
    monkeypatch.undo()
    assert raised.value.code is ErrorCode.KAFKA_STORAGE_ERROR
    assert log.log_end_offset == 1  # the failed batch was never counted
    assert [d for d, _ in told] == [tmp_path] and "short write" in told[0][1]
    (offline,) = [e for e in events if e["event"] == "log_dir_offline"]
    assert offline["log_dir"] == str(tmp_path)
    for use in (lambda: log.read(0, 1 << 20), lambda: log.append_as_leader(batch_of([b"x"]), 1, 2)):
        with pytest.raises(KafkaError) as again:
            use()
        assert again.value.code is ErrorCode.KAFKA_STORAGE_ERROR
    assert len(told) == 1  # the directory went offline once


@pytest.mark.parametrize("operation", ["fsync", "pread", "checkpoint"])
def test_any_io_error_on_a_log_takes_its_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    failures = LogDirFailureChannel()
    log = open_log(tmp_path, failures)
    log.append_as_leader(batch_of([b"a"]), 1, 0)
    log.append_as_leader(batch_of([b"b"]), 1, 1)
    log.close()
    log = open_log(tmp_path, failures)  # reopened, it keeps no appends in memory: reads go to the file

    def broken(*_args: object, **_kwargs: object) -> object:
        raise OSError(errno.EIO, "Input/output error")

    if operation == "checkpoint":
        monkeypatch.setattr("minikafka.storage.checkpoint.os.fsync", broken)
        attempt = lambda: log.checkpoint_high_watermark(1)  # noqa: E731
    else:
        module = "synced_file" if operation == "fsync" else "page_cache"
        monkeypatch.setattr(f"minikafka.storage.{module}.os.{operation}", broken)
        attempt = (lambda: log.flush(1)) if operation == "fsync" else (lambda: log.read(0, 1 << 20))  # noqa: E731
    with pytest.raises(KafkaError) as raised:
        attempt()
    monkeypatch.undo()
    assert raised.value.code is ErrorCode.KAFKA_STORAGE_ERROR
    assert failures.offline_dirs == (tmp_path,)


def test_a_log_in_a_failed_dir_is_closed_without_a_clean_shutdown_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = LogDirFailureChannel()
    log = open_log(tmp_path, failures)
    log.append_as_leader(batch_of([b"a"]), 1, 0)
    failures.mark_offline(tmp_path, "test")
    log.close(1)
    assert not (tmp_path / "topic-0" / ".clean-shutdown").exists()  # the next start scans it
    reopened = open_log(tmp_path, None)
    assert values_read(reopened.read(0, 1 << 20)) == [(0, b"a")]
    reopened.abandon()


def test_a_batch_changed_on_disk_is_never_served_and_takes_the_log_dir_offline(tmp_path: Path) -> None:
    failures = LogDirFailureChannel()
    log = open_log(tmp_path, failures)
    for i in range(3):
        log.append_as_leader(batch_of([b"value-%d" % i]), 1, i)
    log.close(3)
    segment = next((tmp_path / "topic-0").glob("*.log"))
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0x01  # inside the second batch, after a clean shutdown: no recovery scan will see it
    segment.write_bytes(bytes(data))
    log = open_log(tmp_path, failures)
    with capture_logs() as events, pytest.raises(KafkaError) as raised:
        log.read(0, 1 << 20)
    assert raised.value.code is ErrorCode.KAFKA_STORAGE_ERROR and "CRC mismatch" in raised.value.message
    (corrupt,) = [e for e in events if e["event"] == "log_batch_corrupt"]
    assert corrupt["offset"] == 1
    assert failures.offline_dirs == (tmp_path,)
