"""What the consumer-group tests share: a topic of 4 partitions (RF 3, min ISR 2) filled by confluent-kafka, and a raw
OffsetCommit sent as a given member."""

from __future__ import annotations

import pytest

from minikafka.client.consumer_groups_command import find_coordinator
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.errors import ErrorCode
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


async def offset_commit(
    bootstrap: str, group: str, topic: str, member_id: str, generation: int, version: int
) -> ErrorCode:
    """One OffsetCommit of partition 0 sent to the group's coordinator as `member_id` at `generation` (from v9 a
    consumer-protocol member's epoch); the partition's error."""
    client = KafkaWireClient(bootstrap.split(","))
    try:
        _, address = await find_coordinator(client, group, 15)
        cls = request_class(8, version)
        partition = nested(cls, "OffsetCommitRequestPartition")(
            partition_index=0, committed_offset=999, committed_leader_epoch=-1, committed_metadata=None
        )
        topics = (nested(cls, "OffsetCommitRequestTopic")(name=topic, partitions=(partition,)),)
        body = cls(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            topics=topics,
        )
        response = await client.connection(address).send(body)
        return ErrorCode.of(response.topics[0].partitions[0].error_code)
    finally:
        await client.close()
