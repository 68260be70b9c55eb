"""OffsetDelete (Kafka's OffsetMetadataManager.deleteOffsets): a group's committed offsets for some partitions go,
by tombstones in __consumer_offsets stored with acks=all before the answer, so a new coordinator loads without them.

An empty group loses any offset; a group with members keeps those of topics it is subscribed to
(GROUP_SUBSCRIBED_TO_TOPIC); a classic group whose members do not use the consumer protocol is refused whole
(NON_EMPTY_GROUP), since its subscriptions cannot be read."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from minikafka.broker.group.effects import Answer, Append, GroupEvent, GroupStep, OffsetDeleteResult
from minikafka.broker.group.records import OffsetCommitKey, OffsetsRecord
from minikafka.broker.group.state import Group, GroupState, PendingOffsetDelete, TopicPartitionKey
from minikafka.common.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class OffsetDeleteRequest:
    request_id: int
    partitions: tuple[TopicPartitionKey, ...]
    # The topics a KIP-848 group with these offsets is subscribed to; None for a classic group.
    consumer_subscribed: frozenset[str] | None = None


def subscribed_topics(group: Group) -> frozenset[str] | None:
    """The topics a classic group's members subscribe to; None when unknown (then every topic counts as
    subscribed, as Kafka does, so no live member's offset is deleted)."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    topics: set[str] = set()
    for member in group.members.values():
        decoded = decode_subscription_topics(member.metadata_for(group.protocol_name))
        if decoded is None:
            return None
        topics.update(decoded)
    return frozenset(topics)


def decode_subscription_topics(data: bytes) -> list[str] | None:
    """The topics of a ConsumerProtocolSubscription (int16 version, then an array of int16-length strings, the
    same in every version); None when malformed."""
    try:
        (count,) = struct.unpack_from(">i", data, 2)
        if count < 0 or count > len(data):
            return None
        position, topics = 6, []
        for _ in range(count):
            (length,) = struct.unpack_from(">h", data, position)
            if length < 0 or position + 2 + length > len(data):
                return None
            topics.append(data[position + 2 : position + 2 + length].decode())
            position += 2 + length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


def _refusal(group: Group, request: OffsetDeleteRequest) -> ErrorCode:
    if request.consumer_subscribed is not None:
        return ErrorCode.NONE  # a KIP-848 group exists while it has members, even with no offsets yet
    if group.state == GroupState.DEAD or group.is_idle:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if group.state != GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return ErrorCode.NON_EMPTY_GROUP
    return ErrorCode.NONE


def _subscribed(group: Group, request: OffsetDeleteRequest, topic: str) -> bool:
    if request.consumer_subscribed is not None:
        return topic in request.consumer_subscribed
    if group.state == GroupState.EMPTY:
        return False
    topics = subscribed_topics(group)
    return topics is None or topic in topics


def delete_offsets(group: Group, request: OffsetDeleteRequest) -> GroupStep:
    """Tombstones for the named partitions' offsets; answered once they are stored (`offsets_deleted`)."""
    error = _refusal(group, request)
    if error != ErrorCode.NONE:
        return GroupStep(group, (Answer(request.request_id, OffsetDeleteResult(error)),))
    deleted: list[TopicPartitionKey] = []
    answered: list[tuple[TopicPartitionKey, ErrorCode]] = []
    for key in dict.fromkeys(request.partitions):
        if _subscribed(group, request, key.topic):
            answered.append((key, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
        elif key in group.offsets:
            deleted.append(key)
        else:
            answered.append((key, ErrorCode.NONE))  # nothing committed: nothing to delete, as Kafka answers
    if not deleted:
        return GroupStep(group, (Answer(request.request_id, OffsetDeleteResult(ErrorCode.NONE, tuple(answered))),))
    records = tuple(OffsetsRecord(OffsetCommitKey(group.group_id, k.topic, k.partition), None) for k in deleted)
    pending = PendingOffsetDelete(request.request_id, tuple(deleted), tuple(answered))
    return GroupStep(group.with_pending(pending), (Append(request.request_id, records),))


def offsets_deleted(group: Group, pending: PendingOffsetDelete, error: ErrorCode) -> GroupStep:
    """The tombstones' write finished (`error` as the client sees it): on success the offsets are gone."""
    partitions = tuple((key, error) for key in pending.deleted) + pending.answered
    answer = Answer(pending.request_id, OffsetDeleteResult(ErrorCode.NONE, partitions))
    if error != ErrorCode.NONE:
        return GroupStep(group, (answer,))
    gone = set(pending.deleted)
    group = group.evolve(offsets={k: v for k, v in group.offsets.items() if k not in gone})
    event = GroupEvent(
        "offsets_deleted",
        {"group": group.group_id, "partitions": [f"{k.topic}-{k.partition}" for k in pending.deleted]},
    )
    return GroupStep(group, (answer, event))
