"""DescribeGroups, ListGroups and DeleteGroups: what kafka-consumer-groups and the admin clients ask of a group
coordinator."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

from minikafka.broker.consumer_group.model import ConsumerGroup
from minikafka.broker.group.effects import DeleteResult
from minikafka.broker.group.state import Group, GroupState
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, has_field, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode

DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
NO_AUTHORIZED_OPERATIONS = -2147483648
CLASSIC_GROUP_TYPE, CONSUMER_GROUP_TYPE = "classic", "consumer"


def handle_describe(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_GROUPS, request.header.api_version)
    include = getattr(request.body, "include_authorized_operations", False)  # v3+
    described = tuple(_described(ctx, cls, group_id, include) for group_id in request.body.groups or ())
    return build(cls, throttle_time=0, groups=described)


def _described(ctx: WireContext, cls: type, group_id: str, include_operations: bool) -> Any:
    entry = sibling(cls, "DescribedGroup")
    group = _classic_group(ctx, group_id)
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        group = ErrorCode.GROUP_AUTHORIZATION_FAILED
    v6 = has_field(entry, "error_message")
    if v6 and isinstance(group, Group) and group.state == GroupState.DEAD:
        group = NotClassic(f"Group {group_id} not found.")
    if isinstance(group, NotClassic):
        if v6:  # Kafka 4 names why a group is not described
            return _not_described(entry, group_id, ErrorCode.GROUP_ID_NOT_FOUND, GroupState.DEAD.value, group.message)
        group = Group(group_id, state=GroupState.DEAD)  # before: Dead, without members
    if isinstance(group, ErrorCode):
        return _not_described(entry, group_id, group, "", None)
    # Subscriptions and assignments are shown only for a stable group, as Kafka does.
    stable = group.state == GroupState.STABLE
    member_entry = sibling(cls, "DescribedGroupMember")
    members = tuple(
        build(
            member_entry,
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata_for(group.protocol_name) if stable else b"",
            member_assignment=m.assignment if stable else b"",
        )
        for m in group.members.values()
    )
    return build(
        entry,
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=members,
        authorized_operations=(
            ctx.authorized_operations(ResourceType.GROUP, group_id) if include_operations else NO_AUTHORIZED_OPERATIONS
        ),
    )


class NotClassic(NamedTuple):
    """No classic group has the id: none at all, or a consumer group."""

    message: str


def _not_described(entry: type, group_id: str, error: ErrorCode, state: str, message: str | None) -> Any:
    return build(
        entry,
        error_code=error,
        error_message=message,
        group_id=group_id,
        group_state=state,
        protocol_type="",
        protocol_data="",
        members=(),
        authorized_operations=NO_AUTHORIZED_OPERATIONS,
    )


def _classic_group(ctx: WireContext, group_id: str) -> Group | NotClassic | ErrorCode:
    """DescribeGroups describes classic groups only: a consumer group, its classic members included, is described
    as Kafka describes a group that is not classic (the offsets kept beside it make no classic group of it);
    ConsumerGroupDescribe describes it."""
    if ctx.groups is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    consumer = ctx.groups.consumer_group(group_id)
    if isinstance(consumer, ConsumerGroup):
        return NotClassic(f"Group {group_id} is not a classic group.")
    return ctx.groups.group(group_id)


def handle_list(ctx: WireContext, request: Request) -> Any:
    cls = response_class(LIST_GROUPS, request.header.api_version)
    groups: list[Group] | ErrorCode = (
        ctx.groups.listed_groups() if ctx.groups is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
    )
    if isinstance(groups, ErrorCode):
        return build(cls, throttle_time=0, error_code=groups, groups=())
    states = {s.lower() for s in getattr(request.body, "states_filter", ()) or ()}
    types = {t.lower() for t in getattr(request.body, "types_filter", ()) or ()}
    entry = sibling(cls, "ListedGroup")
    listed = tuple(
        build(entry, group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state, group_type=g.group_type)
        for g in sorted(_listed(ctx, groups), key=lambda g: g.group_id)
        if (not states or g.state.lower() in states) and (not types or g.group_type in types)
    )
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, groups=listed)


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    state: str
    group_type: str  # classic, or consumer for a KIP-848 group


def _listed(ctx: WireContext, classic: list[Group]) -> list[ListedGroup]:
    """A KIP-848 group is listed as such; the empty classic group holding its offsets is not listed beside it.
    As Kafka: DESCRIBE on the cluster lists every group, else only those the caller may DESCRIBE."""
    every = ctx.allowed_on_cluster(AclOperation.DESCRIBE)
    listed = _all_listed(ctx, classic)
    return [g for g in listed if every or ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]


def _all_listed(ctx: WireContext, classic: list[Group]) -> list[ListedGroup]:
    assert ctx.groups is not None
    consumer = ctx.groups.listed_consumer_groups()
    ids = {g.group_id for g in consumer}
    listed = [ListedGroup(g.group_id, "consumer", g.state.value, CONSUMER_GROUP_TYPE) for g in consumer]
    listed += [
        ListedGroup(g.group_id, g.protocol_type or "", g.state.value, CLASSIC_GROUP_TYPE)
        for g in classic
        if g.group_id not in ids
    ]
    return listed


async def handle_delete(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DELETE_GROUPS, request.header.api_version)
    names = list(request.body.groups_names or ())
    results = await asyncio.gather(*(_delete(ctx, name) for name in names))
    entry = sibling(cls, "DeletableGroupResult")
    return build(
        cls,
        throttle_time=0,
        results=tuple(build(entry, group_id=n, error_code=r.error) for n, r in zip(names, results, strict=True)),
    )


async def _delete(ctx: WireContext, name: str) -> DeleteResult:
    """A classic group, or a KIP-848 group that is Empty, with its offsets (Kafka's DeleteGroups)."""
    if not ctx.allowed(AclOperation.DELETE, ResourceType.GROUP, name):
        return DeleteResult(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if ctx.groups is None:
        return DeleteResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not name:
        return DeleteResult(ErrorCode.INVALID_GROUP_ID)
    result = await ctx.groups.delete_group(name)
    return result if isinstance(result, DeleteResult) else DeleteResult(ErrorCode.UNKNOWN_SERVER_ERROR)
