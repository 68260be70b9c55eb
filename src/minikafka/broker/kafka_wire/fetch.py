"""Fetch for consumers: whole batches below the high watermark (READ_UNCOMMITTED: nothing is transactional),
long-polled until min_bytes or max_wait through the replica manager's change notification.

Sessions are not offered: the answer's session id 0 tells a client asking for one to send full fetches, as
Kafka does when its session cache is full."""

from __future__ import annotations

import time
from typing import Any

from minikafka.broker.kafka_wire.api_versions import FETCH
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, has_field, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import FetchPartitionResult
from minikafka.common.errors import ErrorCode

DEFAULT_PARTITION_MAX_BYTES = 1048576


async def handle(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(FETCH, request.header.api_version)
    if getattr(body, "session_id", 0) != 0:
        return build(cls, throttle_time=0, error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=())
    if follower_id(body) >= 0:
        # A follower's fetch needs Kafka's CLUSTER_ACTION, which no Kafka-listener client has: replication runs
        # between brokers on gRPC. Kafka answers every partition TOPIC_AUTHORIZATION_FAILED.
        responses = _refused(cls, body)
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, session_id=0, responses=responses)
    deadline = time.monotonic() + body.max_wait.total_seconds()
    while True:
        # No await between a read and the wait: a change in between cannot be missed.
        responses, total, failed = _read(ctx, cls, body)
        remaining = deadline - time.monotonic()
        if total >= max(1, body.min_bytes) or failed or remaining <= 0:
            return build(cls, throttle_time=0, error_code=ErrorCode.NONE, session_id=0, responses=responses)
        await ctx.manager.wait_for_change(False, remaining)


def follower_id(body: Any) -> int:
    """The fetching replica's id (-1: a consumer): `replica_id` before v15, `replica_state` from v15."""
    state = getattr(body, "replica_state", None)
    return int(state.replica_id) if state is not None else int(getattr(body, "replica_id", -1))


def _refused(cls: type, body: Any) -> tuple[Any, ...]:
    by_id = has_field(sibling(cls, "FetchableTopicResponse"), "topic_id")
    topics = []
    for topic in body.topics or ():
        partitions = tuple(
            _partition(None, cls, None, line.partition, FetchPartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            for line in topic.partitions or ()
        )
        key = {"topic_id": topic.topic_id} if by_id else {"topic": topic.topic}
        topics.append(build(sibling(cls, "FetchableTopicResponse"), partitions=partitions, **key))
    return tuple(topics)


def _read(ctx: WireContext, cls: type, body: Any) -> tuple[tuple[Any, ...], int, bool]:
    """Every partition once: (topic entries, record bytes read, whether any partition failed)."""
    image = ctx.manager.metadata.image
    by_id = has_field(sibling(cls, "FetchableTopicResponse"), "topic_id")  # v13+ name topics by id
    budget = body.max_bytes
    total, failed, topics = 0, False, []
    for topic in body.topics or ():
        known = image.topic(topic.topic_id) if by_id else image.topics_by_name.get(topic.topic)
        partitions = []
        for line in topic.partitions or ():
            if known is None:
                result = FetchPartitionResult(
                    ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
            else:
                # At least one batch even past max_bytes: the log read returns a first batch whole.
                max_bytes = min(line.partition_max_bytes or DEFAULT_PARTITION_MAX_BYTES, max(budget - total, 1))
                tp = TopicPartition(known.name, line.partition)
                epoch = getattr(line, "current_leader_epoch", -1)  # v9+; before, no epoch check
                result = ctx.manager.consumer_fetch(tp, line.fetch_offset, epoch, max_bytes)
            failed |= result.error != ErrorCode.NONE
            total += len(result.records)
            partitions.append(_partition(ctx, cls, known.name if known else None, line.partition, result))
        key = {"topic_id": topic.topic_id} if by_id else {"topic": topic.topic}
        topics.append(build(sibling(cls, "FetchableTopicResponse"), partitions=tuple(partitions), **key))
    return tuple(topics), total, failed


def _partition(ctx: WireContext | None, cls: type, topic: str | None, index: int, result: FetchPartitionResult) -> Any:
    replica = ctx.manager.replicas.get(TopicPartition(topic, index)) if ctx is not None and topic else None
    return build(
        sibling(cls, "PartitionData"),
        partition_index=index,
        error_code=result.error,
        high_watermark=result.high_watermark,
        last_stable_offset=result.high_watermark,
        log_start_offset=replica.log.log_start_offset if replica is not None else -1,
        aborted_transactions=None,
        preferred_read_replica=-1,
        records=result.records,
    )
