"""ListOffsets by timestamp through a real ReplicaManager and log: a consumer is answered only records below the
high watermark (none: offset and timestamp -1, no error), MAX_TIMESTAMP (-3) finds the largest timestamp, and the
requester's leader epoch is checked first."""

from __future__ import annotations

from pathlib import Path

from test_fetch_sessions_served import FOLLOWER_EPOCH, LEADER_EPOCH, leader_of_two_partitions

from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica.partition import ListedOffset
from minikafka.broker.replica_manager import EARLIEST_TIMESTAMP, MAX_TIMESTAMP
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch

TP = TopicPartition("orders", 0)


async def test_timestamps_are_looked_up_below_the_high_watermark(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    manager.produce(TP, build_batch([Record(b"a", timestamp_ms=100), Record(b"b", timestamp_ms=300)]), 1, 30000)
    manager.produce(TP, build_batch([Record(b"c", timestamp_ms=200)]), 1, 30000)
    assert manager.list_offset(TP, 150, -1) == ListedOffset(ErrorCode.NONE)  # written, not yet committed
    for follower in (1, 2):
        manager.follower_fetch(TP, follower, FOLLOWER_EPOCH, LEADER_EPOCH, 2, LEADER_EPOCH, 1 << 20)
    assert manager.replicas[TP].role.high_watermark == 2  # offset 2 (timestamp 200) is still above it
    assert manager.list_offset(TP, 150, LEADER_EPOCH) == ListedOffset(ErrorCode.NONE, 1, LEADER_EPOCH, 300)
    assert manager.list_offset(TP, 0, -1) == ListedOffset(ErrorCode.NONE, 0, LEADER_EPOCH, 100)
    assert manager.list_offset(TP, 301, -1) == ListedOffset(ErrorCode.NONE)
    assert manager.list_offset(TP, MAX_TIMESTAMP, -1) == ListedOffset(ErrorCode.NONE, 1, LEADER_EPOCH, 300)
    assert manager.list_offset(TP, EARLIEST_TIMESTAMP, -1) == ListedOffset(ErrorCode.NONE, 0, LEADER_EPOCH)


async def test_the_requesters_leader_epoch_is_checked_first(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    assert manager.list_offset(TP, 0, LEADER_EPOCH - 1).error == ErrorCode.FENCED_LEADER_EPOCH
    assert manager.list_offset(TP, MAX_TIMESTAMP, LEADER_EPOCH + 1).error == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert manager.list_offset(TP, -6, -1).error == ErrorCode.UNSUPPORTED_VERSION  # a later version's lookup


async def test_tiered_storage_lookups_without_tiered_storage(tmp_path: Path) -> None:
    """ListOffsets v8-10 (Kafka 4.0's): the earliest local offset is the log start, nothing is tiered (-1)."""
    manager = leader_of_two_partitions(tmp_path)
    assert manager.list_offset(TP, -4, -1) == ListedOffset(ErrorCode.NONE, 0, LEADER_EPOCH)
    assert manager.list_offset(TP, -5, -1) == ListedOffset(ErrorCode.NONE)
