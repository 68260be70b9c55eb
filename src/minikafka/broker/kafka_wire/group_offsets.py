"""OffsetCommit and OffsetFetch: a group's committed offsets, stored in __consumer_offsets by its coordinator."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any, NamedTuple

from minikafka.broker.consumer_group import shell as consumer_groups
from minikafka.broker.consumer_group.model import ConsumerGroup
from minikafka.broker.group.effects import CommitResult
from minikafka.broker.group.offsets import (
    DEFAULT_RETENTION_TIME,
    CommitEntry,
    CommitRequest,
    commit_offsets,
    fetch_offsets,
)
from minikafka.broker.group.state import OffsetAndMetadata, TopicPartitionKey
from minikafka.broker.kafka_wire.consumer_group import coordinate, group_config
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, has_field, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.clock import wall_ms
from minikafka.common.errors import ErrorCode

OFFSET_COMMIT, OFFSET_FETCH = 8, 9
NO_LEADER_EPOCH = -1


async def handle_commit(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(OFFSET_COMMIT, request.header.api_version)
    # As Kafka: READ on the group, else every partition is GROUP_AUTHORIZATION_FAILED; then READ on each topic.
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, body.group_id):
        return _commit_refused(cls, body, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    denied = {t.name for t in body.topics or () if not ctx.allowed(AclOperation.READ, ResourceType.TOPIC, t.name)}
    # A topic the metadata does not know is answered UNKNOWN_TOPIC_OR_PARTITION and not stored, as Kafka does.
    known = {name for name in ctx.manager.metadata.image.topics_by_name if name not in denied}
    commit = CommitRequest(
        request_id=0,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        generation_id=body.generation_id_or_member_epoch,
        entries=tuple(
            CommitEntry(
                topic.name,
                p.partition_index,
                p.committed_offset,
                getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH),
                p.committed_metadata,
            )
            for topic in body.topics or ()
            if topic.name in known
            for p in topic.partitions or ()
        ),
        api_version=request.header.api_version,
        commit_timestamp_ms=wall_ms(),
        # v2-v4 only: a client's own retention, as Kafka honours it (-1: the broker's).
        retention_time_ms=_retention_ms(body),
    )
    result = await _commit(ctx, body.group_id, commit)
    errors = dict(result.partitions)
    partition_entry = sibling(cls, "OffsetCommitResponsePartition")
    topics = []
    for topic in body.topics or ():
        partitions = tuple(
            build(
                partition_entry,
                partition_index=p.partition_index,
                error_code=errors.get(TopicPartitionKey(topic.name, p.partition_index), result.error)
                if topic.name in known
                else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                if topic.name in denied
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            )
            for p in topic.partitions or ()
        )
        topics.append(build(sibling(cls, "OffsetCommitResponseTopic"), name=topic.name, partitions=partitions))
    return build(cls, throttle_time=0, topics=tuple(topics))


def _retention_ms(body: Any) -> int:
    retention = getattr(body, "retention_time", DEFAULT_RETENTION_TIME)
    return retention // timedelta(milliseconds=1) if isinstance(retention, timedelta) else int(retention)


def _commit_refused(cls: type, body: Any, error: ErrorCode) -> Any:
    partition_entry = sibling(cls, "OffsetCommitResponsePartition")
    topic_entry = sibling(cls, "OffsetCommitResponseTopic")
    topics = []
    for topic in body.topics or ():
        partitions = tuple(
            build(partition_entry, partition_index=p.partition_index, error_code=error) for p in topic.partitions or ()
        )
        topics.append(build(topic_entry, name=topic.name, partitions=partitions))
    return build(cls, throttle_time=0, topics=tuple(topics))


class FetchingMember(NamedTuple):
    member_id: str | None
    member_epoch: int


NO_MEMBER = FetchingMember(None, -1)


def consumer_group_refusal(
    ctx: WireContext, group_id: str, commit: CommitRequest, transactional: bool = False
) -> ErrorCode | None:
    """A commit to a consumer-protocol group is validated by member epoch here: None when the group is not one
    (the classic coordinator validates it), else NONE or the refusal."""
    consumer = ctx.groups.consumer_group(group_id) if ctx.groups is not None and group_id else None
    if not isinstance(consumer, ConsumerGroup):
        return None
    return consumer_groups.validate_commit(
        consumer, commit.member_id, commit.generation_id, commit.api_version, transactional, commit.group_instance_id
    )


def as_simple_commit(commit: CommitRequest) -> CommitRequest:
    """Validated by member epoch: the offsets are stored as the (empty) classic group's, as a simple commit."""
    return dataclasses.replace(commit, member_id="", group_instance_id=None, generation_id=-1)


