"""The AlterPartition a leader's proposal becomes on the wire to the controller: its ISR with broker epochs, its
epochs and its leader recovery state, and the controller's answer handed back to the core. Proposals waiting go
together, one request in flight at a time, each answer back to its own partition."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from minikafka.broker.alter_partition_manager import MAX_PARTITIONS_PER_REQUEST, AlterPartitionManager, ProposalTarget
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

        self.in_flight = 0
        self.most_in_flight = 0

    async def call(self, method: str, request: Any) -> controller_pb2.AlterPartitionResponse:
        assert method == "AlterPartition"
        self.requests.append(request)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0)  # answered in a later loop turn, as over the network
        self.in_flight -= 1
        response = controller_pb2.AlterPartitionResponse()
        for topic in request.topics:
            answered = response.topics.add(topic_id=topic.topic_id)
            for entry in topic.partitions:
                answered.partitions.add(
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


def test_waiting_proposals_go_together_one_request_at_a_time_each_answer_to_its_partition() -> None:
    controller = RecordingController()
    answers: dict[ProposalTarget, AlterPartitionResult] = {}
    topics = [uuid.uuid4(), uuid.uuid4()]
    targets = [
        ProposalTarget(TopicPartition(f"t{n % 2}", n), topics[n % 2])
        for n in range(2 * MAX_PARTITIONS_PER_REQUEST + 50)
    ]

    async def run() -> None:
        manager = AlterPartitionManager(
            controller,  # type: ignore[arg-type]
            0,
            lambda: 10,
            lambda target, _p, result: answers.__setitem__(target, result),
        )
        for n, target in enumerate(targets):  # as every leader proposing a restarted broker back into its ISRs
            manager.send(target, AlterPartitionProposal(1, n, (BrokerState(0, 10), BrokerState(1, 11))))
        for _turn in range(1000):
            if len(answers) == len(targets):
                break
            await asyncio.sleep(0)

    asyncio.run(run())
    sizes = [sum(len(topic.partitions) for topic in request.topics) for request in controller.requests]
    assert sizes == [MAX_PARTITIONS_PER_REQUEST, MAX_PARTITIONS_PER_REQUEST, 50]
    assert controller.most_in_flight == 1
    assert {target: result.partition_epoch for target, result in answers.items()} == {
        target: n + 1 for n, target in enumerate(targets)
    }


def test_a_proposal_made_as_the_sender_finishes_is_sent_too() -> None:
    """A proposal made in the loop turn after the last answer (a follower's next fetch), once the sender has seen
    nothing left to send but before its task's end is noticed, is not left waiting for some later proposal."""
    controller = RecordingController()
    answers: dict[ProposalTarget, AlterPartitionResult] = {}
    later = ProposalTarget(TopicPartition("orders", 1), TARGET.topic_id)
    proposal = AlterPartitionProposal(1, 1, (BrokerState(0, 10), BrokerState(1, 11)))

    async def run() -> None:
        loop = asyncio.get_running_loop()

        def answered(target: ProposalTarget, _p: AlterPartitionProposal, result: AlterPartitionResult) -> None:
            answers[target] = result
            if target == TARGET:  # runs before the finished sender task's done callbacks
                loop.call_soon(manager.send, later, proposal)

        manager = AlterPartitionManager(controller, 0, lambda: 10, answered)  # type: ignore[arg-type]
        manager.send(TARGET, proposal)
        for _turn in range(1000):
            if later in answers:
                break
            await asyncio.sleep(0)

    asyncio.run(run())
    assert set(answers) == {TARGET, later}
