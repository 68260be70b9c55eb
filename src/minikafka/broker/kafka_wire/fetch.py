"""Fetch for consumers: whole batches below the high watermark (READ_UNCOMMITTED: nothing is transactional),
long-polled until min_bytes or max_wait through the replica manager's change notification.

Fetch sessions (KIP-227, v7+) come from the broker's session cache, the one its gRPC listeners use: a Fetch with
epoch 0 opens a session, later ones carry its id and the next epoch, list only the partitions whose fetch state
changed (plus the forgotten ones) and get back only the partitions with news. Epoch -1 (what librdkafka sends)
is a sessionless full fetch. Sessions key partitions by topic id; a request naming topics (before v13) is keyed by
the id the metadata gives the name."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import structlog

from minikafka.broker.fetch_session import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchContext,
    PartitionAnswer,
    PartitionFetchState,
    PartitionKey,
    TopicTargets,
    must_answer,
)
from minikafka.broker.kafka_wire.api_versions import FETCH
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, has_field, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import FetchPartitionResult
from minikafka.common.clock import monotonic_ms
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.image import MetadataImage, TopicImage

DEFAULT_PARTITION_MAX_BYTES = 1048576
# Session key of a topic name the metadata does not know (it has no id); at 16 bytes it names no topic either.
UNKNOWN_NAME_PREFIX = b"?"


async def handle(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(FETCH, request.header.api_version)
    if follower_id(body) >= 0:
        # A follower's fetch needs Kafka's CLUSTER_ACTION, which no Kafka-listener client has: replication runs
        # between brokers on gRPC. Kafka answers every partition TOPIC_AUTHORIZATION_FAILED.
        responses = _refused(cls, body)
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, session_id=0, responses=responses)
    fetch = _session_context(ctx, body, has_field(sibling(cls, "FetchableTopicResponse"), "topic_id"))
    if fetch.error != ErrorCode.NONE:
        return build(cls, throttle_time=0, error_code=fetch.error, session_id=INVALID_SESSION_ID, responses=())
    deadline = time.monotonic() + body.max_wait.total_seconds()
    while True:
        # No await between a read and the wait: a change in between cannot be missed. As in Kafka, min_bytes 0
        # (or a fetch of no partitions) is answered at once.
        read = _read(ctx, cls, fetch, body.max_bytes)
        remaining = deadline - time.monotonic()
        if read.total >= body.min_bytes or not fetch.targets or read.failed or remaining <= 0:
            ctx.fetch_sessions.record_answers(fetch, read.sent)
            return build(
                cls, throttle_time=0, error_code=ErrorCode.NONE, session_id=fetch.session_id, responses=read.topics
            )
        await ctx.manager.wait_for_change(False, remaining)


def follower_id(body: Any) -> int:
    """The fetching replica's id (-1: a consumer): `replica_id` before v15, `replica_state` from v15."""
    state = getattr(body, "replica_state", None)
    return int(state.replica_id) if state is not None else int(getattr(body, "replica_id", -1))


def session_key_id(image: MetadataImage, topic: Any, by_id: bool) -> bytes:
    """The 16-byte topic id a request line is keyed by in a session: its own (v13+), or its name's."""
    if by_id:
        return topic.topic_id.bytes
    known = image.topics_by_name.get(topic.topic)
    return known.topic_id.bytes if known is not None else UNKNOWN_NAME_PREFIX + topic.topic.encode()


def fetch_lines(image: MetadataImage, body: Any, by_id: bool) -> list[PartitionFetchState]:
    """The request's partitions as the session cache takes them (names resolved: ids are the session keys)."""
    lines = []
    for topic in body.topics or ():
        key = session_key_id(image, topic, by_id)
        known = image.topic(topic.topic_id) if by_id else image.topics_by_name.get(topic.topic)
        name = known.name if known is not None else getattr(topic, "topic", "")
        for line in topic.partitions or ():
            lines.append(
                PartitionFetchState(
                    key,
                    name,
                    line.partition,
                    getattr(line, "current_leader_epoch", -1),  # v9+; before, no epoch check
                    line.fetch_offset,
                    getattr(line, "last_fetched_epoch", -1),
                    getattr(line, "log_start_offset", -1),
                    line.partition_max_bytes,
                )
            )
    return lines


