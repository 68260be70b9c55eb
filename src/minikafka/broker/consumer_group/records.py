"""KIP-848's records in __consumer_offsets, in Kafka's formats: the key is a record type (int16) and the group's
fields in the classic key encoding; the value is a version (int16, always 0) and the fields in the flexible
encoding (compact strings and arrays, tagged fields). Partitions travel by topic id. A null value is a tombstone."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from minikafka.broker.consumer_group.model import ClassicMemberMetadata, ClassicProtocol

CLASSIC_MEMBER_METADATA_TAG = 0


class ConsumerRecordFormatError(ValueError):
    """A KIP-848 record this coordinator cannot read."""


# Kafka's coordinator record types: the key's first int16.
GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT = 6, 7, 8
REGULAR_EXPRESSION = 16
KEY_TYPES = frozenset({*range(3, 9), REGULAR_EXPRESSION})
VALUE_VERSION = 0


@dataclass(frozen=True)
class ConsumerGroupMetadataKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataKey:
    group: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupRegularExpressionKey:
    group: str
    regular_expression: str


@dataclass(frozen=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: uuid.UUID
    name: str
    partitions: int


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...]


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMemberMetadata | None = None  # tagged field 0: a classic protocol member's


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True)
class TopicPartitions:
    topic_id: uuid.UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # Kafka's MemberState: 0 stable, 1 unrevoked partitions, 2 unreleased partitions
    assigned: tuple[TopicPartitions, ...]
    pending_revocation: tuple[TopicPartitions, ...]


@dataclass(frozen=True)
class ConsumerGroupRegularExpressionValue:
    """The topics a subscribed regular expression matched, as of metadata `version` at `timestamp`."""

    topics: tuple[str, ...]
    version: int
    timestamp: int


ConsumerGroupKey = (
    ConsumerGroupRegularExpressionKey
    | ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
)
ConsumerGroupValue = (
    ConsumerGroupRegularExpressionValue
    | ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
)

MemberKey = (
    ConsumerGroupMemberMetadataKey | ConsumerGroupTargetAssignmentMemberKey | ConsumerGroupCurrentMemberAssignmentKey
)
_KEY_TYPE: dict[type, int] = {
    ConsumerGroupMetadataKey: GROUP_METADATA,
    ConsumerGroupPartitionMetadataKey: PARTITION_METADATA,
    ConsumerGroupMemberMetadataKey: MEMBER_METADATA,
    ConsumerGroupTargetAssignmentMetadataKey: TARGET_ASSIGNMENT_METADATA,
    ConsumerGroupTargetAssignmentMemberKey: TARGET_ASSIGNMENT_MEMBER,
    ConsumerGroupCurrentMemberAssignmentKey: CURRENT_MEMBER_ASSIGNMENT,
    ConsumerGroupRegularExpressionKey: REGULAR_EXPRESSION,
}


# ---- writing ----


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def pack(self, fmt: str, value: int) -> _Writer:
        self.out += struct.pack(fmt, value)
        return self

    def int8(self, value: int) -> _Writer:
        return self.pack(">b", value)

    def int32(self, value: int) -> _Writer:
        return self.pack(">i", value)

    def uvarint(self, value: int) -> _Writer:
        while value >= 0x80:
            self.out.append((value & 0x7F) | 0x80)
            value >>= 7
        self.out.append(value)
        return self

    def key_string(self, value: str) -> _Writer:
        data = value.encode()
        self.pack(">h", len(data))
        self.out += data
        return self

    def compact_string(self, value: str | None) -> _Writer:
        if value is None:
            return self.uvarint(0)
        data = value.encode()
        self.uvarint(len(data) + 1)
        self.out += data
        return self

    def uuid(self, value: uuid.UUID) -> _Writer:
        self.out += value.bytes
        return self

    def no_tags(self) -> _Writer:
        return self.uvarint(0)

    def topic_partitions(self, topics: tuple[TopicPartitions, ...]) -> _Writer:
        self.uvarint(len(topics) + 1)
        for topic in topics:
            self.uuid(topic.topic_id).uvarint(len(topic.partitions) + 1)
            for partition in topic.partitions:
                self.int32(partition)
            self.no_tags()
        return self


def encode_key(key: ConsumerGroupKey) -> bytes:
    writer = _Writer().pack(">h", _KEY_TYPE[type(key)]).key_string(key.group)
    if isinstance(key, MemberKey):
        writer.key_string(key.member_id)
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        writer.key_string(key.regular_expression)
    return bytes(writer.out)


def encode_value(value: ConsumerGroupValue) -> bytes:
    writer = _Writer().pack(">h", VALUE_VERSION)
    if isinstance(value, ConsumerGroupMetadataValue):
        writer.int32(value.epoch)
    elif isinstance(value, ConsumerGroupPartitionMetadataValue):
        writer.uvarint(len(value.topics) + 1)
        for topic in value.topics:
            # No rack information: an empty PartitionMetadata list, as Kafka stores it then.
            writer.uuid(topic.topic_id).compact_string(topic.name).int32(topic.partitions).uvarint(1).no_tags()
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        return bytes(_member_metadata(writer, value).out)
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        writer.int32(value.assignment_epoch)
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        writer.topic_partitions(value.topic_partitions)
    elif isinstance(value, ConsumerGroupRegularExpressionValue):
        writer.uvarint(len(value.topics) + 1)
        for name in value.topics:
            writer.compact_string(name)
        writer.pack(">q", value.version).pack(">q", value.timestamp)
    else:
        writer.int32(value.member_epoch).int32(value.previous_member_epoch).int8(value.state)
        writer.topic_partitions(value.assigned).topic_partitions(value.pending_revocation)
    return bytes(writer.no_tags().out)


def _member_metadata(writer: _Writer, value: ConsumerGroupMemberMetadataValue) -> _Writer:
    """The fields, then the tagged fields: ClassicMemberMetadata (tag 0) for a classic protocol member."""
    writer.compact_string(value.instance_id).compact_string(value.rack_id)
    writer.compact_string(value.client_id).compact_string(value.client_host)
    writer.uvarint(len(value.subscribed_topic_names) + 1)
    for name in value.subscribed_topic_names:
        writer.compact_string(name)
    writer.compact_string(value.subscribed_topic_regex).int32(value.rebalance_timeout_ms)
    writer.compact_string(value.server_assignor)
    if value.classic is None:
        return writer.no_tags()
    tagged = _Writer().int32(value.classic.session_timeout_ms).uvarint(len(value.classic.protocols) + 1)
    for protocol in value.classic.protocols:
        tagged.compact_string(protocol.name).uvarint(len(protocol.metadata) + 1)
        tagged.out += protocol.metadata
        tagged.no_tags()
    tagged.no_tags()
    writer.uvarint(1).uvarint(CLASSIC_MEMBER_METADATA_TAG).uvarint(len(tagged.out))
    writer.out += tagged.out
    return writer


# ---- reading ----


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def unpack(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.position + size > len(self.data):
            raise ConsumerRecordFormatError(f"record ends at byte {len(self.data)}, {size} more bytes expected")
        value = struct.unpack_from(fmt, self.data, self.position)[0]
        self.position += size
        return int(value)

    def int8(self) -> int:
        return self.unpack(">b")

    def int32(self) -> int:
        return self.unpack(">i")

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.unpack(">B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ConsumerRecordFormatError("a varint longer than 5 bytes")

    def raw(self, length: int) -> bytes:
        if length < 0 or self.position + length > len(self.data):
            raise ConsumerRecordFormatError(f"length {length} runs past the record")
        value = self.data[self.position : self.position + length]
        self.position += length
        return value

    def key_string(self) -> str:
        return self.raw(self.unpack(">h")).decode()

    def compact_string(self) -> str | None:
        length = self.uvarint() - 1
        return None if length < 0 else self.raw(length).decode()

    def text(self) -> str:
        return self.compact_string() or ""

    def count(self) -> int:
        """A compact array's length (a null array reads as empty)."""
        return max(self.uvarint() - 1, 0)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.raw(16))

    def skip_tags(self) -> None:
        """Tagged fields this coordinator does not use (a metadata hash, assignment epochs) are skipped."""
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())

    def topic_partitions(self) -> tuple[TopicPartitions, ...]:
        topics = []
        for _ in range(self.count()):
            topic_id = self.uuid()
            partitions = tuple(self.int32() for _ in range(self.count()))
            self.skip_tags()
            topics.append(TopicPartitions(topic_id, partitions))
        return tuple(topics)


