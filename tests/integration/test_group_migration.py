"""Online migration of a group between the classic and the consumer protocol, with real processes: confluent-kafka
consumers of a classic group are replaced one by one by consumers of `group.protocol=consumer` while a producer
writes, so the group is first classic, then mixed (its classic members served by the consumer group), then a
consumer group; then they roll back and it ends classic. Committed offsets carry over: no record is skipped, and
none is read twice by one member within one assignment."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster
from group_topics import PARTITIONS, QUICK_GROUP_TIMINGS, create_topic, poll_checked

from minikafka.deploy.local_cluster import Cluster

confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("group-migration"), 1, 3, **QUICK_GROUP_TIMINGS) as started:
        yield started


class Member:
    """One consumer of either protocol. Each assignment it is given is a new period: within one, it must not read
    an offset twice. It commits what it read before giving partitions up."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, protocol: str, name: str, instance: str | None = None
    ) -> None:
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        if instance is not None:
            config["group.instance.id"] = instance
        if protocol == "classic":
            config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        self.name = name
        self.consumer = confluent_kafka.Consumer(config)
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost)
        self.period = 0
        self.read: list[tuple[str, int, int, str]] = []  # (member, period, partition, offset) per record
        self.values: list[str] = []
        self.pending: dict[int, int] = {}  # partition -> next offset, not committed yet

    def _assigned(self, consumer: Any, partitions: list[Any]) -> None:
        self.period += 1

    def _revoked(self, consumer: Any, partitions: list[Any]) -> None:
        self.commit()
        self.period += 1

    def _lost(self, consumer: Any, partitions: list[Any]) -> None:
        self.pending.clear()
        self.period += 1

    def poll(self) -> None:
        message = self.consumer.poll(0.02)
        if message is None or message.error() is not None:
            return
        self.read.append((self.name, self.period, message.partition(), message.offset()))
        self.values.append(message.value().decode())
        self.pending[message.partition()] = message.offset() + 1

    def commit(self) -> None:
        if not self.pending:
            return
        offsets = [confluent_kafka.TopicPartition(self.topic, p, o) for p, o in self.pending.items()]
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
            self.pending.clear()
        except confluent_kafka.KafkaException:
            pass  # fenced or rebalancing: the next owner reads those records again, in its own period

    topic = ""

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.commit()
        self.consumer.close()


class Producer(threading.Thread):
    """Writes numbered records, round-robin over the partitions, until stopped; `acked` are those stored."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.topic = topic
        self.acked: list[str] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        sent = 0
        while not self.stopped.wait(0.01):  # about 100 records a second
            value = f"record-{sent}"
            self.producer.produce(
                self.topic, value=value.encode(), partition=sent % PARTITIONS, on_delivery=self._delivered
            )
            self.producer.poll(0)
            sent += 1
        self.producer.flush(30)

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.acked.append(message.value().decode())


def describe(cluster: Cluster, group: str) -> dict | None:
    result = minikafka(
        "consumer-groups", "--bootstrap-server", cluster.kafka_bootstrap_servers, "--describe", group, "--json"
    )
    return json.loads(result.stdout) if result.returncode == 0 else None


def roll(members: list[Member], every: list[Member], make: Any, cluster: Cluster, group: str, last: str) -> None:
    """Replace each member in turn by one `make` creates, waiting for the group to settle after each."""
    for index in range(len(members)):
        members[index].close()
        members[index] = make(index)
        every.append(members[index])
        protocol = last if index == len(members) - 1 else None
        eventually(
            lambda protocol=protocol: poll_checked(members) and settled_any(members, cluster, group, protocol),
            90,
            f"the group settled after member {index} rolled",
            interval_s=0,
        )


def settled_any(members: list[Member], cluster: Cluster, group: str, protocol: str | None) -> bool:
    held = [m.partitions() for m in members]
    if not all(held) or set().union(*held) != set(range(PARTITIONS)):
        return False
    if protocol is None:
        return True
    described = describe(cluster, group)
    return described is not None and described.get("protocol") == protocol and described["state"] == "Stable"


def events_of(cluster: Cluster, name: str, group: str, key: str = "group_id") -> list[dict[str, Any]]:
    """The coordinators' events `name` of `group`, in time order."""
    found = []
    for broker in cluster.brokers:
        for line in broker.events_path.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == name and event.get(key) == group:
                found.append(event)
    return sorted(found, key=lambda event: event["ts"])


