"""ElectLeaders (43), AlterPartitionReassignments (45) and ListPartitionReassignments (46): only the active
controller answers them, so a broker forwards each to it (as a KRaft broker does) and Kafka's tools need only
--bootstrap-server. The conversions between Kafka's entities and the controller's messages are pure."""

from __future__ import annotations

from typing import Any, TypeVar

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.forwarded import forwarded_outcome, forwarded_request_error
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode, wire_code
from minikafka.pb import controller_pb2
from minikafka.pb.controller_pb2 import (
    AlterPartitionReassignmentsResponse,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
)

P = TypeVar("P", ElectLeadersResponse, AlterPartitionReassignmentsResponse, ListPartitionReassignmentsResponse)

ELECT_LEADERS, ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 43, 45, 46
# AlterPartitionReassignments v1 adds allow_replication_factor_change=false, which the controller cannot check
# here: a client asking for it negotiates down to v0 or is told the version is unsupported.
VERSIONS = {ELECT_LEADERS: (0, 2), ALTER_PARTITION_REASSIGNMENTS: (0, 0), LIST_PARTITION_REASSIGNMENTS: (0, 0)}
PREFERRED = 0  # Kafka's ElectionType; v0 of ElectLeaders elects the preferred leader only


def _timeout_ms(body: Any) -> int:
    return int(body.timeout.total_seconds() * 1000)


# ---- ElectLeaders ----


def elect_leaders_request(body: Any) -> controller_pb2.ElectLeadersRequest:
    forwarded = controller_pb2.ElectLeadersRequest(
        election_type=getattr(body, "election_type", PREFERRED),
        all_topic_partitions=body.topic_partitions is None,
        timeout_ms=_timeout_ms(body),
    )
    for entry in body.topic_partitions or ():
        forwarded.topic_partitions.add(topic=entry.topic, partitions=list(entry.partitions))
    return forwarded


def elect_leaders_response(cls: type, body: Any, answer: controller_pb2.ElectLeadersResponse | None) -> Any:
    """The controller's results; when it refused the whole request (or none answered), that error for every
    partition named and, from v1, for the request."""
    error, message = forwarded_request_error(answer)
    topic_cls, partition_cls = sibling(cls, "ReplicaElectionResult"), sibling(cls, "PartitionResult")
    if error == ErrorCode.NONE and answer is not None:
        results = {
            r.topic: [(p.partition_id, ErrorCode.of(p.error_code), p.error_message or None) for p in r.partition_result]
            for r in answer.replica_election_results
        }
    else:
        results = {e.topic: [(p, error, message) for p in e.partitions] for e in body.topic_partitions or ()}
    topics = tuple(
        build(
            topic_cls,
            topic=topic,
            partition_result=tuple(
                build(partition_cls, partition_id=p, error_code=code, error_message=m) for p, code, m in partitions
            ),
        )
        for topic, partitions in results.items()
    )
    return build(cls, throttle_time=0, error_code=error, replica_election_results=topics)


async def elect_leaders(ctx: WireContext, request: Request) -> Any:
    forwarded = elect_leaders_request(request.body)
    answer = await _forward_if_allowed(ctx, AclOperation.ALTER, "ElectLeaders", forwarded, ElectLeadersResponse)
    cls = response_class(ELECT_LEADERS, request.header.api_version)
    return elect_leaders_response(cls, request.body, answer)


# ---- AlterPartitionReassignments ----


def alter_partition_reassignments_request(body: Any) -> controller_pb2.AlterPartitionReassignmentsRequest:
    """Replicas null cancels the partition's reassignment in progress."""
    forwarded = controller_pb2.AlterPartitionReassignmentsRequest(timeout_ms=_timeout_ms(body))
    for topic in body.topics:
        entry = forwarded.topics.add(name=topic.name)
        for partition in topic.partitions:
            target = entry.partitions.add(partition_index=partition.partition_index)
            if partition.replicas is not None:
                target.replicas.broker_ids.extend(partition.replicas)
    return forwarded


