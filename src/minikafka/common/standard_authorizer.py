"""Kafka's StandardAuthorizer (KIP-801), pure: the ACLs of the metadata image, the authorizer's settings and one
request for an operation on a resource go in, a decision comes out.

- A super user (`super.users`) may do everything.
- The ACLs that apply are those whose pattern covers the resource (a LITERAL name, the LITERAL `*`, or a PREFIXED
  prefix of the name), whose principal is the caller's or `User:*`, and whose host is the caller's or `*`.
- A DENY of the operation (or of ALL) wins over every ALLOW. An ALLOW of the operation, of ALL, or of an operation
  that implies it (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows.
- A resource no ACL covers at all (whoever it names) follows `allow.everyone.if.no.acl.found` (default false).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minikafka.common.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    pattern_covers,
)

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

_IMPLIED_BY: Mapping[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS}),
}


@dataclass(frozen=True)
class AuthorizerSettings:
    enabled: bool = False  # authorizer.class.name names the StandardAuthorizer
    super_users: frozenset[str] = frozenset()  # "User:admin"
    allow_everyone_if_no_acl_found: bool = False


@dataclass(frozen=True)
class Action:
    """Kafka's Action: an operation on one resource, asked by a principal from a host."""

    principal: str
    host: str
    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str  # which rule decided, for the log: "super user", "allow acl", "deny acl", "no acl", ...


ALLOWED_DISABLED = Decision(True, "no authorizer")


class AclIndex:
    """The ACLs of one image, built once per image and read by every check until the next: LITERAL ones by
    resource name, so a decision costs the ACLs of its resource, the wildcards and the prefixes, not all of them."""

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        by_type: dict[ResourceType, list[AclBinding]] = {}
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        general: dict[ResourceType, list[AclBinding]] = {}  # the LITERAL `*` and the PREFIXED ones
        for binding in bindings:
            by_type.setdefault(binding.resource_type, []).append(binding)
            if binding.pattern_type is PatternType.LITERAL and binding.resource_name != WILDCARD_RESOURCE:
                literal.setdefault((binding.resource_type, binding.resource_name), []).append(binding)
            else:
                general.setdefault(binding.resource_type, []).append(binding)
        self._by_type = {kind: tuple(found) for kind, found in by_type.items()}
        self._literal = {key: tuple(found) for key, found in literal.items()}
        self._general = {kind: tuple(found) for kind, found in general.items()}

    def of_type(self, resource_type: ResourceType) -> tuple[AclBinding, ...]:
        return self._by_type.get(resource_type, ())

    def covering(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """The ACLs whose pattern covers the resource."""
        found = list(self._literal.get((resource_type, name), ()))
        found += [b for b in self._general.get(resource_type, ()) if pattern_covers(b, name)]
        return found


def authorize(index: AclIndex, settings: AuthorizerSettings, action: Action) -> Decision:
    if not settings.enabled:
        return ALLOWED_DISABLED
    if action.principal in settings.super_users:
        return Decision(True, "super user")
    covering = index.covering(action.resource_type, action.resource_name)
    if not covering:
        return Decision(settings.allow_everyone_if_no_acl_found, "no acl")
    applying = [b for b in covering if _names_caller(b, action)]
    if any(b.permission_type is AclPermissionType.DENY and _denies(b, action.operation) for b in applying):
        return Decision(False, "deny acl")
    if any(b.permission_type is AclPermissionType.ALLOW and _allows(b, action.operation) for b in applying):
        return Decision(True, "allow acl")
    return Decision(False, "no matching allow acl")


# Kafka's AclEntry.supportedOperations: the operations an ACL on a resource of the type can grant, and so the bits
# of an `authorized_operations` field.
SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DELETE,
        AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}  # fmt: skip


def authorized_operations(
    index: AclIndex, settings: AuthorizerSettings, principal: str, host: str, resource_type: ResourceType, name: str
) -> int:
    """Kafka's authorizedOperations: a 32-bit field with the bit of each AclOperation code set that the caller may
    do on the (literal) resource, of those its type supports; without an authorizer, all of them."""
    field = 0
    for operation in SUPPORTED_OPERATIONS[resource_type]:
        if authorize(index, settings, Action(principal, host, operation, resource_type, name)).allowed:
            field |= 1 << int(operation)
    return field


def authorize_by_resource_type(index: AclIndex, settings: AuthorizerSettings, action: Action) -> Decision:
    """Kafka's authorizeByResourceType: whether the caller may do the operation on some resource of the type (the
    action's resource name is not read), i.e. an ALLOW applies to one that no DENY of the caller covers entirely
    (a literal `*` DENY, or a DENY prefix of it)."""
    if not settings.enabled:
        return ALLOWED_DISABLED
    if action.principal in settings.super_users:
        return Decision(True, "super user")
    applying = [b for b in index.of_type(action.resource_type) if _names_caller(b, action)]
    denials = [b for b in applying if b.permission_type is AclPermissionType.DENY and _denies(b, action.operation)]
    for allow in applying:
        allows = allow.permission_type is AclPermissionType.ALLOW and _allows(allow, action.operation)
        if allows and not any(_deny_shadows(deny, allow) for deny in denials):
            return Decision(True, "allow acl")
    return Decision(False, "no matching allow acl")


def _deny_shadows(deny: AclBinding, allow: AclBinding) -> bool:
    if deny.pattern_type is PatternType.LITERAL:
        return deny.resource_name in (WILDCARD_RESOURCE, allow.resource_name) and (
            deny.resource_name == WILDCARD_RESOURCE or allow.pattern_type is PatternType.LITERAL
        )
    return allow.resource_name.startswith(deny.resource_name)


def _names_caller(binding: AclBinding, action: Action) -> bool:
    return binding.principal in (action.principal, WILDCARD_PRINCIPAL) and binding.host in (
        action.host,
        WILDCARD_HOST,
    )


def _denies(binding: AclBinding, operation: AclOperation) -> bool:
    return binding.operation in (AclOperation.ALL, operation)


def _allows(binding: AclBinding, operation: AclOperation) -> bool:
    if binding.operation in (AclOperation.ALL, operation):
        return True
    return binding.operation in _IMPLIED_BY.get(operation, frozenset())