def conversions(cluster: Cluster, group: str) -> list[tuple[str, str, int]]:
    """The coordinators' group_protocol_converted events of `group`, in time order."""
    return [
        (e["from_protocol"], e["to_protocol"], e["members"])
        for e in events_of(cluster, "group_protocol_converted", group)
    ]


def test_classic_members_roll_to_the_consumer_protocol_and_back_without_skipping_a_record(cluster: Cluster) -> None:
    topic, group = "migrating-orders", "migrating-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    Member.topic = topic

    def classic(index: int) -> Member:
        return Member(bootstrap, group, topic, "classic", f"classic-{len(every)}")

    def consumer(index: int) -> Member:
        return Member(bootstrap, group, topic, "consumer", f"consumer-{len(every)}")

    every: list[Member] = []
    members = [classic(i) for i in range(3)]
    every.extend(members)
    producer = Producer(bootstrap, topic)
    try:
        eventually(
            lambda: poll_checked(members) and settled_any(members, cluster, group, "range"),
            90,
            "a classic group of three",
            interval_s=0,
        )
        producer.start()
        roll(members, every, consumer, cluster, group, "uniform")  # upgraded: a consumer group of three
        converted = describe(cluster, group)
        roll(members, every, classic, cluster, group, "range")  # downgraded: a classic group again
        producer.stopped.set()
        producer.join(60)
        acked = set(producer.acked)
        assert len(acked) > 100
        eventually(
            lambda: poll_checked(members) and set().union(*(m.values for m in every)) >= acked,
            60,
            "every acknowledged record read",
            interval_s=0,
        )
    finally:
        producer.stopped.set()
        for member in members:
            member.close()
    assert converted is not None and converted["protocol"] == "uniform" and len(converted["members"]) == 3
    # Upgraded when the first consumer-protocol member joined the two classic ones; downgraded when the last
    # consumer-protocol member left the two classic ones.
    assert conversions(cluster, group) == [("classic", "consumer", 2), ("consumer", "classic", 2)]
    reads = [r for m in every for r in m.read]
    within = [(member, period, partition, offset) for member, period, partition, offset in reads]
    assert len(within) == len(set(within)), "a member read a record twice within one assignment"
    once = {(partition, offset) for _, _, partition, offset in reads}
    print(f"records {len(acked)}, reads {len(reads)}, read again after a move {len(reads) - len(once)}")


def test_a_static_member_restarted_with_the_classic_protocol_takes_its_place_and_the_group_is_classic_at_once(
    cluster: Cluster,
) -> None:
    """A static consumer-protocol member (group.instance.id) closes, leaving its place at epoch -2; its next
    instance, a classic consumer with the same instance id, takes the place: the group becomes a classic group,
    Stable, without a rebalance, and the new instance holds every partition."""
    topic, group = "static-orders", "static-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    Member.topic = topic
    first = Member(bootstrap, group, topic, "consumer", "consumer-s", instance="s")
    try:
        eventually(
            lambda: poll_checked([first]) and first.partitions() == set(range(PARTITIONS)), 60, "the first instance"
        )
    finally:
        first.close()
    second = Member(bootstrap, group, topic, "classic", "classic-s", instance="s")
    try:
        eventually(
            lambda: poll_checked([second]) and settled_any([second], cluster, group, "range"),
            60,
            "the classic instance holding every partition of a Stable classic group",
            interval_s=0,
        )
    finally:
        second.close()
    assert conversions(cluster, group) == [("consumer", "classic", 1)]
    assert events_of(cluster, "group_rebalance_started", group, key="group") == []
