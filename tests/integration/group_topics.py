"""What the consumer-group tests share: a topic of 4 partitions (RF 3, min ISR 2) filled by confluent-kafka, a raw
OffsetCommit sent as a given member, group timings quick enough for tests, and polling members while checking that
no partition is held by two at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pytest

from minikafka.client.consumer_groups_command import find_coordinator
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.errors import ErrorCode
from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster

PARTITIONS = 4
# Group timings that let a member's join, leave or death be noticed within seconds.
QUICK_GROUP_TIMINGS = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "200",
}


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


class PolledMember(Protocol):
    def poll(self) -> None: ...

    def partitions(self) -> set[int]: ...


def poll_checked(members: Sequence[PolledMember]) -> list[set[int]]:
    """Poll every member once; at no moment may two members hold the same partition."""
    held = []
    for member in members:
        member.poll()
        held.append(member.partitions())
    owned = [p for partitions in held for p in partitions]
    assert len(owned) == len(set(owned)), f"a partition held by two members at once: {held}"
    return held
