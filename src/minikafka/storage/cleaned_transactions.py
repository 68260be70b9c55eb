"""What one cleaning pass knows of transactions (Kafka's CleanedTransactionMetadata), pure: fed the batches of the
segments cleaned in offset order, it tells which data batches belong to an aborted transaction (they go) and which
markers are discardable (no batch of their transaction was met in this pass: its data is gone already).

A marker that is kept because its transaction's data was still met keeps, for an ABORT, its aborted-transaction
index entry in the cleaned segment. A marker met with data that this pass removed entirely becomes discardable at
the next pass: `recheck` says so, so the planner cleans again rather than waiting for new dirt.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from minikafka.common.control_batch import read_marker
from minikafka.common.record_batch import RecordBatch
from minikafka.storage.transaction_index import AbortedTxn


@dataclass
class _Open:
    """A transaction met in this pass whose marker is not yet read."""

    aborted: AbortedTxn | None  # None: not aborted (committed, as the range cleaned is decided)
    met: bool = False  # one of its batches was read
    written: bool = False  # one of its batches stays (records, or empty for its producer's sequence)


@dataclass
class CleanedTransactions:
    aborted: Sequence[AbortedTxn]  # every aborted transaction overlapping the segments cleaned
    _next: int = 0
    _open: dict[int, _Open] = field(default_factory=dict)
    # The aborted-transaction entries whose marker stays with data still met, in marker order.
    retained: list[AbortedTxn] = field(default_factory=list)
    recheck: bool = False

    def __post_init__(self) -> None:
        self.aborted = sorted(self.aborted, key=lambda txn: txn.first_offset)

    def _begin_up_to(self, offset: int) -> None:
        """Kafka's consumeAbortedTxnsUpTo: the aborted transactions begun at or below `offset` are open."""
        while self._next < len(self.aborted) and self.aborted[self._next].first_offset <= offset:
            txn = self.aborted[self._next]
            if self._open.get(txn.producer_id, _Open(None)).aborted is None:
                self._open[txn.producer_id] = _Open(txn)
            self._next += 1

    def on_batch(self, batch: RecordBatch) -> bool:
        """A data batch read: whether it belongs to an aborted transaction (then all of it goes)."""
        self._begin_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        txn = self._open.setdefault(batch.producer_id, _Open(None))
        txn.met = True
        return txn.aborted is not None

    def on_written(self, batch: RecordBatch, written: bool) -> None:
        """What the cleaning did with a data batch `on_batch` saw: kept (possibly empty) or dropped."""
        txn = self._open.get(batch.producer_id)
        if batch.is_transactional and txn is not None and written:
            txn.written = True

    def on_marker(self, batch: RecordBatch) -> bool:
        """A control batch read: whether it may be discarded (once past its delete horizon)."""
        self._begin_up_to(batch.last_offset)
        if batch.records_count == 0:
            return True  # a marker emptied by an earlier cleaning
        marker = read_marker(batch)
        if marker is None:
            return False  # a control type Kafka does not know it keeps
        txn = self._open.pop(batch.producer_id, None)
        if txn is None or not txn.met:
            return True
        if not txn.written:
            self.recheck = True  # its data goes in this pass: the next one may start its delete horizon
        if not marker.commit and txn.aborted is not None:
            bisect.insort(self.retained, txn.aborted, key=lambda entry: entry.last_offset)
        return False
