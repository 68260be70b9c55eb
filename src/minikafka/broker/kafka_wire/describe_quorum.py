"""DescribeQuorum through any broker: forwarded to the active controller, as a Kafka 4 broker does, and answered
for the metadata partition (__cluster_metadata-0) with the leader, its epoch and high watermark, the voters and
the observers (the brokers), and (v2) the voters' controller endpoints."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from minikafka.broker.kafka_wire.context import QuorumContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.forwarded import forwarded_request_error
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2

DESCRIBE_QUORUM = 55
VERSIONS = {DESCRIBE_QUORUM: (0, 2)}  # Kafka 4.0's range
METADATA_TOPIC = "__cluster_metadata"
CONTROLLER_LISTENER = "CONTROLLER"  # the voters' listener, as Kafka's controller.listener.names usually names it


async def handle(ctx: QuorumContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_QUORUM, request.header.api_version)
    if not ctx.allowed_on_cluster(AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        return _error(cls, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    asked = [(t.topic_name, p.partition_index) for t in request.body.topics for p in t.partitions]
    if asked != [(METADATA_TOPIC, 0)]:
        # Kafka's raft client answers anything but the metadata partition with one top-level error.
        return _error(cls, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    quorum = ctx.quorum
    answer = await quorum.controller.call_within(
        "DescribeQuorum", controller_pb2.DescribeQuorumRequest(), quorum.request_timeout_ms / 1000
    )
    code, message = forwarded_request_error(answer)
    if code != ErrorCode.NONE or answer is None:
        return _error(cls, code, message)
    partition = build(
        sibling(cls, "PartitionData"),
        partition_index=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        leader_id=answer.leader_id,
        leader_epoch=answer.leader_epoch,
        high_watermark=answer.high_watermark,
        current_voters=_replicas(cls, answer.current_voters),
        observers=_replicas(cls, answer.observers),
    )
    topic = build(sibling(cls, "TopicData"), topic_name=METADATA_TOPIC, partitions=(partition,))
    return build(cls, error_code=ErrorCode.NONE, error_message=None, topics=(topic,), nodes=_nodes(cls, ctx, answer))


def _replicas(cls: type, replicas: Any) -> tuple[Any, ...]:
    entry = sibling(cls, "ReplicaState")
    return tuple(
        build(
            entry,
            replica_id=r.replica_id,
            replica_directory_id=_directory_uuid(r.replica_directory_id),
            log_end_offset=r.log_end_offset,
            last_fetch_timestamp=r.last_fetch_timestamp,
            last_caught_up_timestamp=r.last_caught_up_timestamp,
        )
        for r in replicas
    )


def _directory_uuid(directory_id: str) -> uuid.UUID | None:
    """A directory id as Kafka's Uuid field carries it (KIP-853); none for a replica without one (a broker)."""
    if not directory_id:
        return None
    return uuid.UUID(bytes=base64.urlsafe_b64decode(directory_id + "=="))


def _nodes(cls: type, ctx: QuorumContext, answer: Any) -> tuple[Any, ...]:
    """The voters with their controller endpoints: the leader's voter set's (KIP-853), else this broker's
    controller.quorum.voters."""
    if not _has(cls, "Node"):
        return ()  # before v2
    node, listener = sibling(cls, "Node"), sibling(cls, "Listener")
    voters = sorted((n.node_id, (n.host, n.port)) for n in answer.nodes) or sorted(ctx.quorum.voters.items())
    return tuple(
        build(node, node_id=voter, listeners=(build(listener, name=CONTROLLER_LISTENER, host=host, port=port),))
        for voter, (host, port) in voters
    )


def _has(cls: type, name: str) -> bool:
    try:
        sibling(cls, name)
    except AttributeError:
        return False
    return True


def _error(cls: type, code: ErrorCode, message: str | None) -> Any:
    return build(cls, error_code=code, error_message=message, topics=(), nodes=())


HANDLERS = {DESCRIBE_QUORUM: handle}
