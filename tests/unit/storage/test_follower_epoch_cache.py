"""A follower's leader-epoch cache follows the batches it appends, as Kafka's (every batch goes through
LeaderEpochFileCache.assign), even when the cache held an epoch with no data of it left."""

from __future__ import annotations

from pathlib import Path

from storage_helpers import batch_of, values_read

from minikafka.storage.leader_epoch_cache import EpochEntry
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

CONFIG = LogConfig(segment_bytes=4000, index_interval_bytes=100)


def test_older_epoch_batches_replace_an_epoch_cached_past_the_log_end(tmp_path: Path) -> None:
    """A broker back from a power loss with one batch led epoch 1 from its stale image (caching epoch 1 at offset
    1), then followed the new leader, whose log has epoch 0 up to offset 4 and epoch 1 after: the cache must say
    so, and an unclean reopen (its recovery checks each batch's epoch against the cache) keeps every batch."""
    leader = PartitionLog.open(tmp_path / "leader" / "t-0", CONFIG, 0)
    for i in range(5):
        leader.append_as_leader(batch_of([b"e0-%d" % i]), 0, 0)
    for i in range(3):
        leader.append_as_leader(batch_of([b"e1-%d" % i]), 1, 0)
    follower = PartitionLog.open(tmp_path / "follower" / "t-0", CONFIG, 0)
    follower.append_as_follower(leader.read(0, 1), 0)  # offset 0 only
    follower.assign_epoch_start_offset(1, follower.log_end_offset)  # led epoch 1 with nothing more
    follower.append_as_follower(leader.read(1, 10_000), 0)
    assert follower.epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(1, 5)] == leader.epoch_cache.entries
    assert follower.end_offset_for_epoch(0) == (0, 5)
    follower.abandon()  # a crash: no clean-shutdown marker, so the reopen scans and checks epochs
    again = PartitionLog.open(tmp_path / "follower" / "t-0", CONFIG, 0)
    assert again.log_end_offset == 8
    assert [value for _offset, value in values_read(again.read(0, 10_000))][-1] == b"e1-2"
