"""Metadata: brokers on this listener, topics with their ids, partitions with leader, replicas and ISR."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, NamedTuple

from minikafka.broker.kafka_wire.admin_topics import auto_create_topics
from minikafka.broker.kafka_wire.api_versions import METADATA
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.kafka_wire.partition_state import partition_fields
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.topic import validate_name
from minikafka.kraft_controller.metadata.image import MetadataImage, TopicImage

NO_AUTHORIZED_OPERATIONS = -2147483648
NO_TOPIC_ID = uuid.UUID(int=0)  # Kafka's Uuid.ZERO_UUID: no id given
DESCRIBE, TOPIC = AclOperation.DESCRIBE, ResourceType.TOPIC


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(METADATA, request.header.api_version)
    image = ctx.manager.metadata.image
    requested = request.body.topics
    if requested is None or (request.header.api_version == 0 and not requested):
        names: list[str | None] = list(sorted(image.topics_by_name))  # null asks for all (an empty list does in v0)
        unknown_ids: list[uuid.UUID] = []
    else:
        names, unknown_ids = requested_topics(image, requested)
    ready = ctx.manager.metadata_ready
    # As Kafka: "all topics" shows only those the caller may DESCRIBE; one asked for by name it may not is
    # TOPIC_AUTHORIZATION_FAILED, whether or not it exists (so the answer does not tell).
    all_topics = requested is None or (request.header.api_version == 0 and not requested)
    denied = {name for name in names if name is not None and not ctx.allowed(DESCRIBE, TOPIC, name)}
    if all_topics:
        names, denied = [name for name in names if name not in denied], set()
    allowed = getattr(request.body, "allow_auto_topic_creation", True)  # v0-3 always allow it
    if ready and allowed and ctx.manager.config.auto_create_topics_enable and requested:
        missing = [name for name in names if name and name not in image.topics_by_name and name not in denied]
        creatable = [name for name in missing if _may_create(ctx, name)]
        denied |= set(missing) - set(creatable)
        auto_create_topics(ctx, creatable)
    return build(
        cls,
        throttle_time=0,
        brokers=_brokers(cls, image, ctx.listener_name),
        cluster_id=ctx.manager.config.cluster_id,
        controller_id=ctx.manager.config.node_id,  # as a KRaft broker: admin requests sent here are forwarded
        topics=tuple(
            _denied(cls, name)
            if name in denied
            else _topic(cls, image, name, ready, ctx.manager.auto_creations, _topic_operations(ctx, request, name))
            for name in names
        )
        + tuple(_unknown_id(cls, topic_id) for topic_id in unknown_ids),
        cluster_authorized_operations=_cluster_operations(ctx, request),
    )


def _topic_operations(ctx: WireContext, request: Request, name: str | None) -> int:
    """As Kafka: asked for (v8+), each topic the caller may describe, existing or not, carries the bit field of
    what it may do on it; refused ones and unknown ids keep the schema's default."""
    if not getattr(request.body, "include_topic_authorized_operations", False) or name is None:
        return NO_AUTHORIZED_OPERATIONS
    return ctx.authorized_operations(TOPIC, name)


def _cluster_operations(ctx: WireContext, request: Request) -> int:
    """Asked for (v8 to v10): what the caller may do on the cluster, 0 without DESCRIBE on it."""
    if not getattr(request.body, "include_cluster_authorized_operations", False):
        return NO_AUTHORIZED_OPERATIONS
    return ctx.cluster_authorized_operations()


def _may_create(ctx: WireContext, name: str) -> bool:
    """Auto-creation needs CREATE on the cluster or on the topic, as Kafka's."""
    return ctx.allowed_on_cluster(AclOperation.CREATE) or ctx.allowed(AclOperation.CREATE, TOPIC, name)


def _denied(cls: type, name: str | None) -> Any:
    entry = sibling(cls, "MetadataResponseTopic")
    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return build(entry, error_code=code, name=name, topic_id=None, partitions=(), is_internal=False)


class RequestedTopics(NamedTuple):
    names: list[str | None]
    unknown_ids: list[uuid.UUID]  # asked for by an id no topic has: UNKNOWN_TOPIC_ID


def requested_topics(image: MetadataImage, topics: Any) -> RequestedTopics:
    """A topic asked for by id (v10+, as KIP-848 consumers do for their assigned topics) is answered by name."""
    names: list[str | None] = []
    unknown: list[uuid.UUID] = []
    for topic in topics:
        if not _by_id(topic):
            names.append(topic.name)
        elif (known := image.topics_by_id.get(topic.topic_id)) is not None:
            names.append(known.name)
        else:
            unknown.append(topic.topic_id)
    return RequestedTopics(names, unknown)


def _by_id(topic: Any) -> bool:
    return topic.name is None and getattr(topic, "topic_id", None) not in (None, NO_TOPIC_ID)


def _unknown_id(cls: type, topic_id: Any) -> Any:
    entry = sibling(cls, "MetadataResponseTopic")
    return build(
        entry, error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id, partitions=(), is_internal=False
    )


def _brokers(cls: type, image: MetadataImage, listener_name: str) -> tuple[Any, ...]:
    entry = sibling(cls, "MetadataResponseBroker")
    brokers = []
    for broker_id, broker in sorted(image.brokers.items()):
        endpoint = next((e for e in broker.endpoints if e.name == listener_name), None)
        if broker.fenced or endpoint is None:
            continue  # a broker without this listener is unreachable for this client
        brokers.append(
            build(entry, node_id=broker_id, host=endpoint.host, port=endpoint.port, rack=broker.rack or None)
        )
    return tuple(brokers)


def _topic(
    cls: type, image: MetadataImage, name: str | None, ready: bool, creating: Mapping[str, object], operations: int
) -> Any:
    entry = sibling(cls, "MetadataResponseTopic")
    topic = image.topics_by_name.get(name) if name else None
    if topic is None:
        code = missing_topic_error(name, ready, creating)
        return build(
            entry,
            error_code=code,
            name=name,
            topic_id=None,
            partitions=(),
            is_internal=False,
            topic_authorized_operations=operations,
        )
    return build(
        entry,
        error_code=ErrorCode.NONE,
        name=name,
        topic_id=topic.topic_id,
        is_internal=name == "__consumer_offsets",  # the group coordinator's topic, as Kafka marks it
        partitions=_partitions(cls, image, topic),
        topic_authorized_operations=operations,
    )


def missing_topic_error(name: str | None, ready: bool, creating: Mapping[str, object]) -> ErrorCode:
    """Why a named topic is not in the answer: an illegal name is INVALID_TOPIC_EXCEPTION (nothing will create
    it, so clients fail its records at once); before the image caught up, or while it is being auto-created, it
    is retriably unavailable; else unknown."""
    try:
        if name is not None:  # None: a topic asked for by id (v10+)
            validate_name(name)
    except KafkaError as error:
        return error.code
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if ready and name not in creating else ErrorCode.LEADER_NOT_AVAILABLE


def _partitions(cls: type, image: MetadataImage, topic: TopicImage) -> tuple[Any, ...]:
    entry = sibling(cls, "MetadataResponsePartition")
    partitions = []
    for index, partition in sorted(topic.partitions.items()):
        partitions.append(build(entry, **partition_fields(image, index, partition)))
    return tuple(partitions)
