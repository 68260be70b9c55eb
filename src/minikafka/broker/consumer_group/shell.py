"""The group coordinator's side of KIP-848 consumer groups: it runs the pure core (heartbeat.py) on one
__consumer_offsets partition's consumer groups, with the clock and the topic metadata, and names what happened as
events, and the records (Kafka's ConsumerGroup* records) that store the change in __consumer_offsets: the
coordinator answers only once they are written, so a coordinator that reloads the partition (a new leader, a
restart) finds the group epoch, member epochs and assignments the members were told. Their committed offsets are
stored as the classic groups' are."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.broker.consumer_group.heartbeat import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    Fenced,
    HeartbeatRequest,
    HeartbeatResponse,
    consumer_group_heartbeat,
    expire,
)
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig, Partitions
from minikafka.broker.consumer_group.persistence import ConsumerGroupRecord, group_records
from minikafka.broker.group.state import Group, GroupState
from minikafka.common.clock import new_random
from minikafka.common.errors import ErrorCode

CLASSIC, CONSUMER = "classic", "consumer"


@dataclass(frozen=True)
class Event:
    name: str
    fields: Mapping[str, Any]


@dataclass(frozen=True)
class ShellStep:
    group: ConsumerGroup | None  # None: no such group any more (nobody is a member)
    response: HeartbeatResponse
    events: tuple[Event, ...]
    records: tuple[ConsumerGroupRecord, ...] = ()  # to write before the response is sent


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
) -> ShellStep:
    if classic_in_use(classic):
        # Kafka converts a non-empty classic group online; this coordinator does not, and refuses as Kafka does
        # when it cannot.
        response = HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return ShellStep(group, response, ())
    step = consumer_group_heartbeat(group, group_id, request, topics, config, now, new_member_id())
    after = step.group if step.group is not None and step.group.members else None
    events = tuple(_events(group, step.group, group_id, request, step.response))
    return ShellStep(after, step.response, events, group_records(group, after, topic_ids))


def _events(
    before: ConsumerGroup | None,
    after: ConsumerGroup | None,
    group_id: str,
    request: HeartbeatRequest,
    response: HeartbeatResponse,
) -> list[Event]:
    if response.error != ErrorCode.NONE:
        return []
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
class ExpiryStep:
    group: ConsumerGroup | None
    events: tuple[Event, ...]
    records: tuple[ConsumerGroupRecord, ...] = ()


def tick(
    group: ConsumerGroup,
    topics: Mapping[str, int],
    topic_ids: Mapping[str, uuid.UUID],
    config: ConsumerGroupConfig,
    now: int,
) -> ExpiryStep:
    step = expire(group, topics, config, now)
    events = tuple(_fenced_event(group.group_id, gone) for gone in step.fenced)
    after = step.group if step.group.members else None
    return ExpiryStep(after, events, group_records(group, after, topic_ids) if step.fenced else ())


def _fenced_event(group_id: str, gone: Fenced) -> Event:
    fields = {"group_id": group_id, "member_id": gone.member_id, "reason": gone.reason}
    return Event("consumer_group_member_fenced", fields)


def validate_commit(group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int) -> ErrorCode:
    """Kafka's ConsumerGroup.validateOffsetCommit: only a member at its current epoch commits (the group exists
    only while it has members, so an admin commit without a member is refused)."""
    if member_epoch < 0 and not member_id:
        return ErrorCode.UNKNOWN_MEMBER_ID
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if api_version < 9:
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
