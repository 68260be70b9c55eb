"""`minikafka acls`: ACLs as Kafka's kafka-acls adds, removes and lists them, through the active controller.

minikafka acls --add --allow-principal User:alice --operation Write --topic orders
minikafka acls --add --allow-principal User:alice --operation Read --topic orders- --resource-pattern-type prefixed
minikafka acls --add --deny-principal User:bob --operation All --group payments
minikafka acls --add --allow-principal User:alice --producer --topic orders --idempotent
minikafka acls --remove --allow-principal User:alice --operation Write --topic orders
minikafka acls --list [--topic orders] [--principal User:alice] [--json]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass

from minikafka.common.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    enum_named,
)
from minikafka.common.cli_support import CliError, print_json
from minikafka.common.errors import ErrorCode, KafkaError

Op = AclOperation


@dataclass(frozen=True)
class Resource:
    resource_type: ResourceType
    name: str

    def describe(self, pattern_type: PatternType) -> str:
        kind = self.resource_type.name
        return f"ResourcePattern(resourceType={kind}, name={self.name}, patternType={pattern_type.name})"


def register(subparsers: argparse._SubParsersAction, add_connection_arguments) -> None:  # noqa: ANN001
    acls = subparsers.add_parser("acls", help="add, remove and list ACLs, as kafka-acls")
    action = acls.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true")
    action.add_argument("--remove", action="store_true")
    action.add_argument("--list", action="store_true")
    for flag, what in (
        ("--allow-principal", "a principal (User:NAME, User:*) the ACLs allow"),
        ("--deny-principal", "a principal the ACLs deny"),
        ("--principal", "--list: only ACLs naming this principal"),
        ("--allow-host", "a host the allow ACLs name (default *)"),
        ("--deny-host", "a host the deny ACLs name (default *)"),
        (
            "--operation",
            "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
            "AlterConfigs, IdempotentWrite, All (default All)",
        ),
        ("--topic", "a topic (or a prefix with --resource-pattern-type prefixed; * for all)"),
        ("--group", "a consumer group"),
        ("--transactional-id", "a transactional id"),
        ("--user-principal", "a user (the USER resource)"),
        ("--delegation-token", "a delegation token (refused: there are none)"),
    ):
        acls.add_argument(flag, action="append", default=[], metavar="VALUE", help=what)
    acls.add_argument("--cluster", action="store_true", help="the cluster resource")
    acls.add_argument(
        "--resource-pattern-type",
        default="literal",
        type=str.lower,
        choices=["literal", "prefixed", "any", "match"],
        help="literal (default) or prefixed; --list and --remove also any and match",
    )
    acls.add_argument("--producer", action="store_true", help="WRITE, DESCRIBE and CREATE on the topics")
    acls.add_argument("--consumer", action="store_true", help="READ and DESCRIBE on the topics, READ on the groups")
    acls.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    acls.add_argument("--force", action="store_true", help="accepted for kafka-acls compatibility (no prompt here)")
    acls.add_argument("--json", action="store_true", help="--list: one JSON array of ACLs")
    add_connection_arguments(acls)
    acls.set_defaults(func=acls_command)


def resources(args: argparse.Namespace) -> list[Resource]:
    found = [Resource(ResourceType.TOPIC, name) for name in args.topic]
    found += [Resource(ResourceType.GROUP, name) for name in args.group]
    found += [Resource(ResourceType.TRANSACTIONAL_ID, name) for name in args.transactional_id]
    found += [Resource(ResourceType.USER, name) for name in args.user_principal]
    found += [Resource(ResourceType.DELEGATION_TOKEN, name) for name in args.delegation_token]
    if args.cluster:
        found.append(Resource(ResourceType.CLUSTER, CLUSTER_NAME))
    return found


def operations(args: argparse.Namespace) -> list[AclOperation]:
    found: list[AclOperation] = []
    for name in args.operation or ["All"]:
        operation = enum_named(AclOperation, name)
        if operation is None or operation in (Op.UNKNOWN, Op.ANY):
            raise CliError(f"--operation {name}: not an operation (Read, Write, Describe, ..., All)")
        found.append(operation)
    return found


def pattern_type(args: argparse.Namespace) -> PatternType:
    found = enum_named(PatternType, args.resource_pattern_type)
    assert found is not None
    return found


def bindings_to_add(args: argparse.Namespace) -> list[AclBinding]:
    """Every (principal, host, operation) ACL on every resource, as kafka-acls --add builds them."""
    pattern = pattern_type(args)
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise CliError("--add takes --resource-pattern-type literal or prefixed")
    if not args.allow_principal and not args.deny_principal:
        raise CliError("--add needs --allow-principal or --deny-principal")
    per_resource = _convenience(args) if args.producer or args.consumer else None
    targets = resources(args)
    if per_resource is None and not targets:
        raise CliError("--add needs a resource: --topic, --group, --cluster, --transactional-id or --user-principal")
    wanted = per_resource or [(resource, op) for resource in targets for op in operations(args)]
    bindings = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, AclPermissionType.DENY),
    ):
        for principal in principals:
            for host in hosts or [WILDCARD_HOST]:
                for resource, op in wanted:
                    bindings.append(
                        AclBinding(resource.resource_type, resource.name, pattern, principal, host, op, permission)
                    )
    return bindings


def _convenience(args: argparse.Namespace) -> list[tuple[Resource, AclOperation]]:
    """kafka-acls' --producer and --consumer: the operations a producer or a consumer needs."""
    topics = [Resource(ResourceType.TOPIC, name) for name in args.topic]
    if not topics:
        raise CliError("--producer and --consumer need --topic")
    wanted: list[tuple[Resource, AclOperation]] = []
    if args.producer:
        wanted += [(t, op) for t in topics for op in (Op.WRITE, Op.DESCRIBE, Op.CREATE)]
        for transactional_id in args.transactional_id:
            resource = Resource(ResourceType.TRANSACTIONAL_ID, transactional_id)
            wanted += [(resource, Op.WRITE), (resource, Op.DESCRIBE)]
        if args.idempotent:
            wanted.append((Resource(ResourceType.CLUSTER, CLUSTER_NAME), Op.IDEMPOTENT_WRITE))
    if args.consumer:
        if not args.group:
            raise CliError("--consumer needs --group")
        wanted += [(t, op) for t in topics for op in (Op.READ, Op.DESCRIBE)]
        wanted += [(Resource(ResourceType.GROUP, g), Op.READ) for g in args.group]
    return wanted


