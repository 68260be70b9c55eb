"""DescribeTopicPartitions (KIP-966's API): topics' partitions with their eligible leader replicas (ELR) and last
known ELR, from this broker's metadata image, a page at a time: topics in name order from the request's cursor,
at most `response_partition_limit` partitions (capped at Kafka's max.request.partition.size.limit, 2000), and a
next cursor where the page stopped."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.kafka_wire.partition_state import partition_fields
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.image import MetadataImage

DESCRIBE_TOPIC_PARTITIONS = 75
VERSIONS = {DESCRIBE_TOPIC_PARTITIONS: (0, 0)}
MAX_PARTITIONS = 2000  # Kafka's max.request.partition.size.limit default
ZERO_UUID = uuid.UUID(int=0)
NO_AUTHORIZED_OPERATIONS = -2147483648


@dataclass(frozen=True)
class PageSlice:
    """One topic's part of a page: its partitions from `first`, at most `count` of them."""

    topic: str
    first: int
    count: int


@dataclass(frozen=True)
class Page:
    slices: tuple[PageSlice, ...]
    next_cursor: tuple[str, int] | None  # (topic, partition) the next page starts at; None: nothing is left


def paginate(sizes: dict[str, int], cursor: tuple[str, int] | None, limit: int) -> Page:
    """Pure: which partitions of the topics (name -> partition count; unknown topics count 0) one page holds."""
    names = sorted(sizes)
    start = names.index(cursor[0]) if cursor is not None else 0
    slices: list[PageSlice] = []
    left = limit
    for position, name in enumerate(names[start:], start):
        first = cursor[1] if cursor is not None and position == start else 0
        if left <= 0:
            return Page(tuple(slices), (name, first))
        count = max(min(sizes[name] - first, left), 0)
        slices.append(PageSlice(name, first, count))
        left -= count
        if first + count < sizes[name]:
            return Page(tuple(slices), (name, first + count))
    return Page(tuple(slices), None)


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_TOPIC_PARTITIONS, request.header.api_version)
    image = ctx.manager.metadata.image
    body = request.body
    everything = not body.topics  # an empty list asks for every topic
    names = sorted(image.topics_by_name) if everything else sorted({t.name for t in body.topics})
    # As Metadata: every topic means those the caller may DESCRIBE; one named it may not is refused.
    denied = {name for name in names if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, name)}
    if everything:
        names = [name for name in names if name not in denied]
    cursor = (body.cursor.topic_name, body.cursor.partition_index) if body.cursor is not None else None
    if cursor is not None and (cursor[0] not in names or cursor[1] < 0):
        # Kafka refuses a cursor outside the topics asked for with INVALID_REQUEST for the whole request.
        return _invalid(cls, names)
    sizes = {n: len(image.topics_by_name[n].partitions) if n in image.topics_by_name else 0 for n in names}
    limit = min(max(body.response_partition_limit, 1), MAX_PARTITIONS)
    page = paginate(sizes, cursor, limit)
    topics = tuple(
        _denied(cls, piece.topic)
        if piece.topic in denied
        else _topic(cls, image, piece, ctx.authorized_operations(ResourceType.TOPIC, piece.topic))
        for piece in page.slices
    )
    next_cursor = None
    if page.next_cursor is not None:
        next_cursor = build(sibling(cls, "Cursor"), topic_name=page.next_cursor[0], partition_index=page.next_cursor[1])
    return build(cls, throttle_time=0, topics=topics, next_cursor=next_cursor)


def _denied(cls: type, name: str) -> Any:
    entry = sibling(cls, "DescribeTopicPartitionsResponseTopic")
    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return build(entry, error_code=code, name=name, topic_id=ZERO_UUID, partitions=())


def _invalid(cls: type, names: list[str]) -> Any:
    entry = sibling(cls, "DescribeTopicPartitionsResponseTopic")
    topics = tuple(
        build(entry, error_code=ErrorCode.INVALID_REQUEST, name=n, topic_id=ZERO_UUID, partitions=()) for n in names
    )
    return build(cls, throttle_time=0, topics=topics, next_cursor=None)


def _topic(cls: type, image: MetadataImage, piece: PageSlice, operations: int) -> Any:
    """A topic the caller may describe, with (always, as Kafka) the bit field of what it may do on it."""
    entry = sibling(cls, "DescribeTopicPartitionsResponseTopic")
    topic = image.topics_by_name.get(piece.topic)
    if topic is None:
        unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return build(
            entry,
            error_code=unknown,
            name=piece.topic,
            topic_id=ZERO_UUID,
            partitions=(),
            topic_authorized_operations=operations,
        )
    partition_entry = sibling(cls, "DescribeTopicPartitionsResponsePartition")
    partitions = []
    for index in range(piece.first, piece.first + piece.count):
        partition = topic.partitions[index]
        partitions.append(
            build(
                partition_entry,
                **partition_fields(image, index, partition),
                eligible_leader_replicas=tuple(partition.elr),
                last_known_elr=tuple(partition.last_known_elr),
            )
        )
    return build(
        entry,
        error_code=ErrorCode.NONE,
        name=piece.topic,
        topic_id=topic.topic_id,
        is_internal=piece.topic == "__consumer_offsets",
        partitions=tuple(partitions),
        topic_authorized_operations=operations,
    )


HANDLERS = {DESCRIBE_TOPIC_PARTITIONS: handle}
