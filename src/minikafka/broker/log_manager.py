"""The broker's partition logs under `log.dirs`: open at start-up, create on assignment, delete strays.

Stray partitions (KIP-550 in KRaft form): after the broker has caught up with the metadata log, a partition
directory whose topic id the metadata does not know, or that the metadata no longer assigns to this broker, is
renamed `<topic>-<partition>.<topic id>-stray` and then removed, with one event per directory. A log the metadata
takes away while the broker runs (topic deleted, replica moved off) is renamed `<topic>-<partition>.<unique id>-delete`
and then removed, as Kafka's LogManager.asyncDelete does: a crash between the two leaves a directory no log opens.
"""

from __future__ import annotations

import asyncio
import errno
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

from minikafka.common.clock import new_random
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.storage.checkpoint import CheckpointError, PartitionMetadataFile
from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_dir_failure_channel import LogDirFailureChannel, storage_error
from minikafka.storage.partition_log import PARTITION_METADATA_FILE, PartitionLog

METADATA_LOG_DIR = "__cluster_metadata-0"
STRAY_SUFFIX = "-stray"
MAX_LOGGED_PRODUCER_IDS = 20  # an event names at most these many of the producer ids a check forgot
DELETE_SUFFIX = "-delete"


@dataclass(frozen=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, name: str) -> TopicPartition | None:
        """`<topic>-<partition>` (topics may contain dashes); None for anything else."""
        topic, sep, partition = name.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            return None
        return cls(topic, int(partition))


