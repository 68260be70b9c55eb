"""The racks of each partition's replicas, as Kafka's SubscribedTopicDescriber computes them for the server-side
assignors: from the metadata image, each replica's broker registration's rack (`broker.rack`, sent when the broker
registers), for every partition of every topic; a fenced broker's registration still counts, a broker without a
rack adds none."""

from __future__ import annotations

import asyncio
import uuid

from minikafka.broker.config import BrokerConfig
from minikafka.broker.consumer_group import shell
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest
from minikafka.broker.consumer_group.model import ConsumerGroupConfig, TopicPartition
from minikafka.broker.consumer_group.replica_racks import partition_racks
from minikafka.broker.lifecycle import SendRegistration
from minikafka.broker.lifecycle_manager import LifecycleManager
from minikafka.common.config import load_config
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import FenceBroker, Partition, RegisterBroker, Topic
from tests.unit.broker.test_lifecycle_manager import BROKER

T, U = uuid.UUID(int=1), uuid.UUID(int=2)


def image_of(*records: object) -> MetadataImage:
    image = MetadataImage()
    for record in records:
        image = image.replay(record, image.offset + 1)  # type: ignore[arg-type]
    return image


def racked_cluster() -> MetadataImage:
    return image_of(
        RegisterBroker(1, "a", rack="rack-a"),
        RegisterBroker(2, "b", rack="rack-b"),
        RegisterBroker(3, "c", rack="rack-c"),
        RegisterBroker(4, "d"),  # no broker.rack
        FenceBroker(3, 3),  # fenced: its registration, and its rack, stay in the image
        Topic("t", T),
        *(Partition(T, p, replicas, replicas, replicas[0]) for p, replicas in enumerate([(1, 2), (2, 3), (3, 4)])),
        Topic("u", U),
        Partition(U, 0, (4,), (4,), 4),
    )


def test_every_partition_gets_the_racks_of_its_replicas_brokers() -> None:
    assert partition_racks(racked_cluster()) == {
        TopicPartition("t", 0): frozenset({"rack-a", "rack-b"}),
        TopicPartition("t", 1): frozenset({"rack-b", "rack-c"}),
        TopicPartition("t", 2): frozenset({"rack-c"}),
        TopicPartition("u", 0): frozenset(),
    }
    assert partition_racks(image_of(RegisterBroker(1, "a"), Topic("t", T), Partition(T, 0, (1,), (1,), 1))) == {}


def test_the_assignors_put_members_on_the_partitions_of_their_racks() -> None:
    racks = partition_racks(racked_cluster())
    group = None
    for member_id, rack in (("m1", "rack-c"), ("m2", "rack-a")):
        join = HeartbeatRequest(member_id, 0, 30000, ("t",), "range", frozenset(), rack_id=rack)
        step = shell.heartbeat(group, None, "g", join, {"t": 3, "u": 1}, {"t": T}, ConsumerGroupConfig(), 0, 0, racks)
        group = step.group
    assert group is not None
    assert TopicPartition("t", 0) in group.target["m2"] and TopicPartition("t", 2) in group.target["m1"]


def test_a_broker_registers_with_its_broker_rack() -> None:
    async def requests() -> list[str]:
        racks = []
        for properties in (BROKER, {**BROKER, "broker.rack": "rack-a"}):
            manager = LifecycleManager(load_config(BrokerConfig, properties), lambda: 0, on_exit=lambda: None)
            racks.append(manager._registration_request(SendRegistration(1, "incarnation")).rack)
        return racks

    assert asyncio.run(requests()) == ["", "rack-a"]
