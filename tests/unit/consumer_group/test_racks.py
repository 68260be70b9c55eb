"""Member racks (ConsumerGroupHeartbeat RackId, a classic member's client.rack) reach the assignors with the racks
of partitions' replicas, and are stored with the member."""

from __future__ import annotations

import uuid

from minikafka.broker.consumer_group import shell
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest
from minikafka.broker.consumer_group.model import ConsumerGroupConfig, TopicPartition
from minikafka.broker.consumer_group.persistence import ConsumerGroupRecord, load_consumer_groups
from minikafka.broker.group.records import decode, encode_key, encode_value

TOPICS = {"t": 4}
IDS = {"t": uuid.UUID(int=3)}
RACKS = {TopicPartition("t", p): frozenset({"a" if p % 2 == 0 else "b"}) for p in range(4)}
CONFIG = ConsumerGroupConfig()


def test_members_in_racks_get_the_partitions_with_replicas_in_their_rack_and_keep_their_rack_stored() -> None:
    records: list[ConsumerGroupRecord] = []
    group = None
    for member_id, rack in (("m1", "b"), ("m2", "a")):
        join = HeartbeatRequest(member_id, 0, 30000, ("t",), "range", frozenset(), rack_id=rack)
        step = shell.heartbeat(group, None, "g", join, TOPICS, IDS, CONFIG, 0, 0, RACKS)
        group = step.group
        records += [r for r in step.records if isinstance(r, ConsumerGroupRecord)]
    assert group is not None
    assert group.target["m1"] == frozenset({TopicPartition("t", 1), TopicPartition("t", 3)})
    assert group.target["m2"] == frozenset({TopicPartition("t", 0), TopicPartition("t", 2)})
    decoded = [decode(encode_key(r.key), encode_value(r.value)) for r in records]
    replayed = load_consumer_groups([ConsumerGroupRecord(d.key, d.value) for d in decoded], {IDS["t"]: "t"}, 0)  # type: ignore[arg-type]
    assert {m.member_id: m.rack_id for m in replayed["g"].members.values()} == {"m1": "b", "m2": "a"}
