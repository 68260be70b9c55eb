"""A metadata delta of many partitions is applied to the replicas in slices, one per loop turn: whatever else the
broker runs (its heartbeat to the controller first) gets the loop in between, and deltas still apply in order."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace

from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.broker.metadata_listener import MetadataDelta
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Partition, PartitionChange, RegisterBroker, RemoveTopic, Topic
from minikafka.storage.log_config import LogConfig

TOPIC_ID = uuid.UUID("11111111-2222-4333-8444-555555555555")
PARTITIONS = 60
SLICE = 10


def replay(image: MetadataImage, *records: object) -> MetadataImage:
    for record in records:
        image = image.replay(record, image.offset + 1)  # type: ignore[arg-type]
    return image


def with_topic(image: MetadataImage) -> MetadataImage:
    partitions = [Partition(TOPIC_ID, i, (0, 1), (0, 1), 0 if i % 2 else 1) for i in range(PARTITIONS)]
    return replay(image, Topic("big", TOPIC_ID), *partitions)


def manager_on(tmp_path: Path) -> tuple[ReplicaManager, SimpleNamespace]:
    config = SimpleNamespace(node_id=0, min_insync_replicas=1, replica_lag_time_max_ms=30000, set_keys=frozenset())
    image = replay(MetadataImage(), RegisterBroker(0, "a"), RegisterBroker(1, "b"))
    metadata = SimpleNamespace(image=image, offset=image.offset)
    logs = LogManager(tmp_path, lambda topic: LogConfig())
    manager = ReplicaManager(config, logs, metadata, None, lambda: 10, lambda: True)  # type: ignore[arg-type]
    manager.steps_per_slice = SLICE
    manager._ensure_fetcher = lambda leader_id: None  # type: ignore[method-assign]  # no peers in a unit test
    return manager, metadata


def publish(manager: ReplicaManager, metadata: SimpleNamespace, image: MetadataImage) -> None:
    metadata.image, metadata.offset = image, image.offset
    changed = tuple((topic.topic_id, index) for topic, index, _ in image.partitions())
    manager.on_metadata(MetadataDelta(image, changed, image.offset))


async def wait_for(condition, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_a_big_delta_leaves_the_loop_to_other_tasks_between_slices(tmp_path: Path) -> None:
    manager, metadata = manager_on(tmp_path)
    seen_by_other_task: list[int] = []

    async def heartbeat() -> None:
        seen_by_other_task.append(len(manager.replicas))

    other = asyncio.get_running_loop().create_task(heartbeat())
    publish(manager, metadata, with_topic(metadata.image))
    assert 0 < len(manager.replicas) < PARTITIONS  # the first slice at once, the rest later
    assert manager.applied_metadata_offset < metadata.offset  # what the heartbeat reports: not yet applied
    await other
    assert seen_by_other_task and seen_by_other_task[0] < PARTITIONS
    await wait_for(lambda: len(manager.replicas) == PARTITIONS)
    assert manager.applied_metadata_offset == metadata.offset
    leaders = [tp.partition for tp, replica in manager.replicas.items() if replica.leader is not None]
    assert sorted(leaders) == list(range(1, PARTITIONS, 2))
    await manager.stop()


async def test_the_delta_applied_callbacks_run_once_the_last_slice_is_applied(tmp_path: Path) -> None:
    manager, metadata = manager_on(tmp_path)
    seen: list[tuple[int, int]] = []  # replicas and applied offset when told
    manager.on_delta_applied(lambda: seen.append((len(manager.replicas), manager.applied_metadata_offset)))
    publish(manager, metadata, with_topic(metadata.image))
    assert seen == []  # only the first slice is in
    await wait_for(lambda: len(manager.replicas) == PARTITIONS)
    assert seen == [(PARTITIONS, metadata.offset)]
    await manager.stop()


async def test_a_later_delta_waits_for_the_earlier_one_to_be_applied_whole(tmp_path: Path) -> None:
    manager, metadata = manager_on(tmp_path)
    publish(manager, metadata, with_topic(metadata.image))
    publish(manager, metadata, replay(metadata.image, RemoveTopic(TOPIC_ID)))  # queued behind the creation
    await wait_for(lambda: manager.applied_metadata_offset == metadata.offset)
    assert manager.replicas == {} and manager.logs.get(TopicPartition("big", 0)) is None
    await manager.stop()


def test_without_a_running_loop_the_whole_delta_is_applied_at_once(tmp_path: Path) -> None:
    manager, metadata = manager_on(tmp_path)
    publish(manager, metadata, with_topic(metadata.image))
    assert len(manager.replicas) == PARTITIONS
    assert manager.applied_metadata_offset == metadata.offset


async def test_an_isr_change_leaves_parked_follower_fetches_parked_and_a_lost_leadership_wakes_them(
    tmp_path: Path,
) -> None:
    """As Kafka completes delayed fetches only of partitions that stopped being led here: a slice of ISR changes
    wakes no parked follower Fetch (each wake made a follower re-read its session's unsettled partitions)."""
    manager, metadata = manager_on(tmp_path)
    publish(manager, metadata, with_topic(metadata.image))
    await wait_for(lambda: manager.applied_metadata_offset == metadata.offset)
    parked = asyncio.get_running_loop().create_task(manager.wait_for_change(True, 60.0))
    await wait_for(lambda: bool(manager._parked[True]))
    # Odd partitions are led by broker 0 (this one), even ones by broker 1: each ISR shrinks to its leader.
    shrunk = [PartitionChange(TOPIC_ID, i, isr=(0,) if i % 2 else (1,)) for i in range(PARTITIONS)]
    publish(manager, metadata, replay(metadata.image, *shrunk))
    await wait_for(lambda: manager.applied_metadata_offset == metadata.offset)
    assert not parked.done()
    publish(manager, metadata, replay(metadata.image, PartitionChange(TOPIC_ID, 1, leader=1, isr=(1,))))
    await wait_for(parked.done)
    assert parked.result() is True
    await manager.stop()
