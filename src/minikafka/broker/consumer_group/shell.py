"""The group coordinator's side of KIP-848 consumer groups: it runs the pure core (heartbeat.py) on one
__consumer_offsets partition's consumer groups, with the clock and the topic metadata, and names what happened as
events, and the records (Kafka's ConsumerGroup* records) that store the change in __consumer_offsets: the
coordinator answers only once they are written, so a coordinator that reloads the partition (a new leader, a
restart) finds the group epoch, member epochs and assignments the members were told. Their committed offsets are
stored as the classic groups' are."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.broker.consumer_group.classic_members import MixedStep
from minikafka.broker.consumer_group.heartbeat import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    Fenced,
    HeartbeatRequest,
    HeartbeatResponse,
    consumer_group_heartbeat,
    expire,
)
from minikafka.broker.consumer_group.migration import (
    Refused,
    downgrade,
    downgrade_allowed,
    replacement_downgrade_allowed,
    upgrade,
)
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig, Partitions, TopicPartition
from minikafka.broker.consumer_group.persistence import ConsumerGroupRecord, group_records
from minikafka.broker.consumer_group.regex_resolution import UNVERSIONED, TopicsVersion, resolve_regexes
from minikafka.broker.group.effects import Effect, JoinResult, Result
from minikafka.broker.group.records import OffsetsRecord
from minikafka.broker.group.state import Group, GroupState
from minikafka.common.clock import new_random
from minikafka.common.errors import ErrorCode

CLASSIC, CONSUMER = "classic", "consumer"


@dataclass(frozen=True)
class Event:
    name: str
    fields: Mapping[str, Any]


Record = ConsumerGroupRecord | OffsetsRecord  # a conversion deletes the other kind of group in the same batch


@dataclass(frozen=True)
class Conversion:
    """The group changed protocol: its classic side is now `classic` (the offsets holder after an upgrade, the
    classic group after a downgrade), and the classic core's `effects` are to be carried out after `records`."""

    classic: Group
    effects: tuple[Effect, ...]


@dataclass(frozen=True)
class ShellStep:
    group: ConsumerGroup | None  # None: no such group any more (it became classic)
    response: HeartbeatResponse
    events: tuple[Event, ...]
    records: tuple[Record, ...] = ()  # to write before the response is sent
    conversion: Conversion | None = None


def new_member_id() -> str:
    """A random id as Kafka's coordinator makes one for a v0 member (a base64 UUID)."""
    return base64.urlsafe_b64encode(new_random().randbytes(16)).decode().rstrip("=")


def classic_in_use(classic: Group | None) -> bool:
    """A classic group with members: its id cannot be a consumer group's (an empty one, offsets only, can)."""
    return classic is not None and classic.state not in (GroupState.EMPTY, GroupState.DEAD)


def heartbeat(
    group: ConsumerGroup | None,
    classic: Group | None,
    group_id: str,
    request: HeartbeatRequest,
    topics: Mapping[str, int],
    topic_ids: Mapping[str, uuid.UUID],
    config: ConsumerGroupConfig,
    now: int,
    request_id: int = 0,
    partition_racks: Mapping[TopicPartition, frozenset[str]] | None = None,
    version: TopicsVersion = UNVERSIONED,
) -> ShellStep:
    """`request_id`: the id under which a downgraded group's metadata record is written; `partition_racks`: the
    racks of partitions' replicas, for a rack-aware assignment; `version`: where the metadata stands. A group
    left with `regex_resolution_pending` asks the caller to run `resolve` after this step."""
    stored, upgraded = group, None
    if classic_in_use(classic) and classic is not None:
        upgrade_step = upgrade(classic, topics, config, now)
        if isinstance(upgrade_step, Refused):
            # Kafka's answer when a classic group with members cannot be converted.
            response = HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            return ShellStep(group, response, ())
        group, upgraded = upgrade_step.group, upgrade_step
    joining_id = new_member_id()
    step = consumer_group_heartbeat(group, group_id, request, topics, config, now, joining_id, partition_racks, version)
    if step.response.error != ErrorCode.NONE:
        return ShellStep(stored, step.response, ())
    # A group its last member left stays, Empty, as Kafka keeps it (offset expiry or DeleteGroups deletes it).
    after = step.group
    # The classic members of an upgraded group enter it holding their partitions.
    events = _events(None if upgraded is not None else group, step.group, group_id, request, step.response)
    if upgraded is not None:
        events.insert(0, _converted_event(group_id, "classic", "consumer", len(upgraded.group.members)))
        records: tuple[Record, ...] = (upgraded.tombstone, *group_records(None, after, topic_ids))
        return ShellStep(after, step.response, tuple(events), records, Conversion(upgraded.holder, upgraded.effects))
    leaving = frozenset({request.member_id})
    left = request.member_epoch == LEAVE_EPOCH
    if left and group is not None and after is not None and after.members and downgrade_allowed(group, leaving, config):
        converted = downgrade(after, classic, now, request_id)
        events += _downgraded_events(after)
        conversion = Conversion(converted.group, converted.effects)
        return ShellStep(None, step.response, tuple(events), group_records(group, None, topic_ids), conversion)
    return ShellStep(after, step.response, tuple(events), group_records(stored, after, topic_ids))


