"""IncrementalAlterConfigs (44) and AlterConfigs (33): as a KRaft broker, checked here where only a broker can (a
broker resource names this broker or the cluster default, and names no key that cannot change at run time), then
forwarded to the active controller, which validates the values and writes the ConfigRecords."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minikafka.broker.kafka_wire.config_resources import BROKER_RESOURCE, broker_name_problem, config_denial
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.forwarded import forwarded_outcome
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation
from minikafka.common.config import config_keys
from minikafka.common.errors import ErrorCode
from minikafka.common.topic_config import DYNAMIC_BROKER_CONFIGS
from minikafka.pb import controller_pb2

ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 33, 44
VERSIONS = {ALTER_CONFIGS: (0, 2), INCREMENTAL_ALTER_CONFIGS: (0, 1)}
SET = 0  # AlterConfigOp.OpType.SET: every entry of the legacy AlterConfigs


@dataclass(frozen=True)
class Refusal:
    code: ErrorCode
    message: str


async def incremental_alter_configs(ctx: WireContext, request: Request) -> Any:
    return await _alter(ctx, request, incremental=True)


async def alter_configs(ctx: WireContext, request: Request) -> Any:
    return await _alter(ctx, request, incremental=False)


async def _alter(ctx: WireContext, request: Request, incremental: bool) -> Any:
    body = request.body
    refusals = {index: _refusal(ctx, resource) for index, resource in enumerate(body.resources)}
    forwarded = controller_pb2.AlterConfigsRequest(validate_only=body.validate_only, incremental=incremental)
    for index, resource in enumerate(body.resources):
        if refusals[index] is not None:
            continue
        entry = forwarded.resources.add()
        entry.resource.resource_type = resource.resource_type
        entry.resource.resource_name = resource.resource_name
        for config in resource.configs:
            op = config.config_operation if incremental else SET
            if config.value is None:
                entry.configs.add(name=config.name, op=op)
            else:
                entry.configs.add(name=config.name, op=op, value=config.value)
    answer = await ctx.manager.controller.call_forwarded("AlterConfigs", forwarded) if forwarded.resources else None
    results = {(r.resource.resource_type, r.resource.resource_name): r for r in answer.results} if answer else {}
    key = INCREMENTAL_ALTER_CONFIGS if incremental else ALTER_CONFIGS
    cls = response_class(key, request.header.api_version)
    entry_cls = sibling(cls, "AlterConfigsResourceResponse")
    responses = []
    for index, resource in enumerate(body.resources):
        refusal = refusals[index]
        message: str | None
        if refusal is not None:
            code, message = refusal.code, refusal.message
        else:
            result = results.get((resource.resource_type, resource.resource_name))
            code, message = forwarded_outcome(answer, result, "resource")
        responses.append(
            build(
                entry_cls,
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return build(cls, throttle_time=0, responses=tuple(responses))


def _refusal(ctx: WireContext, resource: Any) -> Refusal | None:
    """What this broker refuses before forwarding: another broker's resource (the client sends one to its broker),
    and keys this broker has that cannot change at run time (Kafka's DynamicBrokerConfig message); first, as
    Kafka, a resource the caller may not ALTER_CONFIGS."""
    denial = config_denial(ctx, resource.resource_type, resource.resource_name, AclOperation.ALTER_CONFIGS)
    if denial is not None:
        return Refusal(denial, f"{denial.name.replace('_', ' ').capitalize()}.")
    if resource.resource_type != BROKER_RESOURCE:
        return None
    problem = broker_name_problem(resource.resource_name, ctx.manager.config.node_id)
    if problem is not None:
        return Refusal(ErrorCode.INVALID_REQUEST, problem)
    static = {key.name for _field, key in config_keys(type(ctx.manager.config))}
    read_only = sorted(c.name for c in resource.configs if c.name in static and c.name not in DYNAMIC_BROKER_CONFIGS)
    if read_only:
        return Refusal(
            ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: Set({', '.join(read_only)})"
        )
    return None
