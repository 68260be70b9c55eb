"""ListOffsets: decoded into the request layer's lines (`broker.requests.list_offsets`, the gRPC front end's path
too) and its answers encoded for the request's version."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.api_versions import LIST_OFFSETS
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.requests.list_offsets import ListOffsetsPartition, handle_list_offsets


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(LIST_OFFSETS, request.header.api_version)
    partition_entry = sibling(cls, "ListOffsetsPartitionResponse")
    asked = request.body.topics or ()
    lines = [
        ListOffsetsPartition(
            TopicPartition(topic.name, line.partition_index), line.timestamp, getattr(line, "current_leader_epoch", -1)
        )
        for topic in asked
        for line in topic.partitions or ()
    ]
    isolation_level = getattr(request.body, "isolation_level", 0)  # v2+
    answers = iter(handle_list_offsets(ctx.manager, lines, isolation_level, ctx.caller))
    topics = []
    for topic in asked:
        partitions = []
        for line in topic.partitions or ():
            listed = next(answers)
            partitions.append(
                build(
                    partition_entry,
                    partition_index=line.partition_index,
                    error_code=listed.error,
                    timestamp=listed.timestamp,
                    offset=listed.offset,
                    leader_epoch=listed.leader_epoch,
                )
            )
        topics.append(build(sibling(cls, "ListOffsetsTopicResponse"), name=topic.name, partitions=tuple(partitions)))
    return build(cls, throttle_time=0, topics=tuple(topics))
