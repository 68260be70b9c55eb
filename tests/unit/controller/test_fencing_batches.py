"""A fencing of a broker in thousands of ISRs is generated a slice a loop turn and handed to Raft in appends of at
most MAX_RECORDS_PER_BATCH records, a loop turn each; a heartbeat of another broker sent meanwhile is answered at
once, before the fencing commits (it reads only committed state and changes nothing)."""

from __future__ import annotations

import asyncio

from manual_raft import active_controller, registered_brokers, until

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.requests import (
    BrokerHeartbeatRequest,
    CreatableTopic,
    CreateTopicsRequest,
)
from minikafka.kraft_controller.metadata.records import BrokerStatus
from minikafka.kraft_controller.quorum_controller import MAX_RECORDS_PER_BATCH, QuorumController
from minikafka.kraft_controller.service import ControllerService
from minikafka.pb import controller_pb2

PARTITIONS = 2 * MAX_RECORDS_PER_BATCH + 300  # broker 1 is in every ISR: its fencing writes PARTITIONS + 1 records


async def three_brokers_and_a_topic(controller: QuorumController) -> dict[int, int]:
    epochs = await registered_brokers(controller, (1, 2, 3))
    topic = CreateTopicsRequest((CreatableTopic("big", num_partitions=PARTITIONS, replication_factor=3),))
    await controller.submit(lambda: controller.state.create_topics(topic))
    return epochs


async def test_a_big_fencing_goes_to_raft_in_bounded_batches_and_heartbeats_are_answered_meanwhile() -> None:
    controller, raft = await active_controller(auto_commit=True)
    service = ControllerService(controller, {1: "127.0.0.1:1"}, lambda: None, "cluster")  # type: ignore[arg-type,return-value]
    try:
        epochs = await three_brokers_and_a_topic(controller)
        raft.auto_commit = False  # from here on nothing commits until the test says so
        appends = len(raft.appends)
        want_fence = BrokerHeartbeatRequest(1, epochs[1], current_metadata_offset=10**9, want_fence=True)
        fencing = asyncio.ensure_future(controller.submit(lambda: controller.state.broker_heartbeat(want_fence, 0)))
        await until(lambda: len(controller.state._proposed) > 0, "the fencing's first slices are proposed")
        beat = controller_pb2.BrokerHeartbeatRequest(broker_id=2, broker_epoch=epochs[2], current_metadata_offset=1)
        heartbeat = asyncio.ensure_future(service.BrokerHeartbeat(beat, None))
        await until(heartbeat.done, "broker 2's heartbeat answered")
        assert heartbeat.result().error_code == ErrorCode.NONE and not heartbeat.result().is_fenced
        assert len(controller.state._proposed) < PARTITIONS + 1  # answered while the fencing was still generated
        await until(lambda: sum(raft.appends[appends:]) == PARTITIONS + 1, "the whole fencing appended")
        assert raft.appends[appends:] == [MAX_RECORDS_PER_BATCH, MAX_RECORDS_PER_BATCH, 301]
        assert not fencing.done()
        raft.commit(len(raft.entries))
        await until(fencing.done, "the fencing answered once committed")
        registration = controller.state.committed.broker(1)
        assert registration is not None and registration.status is BrokerStatus.FENCED
        assert all(1 not in p.isr for _, _, p in controller.state.committed.partitions())
    finally:
        await controller.stop()
