"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup of Kafka's classic group protocol, answered by the group
coordinator (a JoinGroup or SyncGroup may be held until the rebalance completes)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from minikafka.broker.consumer_group import classic_members
from minikafka.broker.consumer_group.classic_members import ClassicJoin
from minikafka.broker.consumer_group.model import ClassicProtocol, ConsumerGroupConfig, TopicPartition
from minikafka.broker.group.effects import JoinResult, LeaveResult, LeftMember, SyncResult
from minikafka.broker.group.membership import (
    JoinRequest,
    MemberIdentity,
    SyncRequest,
    heartbeat,
    heartbeat_unanswered,
    join_group,
    leave_group,
    sync_group,
)
from minikafka.broker.group.state import GroupConfig, Protocol
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, has_field, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.clock import new_random
from minikafka.common.errors import ErrorCode, KafkaError

JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14
KNOWN_MEMBER_ID_VERSION = 4  # JoinGroup v4+: a new member is given its id first (MEMBER_ID_REQUIRED)
SKIP_ASSIGNMENT_VERSION = 9  # JoinGroup v9+: SkipAssignment tells a leader the current assignment stands


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


async def handle_join(ctx: WireContext, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    session_ms = _ms(body.session_timeout)
    join = JoinRequest(
        request_id=0,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        client_id=request.client_id or "",
        client_host=ctx.client_host,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=_ms(body.rebalance_timeout) if hasattr(body, "rebalance_timeout") else session_ms,
        protocol_type=body.protocol_type,
        protocols=tuple(Protocol(p.name, bytes(p.metadata)) for p in body.protocols),
        require_known_member_id=version >= KNOWN_MEMBER_ID_VERSION,
        skip_assignment_supported=version >= SKIP_ASSIGNMENT_VERSION,
        reason=getattr(body, "reason", None) or "",
    )
    new_id = f"{join.client_id or 'member'}-{uuid.UUID(int=new_random().getrandbits(128), version=4)}"
    config = group_config(ctx) if ctx.groups is not None else None
    if config is not None and not config.min_session_timeout_ms <= session_ms <= config.max_session_timeout_ms:
        return _join_response(request, JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=body.member_id))
    mixed_join = ClassicJoin(
        join.member_id,
        join.group_instance_id,
        join.client_id,
        join.client_host,
        join.session_timeout_ms,
        join.rebalance_timeout_ms,
        join.protocol_type,
        tuple(ClassicProtocol(p.name, p.metadata) for p in join.protocols),
        join.require_known_member_id,
    )
    result = await coordinate(
        ctx,
        body.group_id,
        lambda e: JoinResult(e, member_id=body.member_id),
        lambda group, rid, now: join_group(group, _with_id(join, rid), group_config(ctx), now, new_id),
        mixed=lambda group, now: classic_members.join(
            group, mixed_join, ctx_topics(ctx), consumer_config(ctx), now, new_id, ctx_racks(ctx)
        ),
        join=True,
    )
    return _join_response(request, result)


def ctx_topics(ctx: WireContext) -> dict[str, int]:
    return ctx.groups.topic_partitions() if ctx.groups is not None else {}


def ctx_racks(ctx: WireContext) -> dict[TopicPartition, frozenset[str]]:
    return ctx.groups.partition_racks() if ctx.groups is not None else {}


def consumer_config(ctx: WireContext) -> ConsumerGroupConfig:
    if ctx.groups is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "this broker has no group coordinator")
    return ctx.groups.config.consumer


def _with_id(request: Any, request_id: int) -> Any:
    return dataclasses.replace(request, request_id=request_id)


