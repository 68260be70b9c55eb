"""The broker's log cleaner (Kafka's LogCleaner thread): compacts the logs of compacted topics, one at a time.

Each round asks the planner (storage/cleaner_plan.py) for the filthiest compacted log; none due, it sleeps
log.cleaner.backoff.ms. A cleaning is written aside in a worker thread (storage/log_cleaner.py) and swapped in on
the event loop, which owns the log; a log cut or shrunk meanwhile keeps its segments and the cleaning is dropped.
Every replica cleans its own log, leader or follower, as in Kafka.
"""

from __future__ import annotations

import asyncio

import structlog

from minikafka.broker.log_manager import LogManager
from minikafka.common.clock import monotonic_ms, wall_ms
from minikafka.common.errors import KafkaError
from minikafka.storage.checkpoint import CheckpointError
from minikafka.storage.cleaner_plan import LogToClean, filthiest
from minikafka.storage.log_cleaner import CleaningJob, CleaningResult, clean, discard
from minikafka.storage.partition_log import PartitionLog


class LogCleaner:
    def __init__(self, logs: LogManager, backoff_ms: int, dedupe_buffer_bytes: int) -> None:
        self._logs = logs
        self._backoff_ms = backoff_ms
        self._dedupe_buffer_bytes = dedupe_buffer_bytes
        # The earliest time a tombstone kept by the last cleaning of a log may go, by log name.
        self._tombstones_due: dict[str, int | None] = {}
        self._uncleanable: set[str] = set()
        self._log = structlog.get_logger()
        self.cleanings = 0

    async def run(self) -> None:
        while True:
            if not await self.clean_once():
                await asyncio.sleep(self._backoff_ms / 1000)

    def _compacted(self) -> dict[str, PartitionLog]:
        return {
            log.name: log
            for log in list(self._logs.logs.values())
            if log.config.compact and not log.offline and log.name not in self._uncleanable
        }

    async def clean_once(self) -> bool:
        """Clean the filthiest due log; False when none was (or its cleaning was dropped)."""
        logs = self._compacted()
        now = wall_ms()
        try:
            views = [log.cleanable(self._tombstones_due.get(name)) for name, log in logs.items()]
        except KafkaError:
            return False  # a log dir went offline: the failure channel has the news
        plan = filthiest(views, now)
        if plan is None:
            return False
        log = logs[plan.name]
        job = log.cleaning_job(plan, now, self._dedupe_buffer_bytes)
        truncations, started = log.truncations, monotonic_ms()
        try:
            result = await asyncio.to_thread(clean, job)
        except (OSError, CheckpointError) as error:
            self._aborted(plan, f"cleaning failed: {error}")
            log.io_failed("clean", error)  # the log dir goes offline, as Kafka's cleaner fails a dir on an I/O error
            return False
        except KafkaError as error:  # a batch that does not decode: Kafka's uncleanable partition (KIP-346)
            self._uncleanable.add(plan.name)
            self._aborted(plan, f"uncleanable: {error.message}")
            return False
        if not any(open_log is log for open_log in self._logs.logs.values()):
            discard(result)  # the log was deleted or closed meanwhile
            self._aborted(plan, "log closed")
            return False
        try:
            swapped = log.swap_cleaned(job, result, truncations)
        except KafkaError as error:
            self._aborted(plan, f"swap failed: {error.message}")
            return False
        if not swapped:
            self._aborted(plan, "log changed during cleaning")
            return False
        self._tombstones_due[plan.name] = result.tombstones_due_ms
        self.cleanings += 1
        self._cleaned(plan, job, result, monotonic_ms() - started)
        return True

    def _cleaned(self, plan: LogToClean, job: CleaningJob, result: CleaningResult, duration_ms: int) -> None:
        self._log.info(
            "log_cleaned",
            partition=plan.name,
            first_dirty_offset=plan.first_dirty_offset,
            end_offset=result.end_offset,
            dirty_ratio=round(plan.dirty_ratio, 4),
            forced=plan.forced,
            segments_before=sum(len(group.replaces) for group in result.groups),
            segments_after=len(result.groups),
            bytes_before=sum(group.bytes_before for group in result.groups),
            bytes_after=sum(group.bytes_after for group in result.groups),
            keys=result.keys,
            records_before=result.records_before,
            records_after=result.records_after,
            tombstones_removed=result.tombstones_removed,
            markers_removed=result.markers_removed,
            duration_ms=duration_ms,
        )

    def _aborted(self, plan: LogToClean, reason: str) -> None:
        self._log.warning("log_cleaning_aborted", partition=plan.name, reason=reason)
