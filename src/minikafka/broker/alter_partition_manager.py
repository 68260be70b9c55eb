"""Sends the partition leaders' AlterPartition proposals to the active controller and hands each answer back.

As Kafka's AlterPartitionManager: one request in flight at a time, carrying every proposal waiting (at most
MAX_PARTITIONS_PER_REQUEST). A request a partition flooded the controllers with thousands of calls at once when a
broker's restart had every leader propose it back into thousands of ISRs, and their queue held up the heartbeats.

Requests can be held until released (`fault hold-alter-partition`), which is how the KIP-903 race is replayed with
real processes. The core decides what an answer means (`Leader.on_alter_partition_response`); this only sends,
retries while the controller does not answer, and logs the answer.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica.partition import AlterPartitionProposal, AlterPartitionResult
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2

SEND_ATTEMPTS = 20
RETRY_BACKOFF_S = 0.2
MAX_PARTITIONS_PER_REQUEST = 200  # bounds the controller's work for one request (a record a partition)


@dataclass(frozen=True)
class ProposalTarget:
    """Which partition a proposal is for: by name here, by topic id for the controller."""

    tp: TopicPartition
    topic_id: uuid.UUID

    @property
    def label(self) -> str:
        return str(self.tp)


# Called with each answer (REQUEST_TIMED_OUT when the controller never answered).
AnswerHandler = Callable[[ProposalTarget, AlterPartitionProposal, AlterPartitionResult], None]


class AlterPartitionManager:
    def __init__(
        self, controller: ControllerClient, node_id: int, broker_epoch: Callable[[], int], on_answer: AnswerHandler
    ) -> None:
        self.controller = controller
        self.node_id = node_id
        self.broker_epoch = broker_epoch
        self.on_answer = on_answer
        self.holding = False
        self.held: list[tuple[ProposalTarget, AlterPartitionProposal]] = []
        self._unsent: list[tuple[ProposalTarget, AlterPartitionProposal]] = []  # for the next request
        self._tasks: set[asyncio.Task[None]] = set()  # the one sender, while it runs
        # Set until the sender has seen nothing left: its task's end is noticed a loop turn later, and a proposal
        # made in between would otherwise wait for the next one.
        self._sending = False
        self._log = structlog.get_logger()

    def send(self, target: ProposalTarget, proposal: AlterPartitionProposal) -> None:
        if self.holding:
            self.held.append((target, proposal))
            self._log.info("alter_partition_held", partition=target.label, proposed=sorted(proposal.isr))
            return
        self._unsent.append((target, proposal))
        self._start_sender()

    def release(self, keep_holding: bool = False) -> int:
        """Send every held request; with `keep_holding`, hold what is proposed next. Returns how many went."""
        held, self.held = self.held, []
        self.holding = keep_holding
        self._unsent.extend(held)
        if held:
            self._start_sender()
        return len(held)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _start_sender(self) -> None:
        if self._sending:
            return  # the running sender takes them with its next request
        self._sending = True
        task = asyncio.create_task(self._send_all())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_all(self) -> None:
        try:
            while self._unsent:
                batch = self._unsent[:MAX_PARTITIONS_PER_REQUEST]
                del self._unsent[:MAX_PARTITIONS_PER_REQUEST]
                await self._send(batch)
        finally:
            self._sending = False

    async def _send(self, batch: list[tuple[ProposalTarget, AlterPartitionProposal]]) -> None:
        request = self._request(batch)
        response = None
        for _attempt in range(SEND_ATTEMPTS):
            response = await self.controller.call("AlterPartition", request)
            if response is not None:
                break
            await asyncio.sleep(RETRY_BACKOFF_S)
        answers = _answers(response)
        for target, proposal in batch:
            self.on_answer(target, proposal, self._result(target, response, answers))

    def _request(
        self, batch: list[tuple[ProposalTarget, AlterPartitionProposal]]
    ) -> controller_pb2.AlterPartitionRequest:
        request = controller_pb2.AlterPartitionRequest(broker_id=self.node_id, broker_epoch=self.broker_epoch())
        topics: dict[uuid.UUID, controller_pb2.AlterPartitionRequest.TopicData] = {}
        for target, proposal in batch:
            topic = topics.get(target.topic_id)
            if topic is None:
                topic = topics[target.topic_id] = request.topics.add(topic_id=target.topic_id.bytes)
            entry = topic.partitions.add(
                partition_index=target.tp.partition,
                leader_epoch=proposal.leader_epoch,
                partition_epoch=proposal.partition_epoch,
                leader_recovery_state=int(proposal.leader_recovery_state),
            )
            for state in proposal.new_isr_with_epochs:
                entry.new_isr_with_epochs.add(broker_id=state.broker_id, broker_epoch=state.broker_epoch)
            self._log.info(
                "alter_partition_sent",
                partition=target.label,
                leader_epoch=proposal.leader_epoch,
                partition_epoch=proposal.partition_epoch,
                new_isr_with_epochs=[(s.broker_id, s.broker_epoch) for s in proposal.new_isr_with_epochs],
            )
        return request

    def _result(
        self,
        target: ProposalTarget,
        response: controller_pb2.AlterPartitionResponse | None,
        answers: dict[tuple[bytes, int], controller_pb2.AlterPartitionResponse.PartitionData],
    ) -> AlterPartitionResult:
        if response is None or ErrorCode.of(response.error_code) != ErrorCode.NONE:
            code = ErrorCode.REQUEST_TIMED_OUT if response is None else ErrorCode.of(response.error_code)
            return AlterPartitionResult(code, (), -1, -1)
        answer = answers.get((target.topic_id.bytes, target.tp.partition))
        if answer is None:  # the controller left it out: as if it had not answered
            return AlterPartitionResult(ErrorCode.REQUEST_TIMED_OUT, (), -1, -1)
        code = ErrorCode.of(answer.error_code)
        self._log.info(
            "alter_partition_accepted" if code == ErrorCode.NONE else "alter_partition_rejected",
            partition=target.label,
            error=code.name,
            isr=list(answer.isr),
            partition_epoch=answer.partition_epoch,
            leader_epoch=answer.leader_epoch,
        )
        return AlterPartitionResult(code, tuple(answer.isr), answer.leader_epoch, answer.partition_epoch)


def _answers(
    response: controller_pb2.AlterPartitionResponse | None,
) -> dict[tuple[bytes, int], controller_pb2.AlterPartitionResponse.PartitionData]:
    """Each partition's answer by (topic id, partition index)."""
    if response is None:
        return {}
    return {(topic.topic_id, p.partition_index): p for topic in response.topics for p in topic.partitions}
