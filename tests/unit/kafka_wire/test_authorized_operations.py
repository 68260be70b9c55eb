"""`authorized_operations` as Kafka answers it (AuthHelper.authorizedOperations): a bit per AclOperation code the
caller may do on the resource, of those its type supports; every supported one without an authorizer; -2147483648
when not asked for; 0 for the cluster without DESCRIBE on it; refused topics and groups keep the default. Metadata,
DescribeCluster, DescribeTopicPartitions, DescribeGroups and ConsumerGroupDescribe through the request layer."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from immutables import Map
from kio.schema.consumer_group_describe.v0 import request as cgd_v0
from kio.schema.describe_cluster.v1 import request as cluster_v1
from kio.schema.describe_groups.v5 import request as groups_v5
from kio.schema.describe_topic_partitions.v0 import request as dtp_v0
from kio.schema.metadata.v10 import request as metadata_v10
from kio.schema.metadata.v12 import request as metadata_v12
from test_describe_topic_partitions import image

from minikafka.broker.client_authorizer import Caller, ClientAuthorizer
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig
from minikafka.broker.group.state import Group
from minikafka.broker.kafka_wire import apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.standard_authorizer import SUPPORTED_OPERATIONS, AuthorizerSettings

Op, RT = AclOperation, ResourceType
OMITTED = -2147483648
METADATA, DESCRIBE_GROUPS, DESCRIBE_CLUSTER, CONSUMER_GROUP_DESCRIBE, DESCRIBE_TOPIC_PARTITIONS = 3, 15, 60, 69, 75


def bits(*operations: AclOperation) -> int:
    return sum(1 << int(op) for op in set(operations))


def allow(kind: ResourceType, name: str, op: AclOperation, principal: str = "User:alice") -> AclBinding:
    return AclBinding(kind, name, PatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)


def deny(kind: ResourceType, name: str, op: AclOperation) -> AclBinding:
    return AclBinding(kind, name, PatternType.LITERAL, "User:alice", "*", op, AclPermissionType.DENY)


def context(acls: list[AclBinding] | None, principal: str = "User:alice") -> WireContext:
    """A broker whose image has topics alpha and beta and groups g (classic) and c (consumer protocol); with
    `acls`, the StandardAuthorizer on over them (User:admin a super user); None: no authorizer."""
    manager = SimpleNamespace(
        metadata=SimpleNamespace(image=image()),
        metadata_ready=True,
        auto_creations={},
        config=SimpleNamespace(node_id=1, cluster_id="minikafka", auto_create_topics_enable=False),
    )
    groups = SimpleNamespace(
        group=lambda group_id: Group(group_id),
        consumer_group=lambda group_id: ConsumerGroup(group_id),
        described_consumer_group=lambda group_id: ConsumerGroup(group_id),
        config=SimpleNamespace(consumer=ConsumerGroupConfig()),
    )
    settings = AuthorizerSettings(enabled=acls is not None, super_users=frozenset({"User:admin"}))
    bindings = Map({str(n): b for n, b in enumerate(acls or [])})
    return WireContext(
        manager,  # type: ignore[arg-type]
        "PLAINTEXT",
        groups=groups,  # type: ignore[arg-type]
        caller=Caller(principal, "127.0.0.1"),
        authorizer=ClientAuthorizer(settings, lambda: bindings),
    )


def answer(ctx: WireContext, key: int, version: int, body: Any) -> Any:
    response = apis.HANDLERS[key](ctx, Request(ApiHeader(key, version, 1), "test", body))
    encode_response(1, response)  # every field is one kio can write at this version
    return response


def metadata_v10_response(ctx: WireContext, include: bool, names: tuple[str, ...] | None = None) -> Any:
    topics = None if names is None else tuple(metadata_v10.MetadataRequestTopic(name=n, topic_id=None) for n in names)
    body = metadata_v10.MetadataRequest(
        topics=topics,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=include,
        include_topic_authorized_operations=include,
    )
    return answer(ctx, METADATA, 10, body)


def test_the_bit_fields_of_every_supported_operation_are_kafkas() -> None:
    # What Kafka answers without an authorizer (every supported operation), as its clients decode them.
    assert bits(*SUPPORTED_OPERATIONS[RT.TOPIC]) == 3576
    assert bits(*SUPPORTED_OPERATIONS[RT.GROUP]) == 3400
    assert bits(*SUPPORTED_OPERATIONS[RT.CLUSTER]) == 8096


def test_metadata_carries_the_fields_only_when_asked() -> None:
    ctx = context([allow(RT.TOPIC, "alpha", Op.READ)])
    response = metadata_v10_response(ctx, include=False)
    assert response.cluster_authorized_operations == OMITTED
    assert [(t.name, t.topic_authorized_operations) for t in response.topics] == [("alpha", OMITTED)]


def test_metadata_topic_and_cluster_operations_follow_the_acls() -> None:
    ctx = context(
        [
            allow(RT.TOPIC, "alpha", Op.READ),  # implies DESCRIBE
            allow(RT.TOPIC, "alpha", Op.ALTER_CONFIGS),  # implies DESCRIBE_CONFIGS
            allow(RT.TOPIC, "*", Op.WRITE),
            deny(RT.TOPIC, "beta", Op.WRITE),
            allow(RT.TOPIC, "beta", Op.DESCRIBE),
            allow(RT.CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE),
        ]
    )
    response = metadata_v10_response(ctx, include=True)
    ops = {t.name: t.topic_authorized_operations for t in response.topics}
    assert ops == {
        "alpha": bits(Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, Op.WRITE),
        "beta": bits(Op.DESCRIBE),
    }
    assert response.cluster_authorized_operations == 0  # IDEMPOTENT_WRITE, but no DESCRIBE on the cluster
    described = context([allow(RT.CLUSTER, "kafka-cluster", Op.ALTER)])  # ALTER implies DESCRIBE
    assert metadata_v10_response(described, include=True).cluster_authorized_operations == bits(Op.ALTER, Op.DESCRIBE)


def test_a_refused_topic_keeps_the_default_and_a_missing_one_it_may_describe_has_its_field() -> None:
    ctx = context([allow(RT.TOPIC, "alpha", Op.DESCRIBE), allow(RT.TOPIC, "gone", Op.DESCRIBE)])
    response = metadata_v10_response(ctx, include=True, names=("alpha", "beta", "gone"))
    found = {t.name: (int(t.error_code.value), t.topic_authorized_operations) for t in response.topics}
    assert found == {"alpha": (0, bits(Op.DESCRIBE)), "beta": (29, OMITTED), "gone": (3, bits(Op.DESCRIBE))}


def test_without_an_authorizer_every_supported_operation_and_super_users_too() -> None:
    for ctx in (context(None), context([], principal="User:admin")):
        response = metadata_v10_response(ctx, include=True)
        assert response.cluster_authorized_operations == 8096
        assert {t.topic_authorized_operations for t in response.topics} == {3576}


def test_metadata_v12_asks_for_the_topics_only() -> None:
    body = metadata_v12.MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=True
    )
    response = answer(context([allow(RT.TOPIC, "beta", Op.DELETE)]), METADATA, 12, body)
    assert [(t.name, t.topic_authorized_operations) for t in response.topics] == [
        ("beta", bits(Op.DELETE, Op.DESCRIBE))
    ]


def test_describe_cluster() -> None:
    def described(ctx: WireContext, include: bool) -> int:
        body = cluster_v1.DescribeClusterRequest(include_cluster_authorized_operations=include, endpoint_type=1)
        return int(answer(ctx, DESCRIBE_CLUSTER, 1, body).cluster_authorized_operations)

    granted = context([allow(RT.CLUSTER, "kafka-cluster", Op.DESCRIBE), allow(RT.CLUSTER, "*", Op.CREATE)])
    assert described(granted, include=True) == bits(Op.DESCRIBE, Op.CREATE)
    assert described(granted, include=False) == OMITTED
    assert described(context([allow(RT.CLUSTER, "kafka-cluster", Op.CREATE)]), include=True) == 0
    assert described(context(None), include=True) == 8096


def test_describe_topic_partitions_always_carries_the_field() -> None:
    ctx = context([allow(RT.TOPIC, "alpha", Op.WRITE), allow(RT.TOPIC, "gone", Op.READ)])
    body = dtp_v0.DescribeTopicPartitionsRequest(
        topics=tuple(dtp_v0.TopicRequest(name=n) for n in ("alpha", "beta", "gone")),
        response_partition_limit=2000,
        cursor=None,
    )
    response = answer(ctx, DESCRIBE_TOPIC_PARTITIONS, 0, body)
    found = {t.name: (int(t.error_code.value), t.topic_authorized_operations) for t in response.topics}
    assert found == {
        "alpha": (0, bits(Op.WRITE, Op.DESCRIBE)),
        "beta": (29, OMITTED),
        "gone": (3, bits(Op.READ, Op.DESCRIBE)),
    }


def test_describe_groups_and_consumer_group_describe() -> None:
    ctx = context([allow(RT.GROUP, "g", Op.READ), allow(RT.GROUP, "c", Op.DELETE), allow(RT.GROUP, "c", Op.DESCRIBE)])

    def classic(include: bool) -> dict[str, tuple[int, int]]:
        body = groups_v5.DescribeGroupsRequest(groups=("g", "c", "other"), include_authorized_operations=include)
        response = answer(ctx, DESCRIBE_GROUPS, 5, body)
        return {g.group_id: (int(g.error_code.value), g.authorized_operations) for g in response.groups}

    assert classic(True) == {"g": (0, bits(Op.READ, Op.DESCRIBE)), "c": (0, bits(Op.DELETE, Op.DESCRIBE)),
                             "other": (30, OMITTED)}  # fmt: skip
    assert {ops for _, ops in classic(False).values()} == {OMITTED}

    def consumer(include: bool) -> dict[str, tuple[int, int]]:
        body = cgd_v0.ConsumerGroupDescribeRequest(group_ids=("c", "other"), include_authorized_operations=include)
        response = answer(ctx, CONSUMER_GROUP_DESCRIBE, 0, body)
        return {g.group_id: (int(g.error_code.value), g.authorized_operations) for g in response.groups}

    assert consumer(True) == {"c": (0, bits(Op.DELETE, Op.DESCRIBE)), "other": (30, OMITTED)}
    assert consumer(False)["c"] == (0, OMITTED)
