"""Torn writes: a power loss that keeps part of a file's unflushed bytes (the sectors the disk had written), which
may end inside a record batch or an index entry. Recovery cuts the torn batch off, as Kafka's LogSegment.recover
does, rebuilds the index, and the log takes appends again; the Raft log likewise; a seeded run with torn writes
holds."""

from __future__ import annotations

import contextvars
import random
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from structlog.testing import capture_logs

from minikafka.common.node_environment import SimulatedNode, enter_simulated_node
from minikafka.common.record_batch import Record, build_batch, iter_batches
from minikafka.kraft_controller.raft.file_log import RaftFileLog
from minikafka.kraft_controller.raft.messages import LogEntry
from minikafka.sim.disk import SimDisk
from minikafka.sim.network import SimNetwork
from minikafka.sim.world import SimulationSettings, simulate_seed
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

T = TypeVar("T")
CONFIG = LogConfig(segment_bytes=1 << 20, index_interval_bytes=1)  # an index entry for every batch
SHORT = 5  # bytes of each file's unflushed tail that never reached the disk


class AllButTheLastBytes(random.Random):
    """The torn-write draws of a power loss that tears every file: the shape "a prefix" (2 of 0-3), then a prefix
    of all but the last SHORT unflushed bytes, inside the last batch or index entry written."""

    def randrange(self, start: int, *_: object) -> int:  # type: ignore[override]
        return 2 if start == 4 else max(start - 1 - SHORT, 0)


def as_node(disk: SimDisk, work: Callable[[], T]) -> T:
    context = contextvars.Context()
    context.run(enter_simulated_node, SimulatedNode(1, SimNetwork(random.Random(0)), disk))
    return context.run(work)


def batch(values: list[bytes]) -> bytes:
    return build_batch([Record(value) for value in values])


def values(log: PartitionLog) -> list[bytes]:
    return [r.value or b"" for b in iter_batches(log.read(0, 1 << 20)) if b.is_valid() for r in b.records()]


def test_a_torn_batch_and_index_entry_at_the_tail_are_cut_off_at_recovery(tmp_path: Path) -> None:
    disk = SimDisk()
    directory = tmp_path / "sim-0"

    def write() -> int:
        log = PartitionLog.open(directory, CONFIG, 0)
        for n in range(3):
            log.append_as_leader(batch([b"durable-%d" % n]), 1, 0)
        log.flush(0)
        for n in range(3):
            log.append_as_leader(batch([b"unflushed-%d" % n]), 1, 0)
        return log.segments[0].size

    written = as_node(disk, write)
    disk.fail("the node crashed")
    tails = disk.lose_power(AllButTheLastBytes())
    assert {tail.name.rsplit(".", 1)[1] for tail in tails if tail.torn} == {"log", "index"}
    segment_file = directory / "00000000000000000000.log"
    assert segment_file.stat().st_size == written - SHORT  # the last batch torn on disk
    with capture_logs() as events:
        log = PartitionLog.open(directory, CONFIG, 0)
    recovered = [e for e in events if e["event"] == "log_recovered"]
    assert recovered and recovered[0]["truncated_bytes"] > 0
    assert "truncated batch" in str(recovered[0]["segments"][0]["reason"])
    assert log.log_end_offset == 5
    assert segment_file.stat().st_size == log.segments[0].size < written - SHORT  # the torn bytes are gone
    log.append_as_leader(batch([b"after"]), 2, 0)  # lands where the torn batch began
    log.close()
    again = PartitionLog.open(directory, CONFIG, 0)
    assert values(again) == [b"durable-0", b"durable-1", b"durable-2", b"unflushed-0", b"unflushed-1", b"after"]
    assert again.read(5, 1 << 20)[:8] == (5).to_bytes(8, "big")  # found through the rebuilt index
    again.close()


def test_a_torn_raft_log_tail_is_cut_off_and_the_whole_entries_before_it_kept(tmp_path: Path) -> None:
    disk = SimDisk()

    def write() -> None:
        log = RaftFileLog(tmp_path, 1 << 20, 0)
        log.append([LogEntry(n, 1, b"e%d" % n, False) for n in range(3)], 0)  # fsynced
        log.append([LogEntry(n, 1, b"e%d" % n, False) for n in range(3, 5)], 0, flush=False)
        log.append([LogEntry(n, 1, b"e%d" % n, False) for n in range(5, 7)], 0, flush=False)  # torn

    as_node(disk, write)
    disk.fail("the node crashed")
    assert any(tail.torn for tail in disk.lose_power(AllButTheLastBytes()))
    reopened = RaftFileLog(tmp_path, 1 << 20, 0)
    assert [entry.offset for entry in reopened.load_entries()] == [0, 1, 2, 3, 4]
    reopened.append([LogEntry(5, 2, b"new", False)], 0)
    assert [(e.offset, e.epoch) for e in RaftFileLog(tmp_path, 1 << 20, 0).load_entries()][-2:] == [(4, 1), (5, 2)]


def test_a_seeded_run_with_torn_writes_holds() -> None:
    settings = SimulationSettings(
        3, duration_s=15.0, faults=("lose-unflushed", "controller-kill"), power_loss=True, torn_writes=True
    )
    result = simulate_seed(settings)
    assert result.violation is None, result.violation
    assert result.observed["torn_files"] > 0
