"""DeleteRecords: each partition's log start moves up on its leader (Kafka's admin client sends each partition to
its leader; another broker answers NOT_LEADER_OR_FOLLOWER), answered once the followers' log starts followed, or
REQUEST_TIMED_OUT after the request's timeout (Kafka's DelayedDeleteRecords)."""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import DeletedRecords
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode

DELETE_RECORDS = 21
VERSIONS = {DELETE_RECORDS: (0, 2)}  # Kafka 4.0's range


async def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DELETE_RECORDS, request.header.api_version)
    partition_entry = sibling(cls, "DeleteRecordsPartitionResult")
    timeout_s = max(request.body.timeout.total_seconds(), 0.0)
    asked = [(topic, line) for topic in request.body.topics or () for line in topic.partitions or ()]
    # Kafka: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED and nothing deleted.
    denied = {t.name for t, _line in asked if not ctx.allowed(AclOperation.DELETE, ResourceType.TOPIC, t.name)}
    deleting = (
        _refused()
        if t.name in denied
        else ctx.manager.delete_records_replicated(TopicPartition(t.name, line.partition_index), line.offset, timeout_s)
        for t, line in asked
    )
    outcomes = iter(await asyncio.gather(*deleting))
    topics = []
    for topic in request.body.topics or ():
        partitions = []
        for line in topic.partitions or ():
            deleted = next(outcomes)
            partitions.append(
                build(
                    partition_entry,
                    partition_index=line.partition_index,
                    low_watermark=deleted.low_watermark,
                    error_code=deleted.error,
                )
            )
        topics.append(build(sibling(cls, "DeleteRecordsTopicResult"), name=topic.name, partitions=tuple(partitions)))
    return build(cls, throttle_time=0, topics=tuple(topics))


async def _refused() -> DeletedRecords:
    return DeletedRecords(ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)


HANDLERS = {DELETE_RECORDS: handle}