def forgotten_keys(image: MetadataImage, body: Any, by_id: bool) -> list[PartitionKey]:
    """The partitions an incremental fetch drops from its session (v7+)."""
    return [
        (session_key_id(image, topic, by_id), partition)
        for topic in getattr(body, "forgotten_topics_data", None) or ()
        for partition in topic.partitions
    ]


def _session_context(ctx: WireContext, body: Any, by_id: bool) -> FetchContext:
    image = ctx.manager.metadata.image
    session_id = getattr(body, "session_id", INVALID_SESSION_ID)
    epoch = getattr(body, "session_epoch", FINAL_EPOCH)  # before v7 every fetch is full and sessionless
    lines = fetch_lines(image, body, by_id)
    fetch = ctx.fetch_sessions.new_context(
        session_id, epoch, lines, forgotten_keys(image, body, by_id), False, monotonic_ms()
    )
    if fetch.session is not None and not fetch.incremental:
        structlog.get_logger().info(
            "fetch_session_created", session_id=fetch.session_id, replica_id=-1, partitions=len(lines)
        )
    return fetch


@dataclass
class _Read:
    """One pass over a fetch's partitions: the topic entries to answer, the record bytes read, whether any
    partition failed, and what a session answered."""

    topics: list[Any] = field(default_factory=list)
    total: int = 0
    failed: bool = False
    sent: list[tuple[CachedPartition, PartitionAnswer]] = field(default_factory=list)


def _read(ctx: WireContext, cls: type, fetch: FetchContext, max_bytes: int) -> _Read:
    """Every partition of the fetch once; an incremental fetch answers only the partitions with news."""
    image = ctx.manager.metadata.image
    by_id = has_field(sibling(cls, "FetchableTopicResponse"), "topic_id")  # v13+ name topics by id
    read = _Read()
    for target in fetch.targets:
        known = _known(image, target)
        partitions = []
        for cached in target.partitions:
            result = _read_partition(ctx, known, cached.state, by_id, max(max_bytes - read.total, 1))
            replica = ctx.manager.replicas.get(TopicPartition(known.name, cached.state.partition)) if known else None
            log_start = replica.log.log_start_offset if replica is not None else -1
            failed = result.error != ErrorCode.NONE
            read.failed |= failed
            if fetch.session is not None:
                answer = PartitionAnswer(len(result.records), failed, result.high_watermark, log_start)
                if fetch.incremental and not must_answer(cached, answer):
                    continue
                read.sent.append((cached, answer))
            read.total += len(result.records)
            partitions.append(_partition(cls, cached.state.partition, result, log_start))
        if partitions:
            key = {"topic_id": uuid.UUID(bytes=target.topic_id)} if by_id else {"topic": target.topic}
            read.topics.append(build(sibling(cls, "FetchableTopicResponse"), partitions=tuple(partitions), **key))
    return read


def _known(image: MetadataImage, target: TopicTargets) -> TopicImage | None:
    return image.topic(uuid.UUID(bytes=target.topic_id)) if len(target.topic_id) == 16 else None


def _read_partition(
    ctx: WireContext, known: TopicImage | None, state: PartitionFetchState, by_id: bool, budget: int
) -> FetchPartitionResult:
    if known is None:
        return FetchPartitionResult(ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    # At least one batch even past max_bytes: the log read returns a first batch whole.
    max_bytes = min(state.partition_max_bytes or DEFAULT_PARTITION_MAX_BYTES, budget)
    tp = TopicPartition(known.name, state.partition)
    return ctx.manager.consumer_fetch(tp, state.fetch_offset, state.current_leader_epoch, max_bytes)


def _refused(cls: type, body: Any) -> tuple[Any, ...]:
    by_id = has_field(sibling(cls, "FetchableTopicResponse"), "topic_id")
    topics = []
    for topic in body.topics or ():
        partitions = tuple(
            _partition(cls, line.partition, FetchPartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED), -1)
            for line in topic.partitions or ()
        )
        key = {"topic_id": topic.topic_id} if by_id else {"topic": topic.topic}
        topics.append(build(sibling(cls, "FetchableTopicResponse"), partitions=partitions, **key))
    return tuple(topics)


def _partition(cls: type, index: int, result: FetchPartitionResult, log_start_offset: int) -> Any:
    return build(
        sibling(cls, "PartitionData"),
        partition_index=index,
        error_code=result.error,
        high_watermark=result.high_watermark,
        last_stable_offset=result.high_watermark,
        log_start_offset=log_start_offset,
        aborted_transactions=None,
        preferred_read_replica=-1,
        records=result.records,
    )
