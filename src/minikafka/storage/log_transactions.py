"""A partition log's transactions: how each appended batch moves the producer state (a marker ends a transaction),
the aborted-transaction index that read_committed fetches answer from, and the last stable offset (LSO).

As Kafka's UnifiedLog and ProducerStateManager: the LSO is the high watermark, or the first offset of the oldest
transaction not yet decided for good, whichever is lower. A transaction is undecided while it is open, and also
once its marker is written until the high watermark passes the marker (Kafka's unreplicatedTxns): a marker that a
new leader may still lose has decided nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minikafka.common.control_batch import read_marker
from minikafka.common.record_batch import RecordBatch
from minikafka.storage.producer_state import CompletedTxn, ProducerBatch, ProducerState
from minikafka.storage.segment import BatchPosition
from minikafka.storage.transaction_index import AbortedTxn, AbortedTxnIndex


def producer_batch(batch: RecordBatch | BatchPosition) -> ProducerBatch:
    delta = batch.last_offset - batch.base_offset
    return ProducerBatch(
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        delta,
        batch.max_timestamp,
        batch.is_transactional,
    )


@dataclass(frozen=True)
class VerificationEntry:
    guard: int
    epoch: int  # the highest producer epoch verified with it
    supports_epoch_bump: bool  # a producer of transaction version 2


class LogTransactions:
    def __init__(self, directory: Path) -> None:
        self.aborted = AbortedTxnIndex(directory)
        self._undecided: list[CompletedTxn] = []  # ended, but their markers are not yet below the HWM
        # KIP-890 part 1 (Kafka's VerificationStateEntry): per producer, the verification under way before its
        # first transactional batch here; a marker clears it, so a late batch's verification fails.
        self._guards: dict[int, VerificationEntry] = {}
        self._next_guard = 1

    def start_verification(self, producer_id: int, epoch: int = -1, supports_epoch_bump: bool = False) -> int:
        """The guard of the producer's verification under way, or of a new one. `supports_epoch_bump`: a producer
        of transaction version 2, whose last transaction's markers carry the epoch of its next one."""
        entry = self._guards.get(producer_id)
        if entry is None:
            entry = VerificationEntry(self._next_guard, epoch, supports_epoch_bump)
            self._next_guard += 1
        self._guards[producer_id] = VerificationEntry(entry.guard, max(epoch, entry.epoch), supports_epoch_bump)
        return entry.guard

    def end_verification(self, producer_id: int, marker_epoch: int = -1) -> None:
        """A marker of the producer was written: its verification is void, except a version-2 one at the marker's
        epoch (Kafka's isV2NextTransactionStarted): the last transaction's markers, which a version-2 producer's
        next transaction may overtake; a batch of the transaction they end carries an older epoch and is fenced."""
        entry = self._guards.get(producer_id)
        if entry is not None and not (entry.supports_epoch_bump and entry.epoch == marker_epoch):
            del self._guards[producer_id]

    def unverified(self, state: ProducerState, batch: RecordBatch, guard: int | None) -> int | None:
        """None when `batch` may be appended with `guard`; else the guard expected (-1: none under way)."""
        if not batch.is_transactional or state.has_ongoing_transaction(batch.producer_id, batch.producer_epoch):
            return None
        entry = self._guards.get(batch.producer_id)
        current = None if entry is None else entry.guard
        return None if guard is not None and guard == current else (current if current is not None else -1)

    def load(self, segment_bases: list[int]) -> None:
        self.aborted.load(segment_bases)

    def merge_segments(self, bases: set[int], into: int, entries: Sequence[AbortedTxn]) -> None:
        """A cleaning replaced segments `bases` by one at `into`, indexing `entries`: the aborted transactions whose
        data it still holds (read_committed must still skip them); the others' data is gone."""
        self.aborted.merge_segments(bases, into, entries)

    def forget_from(self, offset: int) -> None:
        """The log is replayed (or cut) from `offset`: what was learnt from the batches there goes."""
        self.aborted.truncate_from(offset)
        self._undecided = [txn for txn in self._undecided if txn.last_offset < offset]

    def apply(
        self, state: ProducerState, batch: RecordBatch | BatchPosition, first: int, segment: int
    ) -> ProducerState:
        """The producer state after `batch` was appended at `first` in the segment based at `segment`."""
        last = first + batch.last_offset - batch.base_offset
        if batch.is_control:
            marker = batch.marker if isinstance(batch, BatchPosition) else read_marker(batch)
            if marker is None or batch.producer_id < 0:
                return state.advanced_to(last + 1)  # a control type Kafka ignores too
            applied = state.with_marker(marker, last, batch.max_timestamp)
            self._completed(applied.state, applied.completed, segment)
            return applied.state
        if batch.producer_id >= 0:
            return state.with_batch(producer_batch(batch), first, last)
        return state.advanced_to(last + 1)

    def _completed(self, state: ProducerState, txn: CompletedTxn, segment: int) -> None:
        self._undecided.append(txn)
        if txn.is_aborted:
            # Kafka's lastStableOffset(completedTxn): where the next open transaction starts, else past the marker.
            first_open = state.first_ongoing_offset
            stable = first_open if first_open is not None else txn.last_offset + 1
            self.aborted.append(segment, AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, stable))

    def last_stable_offset(self, state: ProducerState, high_watermark: int) -> int:
        if self._undecided and self._undecided[0].last_offset < high_watermark:
            self._undecided = [txn for txn in self._undecided if txn.last_offset >= high_watermark]
        lso = high_watermark
        first_open = state.first_ongoing_offset
        if first_open is not None:
            lso = min(lso, first_open)
        for txn in self._undecided:
            lso = min(lso, txn.first_offset)
        return lso

    def collect_aborted(self, start_offset: int, upper_offset: int) -> list[AbortedTxn]:
        return self.aborted.collect(start_offset, upper_offset)
