"""The expiry of committed offsets (Kafka's offsets.retention.minutes, GroupMetadataManager.cleanupGroupMetadata /
OffsetMetadataManager.cleanupExpiredOffsets), checked every offsets.retention.check.interval.ms:
- an empty classic group's offsets expire once the retention passed since it became empty;
- a stable group of the consumer protocol whose subscriptions are readable: offsets of topics no member subscribes
  to expire once the retention passed since their commit; the subscribed ones never do;
- a group that only stores offsets (no protocol type: assign() consumers, admin tools, and the offsets of a KIP-848
  group, which keeps those of its subscribed topics): each offset by its commit timestamp;
- any other group (rebalancing, or members of another protocol) keeps its offsets.
An offset committed with an explicit retention (OffsetCommit v2-v4's RetentionTimeMs) expires at its expire
timestamp instead, under the same rules of which groups and topics expire. An offset with a commit or a
transactional commit under way stays. Expired offsets get tombstones in
__consumer_offsets, stored with acks=all before they leave memory, so a new coordinator does not load them; a group
left empty with no offsets gets its group tombstone too and is gone, and so does an Empty KIP-848 group (no
member), its records' tombstones in the same batch, as Kafka's cleanupGroupMetadata deletes it once every offset of
it expired. Pure: the shell passes the time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from minikafka.broker.consumer_group.model import ConsumerGroup
from minikafka.broker.consumer_group.subscriptions import member_topics
from minikafka.broker.group.effects import Append, GroupEvent, GroupStep
from minikafka.broker.group.offset_delete import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from minikafka.broker.group.records import GroupMetadataKey, OffsetCommitKey, OffsetsRecord
from minikafka.broker.group.state import (
    Clock,
    Group,
    GroupState,
    OffsetAndMetadata,
    PendingCommit,
    PendingOffsetExpiry,
    TopicPartitionKey,
)
from minikafka.common.errors import ErrorCode

NO_TOPICS: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ExpiryScope:
    retention_ms: int  # offsets.retention.minutes
    # The topics the KIP-848 group storing these offsets subscribes to; None when there is no such group.
    consumer_subscribed: frozenset[str] | None = None
    # The group's partitions with a transactional commit awaiting its marker.
    in_transaction: frozenset[TopicPartitionKey] = frozenset()
    # When the KIP-848 group is Empty: the tombstones of its records, written with its last offsets' (Kafka deletes
    # an Empty group whose offsets all expired); empty otherwise.
    consumer_group_tombstones: tuple[OffsetsRecord, ...] = ()


@dataclass(frozen=True)
class ExpiryRule:
    base: Callable[[OffsetAndMetadata], int]  # the epoch ms the retention counts from
    kept_topics: frozenset[str]


def consumer_group_topics(group: ConsumerGroup) -> frozenset[str]:
    """A KIP-848 group's subscribed topics, by name or through a regular expression."""
    return frozenset().union(*(member_topics(m, group.resolved_regexes) for m in group.members.values()))


def expiry_rule(group: Group, clock: Clock, scope: ExpiryScope) -> ExpiryRule | None:
    """Kafka's offsetExpirationCondition with isSubscribedToTopic; None: nothing of the group expires now."""
    if group.protocol_type is None:
        return ExpiryRule(lambda value: value.commit_timestamp_ms, scope.consumer_subscribed or NO_TOPICS)
    if group.state == GroupState.EMPTY:
        empty_since = clock.to_wall(group.state_timestamp_ms)
        return ExpiryRule(lambda _value: empty_since, NO_TOPICS)
    if group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.state == GroupState.STABLE:
        topics = subscribed_topics(group)
        if topics is not None:
            return ExpiryRule(lambda value: value.commit_timestamp_ms, topics)
    return None


def expire_offsets(group: Group, clock: Clock, scope: ExpiryScope, request_id: int) -> GroupStep:
    """The group's expired offsets (and the group itself when nothing is left of it) get tombstones, written under
    `request_id`; they leave memory when stored (`offsets_expired`)."""
    if group.state == GroupState.DEAD or any(isinstance(p, PendingOffsetExpiry) for p in group.pending_writes.values()):
        return GroupStep(group)
    rule = expiry_rule(group, clock, scope)
    if rule is None:
        return GroupStep(group)
    committing = {key for p in group.pending_writes.values() if isinstance(p, PendingCommit) for key, _ in p.offsets}
    expired = tuple(
        (key, value)
        for key, value in group.offsets.items()
        if key.topic not in rule.kept_topics
        and key not in committing
        and key not in scope.in_transaction
        and _is_expired(value, rule, clock, scope.retention_ms)
    )
    consumer_empty = bool(scope.consumer_group_tombstones)
    delete_group = (
        len(expired) == len(group.offsets)
        and _deletable(group)
        and (scope.consumer_subscribed is None or consumer_empty)
        and not scope.in_transaction
    )
    if not expired and not delete_group:
        return GroupStep(group)
    records = [OffsetsRecord(OffsetCommitKey(group.group_id, k.topic, k.partition), None) for k, _ in expired]
    if delete_group:
        records += scope.consumer_group_tombstones or (OffsetsRecord(GroupMetadataKey(group.group_id), None),)
    pending = PendingOffsetExpiry(request_id, expired, delete_group)
    return GroupStep(group.with_pending(pending), (Append(request_id, tuple(records)),))


def _is_expired(value: OffsetAndMetadata, rule: ExpiryRule, clock: Clock, retention_ms: int) -> bool:
    """Kafka's OffsetExpirationConditionImpl: an offset committed with an explicit retention (OffsetCommit v2-v4)
    expires at its expire timestamp; any other once the retention passed since the rule's base time."""
    if value.expire_timestamp_ms is not None:
        return clock.wall_ms >= value.expire_timestamp_ms
    return clock.wall_ms - rule.base(value) >= retention_ms


def _deletable(group: Group) -> bool:
    """Kafka's: an empty group with no offsets left goes (Dead), its metadata tombstoned."""
    return (
        group.state == GroupState.EMPTY
        and not group.members
        and not group.pending_members
        and not any(not isinstance(p, PendingOffsetExpiry) for p in group.pending_writes.values())
    )


def offsets_expired(group: Group, pending: PendingOffsetExpiry, error: ErrorCode) -> GroupStep:
    """The tombstones' write finished (`error` as the client would see it). An offset committed again meanwhile
    stays: its record follows the tombstone in the log."""
    if error != ErrorCode.NONE:
        event = GroupEvent("offsets_expiry_failed", {"group": group.group_id, "error": error.name})
        return GroupStep(group, (event,))
    expired = dict(pending.expired)
    offsets = {k: v for k, v in group.offsets.items() if expired.get(k) != v}
    group = group.evolve(offsets=offsets)
    deleted = pending.delete_group and not offsets and _deletable(group)
    if deleted:
        group = group.evolve(state=GroupState.DEAD)
    event = GroupEvent(
        "offsets_expired",
        {
            "group": group.group_id,
            "partitions": [f"{k.topic}-{k.partition}" for k in expired],
            "group_deleted": deleted,
        },
    )
    return GroupStep(group, (event,))
