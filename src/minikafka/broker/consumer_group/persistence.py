"""A consumer group's state as Kafka's ConsumerGroup* records of __consumer_offsets, and back. Pure: the records of
a transition are the difference between the group before and after it (nothing for a plain heartbeat), written in
the order Kafka writes them; loading replays the records in log order, the last of each key winning and a
tombstone removing it, so a new coordinator has the group epoch, member epochs and assignments the old one had."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from minikafka.broker.consumer_group.model import (
    NO_PARTITIONS,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    TopicPartition,
)
from minikafka.broker.consumer_group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    TopicMetadata,
    TopicPartitions,
)

V = TypeVar("V")
MEMBER_STATE_CODES = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_PARTITIONS: 1,
    MemberState.UNRELEASED_PARTITIONS: 2,
}
MEMBER_STATES = {code: state for state, code in MEMBER_STATE_CODES.items()}


@dataclass(frozen=True)
class ConsumerGroupRecord:
    """One record of a consumer group; `value` None is a tombstone."""

    key: ConsumerGroupKey
    value: ConsumerGroupValue | None


# ---- from state to records ----


def group_records(
    before: ConsumerGroup | None, after: ConsumerGroup | None, topic_ids: Mapping[str, uuid.UUID]
) -> tuple[ConsumerGroupRecord, ...]:
    """The records that take the stored group from `before` to `after` (None: no such group). `topic_ids`: the
    id of each topic the metadata knows; a partition of a topic without one is not written."""
    reference = after if after is not None else before
    if reference is None:
        return ()
    group_id = reference.group_id
    old = before if before is not None else ConsumerGroup(group_id)
    new = after if after is not None else ConsumerGroup(group_id)
    records: list[ConsumerGroupRecord] = []
    for member_id in sorted(set(old.members) - set(new.members)):
        records += _member_tombstones(group_id, member_id)
    for member_id in sorted(new.members):
        member, previous = new.members[member_id], old.members.get(member_id)
        if previous is None or _subscription(previous) != _subscription(member):
            key = ConsumerGroupMemberMetadataKey(group_id, member_id)
            records.append(ConsumerGroupRecord(key, _subscription(member)))
    records += _regex_records(old, new)
    if after is None:
        return (*records, *_group_tombstones(group_id))
    if before is None or old.subscription_metadata != new.subscription_metadata:
        records.append(_partition_metadata(new, topic_ids))
    if before is None or old.group_epoch != new.group_epoch:
        epoch = ConsumerGroupMetadataValue(new.group_epoch)
        records.append(ConsumerGroupRecord(ConsumerGroupMetadataKey(group_id), epoch))
    records += _target_records(old, new, topic_ids)
    for member_id in sorted(new.members):
        current = _current(new.members[member_id], topic_ids)
        previous = old.members.get(member_id)
        if previous is None or _current(previous, topic_ids) != current:
            records.append(ConsumerGroupRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), current))
    return tuple(records)


def _member_tombstones(group_id: str, member_id: str) -> list[ConsumerGroupRecord]:
    return [
        ConsumerGroupRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None),
        ConsumerGroupRecord(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None),
        ConsumerGroupRecord(ConsumerGroupMemberMetadataKey(group_id, member_id), None),
    ]


def _regex_records(old: ConsumerGroup, new: ConsumerGroup) -> list[ConsumerGroupRecord]:
    """Every regular expression a resolution resolved (as Kafka writes them all, with the metadata offset they are
    as of), or whose matches changed; a tombstone once no member subscribes with it."""
    records = []
    resolved_again = old.regexes_version != new.regexes_version
    for regex in sorted(set(old.resolved_regexes) | set(new.resolved_regexes)):
        key = ConsumerGroupRegularExpressionKey(new.group_id, regex)
        topics = new.resolved_regexes.get(regex)
        if topics is None:
            records.append(ConsumerGroupRecord(key, None))
        elif resolved_again or old.resolved_regexes.get(regex) != topics:
            version = max(new.regexes_version, 0)
            value = ConsumerGroupRegularExpressionValue(tuple(sorted(topics)), version=version, timestamp=0)
            records.append(ConsumerGroupRecord(key, value))
    return records


def _group_tombstones(group_id: str) -> list[ConsumerGroupRecord]:
    return [
        ConsumerGroupRecord(ConsumerGroupTargetAssignmentMetadataKey(group_id), None),
        ConsumerGroupRecord(ConsumerGroupPartitionMetadataKey(group_id), None),
        ConsumerGroupRecord(ConsumerGroupMetadataKey(group_id), None),
    ]


def _subscription(member: ConsumerMember) -> ConsumerGroupMemberMetadataValue:
    return ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topics)),
        subscribed_topic_regex=member.subscribed_topic_regex,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor,
        classic=member.classic,
    )


def _partition_metadata(group: ConsumerGroup, topic_ids: Mapping[str, uuid.UUID]) -> ConsumerGroupRecord:
    topics = tuple(
        TopicMetadata(topic_ids[name], name, count)
        for name, count in sorted(group.subscription_metadata.items())
        if name in topic_ids
    )
    return ConsumerGroupRecord(
        ConsumerGroupPartitionMetadataKey(group.group_id), ConsumerGroupPartitionMetadataValue(topics)
    )


def _target_records(
    old: ConsumerGroup, new: ConsumerGroup, topic_ids: Mapping[str, uuid.UUID]
) -> list[ConsumerGroupRecord]:
    records = []
    for member_id in sorted(set(old.target) - set(new.target)):
        if member_id in new.members:  # a removed member's target went with its tombstones
            records.append(ConsumerGroupRecord(ConsumerGroupTargetAssignmentMemberKey(new.group_id, member_id), None))
    for member_id in sorted(new.target):
        if old.target.get(member_id) != new.target[member_id] or member_id not in old.target:
            value = ConsumerGroupTargetAssignmentMemberValue(by_topic_id(new.target[member_id], topic_ids))
            records.append(ConsumerGroupRecord(ConsumerGroupTargetAssignmentMemberKey(new.group_id, member_id), value))
    if old.assignment_epoch != new.assignment_epoch or (not old.members and new.members):
        value_ = ConsumerGroupTargetAssignmentMetadataValue(new.assignment_epoch)
        records.append(ConsumerGroupRecord(ConsumerGroupTargetAssignmentMetadataKey(new.group_id), value_))
    return records


def _current(member: ConsumerMember, topic_ids: Mapping[str, uuid.UUID]) -> ConsumerGroupCurrentMemberAssignmentValue:
    return ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=MEMBER_STATE_CODES[member.state],
        assigned=by_topic_id(member.assigned, topic_ids),
        pending_revocation=by_topic_id(member.pending_revocation, topic_ids),
    )


def by_topic_id(partitions: Partitions, topic_ids: Mapping[str, uuid.UUID]) -> tuple[TopicPartitions, ...]:
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        if tp.topic in topic_ids:
            grouped.setdefault(tp.topic, []).append(tp.partition)
    return tuple(TopicPartitions(topic_ids[topic], tuple(parts)) for topic, parts in grouped.items())


# ---- from records to state ----


@dataclass
class _Stored:
    """One group's records as replay leaves them."""

    epoch: int | None = None
    topics: dict[str, int] = field(default_factory=dict)
    assignment_epoch: int = 0
    subscriptions: dict[str, ConsumerGroupMemberMetadataValue] = field(default_factory=dict)
    targets: dict[str, tuple[TopicPartitions, ...]] = field(default_factory=dict)
    current: dict[str, ConsumerGroupCurrentMemberAssignmentValue] = field(default_factory=dict)
    regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    regexes_version: int = -1


