"""The simulated disk under the shipped logs: a power loss keeps what was fsynced (including by the Raft driver's
detached fsync) and nothing more; a crashed node can no longer make anything durable."""

from __future__ import annotations

import contextvars
import random
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from minikafka.common.node_environment import SimulatedNode, enter_simulated_node
from minikafka.kraft_controller.raft.file_log import RaftFileLog
from minikafka.kraft_controller.raft.messages import LogEntry
from minikafka.sim.disk import SimDisk
from minikafka.sim.network import SimNetwork
from minikafka.storage.checkpoint import write_atomically

T = TypeVar("T")


def as_node(disk: SimDisk, work: Callable[[], T]) -> T:
    context = contextvars.Context()
    context.run(enter_simulated_node, SimulatedNode(1, SimNetwork(random.Random(0)), disk))
    return context.run(work)


def entries(start: int, count: int, epoch: int = 1) -> list[LogEntry]:
    return [LogEntry(offset, epoch, f"e{offset}".encode(), False) for offset in range(start, start + count)]


def test_a_power_loss_keeps_the_raft_entries_fsynced_and_loses_the_rest(tmp_path: Path) -> None:
    disk = SimDisk()

    def write() -> None:
        log = RaftFileLog(tmp_path, 1 << 20, 0)
        log.append(entries(0, 3), 0)  # fsynced at once (a follower's append)
        log.append(entries(3, 2), 0, flush=False)  # the leader's: durable once its detached fsync ran
        fsync, then = log.detached_fsync(0)
        fsync()
        then()
        log.append(entries(5, 4), 0, flush=False)  # never fsynced

    as_node(disk, write)
    disk.fail("the node crashed")
    disk.lose_power()
    reopened = RaftFileLog(tmp_path, 1 << 20, 0)
    assert [entry.offset for entry in reopened.load_entries()] == [0, 1, 2, 3, 4]


def test_a_crashed_node_cannot_fsync_or_replace_a_checkpoint(tmp_path: Path) -> None:
    disk = SimDisk()
    checkpoint = tmp_path / "quorum-state"
    as_node(disk, lambda: write_atomically(checkpoint, "before\n"))
    disk.fail("the node crashed")
    with pytest.raises(OSError, match="crashed"):
        as_node(disk, lambda: write_atomically(checkpoint, "after\n"))
    assert checkpoint.read_text() == "before\n"


def test_a_kill_keeps_what_was_written(tmp_path: Path) -> None:
    """Without a power loss (the OS's page cache survives a killed process) nothing written is lost."""
    disk = SimDisk()
    as_node(disk, lambda: RaftFileLog(tmp_path, 1 << 20, 0).append(entries(0, 4), 0, flush=False))
    disk.fail("the node crashed")
    disk.close_all()
    assert [entry.offset for entry in RaftFileLog(tmp_path, 1 << 20, 0).load_entries()] == [0, 1, 2, 3]
