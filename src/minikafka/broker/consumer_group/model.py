"""A KIP-848 consumer group's state (Kafka's ConsumerGroup / ConsumerGroupMember): the group epoch, the target
assignment and its epoch, and each member's epoch, reconciliation state and partitions. Immutable: every
transition returns new values."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

Partitions = frozenset["TopicPartition"]
NO_PARTITIONS: Partitions = frozenset()


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class MemberState(Enum):
    """Where a member is in its reconciliation towards the target assignment (Kafka's MemberState)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # it must give partitions up before its epoch advances
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # it waits for partitions other members still own


class ConsumerGroupState(Enum):
    """As DescribeGroups and ListGroups show a consumer group."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"  # the group epoch moved past the target assignment's
    RECONCILING = "Reconciling"  # some member has not reached the target assignment
    STABLE = "Stable"


@dataclass(frozen=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """A member of a consumer group that speaks the classic protocol (JoinGroup, SyncGroup, Heartbeat): its
    session timeout and the protocols of its last JoinGroup (Kafka's ClassicMemberMetadata)."""

    session_timeout_ms: int
    protocols: tuple[ClassicProtocol, ...]


@dataclass(frozen=True)
class ConsumerMember:
    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topics: frozenset[str]
    server_assignor: str | None
    last_heartbeat_ms: int
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Partitions = NO_PARTITIONS
    pending_revocation: Partitions = NO_PARTITIONS
    revocation_deadline_ms: int | None = None  # set while UNREVOKED_PARTITIONS: fenced if still so then
    instance_id: str | None = None  # group.instance.id of a static member
    subscribed_topic_regex: str | None = None
    classic: ClassicMemberMetadata | None = None  # set for a member of the classic protocol
    rack_id: str | None = None  # client.rack
    # A classic member's timers (not stored, so not compared: a new coordinator gives it its session again): told
    # to rejoin, it is removed unless its JoinGroup comes by the first; answered JoinGroup, unless its SyncGroup
    # comes by the second.
    join_deadline_ms: int | None = field(default=None, compare=False)
    sync_deadline_ms: int | None = field(default=None, compare=False)

    def evolve(self, **changes: Any) -> ConsumerMember:
        return dataclasses.replace(self, **changes)

    def owns(self) -> Partitions:
        """The partitions no other member may take yet: its own and those it has still to revoke."""
        return self.assigned | self.pending_revocation

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def session_timeout_ms(self, default: int) -> int:
        return self.classic.session_timeout_ms if self.classic is not None else default

    def reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """Kafka's group.consumer.* broker configs."""

    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    max_size: int = 2147483647  # group.consumer.max.size
    assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors; the first is the default
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy
    classic_max_size: int = 2147483647  # group.max.size: a downgraded group must fit it


@dataclass(frozen=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    members: Mapping[str, ConsumerMember] = field(default_factory=dict)  # never mutated, replaced
    subscription_metadata: Mapping[str, int] = field(default_factory=dict)  # partitions of each subscribed topic
    assignment_epoch: int = 0
    target: Mapping[str, Partitions] = field(default_factory=dict)  # member id -> its target partitions
    # Each subscribed regular expression -> the topics it matched at the group's last resolution of them.
    resolved_regexes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # Kafka resolves them apart from the heartbeats, every regex of the group at once: when they last were (None:
    # not since the group was loaded), as of which metadata offset, and whether a resolution is under way.
    regexes_resolved_ms: int | None = None
    regexes_version: int = -1
    regex_resolution_pending: bool = False

    def evolve(self, **changes: Any) -> ConsumerGroup:
        return dataclasses.replace(self, **changes)

    def with_member(self, member: ConsumerMember) -> ConsumerGroup:
        return self.evolve(members={**self.members, member.member_id: member})

    def without_member(self, member_id: str) -> ConsumerGroup:
        return self.evolve(members={k: v for k, v in self.members.items() if k != member_id})

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch != self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def all_classic_except(self, member_ids: frozenset[str]) -> bool:
        """Every member but those uses the classic protocol (and there is one): the group may become classic."""
        rest = [m for k, m in self.members.items() if k not in member_ids]
        return bool(rest) and all(m.uses_classic_protocol for m in rest)

    def owned_by_others(self, member_id: str) -> Partitions:
        """Partitions another member holds (assigned or pending revocation): not to be given out yet."""
        return frozenset().union(*(m.owns() for k, m in self.members.items() if k != member_id))
