"""The active controller pauses Python's cyclic garbage collector while thousands of its proposed records await
their commit (each holds an image: every full collection walked them all in one loop turn), and resumes it once
they commit, on a leadership change, and when it stops; it never resumes a collector it did not pause."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest
from manual_raft import active_controller, registered_brokers, until

from minikafka.kraft_controller.collector_pause import PAUSE_FROM_PROPOSED_RECORDS, CollectorPause
from minikafka.kraft_controller.control.requests import (
    CreatableTopic,
    CreateTopicsRequest,
)


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def big_topic(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        (CreatableTopic(name, num_partitions=PAUSE_FROM_PROPOSED_RECORDS, replication_factor=3),)
    )


async def test_the_collector_is_paused_while_thousands_of_proposed_records_await_their_commit() -> None:
    controller, raft = await active_controller(auto_commit=True)
    try:
        await registered_brokers(controller, (1, 2, 3))
        raft.auto_commit = False
        appended = len(raft.entries)
        creation = asyncio.ensure_future(controller.submit(lambda: controller.state.create_topics(big_topic("big"))))
        await until(lambda: len(raft.entries) == appended + PAUSE_FROM_PROPOSED_RECORDS + 1, "the topic appended")
        assert not gc.isenabled()
        raft.commit(len(raft.entries))
        await until(creation.done, "the creation answered once committed")
        assert gc.isenabled()
        again = asyncio.ensure_future(controller.submit(lambda: controller.state.create_topics(big_topic("again"))))
        await until(lambda: not gc.isenabled(), "paused again")
        raft.leader_id, raft.epoch = 2, 2  # another controller leads: the proposals are dropped
        controller.handle_leader_change(2, 2, len(raft.entries))
        assert gc.isenabled()
        with pytest.raises(Exception):  # noqa: B017 - NOT_CONTROLLER, however the write learns it
            await again
    finally:
        await controller.stop()
    assert gc.isenabled()


def test_a_pause_never_resumes_a_collector_it_did_not_pause() -> None:
    gc.disable()  # another node of this process paused it, or the program runs without it
    pause = CollectorPause()
    pause.hold_while(PAUSE_FROM_PROPOSED_RECORDS)
    pause.hold_while(0)
    pause.release()
    assert not gc.isenabled()
    gc.enable()
    pause.hold_while(PAUSE_FROM_PROPOSED_RECORDS)
    assert not gc.isenabled()
    pause.hold_while(PAUSE_FROM_PROPOSED_RECORDS - 1)
    assert gc.isenabled()
