"""Transactional offset commits (TxnOffsetCommit, Kafka's GroupMetadataManager.storeOffsets with a producer id):
the offsets are written to __consumer_offsets in a transactional batch of the producer, and held aside per producer
until the transaction's marker lands in that partition: a COMMIT makes them the group's committed offsets, an ABORT
drops them. Pure: the shell keeps the pending offsets and applies these steps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from minikafka.broker.group.records import OffsetCommitKey, OffsetCommitValue, OffsetsRecord
from minikafka.broker.group.state import Group, OffsetAndMetadata, TopicPartitionKey

# producer id -> group id -> the offsets its open transaction committed
PendingTxnOffsets = dict[int, dict[str, dict[TopicPartitionKey, OffsetAndMetadata]]]


@dataclass(frozen=True)
class TxnCompletion:
    groups: dict[str, Group]  # the groups whose offsets changed, as they are now
    events: list[dict[str, object]] = field(default_factory=list)


def awaiting_marker(pending: PendingTxnOffsets, group_id: str) -> set[TopicPartitionKey]:
    """The group's partitions with a transactional commit awaiting its marker (Kafka's UNSTABLE_OFFSET_COMMIT)."""
    return {key for held in pending.values() for key in held.get(group_id, {})}


def offsets_records(
    group_id: str, offsets: Iterable[tuple[TopicPartitionKey, OffsetAndMetadata]]
) -> list[OffsetsRecord]:
    return [
        OffsetsRecord(
            OffsetCommitKey(group_id, key.topic, key.partition),
            OffsetCommitValue(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms),
        )
        for key, value in offsets
    ]


def as_offsets(records: Iterable[OffsetsRecord]) -> dict[str, dict[TopicPartitionKey, OffsetAndMetadata]]:
    """The offset commits among `records` (a transaction's, read back when the partition is loaded)."""
    by_group: dict[str, dict[TopicPartitionKey, OffsetAndMetadata]] = {}
    for record in records:
        key, value = record.key, record.value
        if isinstance(key, OffsetCommitKey) and isinstance(value, OffsetCommitValue):
            by_group.setdefault(key.group, {})[TopicPartitionKey(key.topic, key.partition)] = OffsetAndMetadata(
                value.offset, value.leader_epoch, value.metadata, value.commit_timestamp
            )
    return by_group


def complete(pending: PendingTxnOffsets, groups: dict[str, Group], producer_id: int, commit: bool) -> TxnCompletion:
    """A marker of `producer_id` landed: its pending offsets become the groups' (COMMIT) or go (ABORT). `pending`
    loses the producer's entry."""
    held = pending.pop(producer_id, {})
    if not commit:
        return TxnCompletion({}, [{"producer_id": producer_id, "result": "abort", "groups": sorted(held)}])
    changed = {}
    for group_id, offsets in held.items():
        group = groups.get(group_id) or Group(group_id)
        changed[group_id] = group.evolve(offsets={**group.offsets, **offsets})
    return TxnCompletion(changed, [{"producer_id": producer_id, "result": "commit", "groups": sorted(held)}])
