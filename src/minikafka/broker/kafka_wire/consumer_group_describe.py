"""ConsumerGroupDescribe (KIP-848): a consumer-protocol group's epochs, assignor and members, each with its member
epoch, current and target assignment, as kafka-consumer-groups --describe shows them for such groups."""

from __future__ import annotations

from typing import Any

from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerMember, Partitions
from minikafka.broker.consumer_group.subscriptions import preferred_assignor
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode

CONSUMER_GROUP_DESCRIBE = 69
NO_AUTHORIZED_OPERATIONS = -2147483648
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # MemberType: which protocol a member of a mixed group speaks


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(CONSUMER_GROUP_DESCRIBE, request.header.api_version)
    include = request.body.include_authorized_operations
    groups = tuple(_described(ctx, cls, group_id, include) for group_id in request.body.group_ids)
    return build(cls, throttle_time=0, groups=groups)


def _described(ctx: WireContext, cls: type, group_id: str, request_includes_operations: bool) -> Any:
    entry = sibling(cls, "DescribedGroup")
    groups = ctx.groups
    group = groups.described_consumer_group(group_id) if groups is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
    if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        group = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not isinstance(group, ConsumerGroup) or ctx.groups is None:
        error = group if isinstance(group, ErrorCode) else ErrorCode.GROUP_ID_NOT_FOUND
        message = f"Group {group_id} not found." if group is None else None
        return build(
            entry,
            error_code=error,
            error_message=message,
            group_id=group_id,
            group_state="",
            group_epoch=-1,
            assignment_epoch=-1,
            assignor_name="",
            members=(),
            authorized_operations=NO_AUTHORIZED_OPERATIONS,
        )
    return build(
        entry,
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=preferred_assignor(group, ctx.groups.config.consumer),
        members=tuple(_member(ctx, cls, group, m) for m in group.members.values()),
        authorized_operations=(
            ctx.authorized_operations(ResourceType.GROUP, group_id)
            if request_includes_operations
            else NO_AUTHORIZED_OPERATIONS
        ),
    )


def _member(ctx: WireContext, cls: type, group: ConsumerGroup, member: ConsumerMember) -> Any:
    return build(
        sibling(cls, "Member"),
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_type=CLASSIC_MEMBER if member.uses_classic_protocol else CONSUMER_MEMBER,  # v1+
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topics)),
        subscribed_topic_regex=member.subscribed_topic_regex,
        assignment=_assignment(ctx, cls, member.assigned),
        target_assignment=_assignment(ctx, cls, group.target.get(member.member_id, frozenset())),
    )


def _assignment(ctx: WireContext, cls: type, partitions: Partitions) -> Any:
    by_name = ctx.manager.metadata.image.topics_by_name
    entry = sibling(cls, "TopicPartitions")
    topics: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        topics.setdefault(tp.topic, []).append(tp.partition)
    described = tuple(
        build(entry, topic_id=by_name[name].topic_id, topic_name=name, partitions=tuple(parts))
        for name, parts in topics.items()
        if name in by_name
    )
    return build(sibling(cls, "Assignment"), topic_partitions=described)
