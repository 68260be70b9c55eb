"""The rebalance of a classic group (Kafka's GroupCoordinator prepareRebalance / onCompleteJoin): a rebalance holds
every member's JoinGroup until all known members rejoined or the rebalance timeout passed, then starts the next
generation, picks the protocol and the leader, and answers the held joins. Pure: each function takes the group and
a list the effects are appended to, and returns the new group."""

from __future__ import annotations

from minikafka.broker.group.effects import Answer, Append, Effect, GroupEvent, JoinedMember, JoinResult, SyncResult
from minikafka.broker.group.records import GroupMetadataKey, GroupMetadataValue, MemberMetadata, OffsetsRecord
from minikafka.broker.group.state import Group, GroupState, InitialDelay, Member, PendingMetadata
from minikafka.common.errors import ErrorCode


def transition(group: Group, state: GroupState, now: int, effects: list[Effect]) -> Group:
    if state != group.state:
        effects.append(
            GroupEvent(
                "group_state_changed",
                {
                    "group": group.group_id,
                    "from_state": group.state.value,
                    "to_state": state.value,
                    "generation": group.generation,
                    "members": len(group.members),
                },
            )
        )
    return group.evolve(state=state, state_timestamp_ms=now)


def prepare_rebalance(group: Group, now: int, reason: str, initial_delay_ms: int, effects: list[Effect]) -> Group:
    """Start a rebalance: held SyncGroups learn REBALANCE_IN_PROGRESS; an empty group's first rebalance waits
    group.initial.rebalance.delay.ms for more members."""
    if group.state == GroupState.COMPLETING_REBALANCE:
        group = fail_held_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS, now, effects)
    group = group.evolve(pending_sync=frozenset())
    timeout = group.rebalance_timeout_ms()
    effects.append(
        GroupEvent(
            "group_rebalance_started",
            {"group": group.group_id, "generation": group.generation, "reason": reason, "members": len(group.members)},
        )
    )
    if group.state == GroupState.EMPTY and initial_delay_ms > 0:
        delay = min(initial_delay_ms, timeout)
        group = group.evolve(rebalance_deadline_ms=now + delay, initial_delay=InitialDelay(max(timeout - delay, 0)))
        return transition(group, GroupState.PREPARING_REBALANCE, now, effects)
    group = group.evolve(rebalance_deadline_ms=now + timeout, initial_delay=None)
    group = transition(group, GroupState.PREPARING_REBALANCE, now, effects)
    return try_complete_join(group, now, effects)


def maybe_rebalance(group: Group, now: int, reason: str, initial_delay_ms: int, effects: list[Effect]) -> Group:
    """After members came or went: a stable or completing group rebalances; a forming one may now be complete."""
    if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
        return prepare_rebalance(group, now, reason, initial_delay_ms, effects)
    if group.state == GroupState.PREPARING_REBALANCE:
        return try_complete_join(group, now, effects)
    return group


def try_complete_join(group: Group, now: int, effects: list[Effect]) -> Group:
    if group.state != GroupState.PREPARING_REBALANCE or group.initial_delay is not None:
        return group
    if not group.all_members_joined():
        return group
    return complete_join(group, now, effects)


def complete_join(group: Group, now: int, effects: list[Effect]) -> Group:
    """The next generation. Dynamic members that did not rejoin are removed; static ones stay until their session
    expires (the leader assigns them too). With no member rejoined, the rebalance waits one more rebalance
    timeout."""
    for member in list(group.members.values()):
        if member.join_request is None and member.group_instance_id is None:
            effects.append(member_removed(group, member.member_id, "not rejoined in time"))
            group = group.without_member(member.member_id)
    joined = [m.member_id for m in group.members.values() if m.join_request is not None]
    if group.members and not joined:
        return group.evolve(rebalance_deadline_ms=now + group.rebalance_timeout_ms(), initial_delay=None)
    group = group.evolve(generation=group.generation + 1, initial_delay=None, pending_members={})
    if not group.members:
        group = group.evolve(protocol_name=None, leader_id=None)
        group = transition(group, GroupState.EMPTY, now, effects)
        return store_metadata(group, now, effects, request_id=-group.generation)
    leader = group.leader_id if group.leader_id in joined else joined[0]
    # Every member must send SyncGroup within the rebalance timeout (Kafka's pending sync).
    group = group.evolve(
        protocol_name=select_protocol(group),
        leader_id=leader,
        pending_sync=frozenset(group.members),
        sync_deadline_ms=now + group.rebalance_timeout_ms(),
    )
    group = transition(group, GroupState.COMPLETING_REBALANCE, now, effects)
    members = {}
    for member_id, member in group.members.items():
        if member.join_request is not None:
            effects.append(Answer(member.join_request, join_result(group, member_id)))
        members[member_id] = member.evolve(join_request=None, last_heartbeat_ms=now, assignment=b"")
    effects.append(
        GroupEvent(
            "group_generation_started",
            {
                "group": group.group_id,
                "generation": group.generation,
                "protocol": group.protocol_name,
                "leader": leader,
                "members": sorted(members),
            },
        )
    )
    return group.evolve(members=members)


