"""A controller replays a big commit, and the active one applies and encodes a big write, a slice per loop turn: the
event loop is never held for the whole of it, the records still replay in order to the image a replay in one go
builds, a high watermark heard meanwhile waits for the records before it, and a leadership change between two
slices of a write fails its caller and leaves nothing proposed. A change over every partition of a broker (its
fencing) is generated a slice per loop turn too."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from manual_raft import CONFIG, ManualRaft, active_controller
from structlog.testing import capture_logs

from minikafka.common.config import load_config
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.control import replication_control
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.replication_control import CHANGES_PER_SLICE
from minikafka.kraft_controller.control.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreatableTopic,
    CreateTopicsRequest,
)
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    BrokerStatus,
    ConfigRecord,
    ConfigResourceType,
    Endpoint,
    Partition,
    Record,
    Topic,
    encode_record,
)
from minikafka.kraft_controller.quorum_controller import (
    OPERATIONS_PER_TURN,
    PROPOSE_RECORDS_PER_TURN,
    REPLAY_RECORDS_PER_TURN,
    NotControllerError,
    QuorumController,
)
from minikafka.kraft_controller.raft.messages import LogEntry

PARTITIONS = 2 * REPLAY_RECORDS_PER_TURN + 100  # three slices


def big_topic() -> list[Record]:
    topic_id = uuid.UUID(int=7)
    records: list[Record] = [Topic(name="big", topic_id=topic_id)]
    records += [
        Partition(topic_id=topic_id, partition_id=index, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1 + index % 3)
        for index in range(PARTITIONS)
    ]
    return records


def follower() -> QuorumController:
    raft = ManualRaft()
    raft.leader_id = 2  # another node leads: this one only replays
    controller = QuorumController(load_config(ControllerConfig, CONFIG), raft, clock=lambda: 0)
    controller.handle_leader_change(1, 2, 0)
    return controller


def entries(records: list[Record], base_offset: int = 1) -> list[LogEntry]:
    return [LogEntry(offset, 1, encode_record(record)) for offset, record in enumerate(records, base_offset)]


async def test_a_big_commit_is_replayed_a_slice_per_loop_turn_and_in_order() -> None:
    records = big_topic()
    controller = follower()
    controller.handle_commit(entries(records))
    # Control entries after the records committed too: that must not pass for the records being replayed.
    controller.handle_high_watermark(len(records) + 3)
    assert controller.replayed_offset == REPLAY_RECORDS_PER_TURN  # offsets 1..500: the first slice only
    assert len(controller.state.committed.topics_by_name["big"].partitions) == REPLAY_RECORDS_PER_TURN - 1
    deadline = asyncio.get_running_loop().time() + 5
    while controller.replayed_offset < len(records) + 2 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0)
    assert controller.replayed_offset == len(records) + 2  # the control entries after the last record too
    expected = MetadataImage.from_records(records, len(records))
    assert controller.state.committed.topics_by_name["big"].partitions == expected.topics_by_name["big"].partitions
    await controller.stop()


def test_without_a_running_loop_the_whole_commit_is_replayed_at_once() -> None:
    records = big_topic()
    controller = follower()
    controller.handle_commit(entries(records))
    assert controller.replayed_offset == len(records)
    assert len(controller.state.committed.topics_by_name["big"].partitions) == PARTITIONS


async def three_brokers(controller: QuorumController) -> None:
    for broker_id in (1, 2, 3):
        request = BrokerRegistrationRequest(broker_id, f"incarnation-{broker_id}", (Endpoint("PLAINTEXT", "h", 1),))
        registered = await controller.submit(lambda r=request: controller.state.register_broker(r, 0))  # type: ignore[misc]
        beat = BrokerHeartbeatRequest(broker_id, registered.broker_epoch, current_metadata_offset=10**6)
        await controller.submit(lambda b=beat: controller.state.broker_heartbeat(b, 0))  # type: ignore[misc]


def create_big(controller: QuorumController) -> asyncio.Future:  # type: ignore[type-arg]
    request = CreateTopicsRequest(
        (CreatableTopic("big", num_partitions=2 * PROPOSE_RECORDS_PER_TURN, replication_factor=3),)
    )
    return asyncio.ensure_future(controller.submit(lambda: controller.state.create_topics(request)))


async def test_a_big_write_is_proposed_in_slices_and_appended_whole() -> None:
    controller, raft = await active_controller(auto_commit=True)
    try:
        await three_brokers(controller)
        appends = len(raft.appends)
        created = await asyncio.wait_for(create_big(controller), 5)
        assert created.topics[0].error_code == ErrorCode.NONE
        assert raft.appends[appends] == 2 * PROPOSE_RECORDS_PER_TURN + 1  # one append: the topic and its partitions
        assert len(controller.state.committed.topics_by_name["big"].partitions) == 2 * PROPOSE_RECORDS_PER_TURN
    finally:
        await controller.stop()


async def test_a_leadership_change_between_slices_fails_the_write_and_drops_its_proposals() -> None:
    controller, raft = await active_controller(auto_commit=True)
    try:
        await three_brokers(controller)
        appends = len(raft.appends)
        created = create_big(controller)
        deadline = asyncio.get_running_loop().time() + 5
        while not controller.state._proposed and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0)  # until the first slice is applied
        assert len(controller.state._proposed) == PROPOSE_RECORDS_PER_TURN
        raft.leader_id, raft.epoch = 2, 2
        controller.handle_leader_change(2, 2, len(raft.entries))
        with pytest.raises(NotControllerError):
            await asyncio.wait_for(created, 5)
        assert len(raft.appends) == appends  # nothing of it appended
        assert (
            controller.state.image is controller.state.committed and "big" not in controller.state.image.topics_by_name
        )
    finally:
        await controller.stop()


def count_loop_turns() -> tuple[list[int], asyncio.Future[None]]:
    """A task counting the loop's turns (turns[0]); cancel the future when done."""
    turns = [0]

    async def count() -> None:
        while True:
            turns[0] += 1
            await asyncio.sleep(0)

    return turns, asyncio.ensure_future(count())


