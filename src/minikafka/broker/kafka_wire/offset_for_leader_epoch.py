"""OffsetForLeaderEpoch (consumers validating their position after a leader change, KIP-320): decoded into the
request layer's lines (`broker.requests.offset_for_leader_epoch`, the gRPC front end's path too)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.api_versions import OFFSET_FOR_LEADER_EPOCH
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.requests.offset_for_leader_epoch import EpochRequestPartition, handle_offset_for_leader_epoch


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(OFFSET_FOR_LEADER_EPOCH, request.header.api_version)
    topic_cls, partition_cls = sibling(cls, "OffsetForLeaderTopicResult"), sibling(cls, "EpochEndOffset")
    asked = request.body.topics
    lines = [
        EpochRequestPartition(b"", topic.topic, line.partition, line.current_leader_epoch, line.leader_epoch)
        for topic in asked
        for line in topic.partitions
    ]
    answers = iter(handle_offset_for_leader_epoch(ctx.manager, lines, ctx.caller))
    topics = []
    for topic in asked:
        partitions = []
        for line in topic.partitions:
            found = next(answers)
            partitions.append(
                build(
                    partition_cls,
                    error_code=found.error,
                    partition=line.partition,
                    leader_epoch=found.leader_epoch,
                    end_offset=found.end_offset,
                )
            )
        topics.append(build(topic_cls, topic=topic.topic, partitions=tuple(partitions)))
    return build(cls, throttle_time=0, topics=tuple(topics))
