"""Online conversion between a classic group and a consumer group (Kafka's group.consumer.migration.policy): a
classic group whose members roll to the consumer protocol becomes a consumer group when the first
ConsumerGroupHeartbeat joins it (upgrade), its classic members kept with their generation as member epoch and
their partitions; a consumer group whose last consumer-protocol member leaves, with classic members left, becomes
a classic group again (downgrade) and rebalances. The committed offsets stay where they are (the group's offsets
holder). Pure: the shell writes the records and answers the held requests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minikafka.broker.consumer_group.classic_protocol import (
    MalformedProtocol,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from minikafka.broker.consumer_group.model import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerGroupState,
    ConsumerMember,
)
from minikafka.broker.consumer_group.subscriptions import refreshed
from minikafka.broker.group.effects import Answer, Effect, JoinResult, SyncResult
from minikafka.broker.group.rebalance import prepare_rebalance, store_metadata
from minikafka.broker.group.records import GroupMetadataKey, OffsetsRecord
from minikafka.broker.group.state import Group, GroupState, Member, Protocol
from minikafka.common.errors import ErrorCode

POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
CONSUMER_PROTOCOL_TYPE = "consumer"


def upgrade_enabled(policy: str) -> bool:
    return policy in ("bidirectional", "upgrade")


def downgrade_enabled(policy: str) -> bool:
    return policy in ("bidirectional", "downgrade")


@dataclass(frozen=True)
class Upgrade:
    group: ConsumerGroup
    holder: Group  # what stays of the classic group: its committed offsets
    effects: tuple[Effect, ...]  # its held JoinGroup and SyncGroup answered REBALANCE_IN_PROGRESS
    tombstone: OffsetsRecord  # the classic group's metadata, deleted


@dataclass(frozen=True)
class Refused:
    reason: str


def _consumer_member(classic: Group, member: Member, now: int) -> ConsumerMember:
    subscription = decode_subscription(member.metadata_for(classic.protocol_name))
    assigned = decode_assignment(member.assignment)
    protocols = tuple(ClassicProtocol(p.name, p.metadata) for p in member.protocols)
    return ConsumerMember(
        member.member_id,
        member.client_id,
        member.client_host,
        member.rebalance_timeout_ms,
        frozenset(subscription.topics),
        None,
        now,
        member_epoch=classic.generation,
        previous_member_epoch=classic.generation,
        assigned=assigned,
        instance_id=member.group_instance_id,
        classic=ClassicMemberMetadata(member.session_timeout_ms, protocols),
        rack_id=subscription.rack_id,
    )


def upgrade(classic: Group, topics: Mapping[str, int], config: ConsumerGroupConfig, now: int) -> Upgrade | Refused:
    """The classic group as a consumer group at epoch = its generation, each member's partitions its own and its
    target, so the joining member's heartbeat is the first rebalance of the consumer group."""
    if not upgrade_enabled(config.migration_policy):
        return Refused("the online upgrade is disabled")
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return Refused("the group does not use the consumer embedded protocol")
    if len(classic.members) > config.max_size:
        return Refused("the group size exceeds the consumer group maximum size")
    try:
        members = {m.member_id: _consumer_member(classic, m, now) for m in classic.members.values()}
    except MalformedProtocol:
        return Refused("a member's subscription or assignment cannot be read")
    converted = ConsumerGroup(
        classic.group_id,
        group_epoch=classic.generation,
        members=members,
        assignment_epoch=classic.generation,
        target={k: m.assigned for k, m in members.items()},
    )
    converted = refreshed(converted, topics, bump=False).evolve(group_epoch=classic.generation)
    effects: list[Effect] = []
    for member in classic.members.values():
        if member.join_request is not None:
            effects.append(Answer(member.join_request, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS)))
        if member.sync_request is not None:
            effects.append(Answer(member.sync_request, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)))
    holder = Group(classic.group_id, offsets=classic.offsets, pending_writes=classic.pending_writes)
    tombstone = OffsetsRecord(GroupMetadataKey(classic.group_id), None)
    return Upgrade(converted, holder, tuple(effects), tombstone)


def downgrade_allowed(group: ConsumerGroup, leaving: frozenset[str], config: ConsumerGroupConfig) -> bool:
    """Once `leaving` are gone, only classic members are left (at least one), and the policy and the classic
    group's size limit let the group become classic."""
    remaining = len(group.members) - len(leaving & set(group.members))
    return (
        group.all_classic_except(leaving)
        and downgrade_enabled(config.migration_policy)
        and remaining <= config.classic_max_size
    )


def _common_protocol(group: ConsumerGroup) -> str | None:
    """The first protocol of the first member that every member supports (Kafka picks by votes; the rolled
    members share their assignor list, so this is the same one)."""
    members = [m.classic for m in group.members.values() if m.classic is not None]
    if not members:
        return None
    for candidate in members[0].protocols:
        if all(any(p.name == candidate.name for p in m.protocols) for m in members):
            return candidate.name
    return members[0].protocols[0].name if members[0].protocols else None


def _classic_member(member: ConsumerMember, protocol_type: str) -> Member:
    classic = member.classic or ClassicMemberMetadata(0, ())
    return Member(
        member.member_id,
        member.instance_id,
        member.client_id,
        member.client_host,
        member.rebalance_timeout_ms,
        classic.session_timeout_ms,
        protocol_type,
        tuple(Protocol(p.name, p.metadata) for p in classic.protocols),
        member.last_heartbeat_ms,
        assignment=encode_assignment(member.assigned),
    )


@dataclass(frozen=True)
class Downgrade:
    group: Group
    effects: tuple[Effect, ...]  # the group's metadata record appended, the rebalance started


def replacement_downgrade_allowed(
    before: ConsumerGroup, after: ConsumerGroup, replaced: str, config: ConsumerGroupConfig
) -> bool:
    """A static classic member took the place of the last consumer-protocol member (`replaced`), and the policy
    and the classic group's size limit let the group become classic."""
    old = before.members.get(replaced)
    return (
        old is not None
        and not old.uses_classic_protocol
        and after.all_classic_except(frozenset())
        and downgrade_enabled(config.migration_policy)
        and len(after.members) <= config.classic_max_size
    )


def downgrade(
    group: ConsumerGroup, holder: Group | None, now: int, request_id: int, replacement: bool = False
) -> Downgrade:
    """The classic members as a classic group at generation = the group epoch, each with its partitions, stored
    (its metadata record, under `request_id`) and then rebalancing, so every member rejoins as a classic one. After
    a static member's `replacement`, Kafka's group stays Stable (the new instance syncs its predecessor's
    partitions); it rebalances here all the same while some member has not reached the target, so no partition is
    given to a member while another still holds it."""
    members = {m.member_id: _classic_member(m, CONSUMER_PROTOCOL_TYPE) for m in group.members.values()}
    kept = holder if holder is not None else Group(group.group_id)
    classic = kept.evolve(
        state=GroupState.STABLE,
        generation=group.group_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=_common_protocol(group),
        leader_id=next(iter(members), None),
        state_timestamp_ms=now,
        members=members,
    )
    effects: list[Effect] = []
    classic = store_metadata(classic, now, effects, request_id)
    if replacement and group.state == ConsumerGroupState.STABLE:
        return Downgrade(classic, tuple(effects))
    reason = f"Downgrade group {group.group_id} from consumer to classic."
    classic = prepare_rebalance(classic, now, reason, 0, effects)
    return Downgrade(classic, tuple(effects))
