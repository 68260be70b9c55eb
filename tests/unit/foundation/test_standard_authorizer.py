"""The StandardAuthorizer core: Kafka's matching of ACLs (literal, wildcard, prefixed; principal and host), DENY
winning, implied operations, super users and allow.everyone.if.no.acl.found; ACL records replayed into the image,
its snapshot and the events."""

from __future__ import annotations

from minikafka.common.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    binding_refusal,
    enum_named,
    filter_refusal,
)
from minikafka.common.errors import ErrorCode
from minikafka.common.standard_authorizer import (
    AclIndex,
    Action,
    AuthorizerSettings,
    authorize,
    authorize_by_resource_type,
)
from minikafka.kraft_controller.control.record_events import describe_record_event
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    AccessControlEntry,
    RemoveAccessControlEntry,
    decode_record,
    encode_record,
)

Op, Perm, RT, PT = AclOperation, AclPermissionType, ResourceType, PatternType
ON = AuthorizerSettings(enabled=True, super_users=frozenset({"User:admin"}))


def acl(
    name: str = "orders",
    op: AclOperation = Op.WRITE,
    perm: AclPermissionType = Perm.ALLOW,
    principal: str = "User:alice",
    host: str = "*",
    kind: ResourceType = RT.TOPIC,
    pattern: PatternType = PT.LITERAL,
) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, op, perm)


def allowed(
    bindings: list[AclBinding],
    op: AclOperation = Op.WRITE,
    name: str = "orders",
    principal: str = "User:alice",
    host: str = "10.0.0.1",
    kind: ResourceType = RT.TOPIC,
    settings: AuthorizerSettings = ON,
) -> bool:
    return authorize(AclIndex(bindings), settings, Action(principal, host, op, kind, name)).allowed


def test_off_by_default_allows_everything() -> None:
    assert allowed([], settings=AuthorizerSettings())
    assert allowed([acl(perm=Perm.DENY)], settings=AuthorizerSettings())


def test_no_acl_follows_allow_everyone_if_no_acl_found() -> None:
    assert not allowed([])
    assert allowed([], settings=AuthorizerSettings(enabled=True, allow_everyone_if_no_acl_found=True))
    # An ACL on the resource for someone else: the resource has ACLs, so the default rule no longer applies.
    lenient = AuthorizerSettings(enabled=True, allow_everyone_if_no_acl_found=True)
    assert not allowed([acl(principal="User:bob")], settings=lenient)


def test_literal_wildcard_and_prefixed_patterns() -> None:
    assert allowed([acl()])
    assert not allowed([acl()], name="orders-eu")
    assert allowed([acl("*")], name="anything")
    prefixed = acl("orders-", pattern=PT.PREFIXED)
    assert allowed([prefixed], name="orders-eu") and allowed([prefixed], name="orders-")
    assert not allowed([prefixed], name="orders")
    # A prefixed "*" is a prefix like any other, not a wildcard.
    assert not allowed([acl("*", pattern=PT.PREFIXED)], name="orders")


def test_principal_and_host_matching() -> None:
    assert not allowed([acl()], principal="User:bob")
    assert allowed([acl(principal="User:*")], principal="User:bob")
    assert allowed([acl(host="10.0.0.1")]) and not allowed([acl(host="10.0.0.2")])


def test_deny_wins_over_allow() -> None:
    assert not allowed([acl(), acl(perm=Perm.DENY)])
    assert not allowed([acl(), acl(op=Op.ALL, perm=Perm.DENY, principal="User:*")])
    assert not allowed([acl("*"), acl("orders-", perm=Perm.DENY, pattern=PT.PREFIXED)], name="orders-eu")
    # A DENY of another operation, host or principal does not.
    assert allowed([acl(), acl(op=Op.READ, perm=Perm.DENY)])
    assert allowed([acl(), acl(perm=Perm.DENY, host="10.9.9.9")])


def test_implied_operations() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.ALL):
        assert allowed([acl(op=op)], op=Op.DESCRIBE), op
    assert not allowed([acl(op=Op.CREATE)], op=Op.DESCRIBE)
    assert allowed([acl(op=Op.ALTER_CONFIGS)], op=Op.DESCRIBE_CONFIGS)
    assert not allowed([acl(op=Op.DESCRIBE)], op=Op.READ)
    # A DENY of READ does not deny DESCRIBE (implication widens ALLOWs only).
    assert allowed([acl(op=Op.DESCRIBE), acl(op=Op.READ, perm=Perm.DENY)], op=Op.DESCRIBE)


def test_super_user_does_everything() -> None:
    assert allowed([acl(op=Op.ALL, perm=Perm.DENY, principal="User:*")], principal="User:admin")
    assert allowed([], op=Op.ALTER, kind=RT.CLUSTER, name="kafka-cluster", principal="User:admin")


def test_resource_types_are_separate() -> None:
    assert not allowed([acl(kind=RT.GROUP)], op=Op.WRITE)
    assert allowed([acl("g", op=Op.READ, kind=RT.GROUP)], op=Op.READ, name="g", kind=RT.GROUP)


