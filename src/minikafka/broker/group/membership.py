"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup and session expiry of a classic group, as Kafka's classic group
coordinator answers them. Pure: (group, request, now) -> GroupStep."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from minikafka.broker.group.effects import (
    Answer,
    Append,
    Effect,
    GroupStep,
    HeartbeatResult,
    JoinResult,
    LeaveResult,
    LeftMember,
    SyncResult,
)
from minikafka.broker.group.rebalance import (
    answered_sync,
    complete_join,
    fail_held_syncs,
    join_result,
    maybe_rebalance,
    metadata_record,
    prepare_rebalance,
    remove_member,
    replace_static_member,
    select_protocol,
    swap_member,
    transition,
    try_complete_join,
)
from minikafka.broker.group.state import (
    Group,
    GroupConfig,
    GroupState,
    InitialDelay,
    Member,
    PendingAssignment,
    PendingStaticJoin,
    Protocol,
)
from minikafka.common.errors import ErrorCode


@dataclass(frozen=True)
class JoinRequest:
    request_id: int
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    require_known_member_id: bool  # JoinGroup v4+: a new member first gets its id with MEMBER_ID_REQUIRED
    skip_assignment_supported: bool  # JoinGroup v9+: a leader can be told its group's assignment stands
    reason: str = ""


@dataclass(frozen=True)
class SyncRequest:
    request_id: int
    member_id: str
    group_instance_id: str | None
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None
    generation_id: int = -1


def validate_member(group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode:
    """Kafka's validateMember: a static member's instance id must map to this member id."""
    if group_instance_id is not None:
        holder = group.member_by_instance(group_instance_id)
        if holder is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE if holder.member_id == member_id else ErrorCode.FENCED_INSTANCE_ID
    return ErrorCode.NONE if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID


def _supports(group: Group, request: JoinRequest) -> bool:
    names = {p.name for p in request.protocols}
    if not group.members:
        return bool(request.protocol_type) and bool(names)
    common = set.intersection(*({p.name for p in m.protocols} for m in group.members.values()))
    return request.protocol_type == group.protocol_type and bool(common & names)


def join_group(group: Group, request: JoinRequest, config: GroupConfig, now: int, new_member_id: str) -> GroupStep:
    """`new_member_id` is the id a member joining without one gets (the shell makes it unique)."""
    effects: list[Effect] = []
    if not config.min_session_timeout_ms <= request.session_timeout_ms <= config.max_session_timeout_ms:
        return _join_error(group, request, ErrorCode.INVALID_SESSION_TIMEOUT)
    if not _supports(group, request):
        return _join_error(group, request, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if request.member_id == "":
        group = _join_new_member(group, request, config, now, new_member_id, effects)
    else:
        group = _join_known_member(group, request, config, now, effects)
    return GroupStep(group, tuple(effects))


def _join_error(group: Group, request: JoinRequest, error: ErrorCode) -> GroupStep:
    return GroupStep(group, (Answer(request.request_id, JoinResult(error, member_id=request.member_id)),))


def _new_member(request: JoinRequest, member_id: str, now: int) -> Member:
    return Member(
        member_id,
        request.group_instance_id,
        request.client_id,
        request.client_host,
        request.rebalance_timeout_ms,
        request.session_timeout_ms,
        request.protocol_type,
        request.protocols,
        now,
        join_request=request.request_id,
    )


def _join_new_member(
    group: Group, request: JoinRequest, config: GroupConfig, now: int, member_id: str, effects: list[Effect]
) -> Group:
    if len(group.members) + len(group.pending_members) >= config.max_size:
        effects.append(Answer(request.request_id, JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED)))
        return group
    static = group.member_by_instance(request.group_instance_id)
    if static is not None:
        return _replace_static_member(group, static, request, config, now, member_id, effects)
    if request.group_instance_id is None and request.require_known_member_id:
        effects.append(Answer(request.request_id, JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)))
        return group.evolve(pending_members={**group.pending_members, member_id: now + request.session_timeout_ms})
    return _add_member(group, _new_member(request, member_id, now), config, now, effects)


