"""Kafka's ProducerStateManager for idempotent producers, pure: per producer id, the epoch and the metadata of its
last 5 batches in this partition's log, enough to answer a retried batch with the offsets it was written at.

The rules are Kafka 4.x's (ProducerAppendInfo, UnifiedLog.analyzeAndValidateProducerState):
- a client batch whose producer epoch and sequence range equal one of the 5 remembered batches is a duplicate: it
  is not appended, and the answer carries the original offsets;
- an epoch below the producer's current one is INVALID_PRODUCER_EPOCH (a replicated batch is kept, logged by the
  partition log, and its epoch adopted, as Kafka's ProducerStateEntry.addBatch does);
- a new epoch must start at sequence 0, and within an epoch each batch must follow the last one's sequence (after
  2^31 - 1 comes 0); otherwise OUT_OF_ORDER_SEQUENCE_NUMBER;
- a producer id this log holds nothing of accepts any sequence: the log may have lost its batches to retention, and
  Kafka 4.x no longer answers UNKNOWN_PRODUCER_ID for that.
Replicated batches (a follower, or a log rebuilding its state) are applied without the sequence checks.

A producer that wrote nothing here for producer.id.expiration.ms (its last batch's or marker's timestamp) and has no
transaction open is forgotten (Kafka's removeExpiredProducers): its next batch counts as a new producer's.

Transactions (Kafka's ProducerStateEntry.currentTxnFirstOffset and ongoingTxns): a producer's first transactional
batch opens its transaction at that batch's offset; the COMMIT or ABORT marker the coordinator has the leader write
closes it. While one is open, a non-transactional batch of that producer is INVALID_TXN_STATE; a marker of an older
producer epoch is INVALID_PRODUCER_EPOCH, of an older coordinator epoch TRANSACTION_COORDINATOR_FENCED.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from immutables import Map

from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import crc32c

NUM_BATCHES_TO_RETAIN = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NO_PRODUCER_EPOCH = -1
MAX_SEQUENCE = 2**31 - 1
# Version 2 puts Kafka's snapshot header before the JSON body: version (int16) and a CRC32C (uint32) of the body.
# A version 1 file (JSON alone, no CRC) is refused as unreadable: its producer state is rebuilt from the log.
SNAPSHOT_VERSION = 2
_SNAPSHOT_HEADER = struct.Struct(">hI")


@dataclass(frozen=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True)
class ProducerEntry:
    producer_id: int
    producer_epoch: int
    batches: tuple[BatchMetadata, ...]  # oldest first, at most NUM_BATCHES_TO_RETAIN
    coordinator_epoch: int = -1  # of the last marker written for this producer
    last_timestamp: int = -1  # the max timestamp of its last batch or marker (Kafka's lastTimestamp)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@dataclass(frozen=True)
class ProducerBatch:
    """What producer state needs of one batch header."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_offset_delta: int
    max_timestamp: int
    is_transactional: bool = False

    @property
    def last_seq(self) -> int:
        """Kafka's DefaultRecordBatch.lastSequence: sequences wrap after 2^31 - 1."""
        return (self.base_sequence + self.last_offset_delta) % (MAX_SEQUENCE + 1)


@dataclass(frozen=True)
class Accepted:
    pass


@dataclass(frozen=True)
class Duplicate:
    """A retry of a batch already in the log: answer with these offsets, append nothing."""

    first_offset: int
    last_offset: int


Check = Accepted | Duplicate


