"""Kafka's admin APIs through the brokers' Kafka listeners, driven by confluent_kafka.admin.AdminClient
(librdkafka) against a 3+3 cluster of real processes: CreateTopics, DeleteTopics, DescribeConfigs,
DescribeCluster, ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments (forwarded to the active
controller or answered from the broker's image), and Metadata's topic auto-creation (auto.create.topics.enable)."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_fixtures import eventually, running_cluster

from minikafka.common.errors import ErrorCode
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
admin_module = pytest.importorskip("confluent_kafka.admin")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("kafka-admin"), 3, 3) as started:
        yield started


def _admin(cluster: Cluster) -> object:
    return admin_module.AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})


def test_create_describe_and_delete_a_topic(cluster: Cluster) -> None:
    admin = _admin(cluster)
    topic = admin_module.NewTopic(
        "admin-made", num_partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}
    )
    admin.create_topics([topic])["admin-made"].result(30)
    metadata = eventually(lambda: admin.list_topics(timeout=10).topics.get("admin-made"), 20, "the topic in metadata")
    assert len(metadata.partitions) == 3 and all(len(p.replicas) == 3 for p in metadata.partitions.values())

    again = admin.create_topics([admin_module.NewTopic("admin-made", 1, 1)])["admin-made"]
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        again.result(30)
    assert raised.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS

    resource = admin_module.ConfigResource(admin_module.ResourceType.TOPIC, "admin-made")
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["min.insync.replicas"].value == "2" and not configs["min.insync.replicas"].is_default
    assert configs["cleanup.policy"].value == "delete" and configs["cleanup.policy"].is_default

    admin.delete_topics(["admin-made"])["admin-made"].result(30)
    eventually(lambda: "admin-made" not in admin.list_topics(timeout=10).topics, 20, "the topic gone")


def test_describe_configs_of_a_broker_lists_its_static_and_default_configs(cluster: Cluster) -> None:
    admin = _admin(cluster)
    resource = admin_module.ConfigResource(admin_module.ResourceType.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(30)
    sources = admin_module.ConfigSource
    segment = configs["log.segment.bytes"]
    assert (segment.value, segment.source, segment.is_default) == ("1073741824", sources.DEFAULT_CONFIG.value, True)
    assert not segment.is_read_only and not segment.is_sensitive  # a dynamic broker config
    assert configs["log.dirs"].is_read_only
    fault = configs["fault.injection.enable"]  # the test cluster's properties set it
    assert (fault.value, fault.source) == ("true", sources.STATIC_BROKER_CONFIG.value)
    assert configs["node.id"].value == configs["broker.id"].value == "1"
    password = configs["ssl.key.password"]
    assert password.is_sensitive and password.value is None

    other = admin_module.ConfigResource(admin_module.ResourceType.BROKER, "2")
    assert admin.describe_configs([other])[other].result(30)["node.id"].value == "2"  # routed to broker 2


def test_bad_create_topics_requests_get_kafkas_errors(cluster: Cluster) -> None:
    admin = _admin(cluster)
    futures = admin.create_topics(
        [
            admin_module.NewTopic("too-replicated", num_partitions=1, replication_factor=4),
            admin_module.NewTopic("bad config", num_partitions=1, replication_factor=1),
        ]
    )
    codes = {}
    for name, future in futures.items():
        with pytest.raises(confluent_kafka.KafkaException) as raised:
            future.result(30)
        codes[name] = raised.value.args[0].code()
    assert codes == {
        "too-replicated": confluent_kafka.KafkaError.INVALID_REPLICATION_FACTOR,
        "bad config": confluent_kafka.KafkaError.TOPIC_EXCEPTION,
    }


def test_describe_cluster_lists_every_broker(cluster: Cluster) -> None:
    admin = _admin(cluster)  # kept: a client destroyed mid-request fails its futures
    description = admin.describe_cluster(request_timeout=30).result(30)
    assert {f"{node.host}:{node.port}" for node in description.nodes} == {b.kafka_address for b in cluster.brokers}
    assert description.controller is not None


def test_a_producer_auto_creates_the_topic_it_names(cluster: Cluster) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all"})
    delivered: list[object] = []
    producer.produce("auto-made", b"v", on_delivery=lambda error, message: delivered.append(error or message.offset()))
    assert producer.flush(30) == 0
    assert delivered == [0]


def test_create_partitions_grows_a_topic_that_then_takes_records_on_them(cluster: Cluster) -> None:
    admin = _admin(cluster)
    admin.create_topics([admin_module.NewTopic("growing", num_partitions=1, replication_factor=2)])["growing"].result(
        30
    )
    admin.create_partitions([admin_module.NewPartitions("growing", 3)])["growing"].result(30)
    eventually(lambda: len(admin.list_topics(timeout=10).topics["growing"].partitions) == 3, 20, "3 partitions")
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        admin.create_partitions([admin_module.NewPartitions("growing", 2)])["growing"].result(30)
    assert raised.value.args[0].code() == confluent_kafka.KafkaError.INVALID_PARTITIONS
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all"})
    offsets: list[object] = []
    producer.produce("growing", b"v", partition=2, on_delivery=lambda e, m: offsets.append(e or m.offset()))
    assert producer.flush(30) == 0 and offsets == [0]


def test_reassignment_and_preferred_election_through_the_kafka_listener(cluster: Cluster) -> None:
    """AlterPartitionReassignments and ListPartitionReassignments (as Kafka's tools send them) and confluent-kafka's
    elect_leaders reach the active controller through a broker: reordering the replicas makes 2 preferred, and the
    preferred election moves leadership to it."""
    from kio.schema.alter_partition_reassignments.v0 import request as alter
    from kio.schema.list_partition_reassignments.v0 import request as listing

    from minikafka.client.kafka_wire_client import KafkaWireClient

    admin = _admin(cluster)
    admin.create_topics([admin_module.NewTopic("elect-me", num_partitions=1, replica_assignment=[[1, 2, 3]])])[
        "elect-me"
    ].result(30)
    partition = lambda: admin.list_topics("elect-me", timeout=10).topics["elect-me"].partitions[0]  # noqa: E731
    eventually(lambda: partition().leader == 1 and len(partition().isrs) == 3, 20, "broker 1 leading a full ISR")

    async def send(body: object) -> Any:
        client = KafkaWireClient(cluster.kafka_bootstrap_servers.split(","))
        try:
            return await client.any_broker(body)
        finally:
            await client.close()

    def reassign(replicas: tuple[int, ...] | None, topic: str = "elect-me") -> object:
        body = alter.AlterPartitionReassignmentsRequest(
            timeout=datetime.timedelta(seconds=30),
            topics=(
                alter.ReassignableTopic(
                    name=topic, partitions=(alter.ReassignablePartition(partition_index=0, replicas=replicas),)
                ),
            ),
        )
        return asyncio.run(send(body)).responses[0].partitions[0].error_code.value

    def in_progress() -> object:
        body = listing.ListPartitionReassignmentsRequest(timeout=datetime.timedelta(seconds=30), topics=None)
        response = asyncio.run(send(body))
        assert response.error_code.value == 0
        return [(t.name, p.partition_index) for t in response.topics for p in t.partitions]

    assert reassign((2, 1, 3)) == 0
    eventually(lambda: partition().replicas == [2, 1, 3], 20, "replicas reordered")
    assert ("elect-me", 0) not in in_progress()
    assert reassign(None) == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert reassign((1, 2), topic="no-such-topic") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    elect = admin.elect_leaders(confluent_kafka.ElectionType.PREFERRED, [confluent_kafka.TopicPartition("elect-me", 0)])
    assert list(elect.result(30).values()) == [None]
    eventually(lambda: partition().leader == 2, 20, "the preferred replica leading")
    again = admin.elect_leaders(confluent_kafka.ElectionType.PREFERRED, [confluent_kafka.TopicPartition("elect-me", 0)])
    [error] = again.result(30).values()
    assert error.code() == confluent_kafka.KafkaError.ELECTION_NOT_NEEDED