def _add_member(group: Group, member: Member, config: GroupConfig, now: int, effects: list[Effect]) -> Group:
    if not group.members:
        group = group.evolve(protocol_type=member.protocol_type)
    group = group.with_member(member)
    if group.leader_id is None:
        group = group.evolve(leader_id=member.member_id)
    if group.initial_delay is not None:
        group = group.evolve(initial_delay=InitialDelay(group.initial_delay.remaining_ms, True))
    reason = f"member {member.member_id} joined"
    return maybe_rebalance(group, now, reason, config.initial_rebalance_delay_ms, effects)


def _replace_static_member(
    group: Group,
    old: Member,
    request: JoinRequest,
    config: GroupConfig,
    now: int,
    member_id: str,
    effects: list[Effect],
) -> Group:
    """A static member rejoining under a new member id fences the old id and takes its place (and leadership).
    A stable group whose selected protocol stays needs no rebalance: the member gets the current generation and
    its old assignment once the group's metadata record names its new id (else, after a failover, the instance
    would still map to the old id and the member would be fenced)."""
    previous_leader = group.leader_id
    member = _new_member(request, member_id, now).evolve(assignment=old.assignment)
    group = replace_static_member(group, old.member_id, member, effects)
    if group.state == GroupState.STABLE and select_protocol(group) == group.protocol_name:
        effects.append(Append(request.request_id, (metadata_record(group, now),)))
        pending = PendingStaticJoin(
            request.request_id, old, member_id, previous_leader, request.skip_assignment_supported
        )
        return group.with_pending(pending)
    reason = f"static member {request.group_instance_id} rejoined as {member_id}"
    return maybe_rebalance(group, now, reason, config.initial_rebalance_delay_ms, effects)


def static_join_stored(group: Group, pending: PendingStaticJoin, error: ErrorCode, now: int) -> GroupStep:
    """The new id of a static member that rejoined a stable group is durable (or failed): answer its JoinGroup,
    or put the old member back. A group that left Stable meanwhile answers the join with its next generation."""
    member = group.members.get(pending.new_member_id)
    if group.state != GroupState.STABLE or member is None or member.join_request != pending.request_id:
        return GroupStep(group)
    if error != ErrorCode.NONE:
        # The old member's own held requests were answered when it was replaced.
        old = pending.old.evolve(join_request=None, sync_request=None, last_heartbeat_ms=now)
        group = swap_member(group, member.member_id, old)
        result = JoinResult(error, group.generation, group.protocol_type, group.protocol_name, group.leader_id or "")
        return GroupStep(group, (Answer(pending.request_id, result),))
    group = group.with_member(member.evolve(join_request=None))
    result = join_result(group, member.member_id)
    if member.member_id == group.leader_id:
        # A leader told it leads would assign anew; before JoinGroup v9 it cannot be told the assignment stands,
        # so it hears of the old leader and syncs as a follower.
        if pending.skip_assignment_supported:
            result = dataclasses.replace(result, skip_assignment=True)
        else:
            result = dataclasses.replace(result, leader=pending.previous_leader or "", members=())
    return GroupStep(group, (Answer(pending.request_id, result),))


