"""A real child process appends with the simulated page cache, flushes part, is SIGKILLed: only the flushed
prefix survives, exactly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minikafka.common.record_batch import iter_batches
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

pytestmark = pytest.mark.integration

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import structlog

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # stdout carries the protocol
    from minikafka.storage.log_config import LogConfig
    from minikafka.storage.partition_log import PartitionLog
    from minikafka.common.record_batch import Record, build_batch

    log = PartitionLog.open(Path(sys.argv[1]), LogConfig(segment_bytes=4096, simulate_page_cache=True), 0)
    for i in range(200):
        log.append_as_leader(build_batch([Record(b"value-%d" % i)]), 1, i)
        if i == 120:
            log.flush(i)
            print("flushed", log.log_end_offset, flush=True)
    print("ready", log.log_end_offset, log.size_bytes, log.recovery_point, flush=True)
    sys.stdin.read()  # block until killed: the parent decides when the power goes
    """
)


def test_sigkill_loses_exactly_the_unflushed_suffix(tmp_path: Path, repo_root: Path) -> None:
    directory = tmp_path / "topic-0"
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "child.log").open("w"),
        text=True,
        env=env,
    )
    try:
        flushed_line = child.stdout.readline().split()
        ready_line = child.stdout.readline().split()
        assert flushed_line[0] == "flushed" and ready_line[0] == "ready", (flushed_line, ready_line)
        # Rolls flush too (as in Kafka); the recovery point says how far everything reached the disk.
        flushed_end, end, recovery_point = int(flushed_line[1]), int(ready_line[1]), int(ready_line[3])
        assert end == 200 and flushed_end <= recovery_point < end
        on_disk = sum(p.stat().st_size for p in directory.glob("*.log"))
        assert on_disk < int(ready_line[2])  # the unflushed tail lived only in the child's memory
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    log = PartitionLog.open(directory, LogConfig(segment_bytes=4096, simulate_page_cache=True), 0)
    assert log.log_end_offset == recovery_point
    values = []
    offset = 0
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20)
        for batch in iter_batches(chunk):
            assert batch.is_valid()
            values += [record.value for record in batch.records()]
            offset = batch.next_offset
    assert values == [b"value-%d" % i for i in range(recovery_point)]
    log.abandon()
