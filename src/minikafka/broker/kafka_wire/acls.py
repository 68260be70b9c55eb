"""DescribeAcls (29), answered from this broker's metadata image, and CreateAcls (30) and DeleteAcls (31), forwarded
to the active controller as a KRaft broker forwards them. As Kafka: DESCRIBE (to describe) or ALTER (to change) on
the cluster, else CLUSTER_AUTHORIZATION_FAILED; without an authorizer, SECURITY_DISABLED."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from itertools import groupby
from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.forwarded import forwarded_outcome
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    enum_of,
)
from minikafka.common.acl_proto import binding_from_proto, binding_to_proto, filter_to_proto
from minikafka.common.clock import monotonic_ms
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.acl_control import describe_acls
from minikafka.pb import controller_pb2

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
VERSIONS = {DESCRIBE_ACLS: (1, 3), CREATE_ACLS: (1, 3), DELETE_ACLS: (1, 3)}
SECURITY_DISABLED_MESSAGE = "No Authorizer is configured on the broker"
CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."
IMAGE_CATCH_UP_MS, IMAGE_POLL_S = 5000, 0.01


def _refusal(ctx: WireContext, operation: AclOperation) -> tuple[ErrorCode, str] | None:
    if not ctx.authorizer.enabled:
        return ErrorCode.SECURITY_DISABLED, SECURITY_DISABLED_MESSAGE
    if not ctx.allowed_on_cluster(operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED_MESSAGE
    return None


def wire_filter(entry: Any) -> AclBindingFilter:
    """A DescribeAcls request or DeleteAcls filter entry as a filter."""
    return AclBindingFilter(
        enum_of(ResourceType, entry.resource_type_filter),
        entry.resource_name_filter,
        enum_of(PatternType, entry.pattern_type_filter),
        entry.principal_filter,
        entry.host_filter,
        enum_of(AclOperation, entry.operation),
        enum_of(AclPermissionType, entry.permission_type),
    )


def describe(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_ACLS, request.header.api_version)
    refusal = _refusal(ctx, AclOperation.DESCRIBE)
    if refusal is not None:
        return build(cls, throttle_time=0, error_code=refusal[0], error_message=refusal[1], resources=())
    described = describe_acls(ctx.manager.metadata.image, wire_filter(request.body))
    if described.error_code != ErrorCode.NONE:
        return build(
            cls, throttle_time=0, error_code=described.error_code, error_message=described.error_message, resources=()
        )
    resources = _resources(cls, described.bindings)
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, error_message=None, resources=resources)


def _resources(cls: type, bindings: tuple[AclBinding, ...]) -> tuple[Any, ...]:
    """Bindings grouped by resource pattern, as Kafka's DescribeAclsResponse nests them."""
    resource_cls, acl_cls = sibling(cls, "DescribeAclsResource"), sibling(cls, "AclDescription")

    def pattern(b: AclBinding) -> tuple[int, str, int]:
        return int(b.resource_type), b.resource_name, int(b.pattern_type)

    resources = []
    for (resource_type, name, pattern_type), group in groupby(sorted(bindings, key=pattern), key=pattern):
        acls = tuple(
            build(
                acl_cls,
                principal=b.principal,
                host=b.host,
                operation=int(b.operation),
                permission_type=int(b.permission_type),
            )
            for b in group
        )
        resources.append(
            build(resource_cls, resource_type=resource_type, resource_name=name, pattern_type=pattern_type, acls=acls)
        )
    return tuple(resources)


async def create(ctx: WireContext, request: Request) -> Any:
    cls = response_class(CREATE_ACLS, request.header.api_version)
    result_cls = sibling(cls, "AclCreationResult")
    creations = request.body.creations
    refusal = _refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        results = tuple(build(result_cls, error_code=refusal[0], error_message=refusal[1]) for _ in creations)
        return build(cls, throttle_time=0, results=results)
    forwarded = controller_pb2.CreateAclsRequest(
        creations=[
            binding_to_proto(
                AclBinding(
                    enum_of(ResourceType, c.resource_type),
                    c.resource_name,
                    enum_of(PatternType, c.resource_pattern_type),
                    c.principal,
                    c.host,
                    enum_of(AclOperation, c.operation),
                    enum_of(AclPermissionType, c.permission_type),
                )
            )
            for c in creations
        ]
    )
    answer = await ctx.manager.controller.call("CreateAcls", forwarded)
    outcomes = list(answer.results) if answer is not None else []
    created: list[Any] = []
    applied: list[AclBinding] = []
    for index in range(len(creations)):
        code, message = forwarded_outcome(answer, outcomes[index] if index < len(outcomes) else None, "ACL")
        created.append(build(result_cls, error_code=code, error_message=message))
        if code == ErrorCode.NONE:
            applied.append(binding_from_proto(forwarded.creations[index]))
    await _image_reflects(ctx, lambda acls: all(binding in acls for binding in applied))
    return build(cls, throttle_time=0, results=tuple(created))


async def _image_reflects(ctx: WireContext, holds: Callable[[set[AclBinding]], bool]) -> None:
    """Wait (a bounded while) until this broker's image shows an ACL change the controller committed, so the
    client that made it reads it back here, as the clients' own tests do right after the call."""
    deadline = monotonic_ms() + IMAGE_CATCH_UP_MS
    while not holds(set(ctx.manager.metadata.image.acls.values())) and monotonic_ms() < deadline:
        await asyncio.sleep(IMAGE_POLL_S)


async def delete(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DELETE_ACLS, request.header.api_version)
    filter_cls, matching_cls = sibling(cls, "DeleteAclsFilterResult"), sibling(cls, "DeleteAclsMatchingAcl")
    filters = request.body.filters
    refusal = _refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        refused = tuple(
            build(filter_cls, error_code=refusal[0], error_message=refusal[1], matching_acls=()) for _ in filters
        )
        return build(cls, throttle_time=0, filter_results=refused)
    forwarded = controller_pb2.DeleteAclsRequest(filters=[filter_to_proto(wire_filter(f)) for f in filters])
    answer = await ctx.manager.controller.call("DeleteAcls", forwarded)
    outcomes = list(answer.filter_results) if answer is not None else []
    results: list[Any] = []
    removed: list[AclBinding] = []
    for index in range(len(filters)):
        outcome = outcomes[index] if index < len(outcomes) else None
        code, message = forwarded_outcome(answer, outcome, "filter")
        matching = tuple(
            _matching(matching_cls, binding_from_proto(m)) for m in (outcome.matching if outcome is not None else ())
        )
        results.append(build(filter_cls, error_code=code, error_message=message, matching_acls=matching))
        if outcome is not None and code == ErrorCode.NONE:
            removed.extend(binding_from_proto(m) for m in outcome.matching)
    await _image_reflects(ctx, lambda acls: not acls.intersection(removed))
    return build(cls, throttle_time=0, filter_results=tuple(results))


def _matching(cls: type, binding: AclBinding) -> Any:
    return build(
        cls,
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=int(binding.resource_type),
        resource_name=binding.resource_name,
        pattern_type=int(binding.pattern_type),
        principal=binding.principal,
        host=binding.host,
        operation=int(binding.operation),
        permission_type=int(binding.permission_type),
    )


HANDLERS = {DESCRIBE_ACLS: describe, CREATE_ACLS: create, DELETE_ACLS: delete}
