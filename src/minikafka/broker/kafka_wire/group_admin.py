"""DescribeGroups, ListGroups and DeleteGroups: what kafka-consumer-groups and the admin clients ask of a group
coordinator."""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.broker.group.effects import DeleteResult
from minikafka.broker.group.offsets import delete_group
from minikafka.broker.group.state import Group, GroupState
from minikafka.broker.kafka_wire.consumer_group import coordinate
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.errors import ErrorCode

DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
NO_AUTHORIZED_OPERATIONS = -2147483648
CLASSIC_GROUP_TYPE = "classic"


def handle_describe(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_GROUPS, request.header.api_version)
    described = tuple(_described(ctx, cls, group_id) for group_id in request.body.groups or ())
    return build(cls, throttle_time=0, groups=described)


def _described(ctx: WireContext, cls: type, group_id: str) -> Any:
    entry = sibling(cls, "DescribedGroup")
    group = ctx.groups.group(group_id) if ctx.groups is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
    if isinstance(group, ErrorCode):
        return build(
            entry,
            error_code=group,
            group_id=group_id,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=(),
            authorized_operations=NO_AUTHORIZED_OPERATIONS,
        )
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
        authorized_operations=NO_AUTHORIZED_OPERATIONS,
    )


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
        build(
            entry,
            group_id=g.group_id,
            protocol_type=g.protocol_type or "",
            group_state=g.state.value,
            group_type=CLASSIC_GROUP_TYPE,
        )
        for g in sorted(groups, key=lambda g: g.group_id)
        if (not states or g.state.value.lower() in states) and (not types or CLASSIC_GROUP_TYPE in types)
    )
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, groups=listed)


async def handle_delete(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DELETE_GROUPS, request.header.api_version)
    names = list(request.body.groups_names or ())
    results = await asyncio.gather(
        *(coordinate(ctx, name, DeleteResult, lambda group, rid, _now: delete_group(group, rid)) for name in names)
    )
    entry = sibling(cls, "DeletableGroupResult")
    return build(
        cls,
        throttle_time=0,
        results=tuple(build(entry, group_id=n, error_code=r.error) for n, r in zip(names, results, strict=True)),
    )
