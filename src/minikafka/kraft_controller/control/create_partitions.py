"""CreatePartitions (KIP-195) with Kafka's ReplicationControlManager rules: a topic's partitions only grow, new
partitions keep its replication factor, manual assignments name one replica list per new partition of registered,
distinct brokers of which one at least is unfenced; each new partition is a PartitionRecord."""

from __future__ import annotations

import structlog

from minikafka.common.errors import ErrorCode
from minikafka.common.topic import is_internal
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.operation_bound import OperationTooLarge, RecordBudget
from minikafka.kraft_controller.control.requests import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
)
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import BrokerStatus, Partition, Record

MAX_PARTITIONS = 2**31 - 1


class PartitionsRejected(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def create_partitions(
    image: MetadataImage, request: CreatePartitionsRequest, start: int
) -> ControllerResult[CreatePartitionsResponse]:
    """`start`: where round-robin placement begins among the unfenced brokers (random in the shell). More than
    MAX_RECORDS_PER_USER_OP new partitions in one request: the whole request is refused with POLICY_VIOLATION."""
    try:
        return _create_partitions(image, request, start, RecordBudget())
    except OperationTooLarge as too_large:
        structlog.get_logger().warning(
            "create_partitions_rejected", topic=None, error=ErrorCode.POLICY_VIOLATION.name, message=str(too_large)
        )
        refused = tuple(
            CreatePartitionsTopicResult(t.name, ErrorCode.POLICY_VIOLATION, str(too_large)) for t in request.topics
        )
        return ControllerResult((), CreatePartitionsResponse(refused))


def _create_partitions(
    image: MetadataImage, request: CreatePartitionsRequest, start: int, budget: RecordBudget
) -> ControllerResult[CreatePartitionsResponse]:
    records: list[Record] = []
    results = []
    names = [t.name for t in request.topics]
    for topic in request.topics:
        try:
            if names.count(topic.name) > 1:
                raise PartitionsRejected(ErrorCode.INVALID_REQUEST, f"topic {topic.name!r} appears more than once")
            new = _new_partitions(image, topic, start, budget)
        except PartitionsRejected as rejection:
            structlog.get_logger().warning(
                "create_partitions_rejected", topic=topic.name, error=rejection.code.name, message=rejection.message
            )
            results.append(CreatePartitionsTopicResult(topic.name, rejection.code, rejection.message))
            continue
        results.append(CreatePartitionsTopicResult(topic.name, ErrorCode.NONE))
        if not request.validate_only:
            records += new
    return ControllerResult(tuple(records), CreatePartitionsResponse(tuple(results)))


def _new_partitions(
    image: MetadataImage, request: CreatePartitionsTopic, start: int, budget: RecordBudget
) -> list[Partition]:
    topic = image.topics_by_name.get(request.name)
    if topic is None:
        raise PartitionsRejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {request.name!r} does not exist")
    if is_internal(request.name):
        # Its coordinators place groups by the partition count: growing it would lose them.
        message = f"The number of partitions of internal topic {request.name} cannot change"
        raise PartitionsRejected(ErrorCode.INVALID_TOPIC_EXCEPTION, message)
    current = len(topic.partitions)
    if request.count < current:
        raise PartitionsRejected(
            ErrorCode.INVALID_PARTITIONS,
            f"the topic {request.name} currently has {current} partition(s); {request.count} would not be an increase",
        )
    if request.count == current:
        raise PartitionsRejected(ErrorCode.INVALID_PARTITIONS, f"topic already has {current} partition(s)")
    if request.count > MAX_PARTITIONS:
        raise PartitionsRejected(ErrorCode.INVALID_PARTITIONS, f"{request.count} partitions are too many")
    factor = len(topic.partitions[0].replicas) if 0 in topic.partitions else 1
    added = request.count - current
    budget.take(added)
    assignment = _manual(image, request, added, factor) if request.assignments is not None else None
    if assignment is None:
        assignment = _placed(image, added, factor, start)
    partitions = []
    for offset, replicas in enumerate(assignment):
        index = current + offset
        isr = tuple(b for b in replicas if image.brokers[b].status is BrokerStatus.UNFENCED)
        if not isr:
            raise PartitionsRejected(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"all brokers of partition {index} ({list(replicas)}) are fenced or in controlled shutdown",
            )
        partitions.append(Partition(topic.topic_id, index, replicas, isr, leader=isr[0]))
    return partitions


def _manual(image: MetadataImage, request: CreatePartitionsTopic, added: int, factor: int) -> list[tuple[int, ...]]:
    assert request.assignments is not None
    if len(request.assignments) != added:
        raise PartitionsRejected(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"attempted to add {added} additional partition(s), but only {len(request.assignments)} assignment(s) "
            f"were specified",
        )
    for replicas in request.assignments:
        if len(replicas) != factor:
            raise PartitionsRejected(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"the manual partition assignment includes a partition with {len(replicas)} replica(s), but this is "
                f"not consistent with previous partitions, which have {factor} replica(s)",
            )
        if len(set(replicas)) != len(replicas):
            raise PartitionsRejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"duplicate brokers in {list(replicas)}")
        unknown = [b for b in replicas if image.broker(b) is None]
        if unknown:
            raise PartitionsRejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"unregistered brokers {unknown}")
    return [tuple(replicas) for replicas in request.assignments]


def _placed(image: MetadataImage, added: int, factor: int, start: int) -> list[tuple[int, ...]]:
    usable = sorted(b.broker_id for b in image.brokers.values() if b.status is BrokerStatus.UNFENCED)
    if len(usable) < factor:
        raise PartitionsRejected(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {factor} is larger than the {len(usable)} unfenced broker(s)",
        )
    first = start % len(usable)
    return [tuple(usable[(first + p + r) % len(usable)] for r in range(factor)) for p in range(added)]
