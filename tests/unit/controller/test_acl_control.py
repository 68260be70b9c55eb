"""CreateAcls, DescribeAcls and DeleteAcls on the controller: Kafka's checks, one record per new binding, deletion
of what filters match, and who may send them to a controller."""

from __future__ import annotations

import random

from minikafka.common.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from minikafka.common.authorizer import (
    Allowed,
    AuthorizerConfig,
    KafkaPrincipal,
    ListenerSecurity,
    Refused,
    action_of,
    authorize,
)
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control import acl_control
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import AccessControlEntry, RemoveAccessControlEntry

ALICE_WRITE = AclBinding(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW
)
BOB_PREFIXED = AclBinding(
    ResourceType.TOPIC, "ord", PatternType.PREFIXED, "User:bob", "*", AclOperation.READ, AclPermissionType.DENY
)


def _replay(image: MetadataImage, records) -> MetadataImage:  # noqa: ANN001
    for record in records:
        image = image.replay(record, image.offset + 1)
    return image


def test_create_writes_one_record_per_new_binding() -> None:
    rng = random.Random(1)
    bad = AclBinding(
        ResourceType.TOPIC, "*", PatternType.PREFIXED, "User:a", "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    result = acl_control.create_acls(MetadataImage(), [ALICE_WRITE, bad, ALICE_WRITE, BOB_PREFIXED], rng)
    codes = [r.error_code for r in result.response.results]
    assert codes == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST, ErrorCode.NONE, ErrorCode.NONE]
    assert [type(r) for r in result.records] == [AccessControlEntry, AccessControlEntry]
    image = _replay(MetadataImage(), result.records)
    assert sorted(image.acls.values(), key=str) == sorted([ALICE_WRITE, BOB_PREFIXED], key=str)
    again = acl_control.create_acls(image, [ALICE_WRITE], rng)
    assert again.records == () and again.response.results[0].error_code is ErrorCode.NONE


def test_describe_and_delete_by_filter() -> None:
    created = acl_control.create_acls(MetadataImage(), [ALICE_WRITE, BOB_PREFIXED], random.Random(2))
    image = _replay(MetadataImage(), created.records)
    described = acl_control.describe_acls(image, AclBindingFilter(principal="User:bob"))
    assert described.error_code is ErrorCode.NONE and described.bindings == (BOB_PREFIXED,)
    matching = AclBindingFilter(ResourceType.TOPIC, "orders", PatternType.MATCH)
    assert set(acl_control.describe_acls(image, matching).bindings) == {ALICE_WRITE, BOB_PREFIXED}
    unknown = acl_control.describe_acls(image, AclBindingFilter(resource_type=ResourceType.UNKNOWN))
    assert unknown.error_code is ErrorCode.INVALID_REQUEST
    # Two filters matching the same ACL delete it once; a filter matching nothing is not an error.
    result = acl_control.delete_acls(
        image, [AclBindingFilter(), AclBindingFilter(principal="User:alice"), AclBindingFilter(principal="User:x")]
    )
    assert [len(r.matching) for r in result.response.results] == [2, 0, 0]
    assert all(r.error_code is ErrorCode.NONE for r in result.response.results)
    assert all(isinstance(r, RemoveAccessControlEntry) for r in result.records) and len(result.records) == 2
    assert not _replay(image, result.records).acls


def test_only_nodes_and_super_users_alter_acls_on_a_controller() -> None:
    config = AuthorizerConfig(frozenset({KafkaPrincipal("User", "admin")}), False)
    tls = ListenerSecurity(inter_node=True, authenticated=True)
    action = action_of("/minikafka.Controller/CreateAcls", None)
    for name, expected in (("admin", Allowed), ("broker-1", Allowed), ("alice", Refused)):
        assert isinstance(authorize(action, KafkaPrincipal("User", name), tls, config), expected), name
    delete = action_of("/minikafka.Controller/DeleteAcls", None)
    assert isinstance(authorize(delete, KafkaPrincipal("User", "alice"), tls, config), Refused)
