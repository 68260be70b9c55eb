"""Kafka's admin APIs through the brokers' Kafka listeners, driven by confluent_kafka.admin.AdminClient
(librdkafka) against a 3+3 cluster of real processes: CreateTopics, DeleteTopics, DescribeConfigs,
DescribeCluster (forwarded to the active controller or answered from the broker's image), and Metadata's topic
auto-creation (auto.create.topics.enable)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cluster_fixtures import eventually, running_cluster

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