def filters_to_remove(args: argparse.Namespace) -> list[AclBindingFilter]:
    """With principals: their ACLs of the given operations on each resource; without: every ACL of each resource."""
    targets = resources(args)
    if not targets:
        raise CliError("--remove needs a resource: --topic, --group, --cluster, --transactional-id or --user-principal")
    pattern = pattern_type(args)
    if not args.allow_principal and not args.deny_principal:
        return [AclBindingFilter(r.resource_type, r.name, pattern) for r in targets]
    found = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, AclPermissionType.DENY),
    ):
        for principal in principals:
            for host in hosts or [WILDCARD_HOST]:
                for resource in targets:
                    kind, name = resource.resource_type, resource.name
                    found += [
                        AclBindingFilter(kind, name, pattern, principal, host, op, permission)
                        for op in operations(args)
                    ]
    return found


def filters_to_list(args: argparse.Namespace) -> list[AclBindingFilter]:
    principal = args.principal[0] if args.principal else None
    targets = resources(args)
    if not targets:
        return [AclBindingFilter(principal=principal)]
    pattern = pattern_type(args)
    return [AclBindingFilter(r.resource_type, r.name, pattern, principal) for r in targets]


def entry_text(binding: AclBinding) -> str:
    return (
        f"(principal={binding.principal}, host={binding.host}, operation={binding.operation.name}, "
        f"permissionType={binding.permission_type.name})"
    )


def print_by_resource(title: str, bindings: Iterable[AclBinding]) -> None:
    grouped: dict[tuple[ResourceType, str, PatternType], list[AclBinding]] = {}
    for binding in bindings:
        grouped.setdefault((binding.resource_type, binding.resource_name, binding.pattern_type), []).append(binding)
    for (resource_type, name, pattern), entries in sorted(grouped.items()):
        print(f"{title} for resource `{Resource(resource_type, name).describe(pattern)}`: ")
        for binding in entries:
            print(f" \t{entry_text(binding)} ")
        print()


def acls_command(args: argparse.Namespace) -> int:
    from minikafka.client.command_connection import admin_client

    # The arguments are checked before any connection.
    if args.add:
        bindings = bindings_to_add(args)
    else:
        filters = filters_to_remove(args) if args.remove else filters_to_list(args)
    with admin_client(args) as admin:
        if args.add:
            _add(admin, bindings)
        elif args.remove:
            _remove(admin, filters)
        else:
            _list(admin, filters, args.json)
    return 0


def _add(admin, bindings: list[AclBinding]) -> None:  # noqa: ANN001 - client.admin.AdminClient
    from minikafka.common.acl_proto import binding_to_proto

    print_by_resource("Adding ACLs", bindings)
    outcomes = admin.create_acls([binding_to_proto(b) for b in bindings])
    for binding, outcome in zip(bindings, outcomes, strict=False):
        if outcome.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(outcome.error_code), f"{entry_text(binding)}: {outcome.error_message}")


def _remove(admin, filters: list[AclBindingFilter]) -> None:  # noqa: ANN001 - client.admin.AdminClient
    from minikafka.common.acl_proto import binding_from_proto, filter_to_proto

    removed = []
    for result in admin.delete_acls([filter_to_proto(f) for f in filters]):
        if result.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(result.error_code), result.error_message)
        removed += [binding_from_proto(m) for m in result.matching]
    print_by_resource("Removed ACLs", removed)


def _list(admin, filters: list[AclBindingFilter], as_json: bool) -> None:  # noqa: ANN001 - client.admin.AdminClient
    from minikafka.common.acl_proto import binding_from_proto, filter_to_proto

    listed: dict[AclBinding, None] = {}
    for acl_filter in filters:
        found = admin.describe_acls(filter_to_proto(acl_filter))
        listed.update(dict.fromkeys(binding_from_proto(b) for b in found))
    if as_json:
        print_json([_json(b) for b in listed])
    else:
        print_by_resource("Current ACLs", listed)


def _json(binding: AclBinding) -> dict[str, str]:
    return {
        "resource_type": binding.resource_type.name,
        "resource_name": binding.resource_name,
        "pattern_type": binding.pattern_type.name,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name,
        "permission_type": binding.permission_type.name,
    }
