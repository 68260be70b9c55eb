"""Kafka's config resources as a broker sees them: the type numbers, and which broker names this broker answers."""

from __future__ import annotations

from typing import Protocol

from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode

TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE = 2, 4, 32  # Kafka's ConfigResource.Type


class CallerAccess(Protocol):
    """What one caller may do: a Kafka listener's WireContext, or the gRPC service's `CallerAuthorization`."""

    def allowed(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool: ...

    def allowed_on_cluster(self, operation: AclOperation) -> bool: ...


def broker_name_problem(name: str, node_id: int) -> str | None:
    """None when a BROKER resource is this broker's or the cluster default (""); else Kafka's message (the
    AdminClient sends a broker's resource to that broker)."""
    if name == "":
        return None
    if not name.isdigit():
        return f"Broker id must be an integer, but it is: {name}"
    if int(name) != node_id:
        return f"Unexpected broker id, expected {node_id} or empty string, but received {name}"
    return None


def config_denial(ctx: CallerAccess, resource_type: int, name: str, operation: AclOperation) -> ErrorCode | None:
    """Kafka's: the operation (DESCRIBE_CONFIGS, ALTER_CONFIGS) on the topic or the group, or on the cluster for a
    broker."""
    if resource_type == TOPIC_RESOURCE and not ctx.allowed(operation, ResourceType.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type == GROUP_RESOURCE and not ctx.allowed(operation, ResourceType.GROUP, name):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if resource_type == BROKER_RESOURCE and not ctx.allowed_on_cluster(operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None
