"""OffsetForLeaderEpoch (Kafka's KafkaApis.handleOffsetForLeaderEpochRequest): where each asked leader epoch ends in
the leader's log, for followers (gRPC, topics by id) and consumers validating their position (KIP-320, by name)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minikafka.broker.client_authorizer import Caller
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.requests.topics import topic_by_id_bytes
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode


@dataclass(slots=True)
class EpochRequestPartition:
    topic_id: bytes  # 16 bytes, or b"" when the line names `topic`
    topic: str
    partition: int
    current_leader_epoch: int  # -1: no check
    leader_epoch: int  # the epoch whose end offset is asked


@dataclass(slots=True)
class EpochEndAnswer:
    error: ErrorCode
    leader_epoch: int  # -1 on an error
    end_offset: int  # -1 on an error


def handle_offset_for_leader_epoch(
    manager: ReplicaManager, partitions: Sequence[EpochRequestPartition], caller: Caller | None = None
) -> list[EpochEndAnswer]:
    """One answer per line, in request order; a topic id the metadata lacks is UNKNOWN_TOPIC_ID, a topic a client
    `caller` may not DESCRIBE TOPIC_AUTHORIZATION_FAILED (None: a follower, never refused)."""
    image = manager.metadata.image
    answers = []
    for line in partitions:
        if line.topic_id:
            known = topic_by_id_bytes(image, line.topic_id)
            if known is None:
                answers.append(EpochEndAnswer(ErrorCode.UNKNOWN_TOPIC_ID, -1, -1))
                continue
            name = known.name
        else:
            name = line.topic
        if caller is not None and not manager.authorizer.allowed(
            caller, AclOperation.DESCRIBE, ResourceType.TOPIC, name
        ):
            answers.append(EpochEndAnswer(ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1))
            continue
        found = manager.offset_for_leader_epoch(
            TopicPartition(name, line.partition), line.current_leader_epoch, line.leader_epoch
        )
        ok = found.error == ErrorCode.NONE
        answers.append(EpochEndAnswer(found.error, found.leader_epoch if ok else -1, found.offset if ok else -1))
    return answers