async def _commit(ctx: WireContext, group_id: str, commit: CommitRequest) -> CommitResult:
    refusal = consumer_group_refusal(ctx, group_id, commit)
    if refusal is not None:
        if refusal != ErrorCode.NONE:
            return CommitResult(refusal)
        commit = as_simple_commit(commit)
    return await coordinate(
        ctx,
        group_id,
        CommitResult,
        lambda group, rid, _now: commit_offsets(group, dataclasses.replace(commit, request_id=rid), group_config(ctx)),
    )


def handle_fetch(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(OFFSET_FETCH, request.header.api_version)
    if has_field(cls, "groups"):  # v8+: many groups in one request
        group_entry = sibling(cls, "OffsetFetchResponseGroup")
        groups = tuple(
            _fetched_group(
                ctx,
                cls,
                group_entry,
                group.group_id,
                group.topics,
                "OffsetFetchResponseTopics",
                _member_of(group),
                bool(body.require_stable),
            )
            for group in body.groups
        )
        return build(cls, throttle_time=0, groups=groups)
    stable = bool(getattr(body, "require_stable", False))  # v7+
    answer = _fetched_group(ctx, cls, None, body.group_id, body.topics, "OffsetFetchResponseTopic", NO_MEMBER, stable)
    return build(cls, throttle_time=0, topics=answer["topics"], error_code=answer["error_code"])


def _fetched_group(
    ctx: WireContext,
    cls: type,
    group_entry: type | None,
    group_id: str,
    requested: Any,
    topic_name: str,
    member: FetchingMember = NO_MEMBER,
    require_stable: bool = False,
) -> Any:
    group = ctx.groups.group(group_id) if ctx.groups is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):  # another group's offsets: not shown
        group = ErrorCode.GROUP_AUTHORIZATION_FAILED
    consumer = ctx.groups.consumer_group(group_id) if ctx.groups is not None else None
    if isinstance(consumer, ConsumerGroup) and not isinstance(group, ErrorCode):
        refused = consumer_groups.validate_fetch(consumer, member.member_id, member.member_epoch)
        if refused != ErrorCode.NONE:
            group = refused
    wanted = None
    if requested is not None:
        wanted = [TopicPartitionKey(t.name, p) for t in requested for p in t.partition_indexes]
    if isinstance(group, ErrorCode):
        error, offsets = group, dict.fromkeys(wanted or ())
    else:
        error, offsets = ErrorCode.NONE, fetch_offsets(group, wanted)
    # Kafka: DESCRIBE on each topic; all of a group's offsets leave out the others, named ones are refused.
    describable = {key.topic: ctx.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, key.topic) for key in offsets}
    if wanted is None:
        offsets = {key: value for key, value in offsets.items() if describable[key.topic]}
    by_topic: dict[str, list[Any]] = {}
    partition_cls = sibling(cls, topic_name.replace("Topics", "Partitions").replace("Topic", "Partition"))
    # KIP-447: a consumer that asks for stable offsets waits out a transaction's commit still on its way.
    unstable = ctx.groups.unstable_offsets(group_id) if ctx.groups is not None and require_stable else set()
    for key, value in offsets.items():
        if not describable[key.topic]:
            value, partition_error = None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif key in unstable:
            value, partition_error = None, ErrorCode.UNSTABLE_OFFSET_COMMIT
        else:
            partition_error = error
        by_topic.setdefault(key.topic, []).append(_partition(partition_cls, key, value, partition_error))
    topic_cls = sibling(cls, topic_name)
    topics = tuple(build(topic_cls, name=name, partitions=tuple(parts)) for name, parts in by_topic.items())
    if group_entry is None:
        return {"topics": topics, "error_code": error}
    return build(group_entry, group_id=group_id, topics=topics, error_code=error)


def _member_of(group: Any) -> FetchingMember:
    """OffsetFetch v9+ names the consumer-protocol member asking, whose epoch must be current."""
    return FetchingMember(getattr(group, "member_id", None), getattr(group, "member_epoch", -1))


def _partition(cls: type, key: TopicPartitionKey, value: OffsetAndMetadata | None, error: ErrorCode) -> Any:
    return build(
        cls,
        partition_index=key.partition,
        committed_offset=value.offset if value is not None else -1,
        committed_leader_epoch=value.leader_epoch if value is not None else NO_LEADER_EPOCH,
        metadata=value.metadata if value is not None else "",
        error_code=error,
    )