def tombstones(group: ConsumerGroup, topic_ids: Mapping[str, uuid.UUID]) -> tuple[OffsetsRecord, ...]:
    """The records deleting the group (Kafka's createGroupTombstoneRecords), as __consumer_offsets records."""
    return tuple(OffsetsRecord(r.key, r.value) for r in group_records(group, None, topic_ids))


def _downgraded_events(group: ConsumerGroup) -> list[Event]:
    """The consumer group is gone: its members, now the classic group's, left it."""
    events = [_converted_event(group.group_id, "consumer", "classic", len(group.members))]
    for member_id in sorted(group.members):
        fields = {"group_id": group.group_id, "member_id": member_id, "reason": "converted"}
        events.append(Event("consumer_group_member_left", fields))
    return events


def _converted_event(group_id: str, before: str, after: str, members: int) -> Event:
    fields = {"group_id": group_id, "from_protocol": before, "to_protocol": after, "members": members}
    return Event("group_protocol_converted", fields)


def _events(
    before: ConsumerGroup | None,
    after: ConsumerGroup | None,
    group_id: str,
    request: HeartbeatRequest,
    response: HeartbeatResponse,
) -> list[Event]:
    events = []
    member = {"group_id": group_id, "member_id": response.member_id}
    if request.member_epoch == JOIN_EPOCH:
        events.append(Event("consumer_group_member_joined", {**member, "client_id": request.client_id}))
    elif request.member_epoch == LEAVE_EPOCH:
        events.append(Event("consumer_group_member_left", {**member, "reason": "left"}))
    for gone in sorted(set(before.members if before else ()) - set(after.members if after else ())):
        if gone != response.member_id:  # a released static member whose next instance took its place
            replaced = {"group_id": group_id, "member_id": gone, "reason": "replaced"}
            events.append(Event("consumer_group_member_left", replaced))
    if after is not None and (before is None or after.assignment_epoch != before.assignment_epoch):
        events.append(_assignment_event(after))
    return events + member_assignment_events(group_id, before, after)


def member_assignment_events(group_id: str, before: ConsumerGroup | None, after: ConsumerGroup | None) -> list[Event]:
    """A member's epoch or partitions changed: what it holds now (assigned, and still to revoke), the history the
    analysis checks that no partition had two owners at once."""
    events = []
    for member_id, member in sorted((after.members if after else {}).items()):
        previous = before.members.get(member_id) if before else None
        held = (member.member_epoch, member.assigned, member.pending_revocation)
        if previous is None or (previous.member_epoch, previous.assigned, previous.pending_revocation) != held:
            fields = {
                "group_id": group_id,
                "member_id": member_id,
                "member_epoch": member.member_epoch,
                "assigned": _names(member.assigned),
                "pending_revocation": _names(member.pending_revocation),
            }
            events.append(Event("consumer_group_member_assignment", fields))
    return events


def _names(partitions: Partitions) -> list[str]:
    return sorted(f"{tp.topic}-{tp.partition}" for tp in partitions)


def _assignment_event(group: ConsumerGroup) -> Event:
    target = {m: sorted(f"{tp.topic}-{tp.partition}" for tp in parts) for m, parts in sorted(group.target.items())}
    fields = {"group_id": group.group_id, "group_epoch": group.group_epoch, "target": target}
    return Event("consumer_group_target_assignment", fields)


@dataclass(frozen=True)
class ResolutionStep:
    group: ConsumerGroup
    events: tuple[Event, ...]
    records: tuple[ConsumerGroupRecord, ...]


def resolve(
    group: ConsumerGroup,
    topics: Mapping[str, int],
    topic_ids: Mapping[str, uuid.UUID],
    version: TopicsVersion,
    now: int,
    describable: Callable[[str], bool] | None = None,
) -> ResolutionStep:
    """The group's regexes resolved against `topics` (those `describable` allows), the resolution a heartbeat left
    pending; its records store the matches (and a new group epoch when they changed)."""
    after = resolve_regexes(group, topics, version, now, describable)
    regexes = {regex: sorted(matched) for regex, matched in after.resolved_regexes.items()}
    fields = {"group_id": group.group_id, "group_epoch": after.group_epoch, "regexes": regexes}
    event = Event("consumer_group_regexes_resolved", fields)
    return ResolutionStep(after, (event,), group_records(group, after, topic_ids))


@dataclass(frozen=True)
class ExpiryStep:
    group: ConsumerGroup | None
    events: tuple[Event, ...]
    records: tuple[ConsumerGroupRecord, ...] = ()
    conversion: Conversion | None = None


