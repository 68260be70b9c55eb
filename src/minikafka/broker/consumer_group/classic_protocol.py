"""The consumer protocol embedded in the classic group protocol's bytes (Kafka's ConsumerProtocolSubscription and
ConsumerProtocolAssignment): what a classic member of a consumer group subscribes to and owns, and the assignment
its SyncGroup gets. Non-flexible encoding: int16 lengths for strings, int32 for arrays and bytes."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from minikafka.broker.consumer_group.model import NO_PARTITIONS, Partitions, TopicPartition

ASSIGNMENT_VERSION = 0


class MalformedProtocol(ValueError):
    pass


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    owned: Partitions = NO_PARTITIONS  # v1+: what a cooperative member still holds
    generation_id: int = -1  # v2+: the generation its owned partitions are of
    rack_id: str | None = None  # v3+: client.rack


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def unpack(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.data, self.position)
        except struct.error as error:
            raise MalformedProtocol(str(error)) from error
        self.position += struct.calcsize(fmt)
        return int(value)

    def raw(self, length: int) -> bytes:
        if length > len(self.data) - self.position:
            raise MalformedProtocol(f"length {length} runs past the end")
        value = self.data[self.position : self.position + length]
        self.position += length
        return value

    def string(self) -> str | None:
        length = self.unpack(">h")
        try:
            return None if length < 0 else self.raw(length).decode()
        except UnicodeDecodeError as error:
            raise MalformedProtocol(str(error)) from error

    def count(self) -> int:
        count = self.unpack(">i")
        if count > len(self.data):
            raise MalformedProtocol(f"array of {count} in {len(self.data)} bytes")
        return max(count, 0)

    def at_end(self) -> bool:
        return self.position >= len(self.data)

    def partitions(self) -> Partitions:
        owned = []
        for _ in range(self.count()):
            topic = self.string() or ""
            owned += [TopicPartition(topic, self.unpack(">i")) for _ in range(self.count())]
        return frozenset(owned)


def decode_subscription(data: bytes) -> Subscription:
    """Any version; fields of later versions than the one written are left at their defaults."""
    reader = _Reader(data)
    version = reader.unpack(">h")
    if version < 0:
        raise MalformedProtocol(f"subscription version {version}")
    topics = tuple(reader.string() or "" for _ in range(reader.count()))
    reader.raw(max(reader.unpack(">i"), 0))  # user data: not used by the coordinator
    if version < 1 or reader.at_end():
        return Subscription(topics)
    owned = reader.partitions()
    generation = reader.unpack(">i") if version >= 2 and not reader.at_end() else -1
    rack = reader.string() if version >= 3 and not reader.at_end() else None
    return Subscription(topics, owned, generation, rack)


def _string(value: str) -> bytes:
    encoded = value.encode()
    return struct.pack(">h", len(encoded)) + encoded


def encode_assignment(partitions: Partitions) -> bytes:
    """ConsumerProtocolAssignment v0: topics in name order, partitions ascending, no user data."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(struct.pack(">hi", ASSIGNMENT_VERSION, len(by_topic)))
    for topic, numbers in by_topic.items():
        out += _string(topic) + struct.pack(">i", len(numbers))
        out += b"".join(struct.pack(">i", n) for n in numbers)
    out += struct.pack(">i", -1)
    return bytes(out)


def decode_assignment(data: bytes) -> Partitions:
    """An empty assignment (a member of a generation that had none yet) is no partitions."""
    if not data:
        return NO_PARTITIONS
    reader = _Reader(data)
    reader.unpack(">h")
    return reader.partitions()
