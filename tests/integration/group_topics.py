"""The topic the consumer-group tests share a shape of: 4 partitions, RF 3, min ISR 2, filled by confluent-kafka."""

from __future__ import annotations

import pytest

from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster

PARTITIONS = 4


def create_topic(cluster: Cluster, name: str) -> None:
    with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
        admin.create_topic(name, partitions=PARTITIONS, replication_factor=3, configs={"min.insync.replicas": "2"})


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    """Each value acknowledged by acks=all, spread over the partitions in turn."""
    confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
