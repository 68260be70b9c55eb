"""`minikafka acls` builds the ACLs and filters kafka-acls builds from the same arguments, before any connection."""

from __future__ import annotations

import argparse

import pytest

from minikafka.client import acls_command
from minikafka.common.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.cli_support import CliError


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    acls_command.register(parser.add_subparsers(), lambda p: p.add_argument("--dir"))
    return parser.parse_args(["acls", *argv])


def test_add_builds_one_binding_per_principal_host_operation_and_resource() -> None:
    args = _args(
        "--add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Read",
        "--topic", "orders-", "--resource-pattern-type", "prefixed", "--deny-principal", "User:bob",
    )  # fmt: skip
    bindings = acls_command.bindings_to_add(args)
    assert len(bindings) == 4
    assert {(b.principal, b.operation, b.permission_type) for b in bindings} == {
        ("User:alice", AclOperation.WRITE, AclPermissionType.ALLOW),
        ("User:alice", AclOperation.READ, AclPermissionType.ALLOW),
        ("User:bob", AclOperation.WRITE, AclPermissionType.DENY),
        ("User:bob", AclOperation.READ, AclPermissionType.DENY),
    }
    assert all(b.pattern_type is PatternType.PREFIXED and b.host == "*" for b in bindings)


def test_cluster_group_transactional_id_and_producer_shortcut() -> None:
    cluster = acls_command.bindings_to_add(
        _args("--add", "--allow-principal", "User:a", "--operation", "IdempotentWrite", "--cluster")
    )
    assert [(b.resource_type, b.resource_name, b.operation) for b in cluster] == [
        (ResourceType.CLUSTER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE)
    ]
    producer = acls_command.bindings_to_add(
        _args("--add", "--allow-principal", "User:a", "--producer", "--topic", "t", "--idempotent")
    )
    assert {b.operation for b in producer} == {
        AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE, AclOperation.IDEMPOTENT_WRITE
    }  # fmt: skip


def test_bad_arguments_are_refused_before_connecting() -> None:
    with pytest.raises(CliError):
        acls_command.bindings_to_add(_args("--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic=t"))
    with pytest.raises(CliError):
        acls_command.bindings_to_add(_args("--add", "--operation", "Read", "--topic", "t"))
    with pytest.raises(CliError):
        acls_command.filters_to_remove(_args("--remove"))


def test_remove_and_list_filters() -> None:
    everything_on_t = acls_command.filters_to_remove(_args("--remove", "--topic", "t"))
    assert len(everything_on_t) == 1 and everything_on_t[0].principal is None
    assert everything_on_t[0].operation is AclOperation.ANY
    listed = acls_command.filters_to_list(_args("--list", "--principal", "User:a"))
    assert listed[0].principal == "User:a" and listed[0].resource_type is ResourceType.ANY