def _join_known_member(
    group: Group, request: JoinRequest, config: GroupConfig, now: int, effects: list[Effect]
) -> Group:
    if request.member_id in group.pending_members:
        pending = {k: v for k, v in group.pending_members.items() if k != request.member_id}
        member = _new_member(request, request.member_id, now)
        return _add_member(group.evolve(pending_members=pending), member, config, now, effects)
    error = validate_member(group, request.member_id, request.group_instance_id)
    if error == ErrorCode.NONE and group.state in (GroupState.EMPTY, GroupState.DEAD):
        error = ErrorCode.UNKNOWN_MEMBER_ID
    if error != ErrorCode.NONE:
        effects.append(Answer(request.request_id, JoinResult(error, member_id=request.member_id)))
        return group
    member = group.members[request.member_id]
    unchanged = member.same_protocols(request.protocols)
    answer_now = group.state == GroupState.COMPLETING_REBALANCE and unchanged
    answer_now |= group.state == GroupState.STABLE and unchanged and member.member_id != group.leader_id
    if answer_now:
        effects.append(Answer(request.request_id, join_result(group, member.member_id)))
        return group.with_member(member.evolve(last_heartbeat_ms=now))
    if member.join_request is not None:
        effects.append(
            Answer(member.join_request, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        )
    updated = member.evolve(
        protocols=request.protocols,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        join_request=request.request_id,
        last_heartbeat_ms=now,
    )
    group = group.with_member(updated)
    if group.state == GroupState.PREPARING_REBALANCE:
        return try_complete_join(group, now, effects)
    reason = f"member {member.member_id} rejoined" + (f" ({request.reason})" if request.reason else "")
    return prepare_rebalance(group, now, reason, config.initial_rebalance_delay_ms, effects)


def sync_group(group: Group, request: SyncRequest, now: int) -> GroupStep:
    error = validate_member(group, request.member_id, request.group_instance_id)
    if error == ErrorCode.NONE and request.generation_id != group.generation:
        error = ErrorCode.ILLEGAL_GENERATION
    if error == ErrorCode.NONE and (
        (request.protocol_type is not None and request.protocol_type != group.protocol_type)
        or (request.protocol_name is not None and request.protocol_name != group.protocol_name)
    ):
        error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if error == ErrorCode.NONE and group.state == GroupState.PREPARING_REBALANCE:
        error = ErrorCode.REBALANCE_IN_PROGRESS
    if error != ErrorCode.NONE:
        return GroupStep(group, (Answer(request.request_id, SyncResult(error)),))
    member = group.members[request.member_id]
    group = group.evolve(pending_sync=group.pending_sync - {request.member_id})
    if group.state == GroupState.STABLE:
        result = SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment)
        return GroupStep(group.with_member(member.evolve(last_heartbeat_ms=now)), (Answer(request.request_id, result),))
    # CompletingRebalance: held until the leader's assignment is stored.
    group = group.with_member(member.evolve(sync_request=request.request_id, last_heartbeat_ms=now))
    if request.member_id != group.leader_id:
        return GroupStep(group)
    assignments = dict(request.assignments)
    pending = PendingAssignment(request.request_id, group.generation, tuple(assignments.items()))
    record = metadata_record(group, now, assignments)
    return GroupStep(group.with_pending(pending), (Append(request.request_id, (record,)),))


def assignment_stored(
    group: Group, pending: PendingAssignment, error: ErrorCode, now: int, config: GroupConfig
) -> GroupStep:
    """The leader's assignment is durable (or failed): members learn theirs and the group is stable."""
    effects: list[Effect] = []
    if group.state != GroupState.COMPLETING_REBALANCE or group.generation != pending.generation:
        return GroupStep(group)  # a later rebalance already answered the held syncs
    if error != ErrorCode.NONE:
        group = fail_held_syncs(group, error, now, effects)
        group = prepare_rebalance(group, now, f"storing the assignment failed: {error.name}", 0, effects)
        return GroupStep(group, tuple(effects))
    assignments = dict(pending.assignments)
    members = {}
    for member_id, member in group.members.items():
        assignment = assignments.get(member_id, b"")
        if member.sync_request is not None:
            result = SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, assignment)
            effects.append(Answer(member.sync_request, result))
            member = answered_sync(member, now)
        members[member_id] = member.evolve(assignment=assignment, sync_request=None)
    group = transition(group.evolve(members=members), GroupState.STABLE, now, effects)
    return GroupStep(group, tuple(effects))


def heartbeat(group: Group, request_id: int, identity: MemberIdentity, now: int) -> GroupStep:
    error = validate_member(group, identity.member_id, identity.group_instance_id)
    if error == ErrorCode.NONE and identity.generation_id != group.generation:
        error = ErrorCode.ILLEGAL_GENERATION
    if error == ErrorCode.NONE and group.state == GroupState.EMPTY:
        error = ErrorCode.UNKNOWN_MEMBER_ID
    if error != ErrorCode.NONE:
        return GroupStep(group, (Answer(request_id, HeartbeatResult(error)),))
    member = group.members[identity.member_id]
    group = group.with_member(member.evolve(last_heartbeat_ms=now))
    if group.state == GroupState.PREPARING_REBALANCE:
        error = ErrorCode.REBALANCE_IN_PROGRESS
    return GroupStep(group, (Answer(request_id, HeartbeatResult(error)),))


