"""The active controller's queue does not wait for a commit before the next write: later writes are generated
against the proposed records, callers are answered on commit, and a leadership change drops what was proposed."""

from __future__ import annotations

import asyncio

import pytest
from manual_raft import active_controller

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreatableTopic,
    CreateTopicsRequest,
    ReplicaAssignment,
)
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Endpoint, decode_record
from minikafka.kraft_controller.quorum_controller import NotControllerError, QuorumController


async def until(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + 5  # the default append linger is 5 ms
    while asyncio.get_running_loop().time() < deadline:
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"never happened: {what}")


def register(controller: QuorumController, broker_id: int) -> asyncio.Future:  # type: ignore[type-arg]
    request = BrokerRegistrationRequest(broker_id, f"incarnation-{broker_id}", (Endpoint("PLAINTEXT", "h", 1),))
    return asyncio.ensure_future(controller.submit(lambda: controller.state.register_broker(request, 0)))


def heartbeat(controller: QuorumController, broker_id: int, epoch: int) -> asyncio.Future:  # type: ignore[type-arg]
    request = BrokerHeartbeatRequest(broker_id, epoch, current_metadata_offset=epoch)
    return asyncio.ensure_future(controller.submit(lambda: controller.state.broker_heartbeat(request, 0)))


def heartbeat_at(controller: QuorumController, broker_id: int, epoch: int, metadata_offset: int) -> asyncio.Future:  # type: ignore[type-arg]
    request = BrokerHeartbeatRequest(broker_id, epoch, current_metadata_offset=metadata_offset)
    return asyncio.ensure_future(controller.submit(lambda: controller.state.broker_heartbeat(request, 0)))


def create(controller: QuorumController, name: str, broker_id: int) -> asyncio.Future:  # type: ignore[type-arg]
    request = CreateTopicsRequest((CreatableTopic(name, assignments=(ReplicaAssignment(0, (broker_id,)),)),))
    return asyncio.ensure_future(controller.submit(lambda: controller.state.create_topics(request)))


async def test_writes_are_appended_before_earlier_ones_commit_and_answered_on_commit() -> None:
    controller, raft = await active_controller()
    try:
        registered = register(controller, 7)  # its record will be offset 1: broker epoch 1
        unfenced = heartbeat(controller, 7, 1)
        # Placed on broker 7, registered by a record not committed yet; the duplicate is judged against the first.
        first, again = create(controller, "t", 7), create(controller, "t", 7)
        await until(lambda: len(raft.entries) > 1, "the writes were appended (one batch, after the linger)")
        # The duplicate makes no record, but it was judged against uncommitted ones: it waits for them.
        assert not registered.done() and not unfenced.done() and not first.done() and not again.done()
        assert not controller.state.committed.topics_by_name
        await until(lambda: len(raft.entries) > 1, "the writes were appended (one batch, after the linger)")
        assert len(raft.appends) == 1  # the registration, the unfencing and the topic: one append
        data = [e for e in raft.entries if not e.control]
        controller.handle_commit(data)
        controller.handle_high_watermark(len(raft.entries))
        assert (await asyncio.wait_for(registered, 1)).broker_epoch == 1  # the offset of its registration record
        assert not (await asyncio.wait_for(unfenced, 1)).is_fenced
        assert (await asyncio.wait_for(first, 1)).topics[0].error_code == ErrorCode.NONE
        assert (await asyncio.wait_for(again, 1)).topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        assert "t" in controller.state.committed.topics_by_name
        assert controller.state.image is controller.state.committed  # nothing left in flight
    finally:
        await controller.stop()


async def test_a_leadership_change_fails_waiting_callers_and_drops_the_proposed_records() -> None:
    controller, raft = await active_controller()
    try:
        registered = register(controller, 7)
        await until(lambda: len(raft.entries) > 1, "the registration was appended")
        assert controller.state.image.broker(7) is not None and controller.state.committed.broker(7) is None
        raft.epoch, raft.leader_id = 2, 2
        controller.handle_leader_change(2, 2, len(raft.entries))
        with pytest.raises(NotControllerError):
            await asyncio.wait_for(registered, 1)
        assert controller.state.image is controller.state.committed
        assert controller.state.image.broker(7) is None
    finally:
        await controller.stop()


async def test_writes_queued_together_share_one_raft_append_and_each_caller_gets_its_own_offsets() -> None:
    controller, raft = await active_controller()
    try:
        # Arriving within the append linger: generated one by one, appended together.
        registrations = [register(controller, broker_id) for broker_id in (7, 8, 9)]
        again = register(controller, 7)  # the same incarnation again: a record of its own, a new epoch
        await until(lambda: len(raft.entries) > 1, "the writes were appended")
        assert raft.appends == [4]
        assert not any(r.done() for r in registrations)  # answered on commit, not on append
        controller.handle_commit([e for e in raft.entries if not e.control])
        controller.handle_high_watermark(len(raft.entries))
        epochs = [(await asyncio.wait_for(r, 1)).broker_epoch for r in registrations]
        assert epochs == [1, 2, 3]  # each broker epoch is the offset of its own record
        assert (await asyncio.wait_for(again, 1)).broker_epoch == 4
        assert controller.state.committed.broker(7).broker_epoch == 4
    finally:
        await controller.stop()


