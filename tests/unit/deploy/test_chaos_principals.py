"""chaos --acls's principals and ACLs: each denied kind refused by the rule it is named after, the DENYs created
before any ALLOW, and each principal's ALLOW that lets it describe the topic last (what `grant` waits for)."""

from __future__ import annotations

from minikafka.common.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.standard_authorizer import STANDARD_AUTHORIZER
from minikafka.deploy.chaos_principals import (
    ChaosResources,
    acl_settings,
    chaos_bindings,
    denied_producers,
    principal_bindings,
    writers,
)

RESOURCES = ChaosResources("chaos", "chaos-txn", "chaos-t", "chaos-readers")


def _rules(principal_name: str) -> set[tuple[str, str, str, str, str]]:
    principals = writers(2) + denied_producers(3)
    return {
        (b.permission_type.name, b.operation.name, b.resource_type.name, b.resource_name, b.pattern_type.name)
        for b in chaos_bindings(principals, RESOURCES)
        if b.principal == f"User:{principal_name}"
    }


def test_each_denied_kind_lacks_exactly_what_refuses_it() -> None:
    assert [p.name for p in denied_producers(4)] == [
        "describe-only-0", "write-denied-1", "no-idempotent-write-2", "describe-only-3",
    ]  # fmt: skip
    idempotent = ("ALLOW", "IDEMPOTENT_WRITE", "CLUSTER", "kafka-cluster", "LITERAL")
    assert _rules("describe-only-0") == {idempotent, ("ALLOW", "DESCRIBE", "TOPIC", "chaos", "LITERAL")}
    assert _rules("write-denied-1") == {
        idempotent, ("ALLOW", "WRITE", "TOPIC", "chaos", "PREFIXED"), ("DENY", "WRITE", "TOPIC", "chaos", "LITERAL"),
    }  # fmt: skip
    assert _rules("no-idempotent-write-2") == {("ALLOW", "WRITE", "TOPIC", "chaos", "LITERAL")}
    # The writers: a LITERAL and a PREFIXED ALLOW of WRITE, and IDEMPOTENT_WRITE.
    assert _rules("writer-0") == {idempotent, ("ALLOW", "WRITE", "TOPIC", "chaos", "LITERAL")}
    assert _rules("writer-1") == {idempotent, ("ALLOW", "WRITE", "TOPIC", "chaos", "PREFIXED")}


def test_denies_come_first_and_each_principals_describing_allow_last() -> None:
    bindings = chaos_bindings(writers(2) + denied_producers(3), RESOURCES)
    kinds = [b.permission_type for b in bindings]
    assert kinds == sorted(kinds, key=lambda k: k is not AclPermissionType.DENY) and kinds[0] is AclPermissionType.DENY
    for index, principal in enumerate(writers(2) + denied_producers(3)):
        last = principal_bindings(principal, "chaos", index)[-1]
        assert (last.permission_type, last.resource_type, last.resource_name) == (
            AclPermissionType.ALLOW, ResourceType.TOPIC, "chaos",
        )  # fmt: skip
        assert last.operation in (AclOperation.WRITE, AclOperation.DESCRIBE)


def test_anonymous_gets_only_what_the_kafka_listeners_clients_need() -> None:
    assert _rules("ANONYMOUS") == {
        ("ALLOW", "WRITE", "TRANSACTIONAL_ID", "chaos-t", PatternType.PREFIXED.name),
        ("ALLOW", "WRITE", "TOPIC", "chaos-txn", "LITERAL"),
        ("ALLOW", "IDEMPOTENT_WRITE", "CLUSTER", "kafka-cluster", "LITERAL"),
        ("ALLOW", "READ", "GROUP", "chaos-readers", "LITERAL"),
        ("ALLOW", "READ", "TOPIC", "chaos", "LITERAL"),
    }


def test_settings_log_in_the_admin_first() -> None:
    settings = acl_settings(writers(1) + denied_producers(1))
    users = settings["sasl.plain.users"].split(",")
    assert users == ["admin:admin-secret", "writer-0:writer-0-secret", "describe-only-0:describe-only-0-secret"]
    assert settings["authorizer.class.name"] == STANDARD_AUTHORIZER
    assert "GRPC:GRPC_SASL_SSL" in settings["listener.security.protocol.map"]
