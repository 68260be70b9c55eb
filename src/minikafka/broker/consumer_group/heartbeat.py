"""ConsumerGroupHeartbeat as Kafka's group coordinator answers it (GroupMetadataManager.consumerGroupHeartbeat),
and the timers that fence members. Pure: (group, request, topics, now) -> HeartbeatStep. Three steps per
heartbeat: the member is created or updated (changed topic names, a regex the group has resolved already, or
changed partition counts of the subscribed topics bump the group epoch; a new regex is resolved apart, as Kafka
resolves it); a group epoch past the target assignment's computes a new target assignment; the member is
reconciled towards its target. A static member (InstanceId) that leaves with epoch -2 keeps its place and
partitions until its session times out, and a new instance with the same InstanceId takes them over without a
rebalance."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from minikafka.broker.consumer_group.model import (
    NO_PARTITIONS,
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerMember,
    MemberState,
    Partitions,
    TopicPartition,
)
from minikafka.broker.consumer_group.reconciliation import reconcile
from minikafka.broker.consumer_group.regex_resolution import UNVERSIONED, TopicsVersion, regex_change
from minikafka.broker.consumer_group.subscriptions import refreshed, update_target_assignment
from minikafka.broker.consumer_group.topic_regex import InvalidRegex, compile_regex
from minikafka.common.errors import ErrorCode

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True)
class HeartbeatRequest:
    member_id: str
    member_epoch: int
    rebalance_timeout_ms: int = -1  # -1: unchanged
    subscribed_topics: tuple[str, ...] | None = None  # None: unchanged
    server_assignor: str | None = None
    owned: Partitions | None = None  # None: not reported
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None  # a static member's group.instance.id
    subscribed_topic_regex: str | None = None  # None: unchanged; "": no regular expression any more
    rack_id: str | None = None  # None: unchanged


@dataclass(frozen=True)
class HeartbeatResponse:
    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None  # None: unchanged since the member last heard it


@dataclass(frozen=True)
class HeartbeatStep:
    group: ConsumerGroup | None  # None: the group does not exist (and was not created)
    response: HeartbeatResponse


class HeartbeatError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def consumer_group_heartbeat(
    group: ConsumerGroup | None,
    group_id: str,
    request: HeartbeatRequest,
    topics: Mapping[str, int],
    config: ConsumerGroupConfig,
    now: int,
    new_member_id: str,
    partition_racks: Mapping[TopicPartition, frozenset[str]] | None = None,
    version: TopicsVersion = UNVERSIONED,
) -> HeartbeatStep:
    """`topics`: the partition count of every topic the metadata knows; `new_member_id`: the id a member joining
    without one gets (the shell makes it unique); `partition_racks`: the racks of partitions' replicas; `version`:
    where the metadata stands (whether a topic was created since the group last resolved its regexes)."""
    try:
        _validate(request, config)
        if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return _leave(_existing(group, group_id), request, topics)
        racks = partition_racks or {}
        return _heartbeat(group, group_id, request, Metadata(topics, racks, version), config, now, new_member_id)
    except HeartbeatError as error:
        return HeartbeatStep(group, HeartbeatResponse(error.error, error.message))


def _validate(request: HeartbeatRequest, config: ConsumerGroupConfig) -> None:
    if request.member_epoch > 0 or request.member_epoch == LEAVE_EPOCH:
        if not request.member_id:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    elif request.member_epoch == JOIN_EPOCH:
        if request.rebalance_timeout_ms == -1:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if not request.subscribed_topics and not request.subscribed_topic_regex:
            message = "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, message)
    elif request.member_epoch == STATIC_LEAVE_EPOCH:
        if not request.member_id:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if request.instance_id is None:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    else:
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.instance_id == "":
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    if request.subscribed_topic_regex:
        try:
            compile_regex(request.subscribed_topic_regex)
        except InvalidRegex as error:
            regex = request.subscribed_topic_regex
            message = f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {error}."
            raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION, message) from error
    if request.server_assignor is not None and request.server_assignor not in config.assignors:
        supported = ", ".join(config.assignors)
        message = f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: {supported}."
        raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR, message)


def _existing(group: ConsumerGroup | None, group_id: str) -> ConsumerGroup:
    if group is None:
        raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    return group


@dataclass(frozen=True)
class Lookup:
    member: ConsumerMember
    replaces: str | None = None  # a released static member whose place (and partitions) the member takes


def _member(
    group: ConsumerGroup, request: HeartbeatRequest, config: ConsumerGroupConfig, member_id: str, now: int
) -> Lookup:
    if request.instance_id is not None:
        static = _static(group, request, member_id)
        if static is not None:
            return static
    member = group.members.get(member_id)
    if member is None:
        if request.member_epoch != JOIN_EPOCH:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group.")
        if len(group.members) >= config.max_size:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED, f"The group has reached {config.max_size} members.")
        return Lookup(ConsumerMember(member_id, "", "", -1, frozenset(), None, now, instance_id=request.instance_id))
    _check_epoch(member, request)
    return Lookup(member)


def _static(group: ConsumerGroup, request: HeartbeatRequest, member_id: str) -> Lookup | None:
    """Kafka's static membership checks: an instance id a live consumer-protocol member holds cannot join again
    (UNRELEASED_INSTANCE_ID), and only the member holding it may heartbeat with it (FENCED_INSTANCE_ID)."""
    instance_id = request.instance_id or ""
    static = group.static_member(instance_id)
    if request.member_epoch == JOIN_EPOCH:
        if static is None or static.member_id == member_id:
            return None
        # Only two consumer-protocol instances conflict: a classic one is replaced at once (its next JoinGroup or
        # heartbeat is fenced), so a static classic member restarts with the consumer protocol.
        if static.member_epoch != STATIC_LEAVE_EPOCH and not static.uses_classic_protocol:
            message = (
                f"Static member {member_id} with instance id {instance_id} cannot join the group because the "
                f"instance id is owned by {static.member_id} member."
            )
            raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID, message)
        # The new instance takes the member's place: its partitions, at epoch 0, no rebalance.
        return Lookup(_successor(static, member_id), replaces=static.member_id)
    _check_static(static, instance_id, member_id)
    return None


def _successor(static: ConsumerMember, member_id: str) -> ConsumerMember:
    return static.evolve(
        member_id=member_id,
        member_epoch=JOIN_EPOCH,
        previous_member_epoch=JOIN_EPOCH,
        state=MemberState.STABLE,
        pending_revocation=NO_PARTITIONS,
        revocation_deadline_ms=None,
        classic=None,  # the new instance's protocol is its own: a classic JoinGroup sets it again
        join_deadline_ms=None,
        sync_deadline_ms=None,
    )


def take_static_place(group: ConsumerGroup, static: ConsumerMember, member_id: str) -> ConsumerGroup:
    """`member_id`, a new instance of the static member `static`, takes its place: its partitions and target, at
    epoch 0, so its next heartbeat reconciles it at once."""
    return _replaced(group, static.member_id, member_id).with_member(_successor(static, member_id))


def _check_static(static: ConsumerMember | None, instance_id: str, member_id: str) -> None:
    if static is None:
        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if static.member_id != member_id:
        message = f"Static member {member_id} with instance id {instance_id} was fenced by member {static.member_id}."
        raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, message)


def _check_epoch(member: ConsumerMember, request: HeartbeatRequest) -> None:
    """A member ahead of the coordinator, or behind it, is fenced: it must give up its partitions and rejoin.
    One epoch behind is accepted when it owns no more than its assignment (the answer that bumped it was lost)."""
    epoch = request.member_epoch
    if epoch > member.member_epoch:
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, _fenced(epoch, member, "greater"))
    if epoch < member.member_epoch:
        owned = request.owned
        if epoch != member.previous_member_epoch or owned is None or not owned <= member.assigned:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, _fenced(epoch, member, "smaller"))


def _fenced(epoch: int, member: ConsumerMember, which: str) -> str:
    return (
        f"The consumer group member has a {which} member epoch ({epoch}) than the one known by the group "
        f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
    )


def _updated(member: ConsumerMember, request: HeartbeatRequest, now: int) -> ConsumerMember:
    changes: dict[str, object] = {"client_id": request.client_id, "client_host": request.client_host}
    if request.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
    if request.subscribed_topics is not None:
        changes["subscribed_topics"] = frozenset(request.subscribed_topics)
    if request.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = request.subscribed_topic_regex or None
    if request.server_assignor is not None:
        changes["server_assignor"] = request.server_assignor
    if request.rack_id is not None:
        changes["rack_id"] = request.rack_id or None
    return member.evolve(last_heartbeat_ms=now, **changes)


def _topic_names_changed(member: ConsumerMember, updated: ConsumerMember) -> bool:
    """Its topic names (as Kafka: not its rack, a new rack counts from the next assignment; and a regex only through
    its resolution)."""
    return member.subscribed_topics != updated.subscribed_topics


class Metadata(NamedTuple):
    topics: Mapping[str, int]  # each topic's partition count
    racks: Mapping[TopicPartition, frozenset[str]]  # the racks of each partition's replicas
    version: TopicsVersion


def _heartbeat(
    group: ConsumerGroup | None,
    group_id: str,
    request: HeartbeatRequest,
    metadata: Metadata,
    config: ConsumerGroupConfig,
    now: int,
    new_member_id: str,
) -> HeartbeatStep:
    topics = metadata.topics
    if request.member_epoch != JOIN_EPOCH:
        group = _existing(group, group_id)
    group = group if group is not None else ConsumerGroup(group_id)
    lookup = _member(group, request, config, request.member_id or new_member_id, now)
    member = lookup.member
    if lookup.replaces is not None:
        group = _replaced(group, lookup.replaces, member.member_id)
    updated = _updated(member, request, now)
    change = regex_change(group, member, updated, metadata.version, now)
    # A new group moves off epoch 0 at once, as Kafka's does.
    bump = group.group_epoch == 0 or change.bump or _topic_names_changed(member, updated)
    group = refreshed(change.group.with_member(updated), topics, bump=bump)
    if group.group_epoch > group.assignment_epoch:
        group = update_target_assignment(group, config, metadata.racks)
    reconciled = reconcile(
        updated,
        group.assignment_epoch,
        group.target.get(updated.member_id, NO_PARTITIONS),
        group.owned_by_others(updated.member_id),
        request.owned,
    )
    if reconciled != updated:
        revoking = reconciled.state == MemberState.UNREVOKED_PARTITIONS
        deadline = now + reconciled.rebalance_timeout_ms if revoking else None
        reconciled = reconciled.evolve(revocation_deadline_ms=deadline)
    group = group.with_member(reconciled)
    full = request.member_epoch == JOIN_EPOCH or (
        request.rebalance_timeout_ms != -1 and request.subscribed_topics is not None and request.owned is not None
    )
    response = HeartbeatResponse(
        ErrorCode.NONE,
        member_id=reconciled.member_id,
        member_epoch=reconciled.member_epoch,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
        assignment=reconciled.assigned if full or reconciled.assigned != member.assigned else None,
    )
    return HeartbeatStep(group, response)


def _replaced(group: ConsumerGroup, previous: str, member_id: str) -> ConsumerGroup:
    """The released static member `previous` gives way to `member_id`, which inherits its target."""
    target = {k: v for k, v in group.target.items() if k != previous}
    if previous in group.target:
        target[member_id] = group.target[previous]
    return group.without_member(previous).evolve(target=target)


def _leave(group: ConsumerGroup, request: HeartbeatRequest, topics: Mapping[str, int]) -> HeartbeatStep:
    """Epoch -1 removes the member; -2 (a static member) keeps it, its partitions held for its next instance until
    its session times out."""
    if request.instance_id is not None:
        _check_static(group.static_member(request.instance_id), request.instance_id, request.member_id)
    member = group.members.get(request.member_id)
    if member is None:
        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member of group.")
    if request.member_epoch == STATIC_LEAVE_EPOCH:
        released = member.evolve(member_epoch=STATIC_LEAVE_EPOCH, pending_revocation=NO_PARTITIONS)
        group = group.with_member(released)
    else:
        group = fence_member(group, request.member_id, topics)
    response = HeartbeatResponse(ErrorCode.NONE, member_id=request.member_id, member_epoch=request.member_epoch)
    return HeartbeatStep(group, response)


def fence_member(group: ConsumerGroup, member_id: str, topics: Mapping[str, int]) -> ConsumerGroup:
    """Remove a member (it left, or was fenced): its partitions are free, and the group epoch is bumped so the
    next heartbeat computes a target assignment without it."""
    group = group.without_member(member_id)
    target = {k: v for k, v in group.target.items() if k != member_id}
    return refreshed(group.evolve(target=target), topics, bump=True)


@dataclass(frozen=True)
class Fenced:
    member_id: str
    reason: str  # "session timeout", "rebalance timeout", or a classic member's "join timeout", "sync timeout"


@dataclass(frozen=True)
class ExpireStep:
    group: ConsumerGroup
    fenced: tuple[Fenced, ...]


def expire(group: ConsumerGroup, topics: Mapping[str, int], config: ConsumerGroupConfig, now: int) -> ExpireStep:
    """Timers: a member silent for the session timeout is fenced, and so is one that has not revoked its
    partitions within its rebalance timeout, and a classic member that has not rejoined, or synced, within it."""
    fenced = [
        Fenced(member.member_id, reason)
        for member in list(group.members.values())
        if (reason := _expired_timer(member, config, now)) is not None
    ]
    for gone in fenced:
        group = fence_member(group, gone.member_id, topics)
    return ExpireStep(group, tuple(fenced))


def _expired_timer(member: ConsumerMember, config: ConsumerGroupConfig, now: int) -> str | None:
    if now >= member.last_heartbeat_ms + member.session_timeout_ms(config.session_timeout_ms):
        return "session timeout"
    deadlines = (
        (member.revocation_deadline_ms, "rebalance timeout"),
        (member.join_deadline_ms, "join timeout"),
        (member.sync_deadline_ms, "sync timeout"),
    )
    return next((reason for deadline, reason in deadlines if deadline is not None and now >= deadline), None)
