"""OffsetForLeaderEpoch (consumers validating their position after a leader change, KIP-320): where each asked
leader epoch ends in the leader's log, as the gRPC front end answers followers."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.api_versions import OFFSET_FOR_LEADER_EPOCH
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.errors import ErrorCode


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(OFFSET_FOR_LEADER_EPOCH, request.header.api_version)
    topic_cls, partition_cls = sibling(cls, "OffsetForLeaderTopicResult"), sibling(cls, "EpochEndOffset")
    topics = []
    for topic in request.body.topics:
        partitions = []
        for asked in topic.partitions:
            tp = TopicPartition(topic.topic, asked.partition)
            found = ctx.manager.offset_for_leader_epoch(tp, asked.current_leader_epoch, asked.leader_epoch)
            ok = found.error == ErrorCode.NONE
            partitions.append(
                build(
                    partition_cls,
                    error_code=found.error,
                    partition=asked.partition,
                    leader_epoch=found.leader_epoch if ok else -1,
                    end_offset=found.offset if ok else -1,
                )
            )
        topics.append(build(topic_cls, topic=topic.topic, partitions=tuple(partitions)))
    return build(cls, throttle_time=0, topics=tuple(topics))
