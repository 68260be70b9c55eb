"""The records of __transaction_state in Kafka's formats: the key is TransactionLogKey v0 (version int16, then the
transactional id), the value TransactionLogValue v0 (version int16, producer id int64, producer epoch int16,
timeout int32, state int8, the partitions as topics each with its partition ids, last update and start timestamps
int64). A null value is a tombstone: the transactional id expired."""

from __future__ import annotations

import struct
from collections import defaultdict

from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.transaction.state import NO_PRODUCER_EPOCH, TxnMetadata, TxnState
from minikafka.common.record_batch import Record, build_batch

KEY_VERSION = 0
VALUE_VERSION = 0
_VALUE_HEAD = struct.Struct(">hqhib")
_TIMESTAMPS = struct.Struct(">qq")


class TxnRecordFormatError(ValueError):
    """A __transaction_state record this coordinator cannot read."""


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.position = data, 0

    def unpack(self, layout: struct.Struct) -> tuple[int, ...]:
        if self.position + layout.size > len(self.data):
            raise TxnRecordFormatError(f"record ends at {len(self.data)} bytes, inside a field at {self.position}")
        values = layout.unpack_from(self.data, self.position)
        self.position += layout.size
        return values

    def int16(self) -> int:
        return self.unpack(struct.Struct(">h"))[0]

    def int32(self) -> int:
        return self.unpack(struct.Struct(">i"))[0]

    def string(self) -> str:
        length = self.int16()
        if length < 0 or self.position + length > len(self.data):
            raise TxnRecordFormatError(f"string of {length} bytes at {self.position} does not fit")
        text = self.data[self.position : self.position + length].decode()
        self.position += length
        return text


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", KEY_VERSION) + _string(transactional_id)


def decode_key(data: bytes | None) -> str:
    if data is None:
        raise TxnRecordFormatError("a __transaction_state record without a key")
    reader = _Reader(data)
    version = reader.int16()
    if version != KEY_VERSION:
        raise TxnRecordFormatError(f"TransactionLogKey version {version}, expected {KEY_VERSION}")
    return reader.string()


def tombstone_batch(transactional_ids: tuple[str, ...], timestamp_ms: int) -> bytes:
    """One batch of tombstones: each id's TransactionLogKey with a null value."""
    return build_batch([Record(None, encode_key(tid), timestamp_ms) for tid in transactional_ids])


def encode_value(metadata: TxnMetadata) -> bytes:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for partition in sorted(metadata.partitions, key=lambda p: (p.topic, p.partition)):
        by_topic[partition.topic].append(partition.partition)
    out = bytearray(
        _VALUE_HEAD.pack(
            VALUE_VERSION, metadata.producer_id, metadata.producer_epoch, metadata.timeout_ms, metadata.state
        )
    )
    out += struct.pack(">i", len(by_topic))
    for topic, ids in by_topic.items():
        out += _string(topic) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
    out += _TIMESTAMPS.pack(metadata.last_update_ms, metadata.start_ms)
    return bytes(out)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    reader = _Reader(data)
    version, producer_id, epoch, timeout_ms, state = reader.unpack(_VALUE_HEAD)
    if version != VALUE_VERSION:
        raise TxnRecordFormatError(f"TransactionLogValue version {version}, expected {VALUE_VERSION}")
    try:
        status = TxnState(state)
    except ValueError as error:
        raise TxnRecordFormatError(f"unknown transaction state {state}") from error
    partitions = set()
    topics = reader.int32()
    for _ in range(max(topics, 0)):
        topic = reader.string()
        for _ in range(max(reader.int32(), 0)):
            partitions.add(TopicPartitionKey(topic, reader.int32()))
    last_update_ms, start_ms = reader.unpack(_TIMESTAMPS)
    return TxnMetadata(
        transactional_id,
        producer_id,
        epoch,
        NO_PRODUCER_EPOCH,
        timeout_ms,
        status,
        frozenset(partitions),
        start_ms,
        last_update_ms,
    )
