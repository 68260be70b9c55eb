"""Stray partitions (KIP-550 in KRaft form): deleted at start-up unless the metadata assigns them here."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.common.record_batch import Record, build_batch
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Partition, RegisterBroker, Topic
from minikafka.storage.log_config import LogConfig

TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")


def image_with(replicas: tuple[int, ...]) -> MetadataImage:
    image = MetadataImage()
    for offset, record in enumerate(
        [
            RegisterBroker(broker_id=1, incarnation_id="a"),
            Topic(name="orders", topic_id=TOPIC_ID),
            Partition(
                topic_id=TOPIC_ID,
                partition_id=0,
                replicas=replicas,
                isr=replicas,
                leader=replicas[0],
                leader_epoch=0,
                partition_epoch=0,
            ),
        ]
    ):
        image = image.replay(record, offset)
    return image


def test_topic_partition_names() -> None:
    assert TopicPartition.parse("my-topic-12") == TopicPartition("my-topic", 12)
    assert TopicPartition.parse("__cluster_metadata") is None
    assert TopicPartition.parse("x-y") is None


def test_strays_are_deleted_and_assigned_partitions_kept(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, lambda topic: LogConfig())
    kept = manager.get_or_create(TopicPartition("orders", 0), TOPIC_ID, 0)
    kept.append_as_leader(build_batch([Record(b"keep me")]), 1, 0)
    manager.get_or_create(TopicPartition("orders", 1), TOPIC_ID, 0)  # partition 1 does not exist
    manager.get_or_create(TopicPartition("old", 0), uuid.uuid4(), 0)  # a deleted topic's id
    (tmp_path / "junk-0").mkdir()  # no partition.metadata
    with capture_logs() as events:
        deleted = manager.delete_stray_partitions(image_with((1, 2, 3)), broker_id=1)
    assert sorted(deleted) == ["junk-0", "old-0", "orders-1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orders-0"]
    assert {e["partition"] for e in events if e["event"] == "stray_partition_deleted"} == set(deleted)
    assert manager.get(TopicPartition("orders", 0)).log_end_offset == 1


def test_reassigned_away_is_a_stray(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, lambda topic: LogConfig())
    manager.get_or_create(TopicPartition("orders", 0), TOPIC_ID, 0)
    assert manager.delete_stray_partitions(image_with((2, 3)), broker_id=1) == ["orders-0"]
    assert not list(tmp_path.iterdir())


def test_with_the_check_switched_off_strays_are_reported_and_stay(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, lambda topic: LogConfig())
    manager.get_or_create(TopicPartition("orders", 0), TOPIC_ID, 0).append_as_leader(
        build_batch([Record(b"stale")]), 1, 0
    )
    manager.get_or_create(TopicPartition("old", 0), uuid.uuid4(), 0)
    manager.close_all(1)
    with capture_logs() as events:
        kept = manager.delete_stray_partitions(image_with((2, 3)), broker_id=1, delete=False)
    assert sorted(kept) == ["old-0", "orders-0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old-0", "orders-0"]
    assert any((tmp_path / "orders-0").glob("*.log"))
    reported = {e["partition"]: e for e in events if e["event"] == "stray_partition_kept"}
    assert sorted(reported) == kept and reported["orders-0"]["topic_id"] == str(TOPIC_ID)
    assert "not a replica" in reported["orders-0"]["reason"]
    assert not [e for e in events if e["event"] == "stray_partition_deleted"]


@pytest.mark.parametrize("content", [b"\xff\xfe garbage", b"version: 0\ntopic garbled\n"])
def test_an_unreadable_partition_metadata_takes_the_log_dir_offline_and_deletes_nothing(
    tmp_path: Path, content: bytes
) -> None:
    manager = LogManager(tmp_path, lambda topic: LogConfig())
    log = manager.get_or_create(TopicPartition("orders", 0), TOPIC_ID, 0)
    log.append_as_leader(build_batch([Record(b"keep me")]), 1, 0)
    manager.close_all(1)
    (tmp_path / "orders-0" / "partition.metadata").write_bytes(content)
    with capture_logs() as events:
        deleted = manager.delete_stray_partitions(image_with((1, 2, 3)), broker_id=1)
    assert deleted == [] and manager.offline
    assert (tmp_path / "orders-0").is_dir() and any((tmp_path / "orders-0").glob("*.log"))
    (offline,) = [e for e in events if e["event"] == "log_dir_offline"]
    assert "partition.metadata" in offline["reason"]
    assert not [e for e in events if e["event"] == "stray_partition_deleted"]


def test_cleanup_applies_retention_bytes_but_never_at_or_above_the_high_watermark(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=300, retention_bytes=600, retention_ms=-1)
    manager = LogManager(tmp_path, lambda topic: config)
    log = manager.get_or_create(TopicPartition("orders", 0), TOPIC_ID, 0)
    for i in range(30):
        log.append_as_leader(build_batch([Record(b"value-%02d" % i)]), 1, i)
    segments = len(log.segments)
    moved: list[TopicPartition] = []
    manager.log_start_moved = moved.append  # the replica manager: followers' sessions must read it again
    assert manager.cleanup_logs(10**13) == 0 and moved == []  # HWM 0: nothing is deletable
    log.high_watermark = log.log_end_offset
    with capture_logs() as events:
        deleted = manager.cleanup_logs(10**13)
    assert deleted > 0 and len(log.segments) == segments - deleted
    assert moved == [TopicPartition("orders", 0)]
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert log.size_bytes - log.segments[0].size < 600 <= log.size_bytes + 300
    (event,) = [e for e in events if e["event"] == "log_segments_deleted"]
    assert event["log_start_offset"] == log.log_start_offset