def tick(
    group: ConsumerGroup,
    topics: Mapping[str, int],
    topic_ids: Mapping[str, uuid.UUID],
    config: ConsumerGroupConfig,
    now: int,
    classic: Group | None = None,
    request_id: int = 0,
) -> ExpiryStep:
    """Fences the members whose timers ran out; a group left with classic members only becomes classic."""
    step = expire(group, topics, config, now)
    events = [_fenced_event(group.group_id, gone) for gone in step.fenced]
    after = step.group
    fenced = frozenset(gone.member_id for gone in step.fenced)
    if fenced and after.members and downgrade_allowed(group, fenced, config):
        converted = downgrade(after, classic, now, request_id)
        events += _downgraded_events(after)
        conversion = Conversion(converted.group, converted.effects)
        return ExpiryStep(None, tuple(events), group_records(group, None, topic_ids), conversion)
    return ExpiryStep(after, tuple(events), group_records(group, after, topic_ids) if step.fenced else ())


@dataclass(frozen=True)
class MixedShellStep:
    """A classic member's request served by the consumer group."""

    group: ConsumerGroup | None
    result: Result
    events: tuple[Event, ...]
    records: tuple[ConsumerGroupRecord, ...] = ()
    conversion: Conversion | None = None


@dataclass(frozen=True)
class Holder:
    """What a downgrade needs: the classic group keeping the offsets, the settings, the time, and the id its
    metadata record is written under."""

    classic: Group | None
    config: ConsumerGroupConfig
    now: int
    request_id: int


def classic_request(
    group: ConsumerGroup,
    step: MixedStep,
    topic_ids: Mapping[str, uuid.UUID],
    joined: bool = False,
    holder: Holder | None = None,
) -> MixedShellStep:
    """The events and records of a classic member's JoinGroup, SyncGroup, Heartbeat or LeaveGroup; a static
    member's JoinGroup that replaced the last consumer-protocol member makes the group classic (with `holder`)."""
    after = step.group
    events = []
    result = step.result
    new = isinstance(result, JoinResult) and result.error == ErrorCode.NONE and result.member_id not in group.members
    if joined and new and isinstance(result, JoinResult):
        fields = {"group_id": group.group_id, "member_id": result.member_id, "protocol": "classic"}
        events.append(Event("consumer_group_member_joined", fields))
    for gone in sorted(set(group.members) - set(after.members if after else ())):
        reason = "replaced" if gone == step.replaced else "left"
        events.append(
            Event("consumer_group_member_left", {"group_id": group.group_id, "member_id": gone, "reason": reason})
        )
    if after is not None and after.assignment_epoch != group.assignment_epoch:
        events.append(_assignment_event(after))
    events += member_assignment_events(group.group_id, group, after)
    if _downgrades(group, after, step.replaced, holder) and after is not None and holder is not None:
        converted = downgrade(after, holder.classic, holder.now, holder.request_id, replacement=True)
        events += _downgraded_events(after)
        conversion = Conversion(converted.group, converted.effects)
        return MixedShellStep(None, step.result, tuple(events), group_records(group, None, topic_ids), conversion)
    return MixedShellStep(after, step.result, tuple(events), group_records(group, after, topic_ids))


def _downgrades(
    before: ConsumerGroup, after: ConsumerGroup | None, replaced: str | None, holder: Holder | None
) -> bool:
    if after is None or replaced is None or holder is None:
        return False
    return replacement_downgrade_allowed(before, after, replaced, holder.config)


def _fenced_event(group_id: str, gone: Fenced) -> Event:
    fields = {"group_id": group_id, "member_id": gone.member_id, "reason": gone.reason}
    return Event("consumer_group_member_fenced", fields)


def validate_commit(
    group: ConsumerGroup,
    member_id: str,
    member_epoch: int,
    api_version: int,
    transactional: bool = False,
    group_instance_id: str | None = None,
) -> ErrorCode:
    """Kafka's ConsumerGroup.validateOffsetCommit: only a member at its current epoch commits, or, to an Empty
    group, an admin tool or a consumer without group management (epoch -1). A classic member commits with its
    generation, its member epoch, in any version. A TxnOffsetCommit naming no member, generation or instance is
    not checked (its fields are optional); one naming a member is checked as a commit is."""
    if member_epoch < 0 and not group.members:
        return ErrorCode.NONE
    if transactional and member_epoch == -1 and not member_id and group_instance_id is None:
        return ErrorCode.NONE
    if member_epoch < 0 and not member_id:
        return ErrorCode.UNKNOWN_MEMBER_ID
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member.uses_classic_protocol:
        return ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.ILLEGAL_GENERATION
    if not transactional and api_version < 9:
        return ErrorCode.UNSUPPORTED_VERSION  # the member epoch travels in OffsetCommit v9+
    return ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.STALE_MEMBER_EPOCH


def validate_fetch(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
    """Kafka's ConsumerGroup.validateOffsetFetch: an admin fetch (no member, epoch -1) is always allowed."""
    if member_epoch < 0 and not member_id:
        return ErrorCode.NONE
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.STALE_MEMBER_EPOCH
