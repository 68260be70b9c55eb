"""ListOffsets (Kafka's KafkaApis.handleListOffsetRequest and ReplicaManager.fetchOffset): each partition's earliest,
latest, max-timestamp or by-timestamp offset from its leader; a partition named twice is INVALID_REQUEST."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from minikafka.broker.client_authorizer import Caller
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import READ_UNCOMMITTED, ReplicaManager
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode


@dataclass(slots=True)
class ListOffsetsPartition:
    tp: TopicPartition
    timestamp: int  # -2 earliest, -1 latest (the HWM), -3 max timestamp, else the first record at or after it
    current_leader_epoch: int  # -1: no check


@dataclass(slots=True)
class ListOffsetsPartitionAnswer:
    tp: TopicPartition
    error: ErrorCode
    timestamp: int  # -1 when none
    offset: int  # -1 when none
    leader_epoch: int  # -1 when none


def handle_list_offsets(
    manager: ReplicaManager,
    partitions: Sequence[ListOffsetsPartition],
    isolation_level: int = READ_UNCOMMITTED,
    caller: Caller | None = None,
) -> list[ListOffsetsPartitionAnswer]:
    """One answer per line, in request order. As Kafka, a topic the caller may not DESCRIBE is
    TOPIC_AUTHORIZATION_FAILED, and every line of a partition the request names more than once is INVALID_REQUEST
    (which line would the client take?). `caller` None: an inter-node caller, never refused. With read_committed
    (isolation level 1) the latest offset is the last stable offset, and a record found past it is none."""
    counts = Counter(line.tp for line in partitions)
    answers = []
    for line in partitions:
        if caller is not None and not manager.authorizer.allowed(
            caller, AclOperation.DESCRIBE, ResourceType.TOPIC, line.tp.topic
        ):
            answers.append(ListOffsetsPartitionAnswer(line.tp, ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1))
            continue
        if counts[line.tp] > 1:
            answers.append(ListOffsetsPartitionAnswer(line.tp, ErrorCode.INVALID_REQUEST, -1, -1, -1))
            continue
        listed = manager.list_offset(line.tp, line.timestamp, line.current_leader_epoch, isolation_level)
        if listed.error != ErrorCode.NONE:
            answers.append(ListOffsetsPartitionAnswer(line.tp, listed.error, -1, -1, -1))
            continue
        answers.append(
            ListOffsetsPartitionAnswer(line.tp, listed.error, listed.timestamp, listed.offset, listed.leader_epoch)
        )
    return answers