def load_consumer_groups(
    records: Iterable[ConsumerGroupRecord], topic_names: Mapping[uuid.UUID, str], now: int
) -> dict[str, ConsumerGroup]:
    """The consumer groups as the records leave them. `topic_names`: the name of each topic id the metadata knows
    (partitions of a deleted topic are dropped). Loaded members count as just heard from."""
    stored: dict[str, _Stored] = {}
    for record in records:
        _replay(stored.setdefault(record.key.group, _Stored()), record)
    groups = {}
    for group_id, group in stored.items():
        if group.epoch is not None:  # an Empty group (no member) too, as Kafka keeps it
            groups[group_id] = _group(group_id, group, topic_names, now)
    return groups


def _replay(group: _Stored, record: ConsumerGroupRecord) -> None:
    key, value = record.key, record.value
    if isinstance(key, ConsumerGroupMetadataKey):
        group.epoch = value.epoch if isinstance(value, ConsumerGroupMetadataValue) else None
    elif isinstance(key, ConsumerGroupPartitionMetadataKey):
        topics = value.topics if isinstance(value, ConsumerGroupPartitionMetadataValue) else ()
        group.topics = {t.name: t.partitions for t in topics}
    elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
        target_epoch = value if isinstance(value, ConsumerGroupTargetAssignmentMetadataValue) else None
        group.assignment_epoch = target_epoch.assignment_epoch if target_epoch is not None else 0
    elif isinstance(key, ConsumerGroupMemberMetadataKey):
        _put(group.subscriptions, key.member_id, value if isinstance(value, ConsumerGroupMemberMetadataValue) else None)
    elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        target = value.topic_partitions if isinstance(value, ConsumerGroupTargetAssignmentMemberValue) else None
        _put(group.targets, key.member_id, target)
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        matched = frozenset(value.topics) if isinstance(value, ConsumerGroupRegularExpressionValue) else None
        _put(group.regexes, key.regular_expression, matched)
        if isinstance(value, ConsumerGroupRegularExpressionValue):
            group.regexes_version = value.version
    elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
        current = value if isinstance(value, ConsumerGroupCurrentMemberAssignmentValue) else None
        _put(group.current, key.member_id, current)


