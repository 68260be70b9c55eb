"""Consumer groups through the Kafka listener, with unmodified clients against a 3+3 cluster of real processes:
members split a topic's partitions, commit, and a later member resumes at the committed offsets."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from cluster_fixtures import eventually, running_cluster

from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")

PARTITIONS = 4
GROUP_OVERRIDES = {"group.initial.rebalance.delay.ms": "200", "group.min.session.timeout.ms": "1000"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("consumer-groups"), 3, 3, **GROUP_OVERRIDES) as started:
        yield started


def create_topic(cluster: Cluster, name: str) -> None:
    with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
        admin.create_topic(name, partitions=PARTITIONS, replication_factor=3, configs={"min.insync.replicas": "2"})


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def confluent_member(bootstrap: str, group: str, topic: str) -> confluent_kafka.Consumer:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "heartbeat.interval.ms": 300,
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([topic])
    return consumer


def poll_into(consumer: confluent_kafka.Consumer, seen: list[str], timeout_s: float = 0.1) -> None:
    message = consumer.poll(timeout_s)
    if message is not None and message.error() is None:
        seen.append(message.value().decode())


def commit_quietly(consumer: confluent_kafka.Consumer) -> bool:
    """A commit during a rebalance is refused (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION): the member retries."""
    try:
        consumer.commit(asynchronous=False)
    except confluent_kafka.KafkaException as error:
        return error.args[0].code() == confluent_kafka.KafkaError._NO_OFFSET
    return True


def test_confluent_kafka_members_split_partitions_and_a_third_resumes_at_committed_offsets(cluster: Cluster) -> None:
    topic, group = "group-orders", "orders-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    members = [confluent_member(bootstrap, group, topic) for _ in range(2)]
    seen: list[list[str]] = [[], []]
    try:

        def split() -> bool:
            for member, values in zip(members, seen, strict=True):
                poll_into(member, values)
            return all(len(member.assignment()) == PARTITIONS // 2 for member in members)

        eventually(split, 60, "two members with two partitions each", interval_s=0)
        first = [f"first-{i}" for i in range(200)]
        produce(bootstrap, topic, first)

        def all_read() -> bool:
            for member, values in zip(members, seen, strict=True):
                poll_into(member, values)
            return set(seen[0]) | set(seen[1]) >= set(first)

        eventually(all_read, 60, "every record read by the group", interval_s=0)
        assert seen[0] and seen[1] and not set(seen[0]) & set(seen[1])  # each partition read by one member
        assert {p.partition for m in members for p in m.assignment()} == set(range(PARTITIONS))
        eventually(lambda: all(commit_quietly(m) for m in members), 30, "both members committed", interval_s=0.2)
    finally:
        for member in members:
            member.close()
    later = [f"later-{i}" for i in range(40)]
    produce(bootstrap, topic, later)
    third = confluent_member(bootstrap, group, topic)
    resumed: list[str] = []
    try:

        def read_later() -> bool:
            poll_into(third, resumed)
            return len(resumed) >= len(later)

        eventually(read_later, 60, "the third member read the later records", interval_s=0)
        deadline = time.monotonic() + 1  # anything from before the commit would arrive with or before these
        while time.monotonic() < deadline:
            poll_into(third, resumed)
        assert sorted(resumed) == sorted(later)
    finally:
        third.close()
