"""Kafka's control batches: the COMMIT and ABORT markers a transaction coordinator has each partition leader write
at the end of a transaction (Kafka's EndTransactionMarker and ControlRecordType).

A control batch is transactional and has the control flag; it holds one record whose key is (version int16, type
int16) and whose value is (version int16, coordinator epoch int32). Only a leader writes one, at the coordinator's
request (WriteTxnMarkers); a producer's batch with the control flag is refused by the log validator.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from minikafka.common.record_batch import CONTROL_FLAG, TRANSACTIONAL_FLAG, Record, RecordBatch, build_batch

CONTROL_KEY_VERSION = 0
MARKER_VALUE_VERSION = 0
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlType(IntEnum):
    """Kafka's ControlRecordType ids."""

    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True)
class EndTxnMarker:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    # The coordinator's transaction version for this transaction (WriteTxnMarkers' TransactionVersion); not in the
    # control batch itself. At 2 each transaction ends at a new producer epoch, so the leader's check is stricter.
    transaction_version: int = 0

    @property
    def control_type(self) -> ControlType:
        return ControlType.COMMIT if self.commit else ControlType.ABORT


def build_marker_batch(marker: EndTxnMarker, timestamp_ms: int) -> bytes:
    """One control batch holding `marker`, at offset 0 (the leader assigns its offset as for any batch)."""
    key = _KEY.pack(CONTROL_KEY_VERSION, marker.control_type)
    value = _VALUE.pack(MARKER_VALUE_VERSION, marker.coordinator_epoch)
    return build_batch(
        [Record(value=value, key=key, timestamp_ms=timestamp_ms)],
        producer_id=marker.producer_id,
        producer_epoch=marker.producer_epoch,
        base_sequence=-1,
        attributes=TRANSACTIONAL_FLAG | CONTROL_FLAG,
    )


def control_type(batch: RecordBatch) -> int:
    """The control record type of a control batch (its first record's key); -1 when the key cannot be read, as an
    unknown type is skipped by Kafka's readers rather than failing them."""
    for record in batch.records():
        if record.key is None or len(record.key) < _KEY.size:
            return -1
        _version, kind = _KEY.unpack_from(record.key)
        return int(kind)
    return -1


def read_marker(batch: RecordBatch) -> EndTxnMarker | None:
    """The marker a control batch holds; None for another control type (Kafka ignores those)."""
    for record in batch.records():
        if record.key is None or len(record.key) < _KEY.size:
            return None
        _version, kind = _KEY.unpack_from(record.key)
        if kind not in (ControlType.ABORT, ControlType.COMMIT):
            return None
        epoch = -1
        if record.value is not None and len(record.value) >= _VALUE.size:
            _value_version, epoch = _VALUE.unpack_from(record.value)
        return EndTxnMarker(batch.producer_id, batch.producer_epoch, kind == ControlType.COMMIT, epoch)
    return None
