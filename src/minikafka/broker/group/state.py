"""A classic consumer group's state (Kafka's ClassicGroup): members, generation, chosen protocol, committed offsets,
and the requests held while a rebalance forms. Immutable: every transition returns a new Group."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from minikafka.common.errors import ErrorCode


class GroupState(Enum):
    """Kafka's classic group states, named as DescribeGroups and ListGroups show them."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class Protocol:
    name: str
    metadata: bytes


@dataclass(frozen=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    last_heartbeat_ms: int
    assignment: bytes = b""
    join_request: int | None = None  # the JoinGroup held until the rebalance completes
    sync_request: int | None = None  # the SyncGroup held until the leader's assignment is stored

    def evolve(self, **changes: Any) -> Member:
        return dataclasses.replace(self, **changes)

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((p.metadata for p in self.protocols if p.name == protocol), b"")

    def same_protocols(self, protocols: tuple[Protocol, ...]) -> bool:
        return self.protocols == protocols


@dataclass(frozen=True)
class TopicPartitionKey:
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    # Epoch ms: OffsetCommit v2-v4's explicit retention, added to the commit time (Kafka's expireTimestamp).
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True)
class PendingCommit:
    request_id: int
    offsets: tuple[tuple[TopicPartitionKey, OffsetAndMetadata], ...]
    refused: tuple[tuple[TopicPartitionKey, ErrorCode], ...]  # answered with their error, not written
    member_id: str
    generation: int


@dataclass(frozen=True)
class PendingAssignment:
    """The leader's SyncGroup assignment, applied once its group metadata record is stored."""

    request_id: int
    generation: int
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class PendingStaticJoin:
    """A static member rejoined a stable group under a new member id: its JoinGroup is answered once the group's
    metadata record names the new id; if that write fails, `old` takes its place again."""

    request_id: int
    old: Member
    new_member_id: str
    previous_leader: str | None
    skip_assignment_supported: bool


@dataclass(frozen=True)
class PendingDelete:
    request_id: int


@dataclass(frozen=True)
class PendingMetadata:
    """A group metadata write nobody waits for (the group went empty)."""

    request_id: int


@dataclass(frozen=True)
class PendingOffsetDelete:
    """OffsetDelete's tombstones on their way: the offsets go, and the request is answered, once they are stored."""

    request_id: int
    deleted: tuple[TopicPartitionKey, ...]
    answered: tuple[tuple[TopicPartitionKey, ErrorCode], ...]  # the other partitions' answers, nothing to write


@dataclass(frozen=True)
class PendingOffsetExpiry:
    """Expired offsets' tombstones on their way (and the group's, when nothing of it is left): the offsets go once
    they are stored."""

    request_id: int
    expired: tuple[tuple[TopicPartitionKey, OffsetAndMetadata], ...]
    delete_group: bool


PendingWrite = (
    PendingCommit
    | PendingAssignment
    | PendingStaticJoin
    | PendingDelete
    | PendingMetadata
    | PendingOffsetDelete
    | PendingOffsetExpiry
)


class Clock(NamedTuple):
    """The shell's two clocks at one instant: the core's timers run on the monotonic one; what is stored
    (commit and state timestamps) and retention use epoch ms, as Kafka's records do."""

    monotonic_ms: int
    wall_ms: int

    def to_wall(self, monotonic: int) -> int:
        return self.wall_ms - (self.monotonic_ms - monotonic)

    def to_monotonic(self, wall: int) -> int:
        """A stored epoch-ms instant on the monotonic clock; one in the future (a clock moved back) counts as now."""
        return self.monotonic_ms - max(self.wall_ms - wall, 0)


@dataclass(frozen=True)
class InitialDelay:
    """group.initial.rebalance.delay.ms: the first rebalance of an empty group waits for more members, extended
    while members keep arriving, up to the rebalance timeout."""

    remaining_ms: int
    member_added: bool = False


@dataclass(frozen=True)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    state_timestamp_ms: int = 0
    members: dict[str, Member] = field(default_factory=dict)  # in join order; never mutated, replaced
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> expiry (MEMBER_ID_REQUIRED)
    rebalance_deadline_ms: int = 0
    initial_delay: InitialDelay | None = None
    # Members of this generation that have not sent SyncGroup yet: removed at the sync deadline, then a rebalance.
    pending_sync: frozenset[str] = frozenset()
    sync_deadline_ms: int = 0
    offsets: dict[TopicPartitionKey, OffsetAndMetadata] = field(default_factory=dict)
    pending_writes: dict[int, PendingWrite] = field(default_factory=dict)

    def evolve(self, **changes: Any) -> Group:
        return dataclasses.replace(self, **changes)

    def with_member(self, member: Member) -> Group:
        return self.evolve(members={**self.members, member.member_id: member})

    def without_member(self, member_id: str) -> Group:
        members = {k: v for k, v in self.members.items() if k != member_id}
        return self.evolve(members=members, pending_sync=self.pending_sync - {member_id})

    def with_pending(self, write: PendingWrite) -> Group:
        return self.evolve(pending_writes={**self.pending_writes, write.request_id: write})

    def member_by_instance(self, group_instance_id: str | None) -> Member | None:
        if group_instance_id is None:
            return None
        return next((m for m in self.members.values() if m.group_instance_id == group_instance_id), None)

    @property
    def is_idle(self) -> bool:
        """Nothing worth keeping: a group nobody joined and nobody committed for."""
        return (
            self.state == GroupState.EMPTY
            and not self.members
            and not self.pending_members
            and not self.offsets
            and not self.pending_writes
            and self.generation == 0
        )

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.join_request is not None for m in self.members.values())


@dataclass(frozen=True)
class GroupConfig:
    """The coordinator's limits, from the broker's group.* and offset.* configs."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2147483647
    max_metadata_size: int = 4096