def decode_key(data: bytes) -> ConsumerGroupKey:
    reader = _Reader(data)
    record_type = reader.unpack(">h")
    group = reader.key_string()
    if record_type == GROUP_METADATA:
        return ConsumerGroupMetadataKey(group)
    if record_type == PARTITION_METADATA:
        return ConsumerGroupPartitionMetadataKey(group)
    if record_type == TARGET_ASSIGNMENT_METADATA:
        return ConsumerGroupTargetAssignmentMetadataKey(group)
    second = reader.key_string()
    if record_type == REGULAR_EXPRESSION:
        return ConsumerGroupRegularExpressionKey(group, second)
    member_id = second
    if record_type == MEMBER_METADATA:
        return ConsumerGroupMemberMetadataKey(group, member_id)
    if record_type == TARGET_ASSIGNMENT_MEMBER:
        return ConsumerGroupTargetAssignmentMemberKey(group, member_id)
    if record_type == CURRENT_MEMBER_ASSIGNMENT:
        return ConsumerGroupCurrentMemberAssignmentKey(group, member_id)
    raise ConsumerRecordFormatError(f"record type {record_type} is not a consumer group record")


def decode_value(key: ConsumerGroupKey, data: bytes) -> ConsumerGroupValue:
    reader = _Reader(data)
    version = reader.unpack(">h")
    if version != VALUE_VERSION:
        raise ConsumerRecordFormatError(f"{type(key).__name__} value version {version} is not read here")
    value = _value(key, reader)
    if not isinstance(value, ConsumerGroupMemberMetadataValue):
        reader.skip_tags()
    return value