def test_authorize_by_resource_type() -> None:
    def by_type(bindings: list[AclBinding]) -> bool:
        action = Action("User:alice", "10.0.0.1", Op.WRITE, RT.TOPIC, "")
        return authorize_by_resource_type(AclIndex(bindings), ON, action).allowed

    assert by_type([acl("t")]) and by_type([acl("t-", pattern=PT.PREFIXED)])
    assert not by_type([]) and not by_type([acl(op=Op.READ)])
    assert not by_type([acl("t"), acl("*", perm=Perm.DENY)])
    assert not by_type([acl("t-a", pattern=PT.PREFIXED), acl("t-", perm=Perm.DENY, pattern=PT.PREFIXED)])
    assert by_type([acl("t"), acl("u", perm=Perm.DENY)])


def test_kafka_refusals_of_new_acls() -> None:
    def refused(binding: AclBinding) -> str:
        refusal = binding_refusal(binding)
        assert refusal is not None and refusal.error is ErrorCode.INVALID_REQUEST
        return refusal.message

    assert binding_refusal(acl()) is None
    assert binding_refusal(acl("kafka-cluster", kind=RT.CLUSTER, op=Op.IDEMPOTENT_WRITE)) is None
    assert refused(acl(kind=RT.UNKNOWN)) == "Invalid resourceType UNKNOWN"
    assert "DELEGATION_TOKEN" in refused(acl(kind=RT.DELEGATION_TOKEN))
    assert "PREFIXED" in refused(acl("*", pattern=PT.PREFIXED))
    assert "no colon" in refused(acl(principal="alice"))
    assert refused(acl(op=Op.ANY)) == "Invalid operation ANY"
    assert refused(acl(pattern=PT.MATCH)) == "Invalid patternType MATCH"
    assert "kafka-cluster" in refused(acl("other", kind=RT.CLUSTER))
    assert refused(acl("")) == "Invalid empty resource name"
    # Kafka's order: the handler's name checks come before the controller's type checks.
    assert refused(acl("", kind=RT.ANY, op=Op.ANY)) == "Invalid empty resource name"
    assert refused(acl(kind=RT.ANY, op=Op.ANY)) == "Invalid resourceType ANY"
    assert refused(acl(perm=Perm.ANY)) == "Invalid permissionType ANY"
    assert refused(acl(pattern=PT.ANY)) == "Invalid patternType ANY"

    def filter_refused(acl_filter: AclBindingFilter) -> str | None:
        refusal = filter_refusal(acl_filter)
        return None if refusal is None else refusal.message

    assert filter_refused(AclBindingFilter(resource_type=RT.UNKNOWN)) == "Unknown patternFilter."
    assert filter_refused(AclBindingFilter(pattern_type=PT.UNKNOWN)) == "Unknown patternFilter."
    assert filter_refused(AclBindingFilter(operation=Op.UNKNOWN)) == "Unknown entryFilter."
    assert filter_refused(AclBindingFilter(permission_type=Perm.UNKNOWN)) == "Unknown entryFilter."
    assert filter_refused(AclBindingFilter()) is None
    assert filter_refused(AclBindingFilter(RT.TOPIC, "orders", PT.MATCH)) is None


def test_filters() -> None:
    literal, prefixed, star = acl(), acl("ord", pattern=PT.PREFIXED), acl("*")
    everything = AclBindingFilter()
    assert all(everything.matches(b) for b in (literal, prefixed, star))
    by_name = AclBindingFilter(resource_name="orders")
    assert by_name.matches(literal) and not by_name.matches(prefixed) and not by_name.matches(star)
    match = AclBindingFilter(resource_type=RT.TOPIC, resource_name="orders", pattern_type=PT.MATCH)
    assert match.matches(literal) and match.matches(prefixed) and match.matches(star)
    assert not AclBindingFilter(principal="User:bob").matches(literal)
    assert AclBindingFilter(operation=Op.WRITE, permission_type=Perm.ALLOW).matches(literal)


def test_kafka_names_for_kafka_acls_arguments() -> None:
    assert enum_named(AclOperation, "IdempotentWrite") is Op.IDEMPOTENT_WRITE
    assert enum_named(AclOperation, "describe-configs") is Op.DESCRIBE_CONFIGS
    assert enum_named(PatternType, "prefixed") is PT.PREFIXED
    assert enum_named(AclOperation, "Fly") is None


def test_records_round_trip_replay_snapshot_and_events() -> None:
    record = AccessControlEntry.of("id-1", acl("orders-", pattern=PT.PREFIXED))
    assert decode_record(encode_record(record)) == record
    image = MetadataImage().replay(record, 0)
    assert dict(image.acls) == {"id-1": record.binding}
    assert MetadataImage.from_records(image.to_records(), 0) == image
    event = describe_record_event(record, image)
    assert event.name == "acl_created" and event.fields["operation"] == "WRITE"
    assert event.fields["pattern_type"] == "PREFIXED" and event.fields["principal"] == "User:alice"
    removal = RemoveAccessControlEntry("id-1")
    assert decode_record(encode_record(removal)) == removal
    after = image.replay(removal, 1)
    assert not after.acls
    deleted = describe_record_event(removal, after, image)
    assert deleted.name == "acl_deleted" and deleted.fields["resource_name"] == "orders-"
