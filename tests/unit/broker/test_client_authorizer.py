"""The broker's authorizer over its image: a new ACL applies as soon as the image holds it, and each denial is
logged once per principal, operation and resource."""

from __future__ import annotations

from immutables import Map
from structlog.testing import capture_logs

from minikafka.broker.client_authorizer import Caller, ClientAuthorizer
from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.standard_authorizer import AuthorizerSettings

WRITE_ORDERS = AclBinding(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW
)
ALICE = Caller("User:alice", "127.0.0.1", "PLAINTEXT")


def test_a_new_acl_applies_once_the_image_holds_it_and_denials_are_logged_once() -> None:
    image = {"acls": Map()}
    authorizer = ClientAuthorizer(AuthorizerSettings(enabled=True), lambda: image["acls"])
    with capture_logs() as logs:
        assert not authorizer.allowed(ALICE, AclOperation.WRITE, ResourceType.TOPIC, "orders")
        assert not authorizer.allowed(ALICE, AclOperation.WRITE, ResourceType.TOPIC, "orders")
        image["acls"] = Map({"id-1": WRITE_ORDERS})
        assert authorizer.allowed(ALICE, AclOperation.WRITE, ResourceType.TOPIC, "orders")
        assert authorizer.allowed(ALICE, AclOperation.DESCRIBE, ResourceType.TOPIC, "orders")
        assert not authorizer.allowed(ALICE, AclOperation.WRITE, ResourceType.TOPIC, "payroll")
        assert authorizer.allowed_on_some(ALICE, AclOperation.WRITE, ResourceType.TOPIC)
    denials = [e for e in logs if e["event"] == "authorization_failed"]
    assert [(e["resource_name"], e["operation"], e["reason"]) for e in denials] == [
        ("orders", "WRITE", "no acl"),
        ("payroll", "WRITE", "no acl"),
    ]
    assert denials[0]["principal"] == "User:alice" and denials[0]["host"] == "127.0.0.1"


def test_a_quiet_check_decides_as_the_logged_one_and_logs_no_denial() -> None:
    """What a caller may see is filtered so (a consumer group's regex matches): Kafka does not log those denials."""
    authorizer = ClientAuthorizer(AuthorizerSettings(enabled=True), lambda: Map({"id-1": WRITE_ORDERS}))
    with capture_logs() as logs:
        assert authorizer.allowed_quietly(ALICE, AclOperation.DESCRIBE, ResourceType.TOPIC, "orders")
        assert not authorizer.allowed_quietly(ALICE, AclOperation.DESCRIBE, ResourceType.TOPIC, "payroll")
    assert logs == []


def test_off_allows_everything_and_logs_nothing() -> None:
    authorizer = ClientAuthorizer(AuthorizerSettings(), Map)
    with capture_logs() as logs:
        assert authorizer.allowed(ALICE, AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster")
        assert authorizer.allowed_on_cluster(ALICE, AclOperation.IDEMPOTENT_WRITE)
    assert logs == []


def test_produce_refusals_in_kafkas_order() -> None:
    from types import SimpleNamespace

    from minikafka.broker.log_manager import TopicPartition
    from minikafka.broker.requests.produce import (
        ProducePartition,
        ProduceRequest,
        has_producer_id,
        produce_refusals,
    )
    from minikafka.common.errors import ErrorCode
    from minikafka.common.record_batch import Record, build_batch

    plain = build_batch([Record(b"v")])
    idempotent = plain + build_batch([Record(b"w")], producer_id=7, producer_epoch=0, base_sequence=0)
    assert not has_producer_id(plain) and has_producer_id(idempotent) and not has_producer_id(b"\x00" * 10)
    acls = Map({"id-1": WRITE_ORDERS})
    config = SimpleNamespace(produce_idempotent_write_check_enable=True)
    authorizer = ClientAuthorizer(AuthorizerSettings(enabled=True), lambda: acls)
    manager = SimpleNamespace(authorizer=authorizer, config=config)
    orders, payroll = TopicPartition("orders", 0), TopicPartition("payroll", 0)

    def refused(*partitions: ProducePartition, transactional_id: str | None = None) -> dict:
        request = ProduceRequest(-1, 1000, list(partitions))
        found = produce_refusals(manager, ALICE, request, transactional_id)  # type: ignore[arg-type]
        return {tp.topic: result.error for tp, result in found.items()}

    assert refused(ProducePartition(orders, plain)) == {}
    assert refused(ProducePartition(orders, plain), ProducePartition(payroll, plain)) == {
        "payroll": ErrorCode.TOPIC_AUTHORIZATION_FAILED
    }
    # Another's producer id without IDEMPOTENT_WRITE: the whole request, even the topic she may write.
    assert refused(ProducePartition(orders, idempotent)) == {"orders": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    # Kafka 4's rule (KIP-679): WRITE on the topic is enough, whoever's producer id the batches carry.
    config.produce_idempotent_write_check_enable = False
    assert refused(ProducePartition(orders, idempotent)) == {}
    assert refused(ProducePartition(payroll, idempotent)) == {"payroll": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    config.produce_idempotent_write_check_enable = True
    assert refused(ProducePartition(orders, plain), transactional_id="tx") == {
        "orders": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    }
