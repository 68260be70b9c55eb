"""One __consumer_offsets partition at the group coordinator: the groups it holds while this broker leads it, and
how they are read back from its log when the partition is loaded."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import structlog

from minikafka.broker.consumer_group.model import ConsumerGroup
from minikafka.broker.consumer_group.persistence import ConsumerGroupRecord, load_consumer_groups
from minikafka.broker.consumer_group.records import ConsumerGroupMemberMetadataKey
from minikafka.broker.coordinator_runtime.runtime import CoordinatorShard
from minikafka.broker.group.loader import load_groups
from minikafka.broker.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecord,
    RecordFormatError,
    decode,
)
from minikafka.broker.group.state import Group
from minikafka.broker.group.txn_offsets import PendingTxnOffsets, as_offsets
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.common.clock import monotonic_ms, wall_ms
from minikafka.common.record_batch import Record


@dataclass
class OffsetsShard(CoordinatorShard):
    """The groups of one __consumer_offsets partition while this broker leads it at `leader_epoch`."""

    groups: dict[str, Group] = field(default_factory=dict)
    consumer_groups: dict[str, ConsumerGroup] = field(default_factory=dict)  # KIP-848's
    txn_offsets: PendingTxnOffsets = field(default_factory=dict)  # transactional commits awaiting their marker
    # The latest write of consumer group records, or the loaded tail: an answer that changed nothing still waits
    # for it, so no member is told of a state a failover could lose.
    last_write: asyncio.Future[ProduceResult] | None = None
    # The loaded log's end past the HWM, until the HWM passes it: what the load read is not committed meanwhile.
    loaded_tail: asyncio.Future[ProduceResult] | None = None
    # Every KIP-848 member the loaded log named, by group, gone ones too: a load tells that those gone hold nothing.
    logged_members: dict[str, set[str]] = field(default_factory=dict)

    def unloaded_counts(self) -> Mapping[str, int]:
        return {"groups": len(self.groups)}

    def tail_uncommitted(self) -> bool:
        return self.loaded_tail is not None and not self.loaded_tail.done()


@dataclass(frozen=True)
class SplitRecords:
    classic: list[OffsetsRecord]
    consumer: list[ConsumerGroupRecord]


def split_records(records: list[OffsetsRecord]) -> SplitRecords:
    """Offsets and classic group metadata for the classic loader; KIP-848's records for the consumer groups'."""
    split = SplitRecords([], [])
    for record in records:
        key, value = record.key, record.value
        if isinstance(key, OffsetCommitKey | GroupMetadataKey):
            split.classic.append(record)
        elif not isinstance(value, OffsetCommitValue | GroupMetadataValue):
            split.consumer.append(ConsumerGroupRecord(key, value))
    return split


class OffsetsReplay:
    """The partition's records in log order. A transaction's offset commits count from its COMMIT marker on, and
    not at all after an ABORT; those still open when the load ends await their marker in `txn_offsets`."""

    def __init__(self, shard: OffsetsShard, topic_names: Callable[[], dict[uuid.UUID, str]]) -> None:
        self.shard = shard
        self._topic_names = topic_names
        self._records: list[OffsetsRecord] = []
        self._open_txns: dict[int, list[OffsetsRecord]] = {}
        self._log = structlog.get_logger()

    def records(self, producer_id: int | None, records: Iterator[Record]) -> None:
        decoded = self._decode(records)
        if producer_id is None:
            self._records.extend(decoded)
        else:
            self._open_txns.setdefault(producer_id, []).extend(decoded)

    def end_transaction(self, producer_id: int, committed: bool) -> None:
        held = self._open_txns.pop(producer_id, [])
        if committed:
            self._records.extend(held)

    def install(self) -> Mapping[str, int]:
        shard = self.shard
        shard.txn_offsets = {producer_id: as_offsets(held) for producer_id, held in self._open_txns.items()}
        now = monotonic_ms()
        split = split_records(self._records)
        shard.groups = load_groups(split.classic, now, wall_ms())
        topic_names = self._topic_names() if split.consumer else {}
        shard.consumer_groups = load_consumer_groups(split.consumer, topic_names, now)
        for record in split.consumer:
            key = record.key
            if isinstance(key, ConsumerGroupMemberMetadataKey):
                shard.logged_members.setdefault(key.group, set()).add(key.member_id)
        return {
            "groups": len(shard.groups),
            "consumer_groups": len(shard.consumer_groups),
            "offsets": sum(len(g.offsets) for g in shard.groups.values()),
        }

    def _decode(self, records: Iterator[Record]) -> Iterator[OffsetsRecord]:
        for record in records:
            try:
                yield decode(record.key, record.value)
            except (RecordFormatError, UnicodeDecodeError) as error:
                self._log.warning(
                    "offsets_record_skipped", partition=self.shard.partition, offset=record.offset, reason=str(error)
                )
