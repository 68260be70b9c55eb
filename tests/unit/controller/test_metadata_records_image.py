"""Metadata records round-trip through the proto; the image changes only by replay and snapshots replay equal."""

from __future__ import annotations

import uuid

import pytest

from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    NO_LEADER,
    BrokerRegistrationChange,
    BrokerStatus,
    Endpoint,
    FenceBroker,
    LeaderRecoveryState,
    Partition,
    PartitionChange,
    ProducerIds,
    RecordDecodeError,
    RegisterBroker,
    RegisterController,
    RemoveTopic,
    Topic,
    TopicConfig,
    UnfenceBroker,
    decode_record,
    encode_record,
)

TOPIC_ID = uuid.UUID("12345678-1234-4234-8234-123456789abc")

ALL_RECORDS = [
    RegisterBroker(1, "inc-1", (Endpoint("PLAINTEXT", "h", 9092), Endpoint("X", "h2", 1)), "rack-a"),
    RegisterBroker(2, "inc-2", (), "", broker_epoch=42, status=BrokerStatus.CONTROLLED_SHUTDOWN),
    FenceBroker(1, 7, "session_timeout"),
    UnfenceBroker(1, 7, "caught_up"),
    BrokerRegistrationChange(1, 7, in_controlled_shutdown=True),
    BrokerRegistrationChange(1, 7, in_controlled_shutdown=False),
    Topic("orders", TOPIC_ID),
    Partition(TOPIC_ID, 3, (1, 2, 3), (1, 2), 1, 4, 9, LeaderRecoveryState.RECOVERING),
    PartitionChange(TOPIC_ID, 3, leader=NO_LEADER, isr=(2,), reason="fence:session_timeout"),
    PartitionChange(TOPIC_ID, 3, leader=None, isr=None, leader_recovery_state=LeaderRecoveryState.RECOVERED),
    PartitionChange(TOPIC_ID, 0, isr=()),
    TopicConfig("orders", "min.insync.replicas", "2"),
    TopicConfig("orders", "min.insync.replicas", None),
    RemoveTopic(TOPIC_ID),
    Partition(TOPIC_ID, 0, (1, 2, 4, 3), (1, 2, 3), 1, removing_replicas=(3,), adding_replicas=(4,)),
    PartitionChange(TOPIC_ID, 0, replicas=(1, 2, 4), removing_replicas=(), adding_replicas=()),
    PartitionChange(TOPIC_ID, 0, replicas=(), adding_replicas=(5,)),
    ProducerIds(1, 7, 3000),
    RegisterController(101, "inc-c", (Endpoint("CONTROLLER_KAFKA", "127.0.1.1", 9094), Endpoint("SSL", "h", 1))),
]


@pytest.mark.parametrize("record", ALL_RECORDS, ids=lambda r: type(r).__name__)
def test_every_record_round_trips(record: object) -> None:
    assert decode_record(encode_record(record)) == record  # type: ignore[arg-type]


def test_empty_isr_change_is_not_no_isr_change() -> None:
    assert decode_record(encode_record(PartitionChange(TOPIC_ID, 0, isr=()))).isr == ()  # type: ignore[union-attr]
    assert decode_record(encode_record(PartitionChange(TOPIC_ID, 0))).isr is None  # type: ignore[union-attr]


@pytest.mark.parametrize("data", [b"\xff\xff\xff", b"", b"\x32\x03\x0a\x01\x00"])
def test_garbage_and_empty_records_are_rejected(data: bytes) -> None:
    with pytest.raises(RecordDecodeError):
        decode_record(data)


def test_broker_epoch_is_the_register_record_offset() -> None:
    image = MetadataImage().replay(RegisterBroker(1, "a"), 17)
    broker = image.broker(1)
    assert broker is not None and broker.broker_epoch == 17 and broker.fenced and image.offset == 17


def test_fence_and_unfence_of_another_epoch_change_nothing() -> None:
    image = MetadataImage().replay(RegisterBroker(1, "a"), 5).replay(UnfenceBroker(1, 5), 6)
    stale = image.replay(FenceBroker(1, 4), 7)
    assert stale.brokers == image.brokers and stale.offset == 7
    fenced = image.replay(FenceBroker(1, 5), 7)
    assert fenced.brokers[1].fenced


