"""DescribeTopicPartitions (KIP-966): partitions with their ELR and last known ELR, a page at a time (topics in
name order, at most the partition limit, a next cursor where the page stopped); DescribeCluster v2 lists fenced
brokers only when asked, marked, and a broker refuses the controller endpoint type."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from immutables import Map
from kio.schema.describe_cluster.v1 import request as cluster_v1
from kio.schema.describe_cluster.v2 import request as cluster_v2
from kio.schema.describe_topic_partitions.v0 import request as dtp

from minikafka.broker.kafka_wire import api_versions, apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.describe_topic_partitions import Page, PageSlice, paginate
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.image import (
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from minikafka.kraft_controller.metadata.records import BrokerStatus, Endpoint

IDS = {"alpha": uuid.uuid4(), "beta": uuid.uuid4()}


def image() -> MetadataImage:
    alpha = {i: PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 4, 5) for i in range(3)}
    alpha[2] = PartitionRegistration((1, 2, 3), (), -1, 6, 7, elr=(2,), last_known_elr=(3,))
    beta = {0: PartitionRegistration((2, 3), (2, 3), 2, 1, 1)}
    topics = {
        "alpha": TopicImage("alpha", IDS["alpha"], Map(alpha)),
        "beta": TopicImage("beta", IDS["beta"], Map(beta)),
    }
    status = {1: BrokerStatus.UNFENCED, 2: BrokerStatus.UNFENCED, 3: BrokerStatus.FENCED}
    brokers = {
        b: BrokerRegistration(b, "x", 1, (Endpoint("PLAINTEXT", "127.0.0.1", 9090 + b),), "", s)
        for b, s in status.items()
    }
    return MetadataImage(
        brokers=Map(brokers),
        topics_by_name=Map(topics),
        topics_by_id=Map({t.topic_id: t for t in topics.values()}),
    )


def answer(key: int, version: int, body: Any) -> Any:
    manager = SimpleNamespace(
        metadata=SimpleNamespace(image=image()),
        metadata_ready=True,
        config=SimpleNamespace(node_id=1, cluster_id="minikafka"),
    )
    ctx = WireContext(manager, "PLAINTEXT")  # type: ignore[arg-type]
    response = apis.HANDLERS[key](ctx, Request(ApiHeader(key, version, 1), "test", body))
    encode_response(1, response)  # every field is one kio can write at this version
    return response


def describe(names: tuple[str, ...], limit: int = 2000, cursor: tuple[str, int] | None = None) -> Any:
    body = dtp.DescribeTopicPartitionsRequest(
        topics=tuple(dtp.TopicRequest(name=n) for n in names),
        response_partition_limit=limit,
        cursor=dtp.Cursor(topic_name=cursor[0], partition_index=cursor[1]) if cursor else None,
    )
    return answer(75, 0, body)


def listed(response: Any) -> list[tuple[str, int, list[int]]]:
    return [(t.name, int(t.error_code.value), [p.partition_index for p in t.partitions]) for t in response.topics]


def test_advertised_versions_are_kafka_4s() -> None:
    assert api_versions.SUPPORTED[75] == (0, 0) and api_versions.SUPPORTED[60] == (0, 2)


def test_every_topic_with_its_elr_and_last_known_elr() -> None:
    response = describe(())
    assert listed(response) == [("alpha", 0, [0, 1, 2]), ("beta", 0, [0])]
    assert response.next_cursor is None
    leaderless = response.topics[0].partitions[2]
    assert leaderless.leader_id == -1 and int(leaderless.error_code.value) == ErrorCode.LEADER_NOT_AVAILABLE
    assert leaderless.eligible_leader_replicas == (2,) and leaderless.last_known_elr == (3,)
    assert leaderless.offline_replicas == (3,)  # broker 3 is fenced
    assert response.topics[0].topic_id == IDS["alpha"]


def test_pages_follow_the_cursor() -> None:
    first = describe(("beta", "alpha"), limit=2)
    assert listed(first) == [("alpha", 0, [0, 1])]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("alpha", 2)
    second = describe(("beta", "alpha"), limit=2, cursor=("alpha", 2))
    assert listed(second) == [("alpha", 0, [2]), ("beta", 0, [0])] and second.next_cursor is None


def test_an_unknown_topic_and_a_cursor_outside_the_request() -> None:
    unknown = describe(("nope",))
    assert listed(unknown) == [("nope", int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), [])]
    refused = describe(("alpha",), cursor=("beta", 0))
    assert [int(t.error_code.value) for t in refused.topics] == [int(ErrorCode.INVALID_REQUEST)]


def test_paginate_stops_at_a_topic_boundary_with_the_next_topic_as_cursor() -> None:
    assert paginate({"a": 2, "b": 1}, None, 2) == Page((PageSlice("a", 0, 2),), ("b", 0))
    assert paginate({"a": 2, "b": 1}, ("b", 0), 5) == Page((PageSlice("b", 0, 1),), None)


def test_describe_cluster_v2_lists_fenced_brokers_only_when_asked() -> None:
    body = cluster_v2.DescribeClusterRequest(include_cluster_authorized_operations=False, include_fenced_brokers=True)
    response = answer(60, 2, body)
    assert [(b.broker_id, b.is_fenced) for b in response.brokers] == [(1, False), (2, False), (3, True)]
    unfenced = answer(60, 1, cluster_v1.DescribeClusterRequest(include_cluster_authorized_operations=False))
    assert [b.broker_id for b in unfenced.brokers] == [1, 2] and unfenced.cluster_id == "minikafka"


def test_describe_cluster_for_controllers_is_refused_by_a_broker() -> None:
    body = cluster_v1.DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=2)
    response = answer(60, 1, body)
    assert int(response.error_code.value) == ErrorCode.MISMATCHED_ENDPOINT_TYPE and response.brokers == ()
