"""Expiry with real processes (1 controller, 1 broker): committed offsets expire after offsets.retention.minutes (its
least value, 1) once a group is empty, or from their commit for a group that only stores offsets, and the expired
groups are gone for good (their tombstones outlive a coordinator restart) while a stable member's offsets stay; an
offset committed with OffsetCommit v2's own retention expires by it, well before the broker's; and an idle idempotent
producer disappears from DescribeProducers once producer.id.expiration.ms, set dynamically, passed.
The minute of retention makes this module take about 80 s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster

from minikafka.client.consumer_groups_command import find_coordinator
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.errors import ErrorCode
from minikafka.deploy import cluster_commands
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")

OVERRIDES = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": "500",
    "producer.id.expiration.check.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}
TOPIC, PARTITIONS = "ledger", 2
RETENTION_S = 60


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("offset-expiry"), 1, 1, **OVERRIDES) as started:
        with cluster_commands.admin_for(started, timeout_s=10) as admin:
            admin.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=1)
        yield started


def describe(cluster: Cluster, group: str) -> dict | None:
    """The group as `minikafka consumer-groups --describe` shows it; None once the coordinator knows no such group."""
    result = minikafka(
        "consumer-groups", "--bootstrap-server", cluster.kafka_bootstrap_servers, "--describe", group, "--json"
    )
    if result.returncode != 0:
        assert "GROUP_ID_NOT_FOUND" in result.stderr, result.stderr
        return None
    return json.loads(result.stdout)


def committed(cluster: Cluster, group: str) -> dict[int, int]:
    described = describe(cluster, group)
    partitions = described["partitions"] if described is not None else []
    return {p["partition"]: p["current_offset"] for p in partitions if p["current_offset"] is not None}


def consumer(cluster: Cluster, group: str) -> confluent_kafka.Consumer:
    member = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    member.subscribe([TOPIC])
    return member


def read_and_commit(member: confluent_kafka.Consumer, count: int) -> None:
    read: list[bytes] = []

    def some() -> bool:
        message = member.poll(0.2)
        if message is not None and message.error() is None:
            read.append(message.value())
        return len(read) >= count

    eventually(some, 60, f"{count} records read", interval_s=0)
    member.commit(asynchronous=False)


def test_offsets_expire_from_empty_groups_and_simple_commits_and_stay_gone_after_a_restart(cluster: Cluster) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all"})
    for i in range(10):
        producer.produce(TOPIC, value=b"entry-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0

    leaving = consumer(cluster, "leaving-readers")
    read_and_commit(leaving, 10)
    leaving.close()  # the group is empty from now on: its offsets expire a retention later
    staying = consumer(cluster, "staying-readers")
    read_and_commit(staying, 10)
    simple = confluent_kafka.Consumer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": "ledger-tool"})
    simple.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 0, 3)], asynchronous=False)  # no group membership
    simple.close()
    assert committed(cluster, "leaving-readers") == {0: 5, 1: 5}
    assert committed(cluster, "ledger-tool") == {0: 3}

    def expired() -> bool:
        staying.poll(0.1)  # the stable member keeps its session
        return describe(cluster, "leaving-readers") is None and describe(cluster, "ledger-tool") is None

    eventually(expired, RETENTION_S + 60, "the empty group and the simple commit expired", interval_s=1)
    assert committed(cluster, "staying-readers") == {0: 5, 1: 5}  # a stable group's subscribed topic's offsets stay
    staying.close()

    # The coordinator reloads __consumer_offsets: the tombstones keep the expired groups gone.
    broker = cluster.brokers[0].node_id
    Faults(cluster).stop(broker)
    Faults(cluster).start(broker)
    eventually(
        lambda: committed(cluster, "staying-readers") == {0: 5, 1: 5}, 60, "the coordinator back", interval_s=0.5
    )
    assert describe(cluster, "leaving-readers") is None and describe(cluster, "ledger-tool") is None
    listed = minikafka("consumer-groups", "--bootstrap-server", cluster.kafka_bootstrap_servers, "--list")
    assert listed.returncode == 0 and "leaving-readers" not in listed.stdout.split(), listed.stderr


async def commit_with_retention(bootstrap: str, group: str, offset: int, retention_ms: int) -> ErrorCode:
    """A simple commit of partition 0 with OffsetCommit v2, whose RetentionTimeMs older clients set."""
    client = KafkaWireClient(bootstrap.split(","))
    try:
        _, address = await find_coordinator(client, group, 15)
        cls = request_class(8, 2)
        partition = nested(cls, "OffsetCommitRequestPartition")(
            partition_index=0, committed_offset=offset, committed_metadata=None
        )
        body = cls(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time=timedelta(milliseconds=retention_ms),
            topics=(nested(cls, "OffsetCommitRequestTopic")(name=TOPIC, partitions=(partition,)),),
        )
        response = await client.connection(address).send(body)
        return ErrorCode.of(response.topics[0].partitions[0].error_code)
    finally:
        await client.close()


def test_an_offset_committed_with_its_own_retention_expires_by_it(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    assert asyncio.run(commit_with_retention(bootstrap, "short-retention", 4, 3000)) == ErrorCode.NONE
    assert committed(cluster, "short-retention") == {0: 4}
    # Gone with its group long before the broker's minute of offsets.retention.minutes.
    eventually(lambda: describe(cluster, "short-retention") is None, 30, "the offset expired by its own retention")


def test_an_idle_producer_id_expires_once_the_dynamic_expiration_passed(cluster: Cluster) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is in the dev extra")
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "enable.idempotence": True}
    )
    for i in range(3):
        producer.produce(TOPIC, value=b"idem-%d" % i, partition=1)
    assert producer.flush(30) == 0
    admin = kafka.KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers.split(","))
    try:

        def producers() -> list[int]:
            [state] = admin.describe_producers([kafka.TopicPartition(TOPIC, 1)]).values()
            return [active.producer_id for active in state.active_producers]

        [producer_id] = producers()
        # The default (a day) keeps it; a cluster-wide 2 s, read by the broker at its next check, does not.
        altered = minikafka(
            "configs",
            "--dir",
            str(cluster.run_dir),
            "--alter",
            "--entity-type",
            "brokers",
            "--entity-default",
            "--add-config",
            "producer.id.expiration.ms=2000",
        )
        assert altered.returncode == 0, altered.stderr
        eventually(lambda: producers() == [], 60, f"producer {producer_id} expired", interval_s=0.5)
    finally:
        admin.close()
