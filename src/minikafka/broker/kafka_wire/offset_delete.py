"""OffsetDelete: kafka-consumer-groups --delete-offsets and the admin clients' deleteConsumerGroupOffsets.

As Kafka's KafkaApis: DELETE on the group, else GROUP_AUTHORIZATION_FAILED for the request; READ on each topic,
else its partitions are TOPIC_AUTHORIZATION_FAILED; a partition the metadata does not know is
UNKNOWN_TOPIC_OR_PARTITION; the rest go to the group's coordinator."""

from __future__ import annotations

from typing import Any

from minikafka.broker.consumer_group.model import ConsumerGroup
from minikafka.broker.group.effects import OffsetDeleteResult
from minikafka.broker.group.offset_delete import OffsetDeleteRequest, delete_offsets
from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.kafka_wire.consumer_group import coordinate
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode

OFFSET_DELETE = 47
VERSIONS = {OFFSET_DELETE: (0, 0)}  # Kafka 4.0's range


async def handle(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(OFFSET_DELETE, request.header.api_version)
    asked = [TopicPartitionKey(t.name, p.partition_index) for t in body.topics or () for p in t.partitions or ()]
    refused = {key: _topic_error(ctx, key) for key in asked}
    valid = tuple(key for key in asked if refused[key] == ErrorCode.NONE)
    subscribed = _consumer_subscribed(ctx, body.group_id)
    result = await coordinate(
        ctx,
        body.group_id,
        OffsetDeleteResult,
        lambda group, rid, _now: delete_offsets(group, OffsetDeleteRequest(rid, valid, subscribed)),
        AclOperation.DELETE,
    )
    if result.error != ErrorCode.NONE:
        return build(cls, throttle_time=0, error_code=result.error, topics=())
    errors = {**dict(result.partitions), **{k: e for k, e in refused.items() if e != ErrorCode.NONE}}
    partition_entry = sibling(cls, "OffsetDeleteResponsePartition")
    topics = tuple(
        build(
            sibling(cls, "OffsetDeleteResponseTopic"),
            name=topic.name,
            partitions=tuple(
                build(
                    partition_entry,
                    partition_index=p.partition_index,
                    error_code=errors.get(TopicPartitionKey(topic.name, p.partition_index), ErrorCode.NONE),
                )
                for p in topic.partitions or ()
            ),
        )
        for topic in body.topics or ()
    )
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, topics=topics)


def _topic_error(ctx: WireContext, key: TopicPartitionKey) -> ErrorCode:
    if not ctx.allowed(AclOperation.READ, ResourceType.TOPIC, key.topic):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    topic = ctx.manager.metadata.image.topics_by_name.get(key.topic)
    if topic is None or key.partition not in topic.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


def _consumer_subscribed(ctx: WireContext, group_id: str) -> frozenset[str] | None:
    """A KIP-848 group's subscribed topics, by name or through a regular expression; None for a classic group."""
    consumer = ctx.groups.consumer_group(group_id) if ctx.groups is not None and group_id else None
    if not isinstance(consumer, ConsumerGroup):
        return None
    topics: set[str] = set()
    for member in consumer.members.values():
        topics |= member.subscribed_topics
        if member.subscribed_topic_regex is not None:
            topics |= consumer.resolved_regexes.get(member.subscribed_topic_regex, frozenset())
    return frozenset(topics)
