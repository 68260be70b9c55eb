"""ACL bindings and filters to and from the controller API's messages (the gRPC admin path and forwarding)."""

from __future__ import annotations

from minikafka.common.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    enum_of,
)
from minikafka.pb import controller_pb2


def binding_to_proto(binding: AclBinding) -> controller_pb2.AclBinding:
    return controller_pb2.AclBinding(
        resource_type=int(binding.resource_type),
        resource_name=binding.resource_name,
        pattern_type=int(binding.pattern_type),
        principal=binding.principal,
        host=binding.host,
        operation=int(binding.operation),
        permission_type=int(binding.permission_type),
    )


def binding_from_proto(message: controller_pb2.AclBinding) -> AclBinding:
    return AclBinding(
        enum_of(ResourceType, message.resource_type),
        message.resource_name,
        enum_of(PatternType, message.pattern_type),
        message.principal,
        message.host,
        enum_of(AclOperation, message.operation),
        enum_of(AclPermissionType, message.permission_type),
    )


def filter_to_proto(acl_filter: AclBindingFilter) -> controller_pb2.AclBindingFilter:
    message = controller_pb2.AclBindingFilter(
        resource_type=int(acl_filter.resource_type),
        pattern_type=int(acl_filter.pattern_type),
        operation=int(acl_filter.operation),
        permission_type=int(acl_filter.permission_type),
    )
    if acl_filter.resource_name is not None:
        message.resource_name = acl_filter.resource_name
    if acl_filter.principal is not None:
        message.principal = acl_filter.principal
    if acl_filter.host is not None:
        message.host = acl_filter.host
    return message


def filter_from_proto(message: controller_pb2.AclBindingFilter) -> AclBindingFilter:
    return AclBindingFilter(
        enum_of(ResourceType, message.resource_type),
        message.resource_name if message.HasField("resource_name") else None,
        enum_of(PatternType, message.pattern_type),
        message.principal if message.HasField("principal") else None,
        message.host if message.HasField("host") else None,
        enum_of(AclOperation, message.operation),
        enum_of(AclPermissionType, message.permission_type),
    )
