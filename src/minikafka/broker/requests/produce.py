"""Produce (Kafka's KafkaApis.handleProduceRequest and ReplicaManager.appendRecords): every partition's batches go to
the replica manager in request order, now; the answer comes once each partition has its outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from minikafka.broker.client_authorizer import Caller
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import ReplicaManager, answered
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import RecordError

if TYPE_CHECKING:
    from minikafka.broker.transaction.verification import ProduceVerifier

VALID_ACKS = (0, 1, -1)
# Where a v2 record batch keeps its magic byte and producer id.
_MAGIC, _PRODUCER_ID, _PRODUCER_ID_END = 16, 43, 51
TOPIC_DENIED = "Topic authorization failed."
CLUSTER_DENIED = "Cluster authorization failed."
TRANSACTIONAL_ID_DENIED = "Transactional Id authorization failed."
T = TypeVar("T")


@dataclass(slots=True)
class ProducePartition:
    tp: TopicPartition
    records: bytes  # one or more record batches, as sent


@dataclass(slots=True)
class ProduceRequest:
    acks: int  # 0, 1 or -1 (all)
    timeout_ms: int  # how long acks=all may wait for the ISR; 0 answers at once what is not yet replicated
    partitions: Sequence[ProducePartition]  # in request order: appended in that order
    transactional_id: str | None = None  # a transactional producer's (its first batches are verified)
    # A producer of transaction.version 2 (Produce v12): its partitions join its transaction as it writes to them.
    add_partitions: bool = False


@dataclass(slots=True)
class ProducePartitionAnswer:
    tp: TopicPartition
    error: ErrorCode
    base_offset: int  # -1 on an error
    log_start_offset: int  # -1 when the partition is not hosted here
    message: str
    leader_id: int  # the partition's leader as this broker knows it; -1 unknown
    leader_epoch: int
    record_errors: tuple[RecordError, ...] = ()
    log_append_time_ms: int = -1  # a LogAppendTime topic's stamp on the batch; -1: CreateTime


def produce_refusals(
    manager: ReplicaManager, caller: Caller, request: ProduceRequest, transactional_id: str | None = None
) -> dict[TopicPartition, ProduceResult]:
    """The partitions the caller may not write, in Kafka's order: a transactional id it may not WRITE refuses the
    whole request, then idempotent batches without IDEMPOTENT_WRITE on the cluster (Kafka before KIP-679 checked
    it; kept, as otherwise any writer of a topic may continue another's producer id; minikafka.produce.idempotent.
    write.check.enable=false drops it, as Kafka 4), then topics without WRITE."""
    authorizer = manager.authorizer
    if not authorizer.enabled:
        return {}
    whole: ProduceResult | None = None
    if transactional_id is not None and not authorizer.allowed(
        caller, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        whole = ProduceResult(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, message=TRANSACTIONAL_ID_DENIED)
    elif (
        manager.config.produce_idempotent_write_check_enable
        and any(has_producer_id(p.records) for p in request.partitions)
        and not authorizer.allowed_on_cluster(caller, AclOperation.IDEMPOTENT_WRITE)
    ):
        whole = ProduceResult(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message=CLUSTER_DENIED)
    if whole is not None:
        return {p.tp: whole for p in request.partitions}
    refused = {}
    for topic in dict.fromkeys(p.tp.topic for p in request.partitions):
        if not authorizer.allowed(caller, AclOperation.WRITE, ResourceType.TOPIC, topic):
            refused[topic] = ProduceResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED, message=TOPIC_DENIED)
    return {p.tp: refused[p.tp.topic] for p in request.partitions if p.tp.topic in refused}


def has_producer_id(records: bytes) -> bool:
    """Whether any v2 batch carries a producer id (an idempotent or transactional producer's), read from the
    batch headers without validating them (the log validates what is appended)."""
    position = 0
    while position + _PRODUCER_ID_END <= len(records):
        if (
            records[position + _MAGIC] == 2
            and int.from_bytes(records[position + _PRODUCER_ID : position + _PRODUCER_ID_END], "big", signed=True) >= 0
        ):
            return True
        batch_length = int.from_bytes(records[position + 8 : position + 12], "big", signed=True)
        if batch_length <= 0:
            return False
        position += 12 + batch_length
    return False


def handle_produce(
    manager: ReplicaManager,
    request: ProduceRequest,
    encode: Callable[[list[ProducePartitionAnswer]], T],
    verifier: ProduceVerifier | None = None,
    refused: Mapping[TopicPartition, ProduceResult] | None = None,
) -> Awaitable[T]:
    """Append every partition's batches now (pipelined requests rely on the order); awaited, the answer gives
    `encode`'s response once every partition has its outcome: at once for acks 0/1 and refusals, for acks=all
    when the last partition's wait is over."""
    if request.acks not in VALID_ACKS:
        # As Kafka: every partition refused, nothing appended.
        message = f"acks must be 0, 1 or -1, not {request.acks}"
        invalid = [
            ProducePartitionAnswer(p.tp, ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, message, -1, -1)
            for p in request.partitions
        ]
        return answered(encode(invalid))
    txn = request.transactional_id
    # A refused partition appends nothing; the others go on, as Kafka answers each topic for itself.
    jobs = [
        answered(refused[p.tp])
        if refused and p.tp in refused
        else (
            verifier.produce(p.tp, p.records, request.acks, request.timeout_ms, txn, request.add_partitions)
            if verifier is not None
            else manager.produce(p.tp, p.records, request.acks, request.timeout_ms)
        )
        for p in request.partitions
    ]
    return ProduceAnswer(manager, request.partitions, jobs, encode)


class ProduceAnswer(Generic[T]):
    """A Produce's answer once its appends are done. Awaited, it waits on the partitions' outcomes in the awaiting
    task itself and encodes there: no callback or task between the last outcome and the answer, so the answer
    costs one loop turn after the wait (a plain object, so one a closed connection never awaits is no warning)."""

    __slots__ = ("_manager", "_partitions", "_jobs", "_encode")

    def __init__(
        self,
        manager: ReplicaManager,
        partitions: Sequence[ProducePartition],
        jobs: list[asyncio.Future[ProduceResult]],
        encode: Callable[[list[ProducePartitionAnswer]], T],
    ) -> None:
        self._manager = manager
        self._partitions = partitions
        self._jobs = jobs
        self._encode = encode

    def __await__(self) -> Generator[Any, None, T]:
        for job in self._jobs:
            if not job.done():
                yield from job
        return self._encode(_answers(self._manager, self._partitions, self._jobs))


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
                result.record_errors,
                result.log_append_time_ms if ok else -1,
            )
        )
    return answers


def by_topic(answers: Sequence[ProducePartitionAnswer]) -> dict[str, list[ProducePartitionAnswer]]:
    """The answers grouped by topic, topics in the order they first appear (both responses nest them so)."""
    grouped: dict[str, list[ProducePartitionAnswer]] = {}
    for answer in answers:
        grouped.setdefault(answer.tp.topic, []).append(answer)
    return grouped
