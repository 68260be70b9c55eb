"""Rebuilding the groups of one __consumer_offsets partition from its records, in log order: the last record of
each key wins and a tombstone removes it (what compaction would keep)."""

from __future__ import annotations

from collections.abc import Iterable

from minikafka.broker.group.records import (
    NO_EXPIRE_TIMESTAMP,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecord,
)
from minikafka.broker.group.state import (
    Clock,
    Group,
    GroupState,
    Member,
    OffsetAndMetadata,
    Protocol,
    TopicPartitionKey,
)

# Earlier minikafka versions stored the coordinator's monotonic clock where Kafka stores epoch ms: such a time (before
# 2001-09-09) counts as the load's, so an upgrade does not expire every offset at once.
MIN_EPOCH_MS = 10**12


def load_groups(records: Iterable[OffsetsRecord], now: int, wall_now: int | None = None) -> dict[str, Group]:
    """The groups as the records leave them. Loaded members count as just heard from: each gets a full session
    timeout to reach the new coordinator. A group's state dates from its metadata record's current state timestamp
    (epoch ms, placed on the monotonic clock `now` by `wall_now`), so an empty group's offsets expire as they
    would have on the coordinator before; without `wall_now`, the records' timestamps are on the `now` clock."""
    clock = Clock(now, wall_now if wall_now is not None else now)
    oldest = MIN_EPOCH_MS if wall_now is not None else None
    metadata: dict[str, GroupMetadataValue] = {}
    offsets: dict[str, dict[TopicPartitionKey, OffsetAndMetadata]] = {}
    for record in records:
        key = record.key
        if isinstance(key, OffsetCommitKey):
            group_offsets = offsets.setdefault(key.group, {})
            partition = TopicPartitionKey(key.topic, key.partition)
            if isinstance(record.value, OffsetCommitValue):
                value = record.value
                committed = value.commit_timestamp
                if oldest is not None and committed < oldest:
                    committed = clock.wall_ms
                expire = None if value.expire_timestamp == NO_EXPIRE_TIMESTAMP else value.expire_timestamp
                group_offsets[partition] = OffsetAndMetadata(
                    value.offset, value.leader_epoch, value.metadata, committed, expire
                )
            else:
                group_offsets.pop(partition, None)
        elif isinstance(key, GroupMetadataKey):
            if isinstance(record.value, GroupMetadataValue):
                metadata[key.group] = record.value
            else:
                metadata.pop(key.group, None)
    groups = {}
    for group_id in set(metadata) | {g for g, o in offsets.items() if o}:
        group = _group_from(group_id, metadata.get(group_id), clock, oldest)
        groups[group_id] = group.evolve(offsets=offsets.get(group_id, {}))
    return groups


def _group_from(group_id: str, value: GroupMetadataValue | None, clock: Clock, oldest: int | None) -> Group:
    now = clock.monotonic_ms
    if value is None:
        return Group(group_id)
    stamp = value.current_state_timestamp
    stale = stamp <= 0 or (oldest is not None and stamp < oldest)
    members = {
        m.member_id: Member(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            value.protocol_type,
            (Protocol(value.protocol or "", m.subscription),),
            now,
            assignment=m.assignment,
        )
        for m in value.members
    }
    return Group(
        group_id,
        state=GroupState.STABLE if members else GroupState.EMPTY,
        generation=value.generation,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
        leader_id=value.leader,
        state_timestamp_ms=now if stale else clock.to_monotonic(value.current_state_timestamp),
        members=members,
    )
