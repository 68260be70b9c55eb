"""What the group core asks its shell to do (answer a held request, append records to __consumer_offsets, log an
event) and the answers it gives, one result type per API."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from minikafka.broker.group.records import OffsetsRecord
from minikafka.broker.group.state import Group, TopicPartitionKey
from minikafka.common.errors import ErrorCode


@dataclass(frozen=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False  # the leader keeps the current assignment: its SyncGroup sends none


@dataclass(frozen=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode


@dataclass(frozen=True)
class LeftMember:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True)
class LeaveResult:
    error: ErrorCode
    members: tuple[LeftMember, ...] = ()


@dataclass(frozen=True)
class CommitResult:
    """`error` applies to every partition of the request; else each has its own."""

    error: ErrorCode
    partitions: tuple[tuple[TopicPartitionKey, ErrorCode], ...] = ()


@dataclass(frozen=True)
class DeleteResult:
    error: ErrorCode


@dataclass(frozen=True)
class OffsetDeleteResult:
    """`error` applies to the whole request (no partitions then); else each partition has its own."""

    error: ErrorCode
    partitions: tuple[tuple[TopicPartitionKey, ErrorCode], ...] = ()


Result = JoinResult | SyncResult | HeartbeatResult | LeaveResult | CommitResult | DeleteResult | OffsetDeleteResult


@dataclass(frozen=True)
class Answer:
    request_id: int
    result: Result


@dataclass(frozen=True)
class Append:
    """Write these records to the group's __consumer_offsets partition with acks=all, then tell the core
    (`append_done`) under `request_id`."""

    request_id: int
    records: tuple[OffsetsRecord, ...]


@dataclass(frozen=True)
class GroupEvent:
    name: str
    fields: dict[str, Any] = field(default_factory=dict)


Effect = Answer | Append | GroupEvent


@dataclass(frozen=True)
class GroupStep:
    group: Group
    effects: tuple[Effect, ...] = ()
