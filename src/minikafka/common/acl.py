"""Kafka's ACL model: resource patterns, access control entries, bindings and the filters that select them.

The enum numbers are Kafka's wire codes (ResourceType, PatternType, AclOperation, AclPermissionType), which the
metadata records, CreateAcls/DescribeAcls/DeleteAcls and minikafka's gRPC admin path all carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from minikafka.common.errors import ErrorCode

WILDCARD_RESOURCE = "*"  # a LITERAL resource name matching every resource of its type
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource
E = TypeVar("E", bound=IntEnum)


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def enum_of(cls: type[E], code: int) -> E:
    """The member with this wire code; UNKNOWN for a code this version does not know (as Kafka's fromCode)."""
    return cls(code) if code in cls._value2member_map_ else cls(0)


def enum_named(cls: type[E], name: str) -> E | None:
    """A member by its name in any case, with '-' or '_' (kafka-acls spells them `Write`, `IdempotentWrite`)."""
    wanted = name.replace("-", "").replace("_", "").upper()
    for member in cls:
        if member.name.replace("_", "") == wanted:
            return member
    return None


@dataclass(frozen=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str  # "User:alice", "User:*"
    host: str  # "*" or an address
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select: ANY (or None for a name, principal or host) matches everything;
    the pattern type MATCH selects the bindings that would apply to the named resource."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        return (
            self.resource_type in (ResourceType.ANY, binding.resource_type)
            and self._matches_pattern(binding)
            and self.principal in (None, binding.principal)
            and self.host in (None, binding.host)
            and self.operation in (AclOperation.ANY, binding.operation)
            and self.permission_type in (AclPermissionType.ANY, binding.permission_type)
        )

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.pattern_type is PatternType.MATCH:
            return self.resource_name is None or pattern_covers(binding, self.resource_name)
        if self.pattern_type not in (PatternType.ANY, binding.pattern_type):
            return False
        return self.resource_name in (None, binding.resource_name)


def pattern_covers(binding: AclBinding, resource_name: str) -> bool:
    """Whether the binding's resource pattern applies to the resource named `resource_name` (of its type)."""
    if binding.pattern_type is PatternType.PREFIXED:
        return resource_name.startswith(binding.resource_name)
    return binding.resource_name in (WILDCARD_RESOURCE, resource_name)


@dataclass(frozen=True)
class AclRefusal:
    """Why a binding or filter is not accepted: Kafka's error and message."""

    error: ErrorCode
    message: str


def binding_refusal(binding: AclBinding) -> AclRefusal | None:
    """Kafka's checks of a new ACL, in its order (the CreateAcls handler's, then the controller's): the first
    failing one wins."""
    if binding.resource_type is ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return _invalid(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not binding.resource_name:
        return _invalid("Invalid empty resource name")
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return _invalid(f"Invalid resourceType {binding.resource_type.name}")
    if binding.resource_type is ResourceType.DELEGATION_TOKEN:
        return _invalid("Invalid resourceType DELEGATION_TOKEN: delegation tokens are not supported")
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return _invalid(f"Invalid patternType {binding.pattern_type.name}")
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return _invalid(f"Invalid operation {binding.operation.name}")
    if binding.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return _invalid(f"Invalid permissionType {binding.permission_type.name}")
    if binding.pattern_type is PatternType.PREFIXED and binding.resource_name == WILDCARD_RESOURCE:
        return _invalid("Cannot create an ACL with a wildcard resource name and pattern type PREFIXED")
    return _principal_or_host_refusal(binding)


def _principal_or_host_refusal(binding: AclBinding) -> AclRefusal | None:
    principal_type, colon, name = binding.principal.partition(":")
    if not colon:
        return _invalid(
            f"Could not parse principal from `{binding.principal}` (no colon is present separating the principal "
            "type from the principal name)"
        )
    if not principal_type or not name:
        return _invalid(f"Invalid principal `{binding.principal}`: a type and a name are needed, e.g. User:alice")
    if not binding.host:
        return _invalid("Invalid host: use * for every host")
    return None


def filter_refusal(acl_filter: AclBindingFilter) -> AclRefusal | None:
    """Kafka's check of a DescribeAcls or DeleteAcls filter (the controller's): no UNKNOWN element. ANY and MATCH
    are what filters are for."""
    if acl_filter.resource_type is ResourceType.UNKNOWN or acl_filter.pattern_type is PatternType.UNKNOWN:
        return _invalid("Unknown patternFilter.")
    if acl_filter.operation is AclOperation.UNKNOWN or acl_filter.permission_type is AclPermissionType.UNKNOWN:
        return _invalid("Unknown entryFilter.")
    return None


def _invalid(message: str) -> AclRefusal:
    return AclRefusal(ErrorCode.INVALID_REQUEST, message)