class LogManager:
    def __init__(
        self,
        log_dir: Path,
        log_config: Callable[[str], LogConfig],
        flush_in_background: bool = False,
        failures: LogDirFailureChannel | None = None,
        max_open_files: int | None = None,
    ) -> None:
        """`flush_in_background`: rolled segments are fsynced in worker threads (needs the running event loop).
        `failures`: where an I/O error on any log takes `log_dir` offline. `max_open_files`: the most segment
        files the partition logs keep open together (None: no bound)."""
        self.log_dir = log_dir
        self.files = FileHandleCache(max_open_files)
        self.failures = failures if failures is not None else LogDirFailureChannel()
        self.log_config = log_config  # per topic: broker defaults overridden by topic configs
        # Told of each log whose start retention moved (the replica manager: followers' fetch sessions read it).
        self.log_start_moved: Callable[[TopicPartition], None] = lambda tp: None
        self.logs: dict[TopicPartition, PartitionLog] = {}
        # Partitions whose files could not be opened for want of file descriptors, by topic id: retried later.
        self.unopened: dict[TopicPartition, uuid.UUID] = {}
        self._flush_in_background = flush_in_background
        self._background_jobs: set[asyncio.Task[None]] = set()
        self._log = structlog.get_logger()

    def partition_dirs(self) -> list[tuple[TopicPartition, Path]]:
        return partition_dirs(self.log_dir)

    def get(self, tp: TopicPartition) -> PartitionLog | None:
        return self.logs.get(tp)

    def get_or_create(self, tp: TopicPartition, topic_id: uuid.UUID, now_ms: int) -> PartitionLog:
        log = self.logs.get(tp)
        if log is None:
            if self.offline:
                raise storage_error(self.log_dir, f"cannot open {tp}")
            background = self._in_background if self._flush_in_background else None
            config = self.log_config(tp.topic)
            try:
                log = PartitionLog.open(
                    self.log_dir / str(tp), config, now_ms, str(topic_id), background, self.failures, self.files
                )
            except (OSError, CheckpointError) as error:
                reason = f"open of {tp} failed: {error}"
                if _out_of_files(error):
                    # The process, not the disk, is short of something: only this partition fails (and is
                    # opened again later); the directory and its other logs stay online.
                    self.unopened[tp] = topic_id
                    self._log.error("partition_open_failed", partition=str(tp), reason=reason)
                    raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, reason) from error
                self.failures.mark_offline(self.log_dir, reason)
                raise storage_error(self.log_dir, reason) from error
            self.unopened.pop(tp, None)
            self.logs[tp] = log
        return log

    @property
    def offline(self) -> bool:
        """Whether the (only) log directory failed: no log in it is read or written any more."""
        return self.failures.is_offline(self.log_dir)

    def delete_stray_partitions(self, image: MetadataImage, broker_id: int, delete: bool = True) -> list[str]:
        """Remove partition directories the (caught-up) metadata does not assign to `broker_id`. An unreadable
        `partition.metadata` is a storage error, not a stray: the log dir goes offline and nothing is deleted.
        `delete` False (the check switched off): each stray is only reported (`stray_partition_kept`) and stays."""
        if self.offline:
            return []
        for suffix in (STRAY_SUFFIX, DELETE_SUFFIX):
            for leftover in self.log_dir.glob("*" + suffix):
                shutil.rmtree(leftover, ignore_errors=True)  # a crash between rename and removal
        strays: list[str] = []
        for tp, path in self.partition_dirs():
            try:
                reason = stray_reason(tp, path, image, broker_id)
            except CheckpointError as error:
                self.failures.mark_offline(self.log_dir, f"stray check of {tp} failed: {error.message}")
                return strays
            if reason is None:
                continue
            try:
                topic_id = PartitionMetadataFile(path / PARTITION_METADATA_FILE).read() or "unknown"
            except CheckpointError:
                topic_id = "unknown"
            if not delete:
                self._log.warning(
                    "stray_partition_kept", partition=str(tp), topic_id=topic_id, reason=reason, directory=str(path)
                )
                strays.append(str(tp))
                continue
            log = self.logs.pop(tp, None)
            if log is not None:
                log.abandon()
            stray = path.with_name(f"{path.name}.{topic_id}{STRAY_SUFFIX}")
            path.rename(stray)
            shutil.rmtree(stray, ignore_errors=True)
            self._log.info(
                "stray_partition_deleted", partition=str(tp), topic_id=topic_id, reason=reason, directory=str(path)
            )
            strays.append(str(tp))
        return strays

    def delete_log(self, tp: TopicPartition, topic_id: uuid.UUID, reason: str) -> None:
        """Close and remove the partition's log: renamed first, so it is never opened half-removed."""
        log = self.logs.pop(tp, None)
        if log is not None:
            log.abandon()  # its data is going: nothing to flush
        path = self.log_dir / str(tp)
        if not path.exists():
            return
        doomed = path.with_name(f"{path.name}.{new_random().getrandbits(128):032x}{DELETE_SUFFIX}")
        path.rename(doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        self._log.info("log_deleted", partition=str(tp), topic_id=str(topic_id), reason=reason, directory=str(path))

    def _in_background(self, work: Callable[[], None], then: Callable[[], None]) -> None:
        """Kafka's scheduler thread for the logs: `work` (file I/O) in a worker thread, then `then` on the loop."""
        task = asyncio.get_running_loop().create_task(self._run_in_worker(work, then))
        self._background_jobs.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._background_jobs.discard)

    @staticmethod
    async def _run_in_worker(work: Callable[[], None], then: Callable[[], None]) -> None:
        await asyncio.to_thread(work)
        then()

    def cleanup_logs(self, wall_clock_ms: int) -> int:
        """Apply retention.ms / retention.bytes to every online log (Kafka's cleanupLogs); returns the segments
        deleted. `wall_clock_ms`: record timestamps are wall-clock time. Each log that deleted segments is told to
        `log_start_moved`."""
        deleted = 0
        for tp, log in list(self.logs.items()):
            if log.offline:
                continue
            try:
                removed = log.delete_retention(wall_clock_ms)
            except KafkaError:
                continue  # the directory went offline: the failure channel has the news
            deleted += removed
            if removed:
                self.log_start_moved(tp)
        return deleted

    def remove_expired_producers(self, wall_clock_ms: int, expiration_ms: int) -> int:
        """Kafka's periodic producer expiration over every online log; returns the producer ids forgotten."""
        removed = 0
        for tp, log in list(self.logs.items()):
            if log.offline:
                continue
            expired = log.remove_expired_producers(wall_clock_ms, expiration_ms)
            if expired:
                removed += len(expired)
                self._log.info(
                    "producer_ids_expired",
                    topic=tp.topic,
                    partition=tp.partition,
                    producer_ids=list(expired[:MAX_LOGGED_PRODUCER_IDS]),
                    count=len(expired),
                    expiration_ms=expiration_ms,
                )
        return removed

    def flush_all(self, now_ms: int) -> None:
        for log in self.logs.values():
            if log.offline:
                continue
            try:
                log.maybe_flush(now_ms)
            except KafkaError:
                continue  # the directory went offline: the failure channel has the news

    async def checkpoint_high_watermarks(self) -> None:
        """Every partition's HWM checkpoint whose HWM moved, written in a worker thread, as Kafka writes it from
        its scheduler: while the kernel writes back a burst of appends, one checkpoint's fsyncs took up to 0.5 s
        here, and on the event loop that stalled every produce and fetch."""
        due = [(log, log.high_watermark) for log in self.logs.values()]
        await asyncio.to_thread(_write_high_watermark_checkpoints, due)

    def close_all(self, now_ms: int) -> None:
        for log in self.logs.values():
            try:
                log.close(now_ms)
            except KafkaError:
                log.abandon()  # its directory failed while closing: no clean-shutdown marker, recovery scans it
        self.logs.clear()


