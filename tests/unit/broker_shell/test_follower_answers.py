"""A follower applies each partition's Fetch answer through the replica manager and the partition's core: answers
to an older fetch state are dropped, a failing append is logged once (before, a stuck follower logged the same
warning about ten times a second), and the follower's HWM is the leader's, capped at its log end."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from structlog.testing import capture_logs

from minikafka.broker import replica_manager
from minikafka.broker.fetch_session import PartitionFetchState
from minikafka.broker.fetcher import FollowerAnswer
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProducePurgatory
from minikafka.broker.replica.partition import PartitionMetadata, make_follower
from minikafka.broker.replica_manager import Replica, ReplicaManager
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch, iter_batches, set_base_offset, set_partition_leader_epoch
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

TP = TopicPartition("orders", 0)
TOPIC_ID = uuid.uuid4()


def following_manager(tmp_path: Path) -> ReplicaManager:
    config = SimpleNamespace(node_id=1, replica_fetch_max_bytes=1 << 20)
    manager = ReplicaManager(config, None, None, None, lambda: 11, lambda: True)  # type: ignore[arg-type]
    role = make_follower("orders-0", 1, PartitionMetadata((0, 1), (0, 1), 0, 3, 3), 0, 0).state
    log = PartitionLog.open(tmp_path / "orders-0", LogConfig(), 0)
    manager.replicas[TP] = Replica(TP, TOPIC_ID, log, role, ProducePurgatory("orders-0"))
    return manager


def fetched(manager: ReplicaManager) -> list[PartitionFetchState]:
    """What the follower fetches from broker 0, every replica read afresh (as a fetcher's full Fetch does)."""
    return list(manager.fetch_changes(0, resync=True).states.values())


def answer(records: bytes, fetch_offset: int = 0, leader_epoch: int = 3, high_watermark: int = 1) -> FollowerAnswer:
    sent = PartitionFetchState(TOPIC_ID.bytes, "orders", 0, leader_epoch, fetch_offset, -1, 0, 1 << 20)
    return FollowerAnswer(0, sent, ErrorCode.NONE, high_watermark, records, None)


def leader_batch(value: bytes, offset: int) -> bytes:
    batch = bytearray(build_batch([Record(value)]))
    set_base_offset(batch, 0, offset)
    set_partition_leader_epoch(batch, 0, 3)
    return bytes(batch)


def test_a_corrupt_batch_from_the_leader_fails_the_partition_once_until_a_new_leader_epoch(tmp_path: Path) -> None:
    manager = following_manager(tmp_path)
    with capture_logs() as events:
        for _ in range(10):
            manager.apply_follower_answer(answer(b"\x00" * 70))
    failed = [e for e in events if e["event"].startswith("follower_")]
    assert [e["event"] for e in failed] == ["follower_partition_failed"]  # one event, no retry loop
    assert failed[0]["leader_epoch"] == 3 and failed[0]["fetch_offset"] == 0 and "magic" in failed[0]["error"]
    assert fetched(manager) == []  # no longer fetched in this leader epoch
    replica = manager.replicas[TP]
    replica.role = make_follower("orders-0", 1, PartitionMetadata((0, 1), (0, 1), 0, 4, 4), 0, 0).state
    assert [s.partition for s in fetched(manager)] == [0]  # a new leader epoch: fetched again
    assert manager.apply_follower_answer(answer(leader_batch(b"v", 0), leader_epoch=4))
    assert replica.log.log_end_offset == 1 and replica.log.high_watermark == 1 and replica.role.high_watermark == 1


def test_a_repeating_append_failure_is_logged_once_and_its_recovery_once(tmp_path: Path) -> None:
    manager = following_manager(tmp_path)
    too_large = leader_batch(b"v" * 2000, 0)
    manager.replicas[TP].log.config = LogConfig(max_message_bytes=1000)
    with capture_logs() as events:
        for _ in range(10):
            assert not manager.apply_follower_answer(answer(too_large))
        manager.replicas[TP].log.config = LogConfig()
        assert manager.apply_follower_answer(answer(leader_batch(b"v", 0)))
    warnings = [e["event"] for e in events if e["event"].startswith("follower_append")]
    assert warnings == ["follower_append_failed", "follower_append_recovered"]


def test_an_answer_to_an_older_fetch_state_is_dropped(tmp_path: Path) -> None:
    manager = following_manager(tmp_path)
    assert manager.apply_follower_answer(answer(leader_batch(b"v", 0)))
    assert manager.apply_follower_answer(answer(leader_batch(b"v", 0), fetch_offset=0))  # asked at 0, log now ends at 1
    assert manager.apply_follower_answer(answer(leader_batch(b"w", 1), fetch_offset=1, leader_epoch=2))  # old epoch
    assert manager.replicas[TP].log.log_end_offset == 1


def test_the_followers_hwm_is_the_leaders_even_when_lower(tmp_path: Path) -> None:
    """As Kafka's follower: a new leader's HWM may lag the old one's, and the follower takes it."""
    manager = following_manager(tmp_path)
    manager.apply_follower_answer(answer(leader_batch(b"a", 0) + leader_batch(b"b", 1), high_watermark=2))
    assert manager.replicas[TP].log.high_watermark == 2
    manager.apply_follower_answer(answer(b"", fetch_offset=2, high_watermark=1))
    assert manager.replicas[TP].log.high_watermark == 1


def test_a_follower_behind_the_leaders_log_start_starts_over_there(tmp_path: Path) -> None:
    manager = following_manager(tmp_path)
    assert manager.apply_follower_answer(answer(leader_batch(b"v", 0)))  # the follower holds offset 0
    sent = PartitionFetchState(TOPIC_ID.bytes, "orders", 0, 3, 1, 3, 0, 1 << 20)
    out_of_range = FollowerAnswer(0, sent, ErrorCode.OFFSET_OUT_OF_RANGE, 80, b"", None, log_start_offset=50)
    with capture_logs() as events:
        assert manager.apply_follower_answer(out_of_range)
    log = manager.replicas[TP].log
    assert (log.log_start_offset, log.log_end_offset) == (50, 50)
    assert [s.fetch_offset for s in fetched(manager)] == [50]
    (event,) = [e for e in events if e["event"] == "follower_offset_out_of_range"]
    assert event["fetch_offset"] == 1 and event["leader_log_start_offset"] == 50
    assert manager.apply_follower_answer(answer(leader_batch(b"w", 50), fetch_offset=50, high_watermark=51))
    assert values_at(log, 50) == [b"w"]


def values_at(log: PartitionLog, offset: int) -> list[bytes | None]:
    return [r.value for b in iter_batches(log.read(offset, 1 << 20)) for r in b.records()]


async def test_a_fetcher_that_fails_is_logged_and_started_again(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    manager = following_manager(tmp_path)
    runs: list[int] = []
    restarted = asyncio.Event()

    async def failing_fetcher(_host: object, leader_id: int) -> None:
        runs.append(leader_id)
        if len(runs) == 1:
            raise OSError(5, "Input/output error")
        restarted.set()

    monkeypatch.setattr(replica_manager, "run_fetcher", failing_fetcher)
    monkeypatch.setattr(replica_manager, "FETCHER_RESTART_S", 0.01)
    with capture_logs() as events:
        manager._ensure_fetcher(0)
        await asyncio.wait_for(restarted.wait(), 10)
    (failed,) = [e for e in events if e["event"] == "replica_fetcher_failed"]
    assert failed["leader"] == 0 and "Input/output error" in failed["error"] and runs == [0, 0]


def test_an_answer_for_a_deleted_topic_is_not_applied_to_its_re_created_namesake(tmp_path: Path) -> None:
    manager = following_manager(tmp_path)
    stale = answer(leader_batch(b"old", 0))
    stale = FollowerAnswer(0, replace(stale.sent, topic_id=uuid.uuid4().bytes), ErrorCode.NONE, 1, stale.records, None)
    assert manager.apply_follower_answer(stale)
    assert manager.replicas[TP].log.log_end_offset == 0
