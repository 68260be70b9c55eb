"""The AlterPartition a leader's proposal becomes on the wire to the controller: its ISR with broker epochs, its
epochs and its leader recovery state, and the controller's answer handed back to the core."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from minikafka.broker.alter_partition_manager import AlterPartitionManager, ProposalTarget
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica.partition import AlterPartitionProposal, AlterPartitionResult, BrokerState
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.records import LeaderRecoveryState
from minikafka.pb import controller_pb2

TARGET = ProposalTarget(TopicPartition("orders", 0), uuid.uuid4())


class RecordingController:
    """Answers every AlterPartition by committing what it proposes."""

    def __init__(self) -> None:
        self.requests: list[controller_pb2.AlterPartitionRequest] = []

    async def call(self, method: str, request: Any) -> controller_pb2.AlterPartitionResponse:
        assert method == "AlterPartition"
        self.requests.append(request)
        entry = request.topics[0].partitions[0]
        response = controller_pb2.AlterPartitionResponse()
        response.topics.add(topic_id=request.topics[0].topic_id).partitions.add(
            partition_index=entry.partition_index,
            leader_id=request.broker_id,
            leader_epoch=entry.leader_epoch,
            isr=[s.broker_id for s in entry.new_isr_with_epochs],
            leader_recovery_state=entry.leader_recovery_state,
            partition_epoch=entry.partition_epoch + 1,
        )
        return response


@pytest.mark.parametrize("recovery", list(LeaderRecoveryState))
def test_the_proposal_is_sent_with_its_isr_epochs_and_leader_recovery_state(recovery: LeaderRecoveryState) -> None:
    controller = RecordingController()
    answers: list[AlterPartitionResult] = []
    proposal = AlterPartitionProposal(6, 8, (BrokerState(0, 10), BrokerState(1, 11)), recovery)

    async def run() -> None:
        manager = AlterPartitionManager(controller, 0, lambda: 10, lambda _t, _p, result: answers.append(result))  # type: ignore[arg-type]
        manager.send(TARGET, proposal)
        for _turn in range(1000):  # let the send task run, a bounded number of loop turns
            if answers:
                break
            await asyncio.sleep(0)

    asyncio.run(run())
    [request] = controller.requests
    entry = request.topics[0].partitions[0]
    assert (request.broker_id, request.broker_epoch, request.topics[0].topic_id) == (0, 10, TARGET.topic_id.bytes)
    assert (entry.partition_index, entry.leader_epoch, entry.partition_epoch) == (0, 6, 8)
    assert [(s.broker_id, s.broker_epoch) for s in entry.new_isr_with_epochs] == [(0, 10), (1, 11)]
    assert entry.leader_recovery_state == recovery
    assert answers == [AlterPartitionResult(ErrorCode.NONE, (0, 1), 6, 9)]