def _write_high_watermark_checkpoints(due: list[tuple[PartitionLog, int]]) -> None:
    for log, high_watermark in due:
        if log.offline:
            continue
        try:
            log.checkpoint_high_watermark(high_watermark)
        except KafkaError as error:  # its directory is offline now (the failure channel has the news)
            structlog.get_logger().warning("high_watermark_checkpoint_failed", partition=log.name, error=error.message)


def effective_max_open_files(configured: int, open_files_limit: int | None) -> int:
    """minikafka.log.max.open.files, but never more than a quarter of the process's open-file limit: half is kept
    for client connections (max.connections) and the rest for checkpoints, the metadata log and peer channels."""
    if open_files_limit is None or open_files_limit <= 0:
        return configured
    return max(1, min(configured, open_files_limit // 4))


def _out_of_files(error: BaseException) -> bool:
    """EMFILE or ENFILE, raised directly or as the cause of an unreadable checkpoint."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in (errno.EMFILE, errno.ENFILE):
            return True
        error = error.__cause__  # type: ignore[assignment]
    return False


def partition_dirs(log_dir: Path) -> list[tuple[TopicPartition, Path]]:
    """The partition directories of a log dir (not the metadata log's, nor those being deleted)."""
    found = []
    for path in sorted(log_dir.iterdir()) if log_dir.exists() else []:
        if (
            not path.is_dir()
            or path.name == METADATA_LOG_DIR
            or path.name.endswith(STRAY_SUFFIX)
            or path.name.endswith(DELETE_SUFFIX)
        ):
            continue
        tp = TopicPartition.parse(path.name)
        if tp is not None:
            found.append((tp, path))
    return found


def stray_reason(tp: TopicPartition, path: Path, image: MetadataImage, broker_id: int) -> str | None:
    """Why the partition directory at `path` is a stray the metadata does not assign to `broker_id` (None: it is
    not). An unreadable `partition.metadata` raises CheckpointError."""
    stored = PartitionMetadataFile(path / PARTITION_METADATA_FILE).read()
    topic = image.topics_by_name.get(tp.topic)
    if stored is None:
        return "no partition.metadata (topic id unknown)"
    if topic is None or str(topic.topic_id) != stored:
        return f"topic id {stored} is not in the metadata"
    partition = image.partition(topic.topic_id, tp.partition)
    if partition is None:
        return "partition does not exist"
    if broker_id not in partition.replicas:
        return f"not a replica (replicas {list(partition.replicas)})"
    return None
