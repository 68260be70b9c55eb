"""The Raft leader fsyncs its appends in a worker thread (RaftDriver): a follower's parked Fetch gets them before
they are durable, but a Fetch that acknowledges them reaches the core, and can move the high watermark, only once
they are."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft.core import RaftConfig
from minikafka.kraft_controller.raft.driver import RaftDriver
from minikafka.kraft_controller.raft.messages import FetchRequest, FetchResponse, VoteResponse

DEADLINE_S = 5.0


class HeldFsyncs:
    """Stands in for the worker thread: each fsync runs only when the test releases it."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Callable[[], None], asyncio.Event]] = []
        self.arrived = asyncio.Event()

    async def run(self, fsync: Callable[[], None]) -> None:
        released = asyncio.Event()
        self.waiting.append((fsync, released))
        self.arrived.set()
        await released.wait()
        fsync()

    async def release_all(self) -> None:
        await asyncio.wait_for(self.arrived.wait(), DEADLINE_S)
        self.arrived.clear()
        for _, released in self.waiting:
            released.set()
        self.waiting.clear()


async def elected_leader(tmp_path: Path, fsyncs: HeldFsyncs) -> RaftDriver:
    driver = RaftDriver(1, {1: "127.0.0.1:1", 2: "127.0.0.1:1", 3: "127.0.0.1:1"}, tmp_path, RaftConfig(), "test")
    driver.voter_addresses = {}  # no transport: every request it sends fails at once
    driver._run_fsync = fsyncs.run  # type: ignore[method-assign]
    now = driver.clock()
    driver._apply(driver.core.tick(now + RaftConfig().election_timeout_ms * 10))  # stands for election
    for _ in range(2):  # the pre-vote, then the vote
        epoch = driver.core.epoch
        driver._apply(driver.core.handle_response(2, VoteResponse(ErrorCode.NONE, -1, epoch, True), driver.clock()))
    assert driver.core.is_leader
    return driver


async def wait_until(condition: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0)

    await asyncio.wait_for(poll(), DEADLINE_S)


async def test_a_follower_gets_unflushed_entries_but_its_acknowledgement_waits_for_the_fsync(tmp_path: Path) -> None:
    fsyncs = HeldFsyncs()
    driver = await elected_leader(tmp_path, fsyncs)
    epoch = driver.core.epoch
    await fsyncs.release_all()  # the epoch's marker (offset 0)
    first = await driver.serve(2, FetchRequest(2, epoch, 0, 0, "test"))
    assert isinstance(first, FetchResponse) and [e.offset for e in first.entries] == [0]

    # The follower's next fetch (offset 1) acknowledges the marker and parks; a proposal answers it at once,
    # while the proposal's fsync is still held.
    parked = asyncio.create_task(driver.serve(2, FetchRequest(2, epoch, 1, epoch, "test")))
    await wait_until(lambda: driver.core.high_watermark == 1)
    assert await driver.propose([b"a", b"b"]) == 1
    answer = await asyncio.wait_for(parked, DEADLINE_S)
    assert isinstance(answer, FetchResponse) and [e.offset for e in answer.entries] == [1, 2]

    # Its acknowledgement of them is not handed to the core until they are durable on the leader.
    acknowledgement = asyncio.create_task(driver.serve(2, FetchRequest(2, epoch, 3, epoch, "test")))
    for _ in range(20):  # loop turns, not time: what this shows is that nothing happens in them
        await asyncio.sleep(0)
    assert not acknowledgement.done() and driver.core.high_watermark == 1
    assert driver.core.voter_progress(2).fetch_offset == 1  # type: ignore[union-attr]
    await fsyncs.release_all()
    await wait_until(lambda: driver.core.high_watermark == 3)
    acknowledgement.cancel()
    await driver.stop(resign=False)
    # What the worker fsynced is on disk: a restart reads it back.
    assert [e.offset for e in RaftDriver(1, {1: "127.0.0.1:1"}, tmp_path, RaftConfig(), "test").core.entries] == [
        0,
        1,
        2,
    ]


async def test_a_lone_voter_fsyncs_on_its_loop_before_committing(tmp_path: Path) -> None:
    fsyncs = HeldFsyncs()
    driver = RaftDriver(1, {1: "127.0.0.1:1"}, tmp_path, RaftConfig(), "test")
    driver._run_fsync = fsyncs.run  # type: ignore[method-assign]
    driver._apply(driver.core.tick(driver.clock() + RaftConfig().election_timeout_ms * 10))
    assert driver.core.is_leader
    await driver.propose([b"a"])
    assert driver.core.high_watermark == 2  # committed at once: its append was durable first
    assert not fsyncs.waiting and not driver.file_log.log.active_segment.dirty
    await driver.stop(resign=False)
