"""Fetch for consumers: decoded into the request layer's FetchRequest (`broker.requests.fetch`, which the gRPC
front end calls too: sessions, the byte limit, the long poll) and its answer encoded for the request's version.

Sessions (KIP-227, v7+) come from the broker's one session cache; epoch -1 (what librdkafka sends) is a sessionless
full fetch, and before v7 every fetch is. Topics are named by id from v13, by name before."""

from __future__ import annotations

import uuid
from typing import Any

from minikafka.broker.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID, PartitionFetchState
from minikafka.broker.kafka_wire.api_versions import FETCH
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, has_field, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.requests.fetch import (
    FetchAnswer,
    FetchPartitionAnswer,
    FetchRequest,
    ForgottenPartition,
    handle_fetch,
    readable_by,
)
from minikafka.common.errors import ErrorCode
from minikafka.storage.transaction_index import AbortedTxn


async def handle(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(FETCH, request.header.api_version)
    by_id = has_field(sibling(cls, "FetchableTopicResponse"), "topic_id")  # v13+ name topics by id
    if follower_id(body) >= 0:
        # A follower's fetch needs Kafka's CLUSTER_ACTION, which no Kafka-listener client has: replication runs
        # between brokers on gRPC. Kafka answers every partition TOPIC_AUTHORIZATION_FAILED.
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, session_id=0, responses=_refused(cls, body))
    decoded = _decoded(body, by_id)
    decoded.readable = readable_by(ctx.manager, ctx.caller)
    answer = await handle_fetch(ctx.manager, ctx.fetch_sessions, decoded)
    if answer.error != ErrorCode.NONE:
        return build(cls, throttle_time=0, error_code=answer.error, session_id=INVALID_SESSION_ID, responses=())
    return build(
        cls, throttle_time=0, error_code=ErrorCode.NONE, session_id=answer.session_id, responses=_topics(cls, answer)
    )


def follower_id(body: Any) -> int:
    """The fetching replica's id (-1: a consumer): `replica_id` before v15, `replica_state` from v15."""
    state = getattr(body, "replica_state", None)
    return int(state.replica_id) if state is not None else int(getattr(body, "replica_id", -1))


def _decoded(body: Any, by_id: bool) -> FetchRequest:
    lines = []
    for topic in body.topics or ():
        topic_id = topic.topic_id.bytes if by_id else b""
        name = "" if by_id else topic.topic
        for line in topic.partitions or ():
            lines.append(
                PartitionFetchState(
                    topic_id,
                    name,
                    line.partition,
                    getattr(line, "current_leader_epoch", -1),  # v9+; before, no epoch check
                    line.fetch_offset,
                    getattr(line, "last_fetched_epoch", -1),  # v12+
                    getattr(line, "log_start_offset", -1),
                    line.partition_max_bytes,
                )
            )
    forgotten = [
        ForgottenPartition(topic.topic_id.bytes if by_id else b"", "" if by_id else topic.topic, partition)
        for topic in getattr(body, "forgotten_topics_data", None) or ()  # v7+
        for partition in topic.partitions
    ]
    return FetchRequest(
        -1,
        -1,
        int(body.max_wait.total_seconds() * 1000),
        body.min_bytes,
        body.max_bytes,
        getattr(body, "session_id", INVALID_SESSION_ID),
        getattr(body, "session_epoch", FINAL_EPOCH),  # before v7 every fetch is full and sessionless
        lines,
        forgotten,
        getattr(body, "isolation_level", 0),  # v4+
    )


def _topics(cls: type, answer: FetchAnswer) -> tuple[Any, ...]:
    topic_cls = sibling(cls, "FetchableTopicResponse")
    by_id = has_field(topic_cls, "topic_id")
    topics = []
    for topic in answer.topics:
        key = {"topic_id": uuid.UUID(bytes=topic.topic_id)} if by_id else {"topic": topic.topic}
        partitions = tuple(_partition(cls, partition) for partition in topic.partitions)
        topics.append(build(topic_cls, partitions=partitions, **key))
    return tuple(topics)


def _partition(cls: type, answer: FetchPartitionAnswer) -> Any:
    diverging = answer.diverging
    extra = {}
    if diverging is not None:  # v12+: where the fetcher's log diverges from the leader's
        extra["diverging_epoch"] = build(
            sibling(cls, "EpochEndOffset"), epoch=diverging.epoch, end_offset=diverging.end_offset
        )
    return build(
        sibling(cls, "PartitionData"),
        partition_index=answer.partition,
        error_code=answer.error,
        high_watermark=answer.high_watermark,
        last_stable_offset=answer.last_stable_offset,
        log_start_offset=answer.log_start_offset,
        aborted_transactions=_aborted(cls, answer.aborted_transactions),
        preferred_read_replica=-1,
        records=answer.records,
        **extra,
    )


def _aborted(cls: type, aborted: tuple[AbortedTxn, ...] | None) -> tuple[Any, ...] | None:
    if aborted is None:
        return None
    entry = sibling(cls, "AbortedTransaction")
    return tuple(build(entry, producer_id=txn.producer_id, first_offset=txn.first_offset) for txn in aborted)


def _refused(cls: type, body: Any) -> tuple[Any, ...]:
    by_id = has_field(sibling(cls, "FetchableTopicResponse"), "topic_id")
    partition_cls = sibling(cls, "PartitionData")
    topics = []
    for topic in body.topics or ():
        partitions = tuple(
            build(
                partition_cls,
                partition_index=line.partition,
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                high_watermark=-1,
                last_stable_offset=-1,
                log_start_offset=-1,
                aborted_transactions=None,
                preferred_read_replica=-1,
                records=b"",
            )
            for line in topic.partitions or ()
        )
        key = {"topic_id": topic.topic_id} if by_id else {"topic": topic.topic}
        topics.append(build(sibling(cls, "FetchableTopicResponse"), partitions=partitions, **key))
    return tuple(topics)
