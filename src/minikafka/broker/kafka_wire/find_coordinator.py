"""FindCoordinator: the broker leading a group's __consumer_offsets partition (key type 0) or a transactional id's
__transaction_state partition (key type 1), one key (v0-3) or a batch (v4+)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, has_field, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode

FIND_COORDINATOR = 10
GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(FIND_COORDINATOR, request.header.api_version)
    body = request.body
    key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
    if has_field(cls, "coordinators"):
        found = tuple(
            build(sibling(cls, "Coordinator"), key=key, **_lookup(ctx, key, key_type))
            for key in body.coordinator_keys or ()
        )
        return build(cls, throttle_time=0, coordinators=found)
    return build(cls, throttle_time=0, **_lookup(ctx, body.key, key_type))


def _lookup(ctx: WireContext, key: str, key_type: int) -> dict[str, Any]:
    # Kafka: DESCRIBE on the group, or on the transactional id for a transaction coordinator.
    if key_type == GROUP_KEY_TYPE and not ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return _failed(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    if key_type == TRANSACTION_KEY_TYPE and not ctx.allowed(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return _failed(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id authorization failed.")
    if key_type == TRANSACTION_KEY_TYPE and ctx.transactions is not None:
        if not key:
            return _failed(ErrorCode.INVALID_REQUEST, "the transactional id is empty")
        found = ctx.transactions.find_coordinator(key)
    elif key_type == GROUP_KEY_TYPE and ctx.groups is not None:
        if not key:
            return _failed(ErrorCode.INVALID_GROUP_ID, "the group id is empty")
        found = ctx.groups.find_coordinator(key)
    elif key_type in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no coordinator of this kind on this broker")
    else:
        return _failed(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}")
    if found.error != ErrorCode.NONE:
        return _failed(found.error, found.message)
    broker = ctx.manager.metadata.image.broker(found.node_id)
    endpoint = None if broker is None else next((e for e in broker.endpoints if e.name == ctx.listener_name), None)
    if endpoint is None:
        return _failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {found.node_id} has no {ctx.listener_name}")
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "node_id": found.node_id,
        "host": endpoint.host,
        "port": endpoint.port,
    }


def _failed(error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"error_code": error, "error_message": message, "node_id": -1, "host": "", "port": -1}
