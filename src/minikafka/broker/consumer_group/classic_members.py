"""Members of a consumer group that speak the classic protocol (a mixed group, while its members roll from one
protocol to the other): their JoinGroup, SyncGroup, Heartbeat and LeaveGroup are served by the consumer group, as
Kafka's GroupMetadataManager does. A JoinGroup is a heartbeat of the consumer protocol with the embedded
subscription (its topics and owned partitions): the group epoch, target assignment and reconciliation are the
consumer group's; the member's generation is its member epoch and its SyncGroup gets its assigned partitions. Its
Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin to move on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from minikafka.broker.consumer_group.classic_protocol import MalformedProtocol, decode_subscription, encode_assignment
from minikafka.broker.consumer_group.heartbeat import (
    JOIN_EPOCH,
    HeartbeatRequest,
    consumer_group_heartbeat,
    fence_member,
    take_static_place,
)
from minikafka.broker.consumer_group.model import (
    NO_PARTITIONS,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerMember,
    MemberState,
    TopicPartition,
)
from minikafka.broker.group.effects import HeartbeatResult, JoinResult, LeaveResult, LeftMember, SyncResult
from minikafka.common.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class ClassicJoin:
    member_id: str  # "" for a new member
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[ClassicProtocol, ...]
    require_known_member_id: bool  # JoinGroup v4+: a new dynamic member is first given its id


@dataclass(frozen=True)
class MixedStep:
    group: ConsumerGroup
    result: JoinResult | SyncResult | HeartbeatResult | LeaveResult
    replaced: str | None = None  # a static member whose place a joining member took (its instance id)


class Placed(NamedTuple):
    group: ConsumerGroup
    replaced: str | None


def _static_place(group: ConsumerGroup, request: ClassicJoin, member_id: str) -> Placed | ErrorCode:
    """Kafka's static membership for a classic JoinGroup: with a member id, the instance id must be that member's;
    without one, the new member takes the place of the member holding the instance id, whichever protocol that
    one speaks and whether or not it left (a classic static member restarts without leaving)."""
    static = group.static_member(request.instance_id) if request.instance_id is not None else None
    if request.instance_id is None or (static is None and not request.member_id):
        return Placed(group, None)
    if static is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if request.member_id:
        return Placed(group, None) if static.member_id == request.member_id else ErrorCode.FENCED_INSTANCE_ID
    return Placed(take_static_place(group, static, member_id), static.member_id)


def join(
    group: ConsumerGroup,
    request: ClassicJoin,
    topics: Mapping[str, int],
    config: ConsumerGroupConfig,
    now: int,
    new_member_id: str,
    partition_racks: Mapping[TopicPartition, frozenset[str]] | None = None,
) -> MixedStep:
    """`partition_racks`: the racks of partitions' replicas, for a rack-aware assignment."""
    member_id = request.member_id or new_member_id
    if request.protocol_type != CONSUMER_PROTOCOL_TYPE or not request.protocols:
        return MixedStep(group, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id))
    try:
        subscription = decode_subscription(request.protocols[0].metadata)
    except MalformedProtocol:
        return MixedStep(group, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id))
    if not request.member_id and request.require_known_member_id and request.instance_id is None:
        return MixedStep(group, JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id))
    placed = _static_place(group, request, member_id)
    if isinstance(placed, ErrorCode):
        return MixedStep(group, JoinResult(placed, member_id=request.member_id))
    before, group = group, placed.group
    existing = group.members.get(member_id)
    if existing is not None and not existing.uses_classic_protocol and placed.replaced is None:
        return MixedStep(before, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=request.member_id))
    epoch = existing.member_epoch if existing is not None else JOIN_EPOCH
    heartbeat = HeartbeatRequest(
        member_id=member_id,
        member_epoch=epoch,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topics=subscription.topics,
        # An eager member gave up everything before rejoining; a cooperative one names what it still holds.
        owned=subscription.owned if epoch != JOIN_EPOCH else NO_PARTITIONS,
        client_id=request.client_id,
        client_host=request.client_host,
        instance_id=request.instance_id,
        rack_id=subscription.rack_id or "",
        subscribed_topic_regex="",  # a classic member subscribes by topic names only
    )
    step = consumer_group_heartbeat(group, group.group_id, heartbeat, topics, config, now, member_id, partition_racks)
    if step.response.error != ErrorCode.NONE or step.group is None:
        return MixedStep(before, JoinResult(step.response.error, member_id=request.member_id))
    classic = ClassicMemberMetadata(request.session_timeout_ms, request.protocols)
    joined = step.group.members[member_id]
    member = joined.evolve(classic=classic, join_deadline_ms=None, sync_deadline_ms=now + request.rebalance_timeout_ms)
    result = JoinResult(
        ErrorCode.NONE,
        generation_id=member.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=request.protocols[0].name,
        member_id=member_id,
    )
    return MixedStep(step.group.with_member(member), result, placed.replaced)


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember | ErrorCode:
    member = group.members.get(member_id)
    if instance_id is not None:
        static = group.static_member(instance_id)
        if static is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if static.member_id != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    if member is None or not member.uses_classic_protocol:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return member


def waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Some partition of its target that it does not have yet is still held by another member."""
    missing = group.target.get(member.member_id, NO_PARTITIONS) - member.assigned
    return bool(missing & group.owned_by_others(member.member_id))


def _must_rejoin(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """The group moved on, the member has partitions to give up, or those it waited for are free."""
    return (
        member.member_epoch < group.group_epoch
        or member.state == MemberState.UNREVOKED_PARTITIONS
        or (member.state == MemberState.UNRELEASED_PARTITIONS and not waiting_on_unreleased(group, member))
    )


def heartbeat(group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int, now: int) -> MixedStep:
    member = _classic_member(group, member_id, instance_id)
    if isinstance(member, ErrorCode):
        return MixedStep(group, HeartbeatResult(member))
    if generation != member.member_epoch:
        return MixedStep(group, HeartbeatResult(ErrorCode.ILLEGAL_GENERATION))
    if not _must_rejoin(group, member):
        return MixedStep(group.with_member(member.evolve(last_heartbeat_ms=now)), HeartbeatResult(ErrorCode.NONE))
    # It has its rebalance timeout to rejoin, counted from the first time it is told.
    deadline = member.join_deadline_ms if member.join_deadline_ms is not None else now + member.rebalance_timeout_ms
    told = member.evolve(last_heartbeat_ms=now, join_deadline_ms=deadline)
    return MixedStep(group.with_member(told), HeartbeatResult(ErrorCode.REBALANCE_IN_PROGRESS))


def sync(
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    generation: int,
    protocol_type: str | None,
    protocol_name: str | None,
    now: int,
) -> MixedStep:
    member = _classic_member(group, member_id, instance_id)
    if isinstance(member, ErrorCode):
        return MixedStep(group, SyncResult(member))
    if generation != member.member_epoch:
        return MixedStep(group, SyncResult(ErrorCode.ILLEGAL_GENERATION))
    names = [p.name for p in member.classic.protocols] if member.classic is not None else []
    if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
        protocol_name is not None and protocol_name not in names
    ):
        return MixedStep(group, SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
    # A member revoking partitions already rejoined: it keeps its epoch until it has given them up.
    if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
        return MixedStep(group, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
    group = group.with_member(member.evolve(last_heartbeat_ms=now, sync_deadline_ms=None))
    name = protocol_name if protocol_name is not None else (names[0] if names else None)
    return MixedStep(
        group, SyncResult(ErrorCode.NONE, CONSUMER_PROTOCOL_TYPE, name, encode_assignment(member.assigned))
    )


@dataclass(frozen=True)
class Leaving:
    member_id: str
    instance_id: str | None


def leave(group: ConsumerGroup, leaving: tuple[Leaving, ...], topics: Mapping[str, int]) -> MixedStep:
    """Each classic member named leaves (its partitions are free, the group epoch is bumped)."""
    answers = []
    for one in leaving:
        member_id = one.member_id
        if not member_id and one.instance_id is not None:
            static = group.static_member(one.instance_id)
            member_id = static.member_id if static is not None else ""
        member = _classic_member(group, member_id, one.instance_id)
        if isinstance(member, ErrorCode):
            answers.append(LeftMember(one.member_id, one.instance_id, member))
            continue
        group = fence_member(group, member.member_id, topics)
        answers.append(LeftMember(member.member_id, one.instance_id, ErrorCode.NONE))
    return MixedStep(group, LeaveResult(ErrorCode.NONE, tuple(answers)))