def join_result(group: Group, member_id: str) -> JoinResult:
    """The current generation as `member_id` learns it; only the leader gets the members' subscriptions."""
    members: tuple[JoinedMember, ...] = ()
    if member_id == group.leader_id:
        members = tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
            for m in group.members.values()
        )
    return JoinResult(
        ErrorCode.NONE,
        group.generation,
        group.protocol_type,
        group.protocol_name,
        group.leader_id or "",
        member_id,
        members,
    )


def select_protocol(group: Group) -> str | None:
    """Each member votes for its most preferred protocol that every member supports; most votes wins (ties: the
    first member's preference)."""
    members = list(group.members.values())
    common = set.intersection(*({p.name for p in m.protocols} for m in members))
    votes: dict[str, int] = {}
    for member in members:
        choice = next(p.name for p in member.protocols if p.name in common)
        votes[choice] = votes.get(choice, 0) + 1
    order = [p.name for p in members[0].protocols if p.name in votes]
    return max(order, key=lambda name: votes[name]) if order else None


def fail_held_syncs(group: Group, error: ErrorCode, now: int, effects: list[Effect]) -> Group:
    members = dict(group.members)
    for member_id, member in group.members.items():
        if member.sync_request is not None:
            effects.append(Answer(member.sync_request, SyncResult(error)))
            member = answered_sync(member, now)
        members[member_id] = member.evolve(sync_request=None, assignment=b"")
    return group.evolve(members=members)


def answered_sync(member: Member, now: int) -> Member:
    """A held SyncGroup answered: the member's session starts over now, as Kafka's coordinator reschedules it
    when it propagates the assignment. Held, the member was exempt from expiry; its client counts its session from
    this answer, so the coordinator must not count it from when the request arrived."""
    return member.evolve(sync_request=None, last_heartbeat_ms=now)


def member_removed(group: Group, member_id: str, reason: str) -> GroupEvent:
    return GroupEvent(
        "group_member_removed",
        {"group": group.group_id, "member_id": member_id, "generation": group.generation, "reason": reason},
    )


def remove_member(group: Group, member_id: str, reason: str, effects: list[Effect]) -> Group:
    """Drop a member, answering its held requests: a removed member must rejoin."""
    member = group.members[member_id]
    if member.join_request is not None:
        effects.append(Answer(member.join_request, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)))
    if member.sync_request is not None:
        effects.append(Answer(member.sync_request, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)))
    effects.append(member_removed(group, member_id, reason))
    group = group.without_member(member_id)
    if group.leader_id == member_id:
        group = group.evolve(leader_id=next(iter(group.members), None))
    return group


def swap_member(group: Group, old_id: str, member: Member) -> Group:
    """`member` takes the place of `old_id`: its position in the join order and its leadership."""
    members = {member.member_id if k == old_id else k: member if k == old_id else v for k, v in group.members.items()}
    leader = member.member_id if group.leader_id == old_id else group.leader_id
    pending_sync = group.pending_sync
    if old_id in pending_sync:
        pending_sync = pending_sync - {old_id} | {member.member_id}
    return group.evolve(members=members, leader_id=leader, pending_sync=pending_sync)


def replace_static_member(group: Group, old_id: str, new_member: Member, effects: list[Effect]) -> Group:
    """A static member rejoined under a new member id: the old id is removed and the new one inherits its place
    and leadership. A request the old id holds is answered FENCED_INSTANCE_ID, which stops that instance for good
    (UNKNOWN_MEMBER_ID would have it rejoin and replace the new one in turn)."""
    old = group.members[old_id]
    if old.join_request is not None:
        effects.append(Answer(old.join_request, JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id)))
    if old.sync_request is not None:
        effects.append(Answer(old.sync_request, SyncResult(ErrorCode.FENCED_INSTANCE_ID)))
    effects.append(member_removed(group, old_id, "replaced by static member"))
    return swap_member(group, old_id, new_member)


def store_metadata(group: Group, now: int, effects: list[Effect], request_id: int) -> Group:
    """Write the group's metadata record (members with their assignments)."""
    effects.append(Append(request_id, (metadata_record(group, now),)))
    return group.with_pending(PendingMetadata(request_id))


def metadata_record(group: Group, now: int, assignments: dict[str, bytes] | None = None) -> OffsetsRecord:
    members = tuple(
        MemberMetadata(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            m.metadata_for(group.protocol_name),
            (assignments or {}).get(m.member_id, m.assignment),
        )
        for m in group.members.values()
    )
    value = GroupMetadataValue(
        group.protocol_type or "", group.generation, group.protocol_name, group.leader_id, now, members
    )
    return OffsetsRecord(GroupMetadataKey(group.group_id), value)
