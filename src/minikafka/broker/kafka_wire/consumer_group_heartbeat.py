"""ConsumerGroupHeartbeat (KIP-848): one request both joins, heartbeats, reports owned partitions and leaves; the
answer carries the member's epoch and, when it changed, its assignment. Partitions travel by topic id."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Iterable
from typing import Any

from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest, HeartbeatResponse
from minikafka.broker.consumer_group.model import Partitions, TopicPartition
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode

CONSUMER_GROUP_HEARTBEAT = 68


def handle(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(CONSUMER_GROUP_HEARTBEAT, request.header.api_version)
    # Kafka: READ on the group, and DESCRIBE on every subscribed topic.
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, body.group_id):
        return _response(ctx, cls, HeartbeatResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    subscribed = body.subscribed_topic_names or ()
    if any(not ctx.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, topic) for topic in subscribed):
        return _response(ctx, cls, HeartbeatResponse(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    if ctx.groups is None:
        return _response(ctx, cls, HeartbeatResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    if not body.group_id:
        return _response(ctx, cls, HeartbeatResponse(ErrorCode.INVALID_REQUEST, "GroupId can't be empty."))
    rebalance_ms = int(body.rebalance_timeout.total_seconds() * 1000)
    heartbeat = HeartbeatRequest(
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        rebalance_timeout_ms=rebalance_ms,
        subscribed_topics=tuple(body.subscribed_topic_names) if body.subscribed_topic_names is not None else None,
        server_assignor=body.server_assignor,
        owned=_owned(ctx, body.topic_partitions) if body.topic_partitions is not None else None,
        client_id=request.client_id or "",
        client_host=ctx.client_host,
        instance_id=body.instance_id,
        subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),  # v1+
        rack_id=body.rack_id,
    )
    # The group's regexes are matched only against the topics this member may DESCRIBE, as Kafka 4 matches them.
    answer = ctx.groups.consumer_heartbeat(body.group_id, heartbeat, ctx.describable_topics())
    return _answered(ctx, cls, answer)


async def _answered(ctx: WireContext, cls: type, answer: Awaitable[HeartbeatResponse]) -> Any:
    """The coordinator answers once the records of what the heartbeat changed are written."""
    return _response(ctx, cls, await answer)


def _owned(ctx: WireContext, topics: Iterable[Any]) -> Partitions:
    """Partitions of a topic id the metadata no longer knows are dropped: nobody can be assigned them."""
    by_id = ctx.manager.metadata.image.topics_by_id
    return frozenset(
        TopicPartition(by_id[t.topic_id].name, int(p)) for t in topics if t.topic_id in by_id for p in t.partitions
    )


def _response(ctx: WireContext, cls: type, response: HeartbeatResponse) -> Any:
    assignment = None
    if response.assignment is not None:
        assignment = build(sibling(cls, "Assignment"), topic_partitions=_by_topic_id(ctx, cls, response.assignment))
    return build(
        cls,
        throttle_time=0,
        error_code=response.error,
        error_message=response.error_message,
        member_id=response.member_id,
        member_epoch=response.member_epoch,
        heartbeat_interval=response.heartbeat_interval_ms,
        assignment=assignment,
    )


def _by_topic_id(ctx: WireContext, cls: type, partitions: Partitions) -> tuple[Any, ...]:
    by_name = ctx.manager.metadata.image.topics_by_name
    entry = sibling(cls, "TopicPartitions")
    grouped: dict[uuid.UUID, list[int]] = {}
    for tp in sorted(partitions):
        topic = by_name.get(tp.topic)
        if topic is not None:
            grouped.setdefault(topic.topic_id, []).append(tp.partition)
    return tuple(build(entry, topic_id=topic_id, partitions=tuple(parts)) for topic_id, parts in grouped.items())
