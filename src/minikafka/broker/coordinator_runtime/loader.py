"""Reading one partition of a coordinator's internal topic from its log start to the end it had when the load
began, in chunks, feeding each batch to the coordinator's replay in log order (Kafka's CoordinatorLoader)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from minikafka.common.control_batch import read_marker
from minikafka.common.errors import KafkaError
from minikafka.common.record_batch import Record, iter_batches
from minikafka.storage.partition_log import PartitionLog

LOAD_CHUNK_BYTES = 1048576


class Replay(Protocol):
    """What a coordinator makes of its partition's log while it loads it, and then puts in place."""

    def records(self, producer_id: int | None, records: Iterator[Record]) -> None:
        """A batch's records; `producer_id` is the transaction's when the batch is transactional, else None."""

    def end_transaction(self, producer_id: int, committed: bool) -> None:
        """A transaction marker: an unreadable one counts as an abort."""

    def install(self) -> Mapping[str, int]:
        """Puts what was read in the shard, once the whole log is read; returns the counts the loaded event reports."""


@dataclass(frozen=True)
class LogReplayed:
    complete: bool  # the whole log was read: false when superseded or a read failed
    error: KafkaError | None = None  # the read that failed


async def replay_log(
    log: PartitionLog, replay: Replay, current: Callable[[], bool], chunk_bytes: int = LOAD_CHUNK_BYTES
) -> LogReplayed:
    """Feeds the log's batches to `replay` while `current()` holds: a load a newer leader epoch superseded stops."""
    offset, end = log.log_start_offset, log.log_end_offset
    while offset < end and current():
        try:
            data = log.read(offset, chunk_bytes, max_offset=end)
        except KafkaError as error:
            return LogReplayed(False, error)
        if not data:
            break
        for batch in iter_batches(data):
            offset = batch.next_offset
            if batch.is_control:
                marker = read_marker(batch)
                replay.end_transaction(batch.producer_id, marker is not None and marker.commit)
            else:
                replay.records(batch.producer_id if batch.is_transactional else None, batch.records())
        await asyncio.sleep(0)  # a long log does not hold up the broker's other work
    return LogReplayed(current())
