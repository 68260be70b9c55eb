"""The coordinator runtime the group and transaction coordinators share, over a real partition log and a replica
manager stand-in: a shard loads when this broker leads the partition, unloads (answering its held requests
NOT_COORDINATOR) when it stops, and a load a newer leader epoch superseded puts nothing in place."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from structlog.testing import capture_logs

from minikafka.broker.coordinator_runtime.internal_topic import InternalTopicSpec
from minikafka.broker.coordinator_runtime.runtime import CoordinatorRuntime, CoordinatorShard, RuntimeConfig
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

TOPIC = "__test_state"
TP = TopicPartition(TOPIC, 0)
KEY = "k"  # the topic has one partition: every key lives in partition 0


@dataclass
class StateShard(CoordinatorShard):
    values: list[str] = field(default_factory=list)

    def unloaded_counts(self) -> Mapping[str, int]:
        return {"values": len(self.values)}


class RecordingReplay:
    """Keeps what the log feeds it; `on_records` runs on each batch (to change leadership mid-load)."""

    def __init__(self, shard: StateShard, on_records: Any = None) -> None:
        self.shard = shard
        self.seen: list[tuple[str, int | None, str]] = []
        self.installed = False
        self._on_records = on_records

    def records(self, producer_id: int | None, records: Iterator[Record]) -> None:
        for record in records:
            self.seen.append(("record", producer_id, (record.value or b"").decode()))
        if self._on_records is not None:
            self._on_records()

    def end_transaction(self, producer_id: int, committed: bool) -> None:
        self.seen.append(("end", producer_id, "commit" if committed else "abort"))

    def install(self) -> Mapping[str, int]:
        self.installed = True
        self.shard.values = [value for kind, _, value in self.seen if kind == "record"]
        return {"values": len(self.shard.values)}


def log_of(tmp_path: Path, values: list[str]) -> PartitionLog:
    log = PartitionLog.open(tmp_path / "__test_state-0", LogConfig(), 0)
    for value in values:
        log.append_as_leader(build_batch([Record(value.encode(), b"k", 0)]), 3, 0)
    return log


def leading_manager(log: PartitionLog, leader_epoch: int = 3) -> Any:
    topic = SimpleNamespace(partitions={0: SimpleNamespace(leader=1)})
    replica = SimpleNamespace(leader=object(), leader_epoch=leader_epoch, log=log)
    delta_applied: list[Any] = []  # what a started runtime asked to be told after each metadata delta
    return SimpleNamespace(
        metadata=SimpleNamespace(image=SimpleNamespace(topics_by_name={TOPIC: topic})),
        replicas={TP: replica},
        serving=lambda: True,
        delta_applied=delta_applied,
        on_delta_applied=delta_applied.append,
    )


class Harness:
    def __init__(self, manager: Any, on_records: Any = None, chunk_bytes: int = 1048576) -> None:
        self.manager = manager
        self.replays: list[RecordingReplay] = []
        self._on_records = on_records
        spec = InternalTopicSpec(TOPIC, 1, 1, {}, "test_topic_creation_failed")
        config = RuntimeConfig(spec, "test_coordinator", 5000, load_chunk_bytes=chunk_bytes)
        self.runtime: CoordinatorRuntime[StateShard, str] = CoordinatorRuntime(
            manager, SimpleNamespace(), StateShard, self._replay, config
        )

    def _replay(self, shard: StateShard) -> RecordingReplay:
        replay = RecordingReplay(shard, self._on_records)
        self.replays.append(replay)
        return replay

    async def loaded(self) -> StateShard:
        for _ in range(1000):  # a small log loads in a few turns of the loop
            shard = self.runtime.shard_for(KEY)
            if not isinstance(shard, ErrorCode):
                return shard
            assert shard == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            await asyncio.sleep(0)
        raise AssertionError("the partition never loaded")


def events_named(events: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == f"test_coordinator_{suffix}"]


async def test_a_led_partition_loads_its_log_in_order_and_answers_load_in_progress_meanwhile(tmp_path: Path) -> None:
    log = log_of(tmp_path, ["a", "b"])
    transactional = build_batch([Record(b"t", b"k", 0)], 0, -1, 7, 0, 0, TRANSACTIONAL_FLAG)
    log.append_as_leader(transactional, 3, 0, from_coordinator=True)
    log.append_marker_as_leader(EndTxnMarker(7, 0, True, 3), 3, 0)
    harness = Harness(leading_manager(log))
    with capture_logs() as events:
        assert harness.runtime.shard_for(KEY) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        shard = await harness.loaded()
    log.close()
    (replay,) = harness.replays
    assert replay.seen == [("record", None, "a"), ("record", None, "b"), ("record", 7, "t"), ("end", 7, "commit")]
    assert shard.loaded and shard.leader_epoch == 3 and shard.values == ["a", "b", "t"]
    (loaded,) = events_named(events, "loaded")
    assert (loaded["partition"], loaded["leader_epoch"], loaded["values"]) == (0, 3, 3)
    assert "load_ms" in loaded


async def test_losing_leadership_unloads_and_answers_held_requests_not_coordinator(tmp_path: Path) -> None:
    log = log_of(tmp_path, ["a"])
    harness = Harness(leading_manager(log))
    await harness.loaded()
    held: list[int] = []

    def failure(request_id: int, error: ErrorCode) -> str:
        return f"{request_id}:{error.name}"

    answer = harness.runtime.run(KEY, failure, lambda _, request_id: held.append(request_id))
    assert not answer.done()  # the operation answered nothing: the request waits, as for an append
    harness.manager.replicas[TP].leader = None
    with capture_logs() as events:
        assert harness.runtime.shard_for(KEY) == ErrorCode.NOT_COORDINATOR
    log.close()
    assert answer.result() == f"{held[0]}:NOT_COORDINATOR"
    (unloaded,) = events_named(events, "unloaded")
    assert (unloaded["leader_epoch"], unloaded["values"], unloaded["reason"]) == (3, 1, "no longer the leader")
    assert harness.runtime.loaded_shards() == []


async def test_a_load_superseded_by_a_newer_leader_epoch_puts_nothing_in_place(tmp_path: Path) -> None:
    log = log_of(tmp_path, ["a", "b", "c"])
    manager = leading_manager(log)
    harness: Harness

    def new_leader_epoch_during_the_first_load() -> None:
        if len(harness.replays) == 1:  # the first batch of the first load: the broker leads in epoch 4 now
            manager.replicas[TP].leader_epoch = 4
            harness.runtime.sync(0)

    # One batch a read, so the load yields between batches as a long log's does.
    harness = Harness(manager, new_leader_epoch_during_the_first_load, chunk_bytes=1)
    with capture_logs() as events:
        assert harness.runtime.shard_for(KEY) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        shard = await harness.loaded()
    log.close()
    superseded, current = harness.replays
    assert superseded.seen == [("record", None, "a")] and not superseded.installed  # it stopped reading
    assert [value for _, _, value in current.seen] == ["a", "b", "c"] and current.installed
    assert shard.leader_epoch == 4 and shard.values == ["a", "b", "c"]
    (unloaded,) = events_named(events, "unloaded")
    assert (unloaded["leader_epoch"], unloaded["reason"]) == (3, "new leader epoch 4")
    assert [e["leader_epoch"] for e in events_named(events, "loaded")] == [4]


async def test_an_applied_delta_starts_loading_a_newly_led_partition_without_waiting_for_a_tick(
    tmp_path: Path,
) -> None:
    """As Kafka's coordinators load on election: the first request after a leadership change should find the
    partition loading or loaded, not unknown until the next 100 ms tick."""
    log = log_of(tmp_path, ["a"])
    manager = leading_manager(log)
    harness = Harness(manager)
    ticks: list[None] = []
    harness.runtime.start(lambda: ticks.append(None))
    (after_delta,) = manager.delta_applied
    started = asyncio.get_running_loop().time()
    after_delta()  # the replica manager has applied a delta: this broker leads partition 0
    for _ in range(1000):
        if harness.runtime.loaded_shards():
            break
        await asyncio.sleep(0)
    loaded_after_s = asyncio.get_running_loop().time() - started
    await harness.runtime.stop()
    log.close()
    (shard,) = harness.runtime.loaded_shards()
    assert shard.values == ["a"] and not ticks and loaded_after_s < 0.1


async def test_a_stopped_runtime_loads_nothing_after_a_delta(tmp_path: Path) -> None:
    log = log_of(tmp_path, ["a"])
    manager = leading_manager(log)
    harness = Harness(manager)
    harness.runtime.start(lambda: None)
    await harness.runtime.stop()
    manager.delta_applied[0]()
    await asyncio.sleep(0)
    log.close()
    assert harness.runtime.loaded_shards() == [] and not harness.replays


async def test_a_failing_sync_after_a_delta_is_logged_and_not_raised_into_the_replica_manager(tmp_path: Path) -> None:
    log = log_of(tmp_path, [])
    manager = leading_manager(log)
    manager.replicas = None  # a bug stand-in: syncing now raises
    harness = Harness(manager)
    harness.runtime.start(lambda: None)
    with capture_logs() as events:
        manager.delta_applied[0]()
    await harness.runtime.stop()
    log.close()
    assert [e["event"] for e in events] == ["test_coordinator_sync_failed"]
