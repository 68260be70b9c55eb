"""The records of __consumer_offsets in Kafka's own key/value formats: an offset commit (OffsetCommitKey v1,
OffsetCommitValue v3, or v1 for one with an expire timestamp, as Kafka writes it; v0-v3 are read), a classic
group's metadata (GroupMetadataKey v2, GroupMetadataValue v3) and a KIP-848 consumer group's records
(consumer_group/records.py). A null value is a tombstone: the offset or the group is gone."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from minikafka.broker.consumer_group import records as consumer_records
from minikafka.broker.consumer_group.records import ConsumerGroupKey, ConsumerGroupValue

T = TypeVar("T")
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
# The only version with an expireTimestamp field (and none for the leader epoch).
EXPIRING_OFFSET_COMMIT_VALUE_VERSION = 1
NO_EXPIRE_TIMESTAMP = -1
GROUP_METADATA_VALUE_VERSION = 3


class RecordFormatError(ValueError):
    """A __consumer_offsets record this coordinator cannot read."""


@dataclass(frozen=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = NO_EXPIRE_TIMESTAMP


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadata, ...]


Key = OffsetCommitKey | GroupMetadataKey | ConsumerGroupKey
Value = OffsetCommitValue | GroupMetadataValue | ConsumerGroupValue


@dataclass(frozen=True)
class OffsetsRecord:
    """One record of __consumer_offsets; `value` None is a tombstone."""

    key: Key
    value: Value | None


def with_wall_state_timestamps(
    records: tuple[OffsetsRecord, ...], to_wall: Callable[[int], int]
) -> list[OffsetsRecord]:
    """The classic core dates a group's state on the monotonic clock; its metadata record carries epoch ms."""
    return [
        OffsetsRecord(
            r.key, dataclasses.replace(r.value, current_state_timestamp=to_wall(r.value.current_state_timestamp))
        )
        if isinstance(r.value, GroupMetadataValue)
        else r
        for r in records
    ]


# ---- writing ----


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def int16(self, value: int) -> _Writer:
        self.out += struct.pack(">h", value)
        return self

    def int32(self, value: int) -> _Writer:
        self.out += struct.pack(">i", value)
        return self

    def int64(self, value: int) -> _Writer:
        self.out += struct.pack(">q", value)
        return self

    def string(self, value: str | None) -> _Writer:
        if value is None:
            return self.int16(-1)
        data = value.encode()
        self.int16(len(data))
        self.out += data
        return self

    def bytes_(self, value: bytes) -> _Writer:
        self.int32(len(value))
        self.out += value
        return self


def encode_key(key: Key) -> bytes:
    if not isinstance(key, OffsetCommitKey | GroupMetadataKey):
        return consumer_records.encode_key(key)
    if isinstance(key, OffsetCommitKey):
        writer = _Writer().int16(OFFSET_COMMIT_KEY_VERSION).string(key.group).string(key.topic)
        return bytes(writer.int32(key.partition).out)
    return bytes(_Writer().int16(GROUP_METADATA_KEY_VERSION).string(key.group).out)


def encode_value(value: Value | None) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, OffsetCommitValue | GroupMetadataValue):
        return consumer_records.encode_value(value)
    if isinstance(value, OffsetCommitValue):
        return _offset_commit_value(value)
    writer = _Writer().int16(GROUP_METADATA_VALUE_VERSION).string(value.protocol_type).int32(value.generation)
    writer.string(value.protocol).string(value.leader).int64(value.current_state_timestamp)
    writer.int32(len(value.members))
    for member in value.members:
        writer.string(member.member_id).string(member.group_instance_id).string(member.client_id)
        writer.string(member.client_host).int32(member.rebalance_timeout_ms).int32(member.session_timeout_ms)
        writer.bytes_(member.subscription).bytes_(member.assignment)
    return bytes(writer.out)


