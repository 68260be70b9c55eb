"""A write error on the metadata log is fatal for its node, as in Kafka: the driver tells its process (which exits),
and from then on answers nothing, so no vote or acknowledgement ever leaves without the write behind it."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import grpc
import pytest

from minikafka.kraft_controller.raft.core import DivergedBelowHighWatermark, RaftConfig
from minikafka.kraft_controller.raft.driver import (
    MetadataLogDiverged,
    MetadataLogFailed,
    NotLeaderError,
    RaftDriver,
    RaftService,
)
from minikafka.kraft_controller.raft.messages import VoteRequest
from minikafka.pb import raft_pb2


class Commits:
    def __init__(self) -> None:
        self.offsets: list[int] = []

    def handle_commit(self, entries: list) -> None:
        self.offsets.extend(e.offset for e in entries)

    def handle_high_watermark(self, high_watermark: int) -> None:
        pass

    def handle_leader_change(self, epoch: int, leader_id: int | None, epoch_start_offset: int) -> None:
        pass

    def handle_snapshot(self, data: bytes, end_offset: int) -> None:
        pass


def disk_full(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


async def test_a_vote_whose_persist_fails_is_never_answered_and_the_process_is_told(tmp_path: Path) -> None:
    fatal: list[OSError] = []
    driver = RaftDriver(2, {1: "127.0.0.1:1", 2: "127.0.0.1:1", 3: "127.0.0.1:1"}, tmp_path, RaftConfig(), "test",
                        on_fatal=fatal.append)  # fmt: skip
    driver.voter_addresses = {}
    driver.file_log.save_quorum_state = disk_full  # type: ignore[method-assign]

    with pytest.raises(MetadataLogFailed):
        await driver.serve(1, VoteRequest(candidate_epoch=1, candidate_id=1, last_offset_epoch=0, last_offset=0,
                                          cluster_id="test"))  # fmt: skip
    assert [e.errno for e in fatal] == [errno.ENOSPC]
    # Nothing more is answered, and the fatal error is told once.
    with pytest.raises(MetadataLogFailed):
        await driver.serve(3, VoteRequest(2, 3, 0, 0, "test"))
    assert len(fatal) == 1
    await driver.stop(resign=True)  # its resignation is dropped, not sent
    assert driver.file_log.load_quorum_state() is None  # the vote never reached the disk


async def test_a_leader_whose_append_fails_stops_proposing(tmp_path: Path) -> None:
    fatal: list[OSError] = []
    driver = RaftDriver(1, {1: "127.0.0.1:1"}, tmp_path, RaftConfig(), "test", on_fatal=fatal.append)
    commits = Commits()
    driver.add_listener(commits)
    driver._apply(driver.core.tick(driver.clock() + RaftConfig().election_timeout_ms * 10))
    assert driver.core.is_leader
    driver.file_log.append = disk_full  # type: ignore[method-assign]

    with pytest.raises(NotLeaderError, match="metadata log failed"):
        await driver.propose([b"a"])
    assert [e.errno for e in fatal] == [errno.ENOSPC]
    await asyncio.sleep(0)  # the listeners would hear of a commit in the next callback
    assert commits.offsets == []  # the entry that was never written is never applied
    await driver.stop(resign=False)


class AbortingContext:
    """grpc.aio's servicer context as far as abort goes: it ends the call with a status."""

    def __init__(self) -> None:
        self.status: tuple[object, str] | None = None

    async def abort(self, code: object, details: str) -> None:
        self.status = (code, details)
        raise RuntimeError("aborted")


async def test_the_raft_service_answers_a_failed_node_with_unavailable(tmp_path: Path) -> None:
    driver = RaftDriver(2, {1: "127.0.0.1:1", 2: "127.0.0.1:1", 3: "127.0.0.1:1"}, tmp_path, RaftConfig(), "test")
    driver.voter_addresses = {}
    driver.file_log.save_quorum_state = disk_full  # type: ignore[method-assign]
    context = AbortingContext()
    request = raft_pb2.VoteRequest(candidate_epoch=1, candidate_id=1, last_offset_epoch=0, last_offset=0,
                                   cluster_id="test")  # fmt: skip
    with pytest.raises(RuntimeError, match="aborted"):
        await RaftService(driver).Vote(request, context)
    assert context.status is not None and context.status[0] == grpc.StatusCode.UNAVAILABLE
    await driver.stop(resign=False)


async def test_a_truncation_below_the_high_watermark_halts_the_node(tmp_path: Path) -> None:
    """The core's DivergedBelowHighWatermark is fatal as a write error is: told once, then nothing answered."""
    fatal: list[Exception] = []
    driver = RaftDriver(2, {1: "127.0.0.1:1", 2: "127.0.0.1:1", 3: "127.0.0.1:1"}, tmp_path, RaftConfig(), "test",
                        on_fatal=fatal.append)  # fmt: skip
    driver.voter_addresses = {}
    driver._apply([DivergedBelowHighWatermark(2, 4)])  # noqa: SLF001 - as a Fetch answer's step returns it
    assert [type(e) for e in fatal] == [MetadataLogDiverged]
    assert "diverged below the high watermark" in driver.failure_reason
    with pytest.raises(MetadataLogFailed):
        await driver.serve(3, VoteRequest(2, 3, 0, 0, "test"))
    await driver.stop(resign=True)
