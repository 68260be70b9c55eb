"""A topic deleted (or a replica moved off) while the broker runs: the replica stops, its waiters fail, and its log
is renamed `-delete` then removed; a topic re-created under the same name starts from an empty log."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace

from structlog.testing import capture_logs

from minikafka.broker.log_manager import DELETE_SUFFIX, LogManager, TopicPartition
from minikafka.broker.metadata_listener import MetadataDelta
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Partition, RegisterBroker, RemoveTopic, Topic
from minikafka.storage.log_config import LogConfig

TP = TopicPartition("orders", 0)
OLD_ID = uuid.UUID("11111111-2222-4333-8444-555555555555")
NEW_ID = uuid.UUID("66666666-7777-4888-8999-000000000000")


def replay(image: MetadataImage, *records: object) -> MetadataImage:
    for record in records:
        image = image.replay(record, image.offset + 1)  # type: ignore[arg-type]
    return image


def created(image: MetadataImage, topic_id: uuid.UUID, replicas: tuple[int, ...] = (0, 1)) -> MetadataImage:
    return replay(image, Topic("orders", topic_id), Partition(topic_id, 0, replicas, replicas, replicas[0]))


def manager_on(tmp_path: Path) -> tuple[ReplicaManager, SimpleNamespace]:
    config = SimpleNamespace(node_id=0, min_insync_replicas=1, replica_lag_time_max_ms=30000, set_keys=frozenset())
    metadata = SimpleNamespace(image=replay(MetadataImage(), RegisterBroker(0, "a"), RegisterBroker(1, "b")))
    logs = LogManager(tmp_path, lambda topic: LogConfig())
    manager = ReplicaManager(config, logs, metadata, None, lambda: 10, lambda: True)  # type: ignore[arg-type]
    return manager, metadata


def publish(manager: ReplicaManager, metadata: SimpleNamespace, image: MetadataImage) -> None:
    metadata.image = image
    changed = tuple((topic.topic_id, index) for topic, index, _ in image.partitions())
    manager.on_metadata(MetadataDelta(image, changed, image.offset))


async def test_deleted_topic_stops_the_replica_and_deletes_its_log(tmp_path: Path) -> None:
    manager, metadata = manager_on(tmp_path)
    publish(manager, metadata, created(metadata.image, OLD_ID))
    waiting = manager.produce(TP, build_batch([Record(b"old")]), -1, 30000)  # acks=all: waits for broker 1
    assert not waiting.done() and (tmp_path / "orders-0").exists()
    with capture_logs() as events:
        publish(manager, metadata, replay(metadata.image, RemoveTopic(OLD_ID)))
    assert TP not in manager.replicas and manager.logs.get(TP) is None
    assert waiting.result().error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert [p.name for p in tmp_path.iterdir()] == []  # renamed, then removed
    deleted = [e for e in events if e["event"] == "log_deleted"]
    assert [(e["partition"], e["topic_id"], e["reason"]) for e in deleted] == [
        ("orders-0", str(OLD_ID), "topic deleted")
    ]


async def test_topic_re_created_under_the_same_name_in_one_update_starts_empty(tmp_path: Path) -> None:
    manager, metadata = manager_on(tmp_path)
    publish(manager, metadata, created(metadata.image, OLD_ID, replicas=(0,)))
    assert manager.produce(TP, build_batch([Record(b"old")]), 1, 30000).result().error == ErrorCode.NONE
    # Deleted and re-created between two updates this broker saw: only the new topic id is in the image.
    publish(manager, metadata, created(replay(metadata.image, RemoveTopic(OLD_ID)), NEW_ID, replicas=(0,)))
    replica = manager.replicas[TP]
    assert replica.topic_id == NEW_ID and replica.log.log_end_offset == 0
    assert (tmp_path / "orders-0" / "partition.metadata").read_text().count(str(NEW_ID)) == 1


async def test_replica_moved_off_this_broker_deletes_its_log(tmp_path: Path) -> None:
    manager, metadata = manager_on(tmp_path)
    publish(manager, metadata, created(metadata.image, OLD_ID, replicas=(1, 0)))
    assert (tmp_path / "orders-0").exists()
    publish(manager, metadata, replay(metadata.image, Partition(OLD_ID, 0, (1,), (1,), 1, 1, 1)))
    assert TP not in manager.replicas and not (tmp_path / "orders-0").exists()


def test_leftover_delete_directories_are_removed_and_never_opened(tmp_path: Path) -> None:
    leftover = tmp_path / f"orders-0.{uuid.uuid4().hex}{DELETE_SUFFIX}"
    leftover.mkdir()
    (leftover / "partition.metadata").write_text(f"version: 0\ntopic_id: {OLD_ID}\n")
    manager = LogManager(tmp_path, lambda topic: LogConfig())
    assert manager.partition_dirs() == []
    manager.delete_stray_partitions(MetadataImage(), broker_id=0)
    assert not leftover.exists()