async def test_a_burst_of_writes_is_generated_a_bounded_number_a_loop_turn() -> None:
    controller, _raft = await active_controller(auto_commit=True)
    turns, counter = count_loop_turns()
    try:
        generated_in: list[int] = []

        def write() -> ControllerResult[None]:
            generated_in.append(turns[0])
            return ControllerResult((), None)

        burst = 2 * OPERATIONS_PER_TURN + 50  # as a leader's AlterPartition for each of thousands of partitions
        await asyncio.wait_for(asyncio.gather(*(controller.submit(write) for _ in range(burst))), 5)
        per_turn = [generated_in.count(turn) for turn in set(generated_in)]
        assert sum(per_turn) == burst and max(per_turn) <= OPERATIONS_PER_TURN and len(per_turn) >= 3
    finally:
        counter.cancel()
        await controller.stop()


async def test_a_fencing_over_many_partitions_is_generated_a_slice_per_loop_turn(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    controller, _raft = await active_controller(auto_commit=True)
    turns, counter = count_loop_turns()
    built_in: list[int] = []
    build = replication_control.build_partition_change

    def counting_build(*args, **kwargs):  # type: ignore[no-untyped-def]
        built_in.append(turns[0])
        return build(*args, **kwargs)

    try:
        await three_brokers(controller)
        await asyncio.wait_for(create_big(controller), 5)
        monkeypatch.setattr(replication_control, "build_partition_change", counting_build)
        registration = controller.state.image.broker(1)
        assert registration is not None
        beat = BrokerHeartbeatRequest(1, registration.broker_epoch, 10**6, want_fence=True)
        answer = await asyncio.wait_for(controller.submit(lambda: controller.state.broker_heartbeat(beat, 0)), 5)
        assert answer.is_fenced
        per_turn = [built_in.count(turn) for turn in set(built_in)]
        assert sum(per_turn) == 2 * PROPOSE_RECORDS_PER_TURN  # broker 1 is in every ISR
        assert max(per_turn) <= CHANGES_PER_SLICE
        image = controller.state.committed
        assert image.broker(1).status is BrokerStatus.FENCED  # type: ignore[union-attr]
        assert all(1 not in p.isr and p.leader != 1 for _, _, p in image.partitions())
    finally:
        counter.cancel()
        await controller.stop()


async def test_writes_of_many_records_are_generated_a_bounded_number_of_records_a_loop_turn() -> None:
    # As the leaders' AlterPartition calls of up to 200 changes each after a broker's restart.
    controller, _raft = await active_controller(auto_commit=True)
    turns, counter = count_loop_turns()
    try:
        generated_in: list[int] = []
        size = PROPOSE_RECORDS_PER_TURN // 2

        def write(first: int) -> ControllerResult[None]:
            generated_in.append(turns[0])
            records = tuple(ConfigRecord(ConfigResourceType.BROKER, "", f"k{first + i}", "v") for i in range(size))
            return ControllerResult(records, None)

        writes = 6
        calls = [controller.submit(lambda n=n: write(n * size)) for n in range(writes)]  # type: ignore[misc]
        await asyncio.wait_for(asyncio.gather(*calls), 5)
        per_turn = [generated_in.count(turn) for turn in set(generated_in)]
        assert sum(per_turn) == writes and max(per_turn) <= 2
    finally:
        counter.cancel()
        await controller.stop()


async def test_the_start_up_before_start_is_not_logged_as_a_stall() -> None:
    now = [0]
    raft = ManualRaft()
    controller = QuorumController(load_config(ControllerConfig, CONFIG), raft, clock=lambda: now[0])
    now[0] = 8_000  # the log opened and the server started meanwhile
    with capture_logs() as logs:
        controller.start()
        for _ in range(3):
            await asyncio.sleep(0)
        await controller.stop()
    assert [e for e in logs if e["event"] == "controller_stalled"] == []
