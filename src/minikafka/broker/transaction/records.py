"""The records of __transaction_state in Kafka's formats: the key is TransactionLogKey v0 (version int16, then the
transactional id), the value TransactionLogValue v0 (version int16, producer id int64, producer epoch int16,
timeout int32, state int8, the partitions as topics each with its partition ids, last update and start timestamps
int64). A null value is a tombstone: the transactional id expired.

A transaction of a producer of transaction.version 1 or more is written as TransactionLogValue v1, the flexible
version: the same fields with compact arrays and strings, and the tagged fields PreviousProducerId (tag 0),
NextProducerId (tag 1) and ClientTransactionVersion (tag 2), which a coordinator taking over needs to finish an epoch
roll-over."""

from __future__ import annotations

import struct
from collections import defaultdict

from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.transaction.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnMetadata, TxnState
from minikafka.common.record_batch import Record, build_batch

KEY_VERSION = 0
VALUE_VERSION = 0
FLEXIBLE_VALUE_VERSION = 1
TAG_PREVIOUS_PRODUCER_ID, TAG_NEXT_PRODUCER_ID, TAG_CLIENT_VERSION = 0, 1, 2
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

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            if self.position >= len(self.data) or shift > 28:
                raise TxnRecordFormatError(f"unsigned varint at {self.position} does not end")
            byte = self.data[self.position]
            self.position += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def bytes_(self, length: int) -> bytes:
        if length < 0 or self.position + length > len(self.data):
            raise TxnRecordFormatError(f"{length} bytes at {self.position} do not fit")
        chunk = self.data[self.position : self.position + length]
        self.position += length
        return chunk

    def compact_string(self) -> str:
        return self.bytes_(self.uvarint() - 1).decode()

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


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _by_topic(metadata: TxnMetadata) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for partition in sorted(metadata.partitions, key=lambda p: (p.topic, p.partition)):
        by_topic[partition.topic].append(partition.partition)
    return by_topic


def encode_value(metadata: TxnMetadata) -> bytes:
    version = FLEXIBLE_VALUE_VERSION if metadata.client_version >= 1 else VALUE_VERSION
    out = bytearray(
        _VALUE_HEAD.pack(version, metadata.producer_id, metadata.producer_epoch, metadata.timeout_ms, metadata.state)
    )
    by_topic = _by_topic(metadata)
    if version == VALUE_VERSION:
        out += struct.pack(">i", len(by_topic))
        for topic, ids in by_topic.items():
            out += _string(topic) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
        return bytes(out + _TIMESTAMPS.pack(metadata.last_update_ms, metadata.start_ms))
    out += _uvarint(len(by_topic) + 1)
    for topic, ids in by_topic.items():
        name = topic.encode()
        out += _uvarint(len(name) + 1) + name + _uvarint(len(ids) + 1)
        out += b"".join(struct.pack(">i", i) for i in ids) + _uvarint(0)
    out += _TIMESTAMPS.pack(metadata.last_update_ms, metadata.start_ms)
    return bytes(out + _tagged_fields(metadata))


def _tagged_fields(metadata: TxnMetadata) -> bytes:
    """The tagged fields that differ from their defaults, in tag order."""
    fields = []
    if metadata.previous_producer_id != NO_PRODUCER_ID:
        fields.append((TAG_PREVIOUS_PRODUCER_ID, struct.pack(">q", metadata.previous_producer_id)))
    if metadata.next_producer_id != NO_PRODUCER_ID:
        fields.append((TAG_NEXT_PRODUCER_ID, struct.pack(">q", metadata.next_producer_id)))
    if metadata.client_version != 0:
        fields.append((TAG_CLIENT_VERSION, struct.pack(">h", metadata.client_version)))
    out = bytearray(_uvarint(len(fields)))
    for tag, data in fields:
        out += _uvarint(tag) + _uvarint(len(data)) + data
    return bytes(out)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    reader = _Reader(data)
    version, producer_id, epoch, timeout_ms, state = reader.unpack(_VALUE_HEAD)
    if version not in (VALUE_VERSION, FLEXIBLE_VALUE_VERSION):
        raise TxnRecordFormatError(f"TransactionLogValue version {version}, expected 0 or 1")
    try:
        status = TxnState(state)
    except ValueError as error:
        raise TxnRecordFormatError(f"unknown transaction state {state}") from error
    flexible = version == FLEXIBLE_VALUE_VERSION
    partitions = _read_partitions_flexible(reader) if flexible else _read_partitions(reader)
    last_update_ms, start_ms = reader.unpack(_TIMESTAMPS)
    tagged = _read_tagged_fields(reader) if flexible else {}
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
        previous_producer_id=tagged.get(TAG_PREVIOUS_PRODUCER_ID, NO_PRODUCER_ID),
        next_producer_id=tagged.get(TAG_NEXT_PRODUCER_ID, NO_PRODUCER_ID),
        client_version=tagged.get(TAG_CLIENT_VERSION, 0),
    )


def _read_partitions(reader: _Reader) -> set[TopicPartitionKey]:
    partitions = set()
    for _ in range(max(reader.int32(), 0)):
        topic = reader.string()
        for _ in range(max(reader.int32(), 0)):
            partitions.add(TopicPartitionKey(topic, reader.int32()))
    return partitions


def _read_partitions_flexible(reader: _Reader) -> set[TopicPartitionKey]:
    partitions = set()
    for _ in range(max(reader.uvarint() - 1, 0)):
        topic = reader.compact_string()
        for _ in range(max(reader.uvarint() - 1, 0)):
            partitions.add(TopicPartitionKey(topic, reader.int32()))
        _read_tagged_fields(reader)
    return partitions


def _read_tagged_fields(reader: _Reader) -> dict[int, int]:
    """The tagged fields this coordinator knows, as numbers; unknown tags are skipped, as Kafka skips them."""
    known = {TAG_PREVIOUS_PRODUCER_ID: ">q", TAG_NEXT_PRODUCER_ID: ">q", TAG_CLIENT_VERSION: ">h"}
    values: dict[int, int] = {}
    for _ in range(reader.uvarint()):
        tag, size = reader.uvarint(), reader.uvarint()
        data = reader.bytes_(size)
        layout = known.get(tag)
        if layout is not None:
            if struct.calcsize(layout) != size:
                raise TxnRecordFormatError(f"tagged field {tag} of {size} bytes")
            values[tag] = struct.unpack(layout, data)[0]
    return values
