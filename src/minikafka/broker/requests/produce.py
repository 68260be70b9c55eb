"""Produce (Kafka's KafkaApis.handleProduceRequest and ReplicaManager.appendRecords): every partition's batches go to
the replica manager in request order, now; the answer comes once each partition has its outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import ReplicaManager, answered
from minikafka.common.errors import ErrorCode

VALID_ACKS = (0, 1, -1)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ProducePartition:
    tp: TopicPartition
    records: bytes  # one or more record batches, as sent


@dataclass(frozen=True)
class ProduceRequest:
    acks: int  # 0, 1 or -1 (all)
    timeout_ms: int  # how long acks=all may wait for the ISR; 0 answers at once what is not yet replicated
    partitions: Sequence[ProducePartition]  # in request order: appended in that order


@dataclass(frozen=True, slots=True)
class ProducePartitionAnswer:
    tp: TopicPartition
    error: ErrorCode
    base_offset: int  # -1 on an error
    log_start_offset: int  # -1 when the partition is not hosted here
    message: str
    leader_id: int  # the partition's leader as this broker knows it; -1 unknown
    leader_epoch: int


def handle_produce(
    manager: ReplicaManager, request: ProduceRequest, encode: Callable[[list[ProducePartitionAnswer]], T]
) -> asyncio.Future[T]:
    """Append every partition's batches now (pipelined requests rely on the order); the future holds `encode`'s
    response, at once for acks 0/1 and refusals, for acks=all once the last partition's wait is over. The front end
    encodes in the same callback, so the answer costs no loop turn more than the wait."""
    if request.acks not in VALID_ACKS:
        # As Kafka: every partition refused, nothing appended.
        message = f"acks must be 0, 1 or -1, not {request.acks}"
        return answered(
            encode(
                [
                    ProducePartitionAnswer(p.tp, ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, message, -1, -1)
                    for p in request.partitions
                ]
            )
        )
    jobs = [manager.produce(p.tp, p.records, request.acks, request.timeout_ms) for p in request.partitions]
    waiting = [job for job in jobs if not job.done()]
    if not waiting:
        return answered(encode(_answers(manager, request.partitions, jobs)))
    # acks=all: answered from the last partition's callback (a task and a gather cost the answer loop turns).
    answer: asyncio.Future[T] = asyncio.get_running_loop().create_future()

    def one_done(_job: asyncio.Future[ProduceResult]) -> None:
        if answer.done() or not all(job.done() for job in waiting):
            return
        try:
            answer.set_result(encode(_answers(manager, request.partitions, jobs)))
        except Exception as error:  # a partition's job failed: the request fails with it
            answer.set_exception(error)

    for job in waiting:
        job.add_done_callback(one_done)
    return answer


def _answers(
    manager: ReplicaManager, partitions: Sequence[ProducePartition], jobs: list[asyncio.Future[ProduceResult]]
) -> list[ProducePartitionAnswer]:
    answers = []
    for partition, job in zip(partitions, jobs, strict=True):
        result = job.result()
        replica = manager.replicas.get(partition.tp)
        ok = result.error == ErrorCode.NONE
        answers.append(
            ProducePartitionAnswer(
                partition.tp,
                result.error,
                result.base_offset if ok else -1,
                replica.log.log_start_offset if replica is not None else -1,
                result.message,
                replica.leader_id if replica is not None else -1,
                replica.leader_epoch if replica is not None else -1,
            )
        )
    return answers


def by_topic(answers: Sequence[ProducePartitionAnswer]) -> dict[str, list[ProducePartitionAnswer]]:
    """The answers grouped by topic, topics in the order they first appear (both responses nest them so)."""
    grouped: dict[str, list[ProducePartitionAnswer]] = {}
    for answer in answers:
        grouped.setdefault(answer.tp.topic, []).append(answer)
    return grouped
