"""One __transaction_state partition at the transaction coordinator: the transactional ids it holds while this
broker leads it, and how they are read back from its log when the partition is loaded."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import structlog

from minikafka.broker.coordinator_runtime.runtime import CoordinatorShard
from minikafka.broker.transaction.records import TxnRecordFormatError, decode_key, decode_value
from minikafka.broker.transaction.state import TxnMetadata
from minikafka.common.record_batch import Record


@dataclass
class TxnShard(CoordinatorShard):
    """The transactional ids of one __transaction_state partition while this broker leads it at `leader_epoch`."""

    txns: dict[str, TxnMetadata] = field(default_factory=dict)

    def unloaded_counts(self) -> Mapping[str, int]:
        return {"transactional_ids": len(self.txns)}


class TxnReplay:
    """The partition's records in log order: the last state of each transactional id wins, a tombstone removes it.
    Once in place, `resume` picks up what the old coordinator had decided (markers of a Prepare state)."""

    def __init__(self, shard: TxnShard, resume: Callable[[TxnShard], None]) -> None:
        self.shard = shard
        self._resume = resume
        self._txns: dict[str, TxnMetadata] = {}
        self._log = structlog.get_logger()

    def records(self, producer_id: int | None, records: Iterator[Record]) -> None:
        for record in records:
            self._record(record)

    def end_transaction(self, producer_id: int, committed: bool) -> None:
        pass  # the coordinator writes its states outside transactions: a marker here carries nothing

    def install(self) -> Mapping[str, int]:
        self.shard.txns = self._txns
        self._resume(self.shard)
        return {"transactional_ids": len(self._txns)}

    def _record(self, record: Record) -> None:
        try:
            transactional_id = decode_key(record.key)
            if record.value is None:
                self._txns.pop(transactional_id, None)
            else:
                self._txns[transactional_id] = decode_value(transactional_id, record.value)
        except (TxnRecordFormatError, UnicodeDecodeError) as error:
            partition = self.shard.partition
            self._log.warning(
                "transaction_state_record_skipped", partition=partition, offset=record.offset, reason=str(error)
            )
