"""ListOffsets: the earliest (log start), latest (high watermark) and max-timestamp offsets, and the first offset at
or after a timestamp, through the replica manager."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.api_versions import LIST_OFFSETS
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.errors import ErrorCode


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(LIST_OFFSETS, request.header.api_version)
    partition_entry = sibling(cls, "ListOffsetsPartitionResponse")
    topics = []
    for topic in request.body.topics or ():
        partitions = []
        for line in topic.partitions or ():
            tp = TopicPartition(topic.name, line.partition_index)
            listed = ctx.manager.list_offset(tp, line.timestamp, getattr(line, "current_leader_epoch", -1))
            ok = listed.error == ErrorCode.NONE
            partitions.append(
                build(
                    partition_entry,
                    partition_index=line.partition_index,
                    error_code=listed.error,
                    timestamp=listed.timestamp if ok else -1,
                    offset=listed.offset if ok else -1,
                    leader_epoch=listed.leader_epoch if ok else -1,
                )
            )
        topics.append(build(sibling(cls, "ListOffsetsTopicResponse"), name=topic.name, partitions=tuple(partitions)))
    return build(cls, throttle_time=0, topics=tuple(topics))