async def test_an_answer_without_records_waits_for_the_pending_writes_it_was_generated_from() -> None:
    controller, raft = await active_controller()
    try:
        registered = register(controller, 7)
        await until(lambda: len(raft.entries) > 1, "the registration was appended")
        # Judged against the uncommitted registration (epoch 1) and making no record of its own (not caught up).
        stay_fenced = heartbeat_at(controller, 7, epoch=1, metadata_offset=0)
        for _ in range(20):
            await asyncio.sleep(0)
        assert not stay_fenced.done()  # answered now, a failover could leave the broker with an epoch nobody knows
        raft.epoch, raft.leader_id = 2, 2
        controller.handle_leader_change(2, 2, len(raft.entries))
        for write in (registered, stay_fenced):
            with pytest.raises(NotControllerError):
                await asyncio.wait_for(write, 1)
    finally:
        await controller.stop()


async def test_an_answer_without_records_is_given_on_the_commit_of_the_writes_before_it() -> None:
    controller, raft = await active_controller()
    try:
        registered = register(controller, 7)
        await until(lambda: len(raft.entries) > 1, "the registration was appended")
        stay_fenced = heartbeat_at(controller, 7, epoch=1, metadata_offset=0)
        for _ in range(20):
            await asyncio.sleep(0)
        assert not stay_fenced.done()
        raft.commit(len(raft.entries))
        assert (await asyncio.wait_for(registered, 1)).broker_epoch == 1
        assert (await asyncio.wait_for(stay_fenced, 1)).is_fenced
        # Nothing pending now: the next answer without records is given at once.
        assert (await asyncio.wait_for(heartbeat_at(controller, 7, epoch=1, metadata_offset=0), 1)).is_fenced
    finally:
        await controller.stop()


async def test_a_write_on_an_idle_quorum_is_appended_at_once_and_the_writes_behind_it_linger() -> None:
    # A linger far longer than the test: an append seen here did not wait for it.
    controller, raft = await active_controller(linger_ms=600000)
    try:
        first = register(controller, 7)
        await until(lambda: raft.appends == [1], "the write on an idle quorum was appended without lingering")
        behind = [register(controller, broker_id) for broker_id in (8, 9)]
        for _ in range(20):
            await asyncio.sleep(0)
        assert raft.appends == [1]  # their batch started behind the uncommitted append: it lingers
        controller.handle_commit(raft.entries[1:])
        controller.handle_high_watermark(len(raft.entries))
        assert (await asyncio.wait_for(first, 1)).broker_epoch == 1
        for _ in range(20):
            await asyncio.sleep(0)
        assert raft.appends == [1] and not any(r.done() for r in behind)  # the commit does not cut the linger
    finally:
        await controller.stop()


async def test_a_batch_started_behind_an_uncommitted_append_is_appended_when_its_linger_passes() -> None:
    controller, raft = await active_controller(linger_ms=20)
    try:
        writes = [register(controller, 7)]
        await until(lambda: raft.appends == [1], "the first write was appended at once")
        writes += [register(controller, broker_id) for broker_id in (8, 9)]
        await until(lambda: raft.appends == [1, 2], "the two writes behind it were appended together")
        controller.handle_commit(raft.entries[1:])
        controller.handle_high_watermark(len(raft.entries))
        assert [(await asyncio.wait_for(w, 1)).broker_epoch for w in writes] == [1, 2, 3]
    finally:
        await controller.stop()


async def test_a_write_that_never_commits_times_out() -> None:
    controller, raft = await active_controller()
    now = [0]
    controller.clock = lambda: now[0]
    try:
        registered = register(controller, 7)
        await until(lambda: len(raft.entries) > 1, "the registration was appended")
        assert not registered.done()
        now[0] = 10_000  # the commit timeout (10 s) has passed: the next tick answers
        await until(registered.done, "the caller was answered")
        with pytest.raises(KafkaError) as raised:
            registered.result()
        assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT
        raft.commit(len(raft.entries))  # a late commit still replays; nobody is left to answer
        assert controller.state.committed.broker(7) is not None
    finally:
        await controller.stop()


async def test_the_active_controller_commits_its_proposals_to_the_image_a_follower_replays_from_the_log() -> None:
    controller, raft = await active_controller()
    try:
        writes = [register(controller, broker_id) for broker_id in (7, 8, 9)]
        await until(lambda: len(raft.entries) == 4, "the registrations were appended")
        writes += [heartbeat(controller, broker_id, epoch) for broker_id, epoch in ((7, 1), (8, 2))]
        writes += [create(controller, "t", 7), create(controller, "u", 8)]
        await until(lambda: len(raft.entries) > 4, "the unfencings and creations were appended")
        raft.commit(2)  # part of the first append, then the rest: the image is adopted record by record
        raft.commit(len(raft.entries))
        await asyncio.wait_for(asyncio.gather(*writes), 1)
        follower = MetadataImage()
        for entry in raft.entries:
            if not entry.control:
                follower = follower.replay(decode_record(entry.data), entry.offset)
        assert controller.state.committed == follower
        assert controller.state.image is controller.state.committed
    finally:
        await controller.stop()