def _offset_commit_value(value: OffsetCommitValue) -> bytes:
    if value.expire_timestamp != NO_EXPIRE_TIMESTAMP:
        writer = _Writer().int16(EXPIRING_OFFSET_COMMIT_VALUE_VERSION).int64(value.offset).string(value.metadata)
        return bytes(writer.int64(value.commit_timestamp).int64(value.expire_timestamp).out)
    writer = _Writer().int16(OFFSET_COMMIT_VALUE_VERSION).int64(value.offset).int32(value.leader_epoch)
    return bytes(writer.string(value.metadata).int64(value.commit_timestamp).out)


# ---- reading ----


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def _unpack(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.position + size > len(self.data):
            raise RecordFormatError(f"record ends at byte {len(self.data)}, {size} more bytes expected")
        value = struct.unpack_from(fmt, self.data, self.position)[0]
        self.position += size
        return int(value)

    def int16(self) -> int:
        return self._unpack(">h")

    def int32(self) -> int:
        return self._unpack(">i")

    def int64(self) -> int:
        return self._unpack(">q")

    def _raw(self, length: int) -> bytes:
        if length < 0 or self.position + length > len(self.data):
            raise RecordFormatError(f"length {length} runs past the record")
        value = self.data[self.position : self.position + length]
        self.position += length
        return value

    def string(self) -> str | None:
        length = self.int16()
        return None if length < 0 else self._raw(length).decode()

    def text(self) -> str:
        return self.string() or ""

    def bytes_(self) -> bytes:
        length = self.int32()
        return b"" if length < 0 else self._raw(length)


def decode_key(data: bytes) -> Key:
    reader = _Reader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetCommitKey(reader.text(), reader.text(), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(reader.text())
    if version in consumer_records.KEY_TYPES:
        return _consumer(consumer_records.decode_key, data)
    raise RecordFormatError(f"unknown __consumer_offsets key version {version}")


def decode_value(key: Key, data: bytes | None) -> Value | None:
    if data is None:
        return None
    if not isinstance(key, OffsetCommitKey | GroupMetadataKey):
        return _consumer(partial(consumer_records.decode_value, key), data)
    reader = _Reader(data)
    version = reader.int16()
    if isinstance(key, OffsetCommitKey):
        return _read_offset_commit_value(version, reader)
    if version != GROUP_METADATA_VALUE_VERSION:
        raise RecordFormatError(f"group metadata value version {version} is not read here")
    protocol_type, generation = reader.text(), reader.int32()
    protocol, leader, timestamp = reader.string(), reader.string(), reader.int64()
    members = tuple(
        MemberMetadata(
            reader.text(),
            reader.string(),
            reader.text(),
            reader.text(),
            reader.int32(),
            reader.int32(),
            reader.bytes_(),
            reader.bytes_(),
        )
        for _ in range(reader.int32())
    )
    return GroupMetadataValue(protocol_type, generation, protocol, leader, timestamp, members)


def _read_offset_commit_value(version: int, reader: _Reader) -> OffsetCommitValue:
    """Kafka's versions 0-3: the leader epoch from v3, the expire timestamp in v1 only."""
    if not 0 <= version <= OFFSET_COMMIT_VALUE_VERSION:
        raise RecordFormatError(f"offset commit value version {version} is not read here")
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else -1
    metadata, commit_timestamp = reader.text(), reader.int64()
    expire = reader.int64() if version == EXPIRING_OFFSET_COMMIT_VALUE_VERSION else NO_EXPIRE_TIMESTAMP
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire)


def _consumer(read: Callable[[bytes], T], data: bytes) -> T:
    try:
        return read(data)
    except consumer_records.ConsumerRecordFormatError as error:
        raise RecordFormatError(str(error)) from error


def decode(key: bytes | None, value: bytes | None) -> OffsetsRecord:
    if key is None:
        raise RecordFormatError("a __consumer_offsets record without a key")
    decoded_key = decode_key(key)
    return OffsetsRecord(decoded_key, decode_value(decoded_key, value))