def _join_response(request: Request, result: JoinResult) -> Any:
    cls = response_class(JOIN_GROUP, request.header.api_version)
    member = sibling(cls, "JoinGroupResponseMember")
    nullable_name = request.header.api_version >= 7
    return build(
        cls,
        throttle_time=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name if nullable_name else (result.protocol_name or ""),
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=tuple(
            build(member, member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
            for m in result.members
        ),
    )


async def handle_sync(ctx: WireContext, request: Request) -> Any:
    body = request.body
    sync = SyncRequest(
        request_id=0,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        generation_id=body.generation_id,
        protocol_type=getattr(body, "protocol_type", None),
        protocol_name=getattr(body, "protocol_name", None),
        assignments=tuple((a.member_id, bytes(a.assignment)) for a in body.assignments or ()),
    )
    result = await coordinate(
        ctx,
        body.group_id,
        SyncResult,
        lambda group, rid, now: sync_group(group, _with_id(sync, rid), now),
        mixed=lambda group, now: classic_members.sync(
            group,
            sync.member_id,
            sync.group_instance_id,
            sync.generation_id,
            sync.protocol_type,
            sync.protocol_name,
            now,
        ),
    )
    cls = response_class(SYNC_GROUP, request.header.api_version)
    return build(
        cls,
        throttle_time=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


async def handle_heartbeat(ctx: WireContext, request: Request) -> Any:
    body = request.body
    identity = MemberIdentity(body.member_id, getattr(body, "group_instance_id", None), body.generation_id)
    result = await coordinate(
        ctx,
        body.group_id,
        heartbeat_unanswered,
        lambda group, rid, now: heartbeat(group, rid, identity, now),
        mixed=lambda group, now: classic_members.heartbeat(
            group, identity.member_id, identity.group_instance_id, body.generation_id, now
        ),
    )
    return build(response_class(HEARTBEAT, request.header.api_version), throttle_time=0, error_code=result.error)


async def handle_leave(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(LEAVE_GROUP, request.header.api_version)
    batched = has_field(cls, "members")
    if batched:
        identities = tuple(MemberIdentity(m.member_id, m.group_instance_id) for m in body.members)
    else:
        identities = (MemberIdentity(body.member_id, None),)
    leaving = tuple(classic_members.Leaving(i.member_id, i.group_instance_id) for i in identities)
    result = await coordinate(
        ctx,
        body.group_id,
        LeaveResult,
        lambda group, rid, now: leave_group(group, rid, identities, group_config(ctx), now),
        mixed=lambda group, now: classic_members.leave(group, leaving, ctx_topics(ctx)),
    )
    if not batched:
        # One member: its own error is the request's.
        error = result.members[0].error if result.error == ErrorCode.NONE and result.members else result.error
        return build(cls, throttle_time=0, error_code=error)
    entry = sibling(cls, "MemberResponse")
    return build(
        cls,
        throttle_time=0,
        error_code=result.error,
        members=tuple(_left(entry, m) for m in result.members),
    )


def _left(entry: type, member: LeftMember) -> Any:
    return build(entry, member_id=member.member_id, group_instance_id=member.group_instance_id, error_code=member.error)


def group_config(ctx: WireContext) -> GroupConfig:
    """The group settings of an operation `coordinate` runs, which it runs only where a coordinator is."""
    if ctx.groups is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "this broker has no group coordinator")
    return ctx.groups.config.group


async def coordinate(
    ctx: WireContext,
    group_id: str,
    failure: Any,
    operation: Any,
    needs: AclOperation = AclOperation.READ,
    mixed: Any = None,
    join: bool = False,
) -> Any:
    """Run `operation` on the group at its coordinator; the caller needs `needs` on the group (Kafka: READ to join,
    sync, heartbeat, leave and commit; DELETE to delete), else GROUP_AUTHORIZATION_FAILED. `mixed`: a classic
    protocol request's operation on a consumer group, run instead when the id is one (`join`: a JoinGroup)."""
    if not ctx.allowed(needs, ResourceType.GROUP, group_id):
        return failure(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if ctx.groups is None:
        return failure(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not group_id:
        return failure(ErrorCode.INVALID_GROUP_ID)
    if mixed is not None:
        return await ctx.groups.run_classic(group_id, failure, operation, mixed, join)
    return await ctx.groups.run(group_id, failure, operation)