def _value(key: ConsumerGroupKey, reader: _Reader) -> ConsumerGroupValue:
    if isinstance(key, ConsumerGroupMetadataKey):
        return ConsumerGroupMetadataValue(reader.int32())
    if isinstance(key, ConsumerGroupPartitionMetadataKey):
        return ConsumerGroupPartitionMetadataValue(tuple(_topic_metadata(reader) for _ in range(reader.count())))
    if isinstance(key, ConsumerGroupMemberMetadataKey):
        return _read_member_metadata(reader)
    if isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
        return ConsumerGroupTargetAssignmentMetadataValue(reader.int32())
    if isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        return ConsumerGroupTargetAssignmentMemberValue(reader.topic_partitions())
    if isinstance(key, ConsumerGroupRegularExpressionKey):
        topics = tuple(reader.text() for _ in range(reader.count()))
        return ConsumerGroupRegularExpressionValue(topics, reader.unpack(">q"), reader.unpack(">q"))
    epochs = reader.int32(), reader.int32()
    state = reader.int8()
    assigned = reader.topic_partitions()
    return ConsumerGroupCurrentMemberAssignmentValue(*epochs, state, assigned, reader.topic_partitions())


def _topic_metadata(reader: _Reader) -> TopicMetadata:
    topic = TopicMetadata(reader.uuid(), reader.text(), reader.int32())
    for _ in range(reader.count()):  # racks per partition: not used here
        reader.int32()
        for _ in range(reader.count()):
            reader.compact_string()
        reader.skip_tags()
    reader.skip_tags()
    return topic


def _read_member_metadata(reader: _Reader) -> ConsumerGroupMemberMetadataValue:
    instance_id, rack_id = reader.compact_string(), reader.compact_string()
    client_id, client_host = reader.text(), reader.text()
    names = tuple(reader.text() for _ in range(reader.count()))
    regex, timeout, assignor = reader.compact_string(), reader.int32(), reader.compact_string()
    client = client_id, client_host
    classic = None
    for _ in range(reader.uvarint()):
        tag, size = reader.uvarint(), reader.uvarint()
        if tag != CLASSIC_MEMBER_METADATA_TAG:
            reader.raw(size)
            continue
        session_timeout = reader.int32()
        protocols = tuple(
            ClassicProtocol(reader.text(), _skip_tags_after(reader, reader.raw(reader.uvarint() - 1)))
            for _ in range(reader.count())
        )
        reader.skip_tags()
        classic = ClassicMemberMetadata(session_timeout, protocols)
    return ConsumerGroupMemberMetadataValue(instance_id, rack_id, *client, names, regex, timeout, assignor, classic)


def _skip_tags_after(reader: _Reader, value: bytes) -> bytes:
    reader.skip_tags()
    return value