def test_controlled_shutdown_status() -> None:
    image = MetadataImage().replay(RegisterBroker(1, "a"), 0).replay(UnfenceBroker(1, 0), 1)
    shutting = image.replay(BrokerRegistrationChange(1, 0, True), 2)
    assert shutting.brokers[1].in_controlled_shutdown and not shutting.brokers[1].fenced
    assert shutting.replay(BrokerRegistrationChange(1, 0, False), 3).brokers[1].status is BrokerStatus.UNFENCED


def test_partition_change_bumps_partition_epoch_always_and_leader_epoch_only_on_leader_change() -> None:
    image = MetadataImage().replay(Topic("t", TOPIC_ID), 0).replay(Partition(TOPIC_ID, 0, (1, 2), (1, 2), 1), 1)
    shrunk = image.replay(PartitionChange(TOPIC_ID, 0, isr=(1,)), 2)
    p = shrunk.partition(TOPIC_ID, 0)
    assert p is not None and (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1,), 1, 0, 1)
    moved = shrunk.replay(PartitionChange(TOPIC_ID, 0, leader=2, isr=(2,)), 3)
    q = moved.partition(TOPIC_ID, 0)
    assert q is not None and (q.isr, q.leader, q.leader_epoch, q.partition_epoch) == ((2,), 2, 1, 2)
    same_leader = moved.replay(PartitionChange(TOPIC_ID, 0, leader=2), 4).partition(TOPIC_ID, 0)
    assert same_leader is not None and same_leader.leader_epoch == 1 and same_leader.partition_epoch == 3
    # the old image is untouched: replay returns a new one
    original = image.partition(TOPIC_ID, 0)
    assert original is not None and original.isr == (1, 2) and original.partition_epoch == 0


def test_change_to_unknown_partition_is_ignored() -> None:
    image = MetadataImage().replay(PartitionChange(TOPIC_ID, 0, isr=(1,)), 0)
    assert not image.topics_by_id and image.offset == 0


def test_topic_configs_set_and_delete() -> None:
    image = MetadataImage().replay(TopicConfig("t", "min.insync.replicas", "2"), 0)
    assert image.min_insync_replicas("t", 1) == 2
    deleted = image.replay(TopicConfig("t", "min.insync.replicas", None), 1)
    assert deleted.min_insync_replicas("t", 1) == 1 and not deleted.topic_configs


def test_remove_topic_drops_its_partitions_and_configs_and_the_name_can_be_reused() -> None:
    image = MetadataImage()
    new_id = uuid.UUID("87654321-4321-4321-8321-cba987654321")
    records = [
        Topic("orders", TOPIC_ID),
        Partition(TOPIC_ID, 0, (1, 2), (1, 2), 1),
        TopicConfig("orders", "min.insync.replicas", "2"),
        RemoveTopic(TOPIC_ID),
    ]
    for offset, record in enumerate(records):
        image = image.replay(record, offset)
    assert not image.topics_by_name and not image.topics_by_id and not image.topic_configs
    assert image.partition(TOPIC_ID, 0) is None and image.offset == 3
    assert image.replay(RemoveTopic(TOPIC_ID), 4).topics_by_id == image.topics_by_id  # unknown id: nothing
    again = image.replay(Topic("orders", new_id), 4)
    assert again.topics_by_name["orders"].topic_id == new_id and not again.topics_by_name["orders"].partitions
    assert again.min_insync_replicas("orders", 1) == 1


def test_snapshot_replays_to_the_same_image(harness) -> None:  # type: ignore[no-untyped-def]
    for broker_id in (1, 2, 3):
        harness.start_broker(broker_id)
    topic_id = harness.create_topic("t", partitions=3, rf=3, **{"segment.bytes": "1024"})
    harness.advance(2000)
    harness.heartbeat(1, harness.epoch(1))
    harness.tick()  # fences 2 and 3: elections and ISR shrinks
    assert harness.partition(topic_id).partition_epoch > 0
    image = harness.image
    records = [decode_record(encode_record(r)) for r in image.to_records()]
    assert MetadataImage.from_records(records, image.offset) == image


def test_a_controller_registration_replaces_the_last_and_survives_a_snapshot() -> None:
    first = RegisterController(101, "first", (Endpoint("CONTROLLER_KAFKA", "127.0.1.1", 9094),))
    again = RegisterController(101, "second", (Endpoint("CONTROLLER_KAFKA", "127.0.1.1", 9096),))
    other = RegisterController(102, "other", ())
    image = MetadataImage().replay(first, 3).replay(other, 4).replay(again, 9)
    assert dict(image.controllers) == {101: again, 102: other}
    records = [decode_record(encode_record(r)) for r in image.to_records()]
    assert MetadataImage.from_records(records, image.offset) == image