def heartbeat_unanswered(error: ErrorCode) -> HeartbeatResult:
    """A heartbeat the coordinator cannot run now. While the group's partition loads, Kafka answers NONE: the
    member keeps going, and the loaded group gives it a full session timeout."""
    return HeartbeatResult(ErrorCode.NONE if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else error)


def leave_group(
    group: Group, request_id: int, identities: tuple[MemberIdentity, ...], config: GroupConfig, now: int
) -> GroupStep:
    effects: list[Effect] = []
    answers = []
    removed = False
    for identity in identities:
        if identity.group_instance_id is None and identity.member_id in group.pending_members:
            pending = {k: v for k, v in group.pending_members.items() if k != identity.member_id}
            group = group.evolve(pending_members=pending)
            answers.append(LeftMember(identity.member_id, None, ErrorCode.NONE))
            continue
        holder = group.member_by_instance(identity.group_instance_id)
        if identity.group_instance_id is not None:
            # An admin removing a static member names only its instance id.
            error = ErrorCode.UNKNOWN_MEMBER_ID if holder is None else ErrorCode.NONE
            if holder is not None and identity.member_id not in ("", holder.member_id):
                error = ErrorCode.FENCED_INSTANCE_ID
            member_id = holder.member_id if holder is not None else identity.member_id
        else:
            member_id = identity.member_id
            error = ErrorCode.NONE if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID
        answers.append(LeftMember(identity.member_id, identity.group_instance_id, error))
        if error == ErrorCode.NONE:
            group = remove_member(group, member_id, "left the group", effects)
            removed = True
    if removed:
        group = maybe_rebalance(group, now, "members left the group", config.initial_rebalance_delay_ms, effects)
    effects.append(Answer(request_id, LeaveResult(ErrorCode.NONE, tuple(answers))))
    return GroupStep(group, tuple(effects))


def expire(group: Group, now: int, config: GroupConfig) -> GroupStep:
    """Timers: members past their session timeout go (a member held in a join or sync is alive), pending member
    ids expire, members that did not send SyncGroup within the rebalance timeout go (and the group rebalances),
    and a rebalance past its deadline completes with the members that rejoined."""
    effects: list[Effect] = []
    live_pending = {k: v for k, v in group.pending_members.items() if v > now}
    if len(live_pending) != len(group.pending_members):
        # A member id given out and never used: a forming rebalance may now be complete, nothing more.
        group = group.evolve(pending_members=live_pending)
    changed = False
    for member in list(group.members.values()):
        held = member.join_request is not None or member.sync_request is not None
        if not held and now >= member.last_heartbeat_ms + member.session_timeout_ms:
            group = remove_member(group, member.member_id, "session timeout", effects)
            changed = True
    if changed and group.state != GroupState.PREPARING_REBALANCE:
        group = maybe_rebalance(group, now, "session timeout", config.initial_rebalance_delay_ms, effects)
    syncing = group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
    if syncing and group.pending_sync and now >= group.sync_deadline_ms:
        for member_id in [m for m in group.members if m in group.pending_sync]:
            group = remove_member(group, member_id, "not synced in time", effects)
        group = prepare_rebalance(group, now, "members did not sync in time", 0, effects)
    if group.state == GroupState.PREPARING_REBALANCE:
        group = try_complete_join(group, now, effects)
    if group.state == GroupState.PREPARING_REBALANCE and now >= group.rebalance_deadline_ms:
        delay = group.initial_delay
        if delay is not None and delay.member_added and delay.remaining_ms > 0:
            step = min(config.initial_rebalance_delay_ms, delay.remaining_ms)
            extended = InitialDelay(delay.remaining_ms - step)
            group = group.evolve(rebalance_deadline_ms=now + step, initial_delay=extended)
        else:
            group = complete_join(group.evolve(initial_delay=None), now, effects)
    return GroupStep(group, tuple(effects))
