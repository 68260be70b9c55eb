"""ListOffsets by timestamp, over record batches (Kafka's FileRecords.searchForTimestamp and
RecordBatch.offsetOfMaxTimestamp).

The answer to a target timestamp is the first record, in offset order, whose timestamp is at or after the target:
the first batch whose max timestamp reaches the target holds it (a batch's records need not be in time order).
There is no time index: the log walks batch headers and decodes the records of that one batch. Pure: batches in,
an answer out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from minikafka.common.record_batch import RecordBatch

NO_PARTITION_LEADER_EPOCH = -1


@dataclass(frozen=True)
class TimestampAndOffset:
    """A record found by its timestamp, with the leader epoch of the batch that holds it (-1: none)."""

    timestamp: int
    offset: int
    leader_epoch: int


def record_timestamps(batch: RecordBatch) -> Iterable[tuple[int, int]]:
    """(offset, timestamp) of each record; with LogAppendTime every record carries the batch's max timestamp."""
    for record in batch.records():
        yield record.offset, batch.timestamp_of(record)


def search_batch(batch: RecordBatch, target_ms: int, starting_offset: int) -> TimestampAndOffset | None:
    """The first record of `batch` at or past `starting_offset` with a timestamp at or after `target_ms`."""
    if batch.max_timestamp < target_ms or batch.last_offset < starting_offset:
        return None
    epoch = batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else NO_PARTITION_LEADER_EPOCH
    for offset, timestamp in record_timestamps(batch):
        if timestamp >= target_ms and offset >= starting_offset:
            return TimestampAndOffset(timestamp, offset, epoch)
    return None


def search(batches: Iterable[RecordBatch], target_ms: int, starting_offset: int) -> TimestampAndOffset | None:
    """The first record of `batches` (in offset order) with a timestamp at or after `target_ms`, or None."""
    for batch in batches:
        found = search_batch(batch, target_ms, starting_offset)
        if found is not None:
            return found
    return None