def _put(values: dict[str, V], member_id: str, value: V | None) -> None:
    if value is None:
        values.pop(member_id, None)
    else:
        values[member_id] = value


def _group(group_id: str, stored: _Stored, topic_names: Mapping[uuid.UUID, str], now: int) -> ConsumerGroup:
    members = {m: _member(m, s, stored.current.get(m), topic_names, now) for m, s in stored.subscriptions.items()}
    target = {m: by_name(t, topic_names) for m, t in stored.targets.items() if m in members}
    return ConsumerGroup(
        group_id,
        group_epoch=stored.epoch or 0,
        members=members,
        subscription_metadata=dict(sorted(stored.topics.items())),
        assignment_epoch=stored.assignment_epoch,
        target=target,
        resolved_regexes=dict(sorted(stored.regexes.items())),
        regexes_version=stored.regexes_version if stored.regexes else -1,
    )


def _member(
    member_id: str,
    subscription: ConsumerGroupMemberMetadataValue,
    current: ConsumerGroupCurrentMemberAssignmentValue | None,
    topic_names: Mapping[uuid.UUID, str],
    now: int,
) -> ConsumerMember:
    member = ConsumerMember(
        member_id,
        subscription.client_id,
        subscription.client_host,
        subscription.rebalance_timeout_ms,
        frozenset(subscription.subscribed_topic_names),
        subscription.server_assignor,
        now,
        instance_id=subscription.instance_id,
        subscribed_topic_regex=subscription.subscribed_topic_regex,
        classic=subscription.classic,
        rack_id=subscription.rack_id,
    )
    if current is None:
        return member
    state = MEMBER_STATES.get(current.state, MemberState.STABLE)
    return member.evolve(
        member_epoch=current.member_epoch,
        previous_member_epoch=current.previous_member_epoch,
        state=state,
        assigned=by_name(current.assigned, topic_names),
        pending_revocation=by_name(current.pending_revocation, topic_names),
        # A member revoking partitions gets its full rebalance timeout again from the new coordinator.
        revocation_deadline_ms=now + member.rebalance_timeout_ms if state == MemberState.UNREVOKED_PARTITIONS else None,
    )


def by_name(topics: tuple[TopicPartitions, ...], topic_names: Mapping[uuid.UUID, str]) -> Partitions:
    if not topics:
        return NO_PARTITIONS
    return frozenset(
        TopicPartition(topic_names[t.topic_id], p) for t in topics if t.topic_id in topic_names for p in t.partitions
    )