def alter_partition_reassignments_response(
    cls: type, body: Any, answer: controller_pb2.AlterPartitionReassignmentsResponse | None
) -> Any:
    """One result per partition asked about, in the request's order."""
    error, message = forwarded_request_error(answer)
    results = (
        {(t.name, p.partition_index): p for t in answer.responses for p in t.partitions} if answer is not None else {}
    )
    topic_cls, partition_cls = sibling(cls, "ReassignableTopicResponse"), sibling(cls, "ReassignablePartitionResponse")
    topics = []
    for topic in body.topics:
        partitions = []
        for partition in topic.partitions:
            result = results.get((topic.name, partition.partition_index))
            code, text = forwarded_outcome(answer, result, "partition")
            partitions.append(
                build(partition_cls, partition_index=partition.partition_index, error_code=code, error_message=text)
            )
        topics.append(build(topic_cls, name=topic.name, partitions=tuple(partitions)))
    return build(cls, throttle_time=0, error_code=error, error_message=message, responses=tuple(topics))


async def alter_partition_reassignments(ctx: WireContext, request: Request) -> Any:
    forwarded = alter_partition_reassignments_request(request.body)
    answer = await _forward_if_allowed(
        ctx, AclOperation.ALTER, "AlterPartitionReassignments", forwarded, AlterPartitionReassignmentsResponse
    )
    cls = response_class(ALTER_PARTITION_REASSIGNMENTS, request.header.api_version)
    return alter_partition_reassignments_response(cls, request.body, answer)


# ---- ListPartitionReassignments ----


def list_partition_reassignments_response(
    cls: type, body: Any, answer: controller_pb2.ListPartitionReassignmentsResponse | None
) -> Any:
    """The reassignments in progress, only those of the partitions named when the request names topics (a topic
    or partition that is unknown or not being reassigned is left out, as Kafka's controller does)."""
    error, message = forwarded_request_error(answer)
    wanted = None if body.topics is None else {(t.name, p) for t in body.topics for p in t.partition_indexes}
    topic_cls, partition_cls = sibling(cls, "OngoingTopicReassignment"), sibling(cls, "OngoingPartitionReassignment")
    topics = []
    for topic in answer.topics if error == ErrorCode.NONE and answer is not None else ():
        partitions = tuple(
            build(
                partition_cls,
                partition_index=p.partition_index,
                replicas=tuple(p.replicas),
                adding_replicas=tuple(p.adding_replicas),
                removing_replicas=tuple(p.removing_replicas),
            )
            for p in topic.partitions
            if wanted is None or (topic.name, p.partition_index) in wanted
        )
        if partitions:
            topics.append(build(topic_cls, name=topic.name, partitions=partitions))
    return build(cls, throttle_time=0, error_code=error, error_message=message, topics=tuple(topics))


async def list_partition_reassignments(ctx: WireContext, request: Request) -> Any:
    forwarded = controller_pb2.ListPartitionReassignmentsRequest(timeout_ms=_timeout_ms(request.body))
    answer = await _forward_if_allowed(
        ctx, AclOperation.DESCRIBE, "ListPartitionReassignments", forwarded, ListPartitionReassignmentsResponse
    )
    cls = response_class(LIST_PARTITION_REASSIGNMENTS, request.header.api_version)
    return list_partition_reassignments_response(cls, request.body, answer)


async def _forward_if_allowed(
    ctx: WireContext, operation: AclOperation, method: str, request: Any, response_type: type[P]
) -> P | None:
    """The controller's answer, or, when the caller may not do `operation` on the cluster (Kafka: ALTER to elect
    and reassign, DESCRIBE to list), CLUSTER_AUTHORIZATION_FAILED for the whole request, not forwarded."""
    if not ctx.allowed_on_cluster(operation):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return response_type(error_code=wire_code(denied), error_message="Cluster authorization failed.")
    answer: P | None = await ctx.manager.controller.call_forwarded(method, request)
    return answer


HANDLERS = {
    ELECT_LEADERS: elect_leaders,
    ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments,
    LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments,
}