@dataclass(frozen=True)
class CompletedTxn:
    """A transaction a marker ended: its producer's batches from `first_offset`, its marker at `last_offset`."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True)
class MarkerApplied:
    state: ProducerState
    completed: CompletedTxn


@dataclass(frozen=True)
class ExpiredProducers:
    state: ProducerState
    producer_ids: tuple[int, ...]


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == MAX_SEQUENCE)


@dataclass(frozen=True)
class ProducerState:
    """Every producer's entry in one partition's log, as of `end_offset` (the offset after the last batch seen)."""

    producers: Map[int, ProducerEntry] = Map()
    end_offset: int = 0
    ongoing: Map[int, int] = Map()  # producer id -> the first offset of its open transaction

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    def has_ongoing_transaction(self, producer_id: int, epoch: int) -> bool:
        """Whether the producer's transaction at `epoch` is open here (Kafka's UnifiedLog.hasOngoingTransaction).
        A batch at a newer epoch is the producer's next transaction (transaction version 2 bumps the epoch at every
        end), which must be verified even while the last one awaits its marker."""
        entry = self.producers.get(producer_id)
        return producer_id in self.ongoing and entry is not None and entry.producer_epoch == epoch

    @property
    def first_ongoing_offset(self) -> int | None:
        """Where the oldest open transaction starts: no consumer reading committed data may pass it."""
        return min(self.ongoing.values()) if self.ongoing else None

    def check_client_batch(self, batch: ProducerBatch) -> Check:
        """A producer's batch before the leader appends it: a duplicate, accepted, or a KafkaError."""
        entry = self.producers.get(batch.producer_id)
        if entry is None:
            return Accepted()
        duplicate = entry.find_duplicate(batch.producer_epoch, batch.base_sequence, batch.last_seq)
        if duplicate is not None:
            return Duplicate(duplicate.first_offset, duplicate.last_offset)
        if batch.producer_epoch < entry.producer_epoch:
            raise KafkaError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"epoch {batch.producer_epoch} of producer {batch.producer_id} is below its last epoch "
                f"{entry.producer_epoch}",
            )
        if batch.producer_epoch != entry.producer_epoch:
            if batch.base_sequence != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {batch.producer_id}'s new epoch {batch.producer_epoch} starts at sequence "
                    f"{batch.base_sequence}, not 0",
                )
        elif entry.producer_epoch != NO_PRODUCER_EPOCH and not in_sequence(entry.last_seq, batch.base_sequence):
            raise KafkaError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {batch.producer_id} sent sequence {batch.base_sequence} after {entry.last_seq}",
            )
        if not batch.is_transactional and batch.producer_id in self.ongoing:
            raise KafkaError(
                ErrorCode.INVALID_TXN_STATE,
                f"producer {batch.producer_id} has a transaction open at offset "
                f"{self.ongoing[batch.producer_id]}: expected a transactional batch",
            )
        return Accepted()

    def check_marker(self, marker: EndTxnMarker) -> None:
        """A marker before the leader appends it (Kafka's appendEndTxnMarker checks); raises KafkaError."""
        entry = self.producers.get(marker.producer_id)
        if entry is None:
            return
        if marker.producer_epoch < entry.producer_epoch:
            raise KafkaError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"marker epoch {marker.producer_epoch} of producer {marker.producer_id} is below its last epoch "
                f"{entry.producer_epoch}",
            )
        # At transaction version 2 a transaction's marker comes at the epoch after its batches', which the next
        # transaction then writes at: a marker at the current epoch while a transaction of it is open is a late
        # copy of the last one's, and must not end this one. With none open it is a retry, as Kafka takes it.
        if (
            marker.transaction_version >= 2
            and marker.producer_epoch == entry.producer_epoch
            and marker.producer_id in self.ongoing
        ):
            raise KafkaError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"transaction version 2 marker at epoch {marker.producer_epoch} of producer {marker.producer_id}, "
                "the epoch of its open transaction",
            )
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"marker from coordinator epoch {marker.coordinator_epoch} for producer {marker.producer_id}, "
                f"after one from coordinator epoch {entry.coordinator_epoch}",
            )

    def with_marker(self, marker: EndTxnMarker, offset: int, timestamp: int = -1) -> MarkerApplied:
        """The state after `marker` was appended at `offset`: the producer's transaction (if any) ends there. A
        marker with no open transaction still completes an empty one, as in Kafka. A new producer epoch forgets
        the batches of the old one (Kafka's maybeUpdateProducerEpoch)."""
        pid = marker.producer_id
        entry = self.producers.get(pid)
        if entry is None or entry.producer_epoch != marker.producer_epoch:
            updated = ProducerEntry(pid, marker.producer_epoch, (), marker.coordinator_epoch, timestamp)
        else:
            updated = ProducerEntry(pid, entry.producer_epoch, entry.batches, marker.coordinator_epoch, timestamp)
        first = self.ongoing.get(pid, offset)
        ongoing = self.ongoing.delete(pid) if pid in self.ongoing else self.ongoing
        state = ProducerState(self.producers.set(pid, updated), max(self.end_offset, offset + 1), ongoing)
        return MarkerApplied(state, CompletedTxn(pid, first, offset, not marker.commit))

    def with_batch(self, batch: ProducerBatch, first_offset: int, last_offset: int) -> ProducerState:
        """The state after `batch` was appended at [first_offset, last_offset]. A batch of an older epoch (only
        replication appends one) replaces the entry's epoch as any other epoch change does: the entry then
        describes what the log holds, as in Kafka."""
        entry = self.producers.get(batch.producer_id)
        end = max(self.end_offset, last_offset + 1)
        meta = BatchMetadata(batch.base_sequence, batch.last_seq, first_offset, last_offset, batch.max_timestamp)
        if entry is None or entry.producer_epoch != batch.producer_epoch:
            batches: tuple[BatchMetadata, ...] = (meta,)
        else:
            batches = (entry.batches + (meta,))[-NUM_BATCHES_TO_RETAIN:]
        coordinator_epoch = entry.coordinator_epoch if entry is not None else -1
        updated = ProducerEntry(
            batch.producer_id, batch.producer_epoch, batches, coordinator_epoch, batch.max_timestamp
        )
        ongoing = self.ongoing
        if batch.is_transactional and batch.producer_id not in ongoing:
            ongoing = ongoing.set(batch.producer_id, first_offset)
        return ProducerState(self.producers.set(batch.producer_id, updated), end, ongoing)

    def advanced_to(self, end_offset: int) -> ProducerState:
        """Batches without a producer id were appended: only the offset covered moves."""
        return ProducerState(self.producers, max(self.end_offset, end_offset), self.ongoing)

    def without_expired(self, now_ms: int, expiration_ms: int) -> ExpiredProducers:
        """Kafka's removeExpiredProducers: the producers idle for `expiration_ms` at `now_ms` (epoch ms, as record
        timestamps are), except those with a transaction open, go."""
        expired = tuple(
            pid
            for pid, entry in self.producers.items()
            if pid not in self.ongoing and now_ms - entry.last_timestamp >= expiration_ms
        )
        if not expired:
            return ExpiredProducers(self, ())
        producers = self.producers.mutate()
        for pid in expired:
            del producers[pid]
        return ExpiredProducers(
            ProducerState(producers.finish(), self.end_offset, self.ongoing), tuple(sorted(expired))
        )

    # ---- snapshots (Kafka writes one at each segment roll, named by its offset) ----

    def to_snapshot(self) -> bytes:
        producers = [
            {
                "producer_id": e.producer_id,
                "producer_epoch": e.producer_epoch,
                "batches": [
                    [b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.max_timestamp] for b in e.batches
                ],
                "coordinator_epoch": e.coordinator_epoch,
                "last_timestamp": e.last_timestamp,
            }
            for _, e in sorted(self.producers.items())
        ]
        ongoing = [[pid, first] for pid, first in sorted(self.ongoing.items())]
        document = {"end_offset": self.end_offset, "producers": producers, "ongoing": ongoing}
        body = json.dumps(document, separators=(",", ":")).encode()
        return _SNAPSHOT_HEADER.pack(SNAPSHOT_VERSION, crc32c(body)) + body

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerState:
        """Raises ValueError for a snapshot this version cannot read or whose CRC32C does not match its contents
        (Kafka's CorruptSnapshotException: the caller deletes it and rebuilds from the log)."""
        if data.startswith(b"{"):
            raise ValueError("a version-1 producer snapshot (JSON without a CRC32C): not trusted")
        if len(data) < _SNAPSHOT_HEADER.size:
            raise ValueError(f"producer snapshot of {len(data)} bytes: shorter than its header")
        version, stored = _SNAPSHOT_HEADER.unpack_from(data)
        if version != SNAPSHOT_VERSION:
            raise ValueError(f"producer snapshot version {version}, expected {SNAPSHOT_VERSION}")
        computed = crc32c(memoryview(data)[_SNAPSHOT_HEADER.size :])
        if computed != stored:
            raise ValueError(f"producer snapshot CRC32C mismatch: stored {stored:#010x}, computed {computed:#010x}")
        try:
            body = json.loads(data[_SNAPSHOT_HEADER.size :])
            entries = {
                int(p["producer_id"]): ProducerEntry(
                    int(p["producer_id"]),
                    int(p["producer_epoch"]),
                    tuple(BatchMetadata(*(int(v) for v in b)) for b in p["batches"]),
                    int(p.get("coordinator_epoch", -1)),
                    int(p.get("last_timestamp", p["batches"][-1][4] if p["batches"] else -1)),
                )
                for p in body["producers"]
            }
            ongoing = {int(pid): int(first) for pid, first in body.get("ongoing", ())}
            return cls(Map(entries), int(body["end_offset"]), Map(ongoing))
        except (KeyError, TypeError, ValueError, AttributeError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"unreadable producer snapshot: {error}") from error
