"""A partition's log: segments, leader-epoch cache, checkpoints, flush policy and crash recovery.

One directory per partition (`<log.dirs>/<topic>-<partition>/`) holding `<base offset>.log` + `.index` segments,
`leader-epoch-checkpoint`, `recovery-point-offset-checkpoint`, `replication-offset-checkpoint` (the high
watermark), `log-start-offset-checkpoint` and `partition.metadata` (the topic id). The KRaft metadata log uses the
same class, so nothing here knows about brokers or replication.
"""

from __future__ import annotations

import bisect
import functools
import random
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import structlog

from minikafka.common.clock import new_random, wall_ms
from minikafka.common.compression import target_codec
from minikafka.common.control_batch import EndTxnMarker, build_marker_batch
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import (
    NO_TIMESTAMP,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatch,
    iter_batches,
    read_header,
    stamped,
)
from minikafka.storage.checkpoint import (
    CheckpointError,
    OffsetCheckpoint,
    PartitionMetadataFile,
    fsync_directory,
    sync_files,
)
from minikafka.storage.cleaner_plan import CleanableLog, LogToClean, SegmentSummary
from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.leader_epoch_cache import LeaderEpochCache
from minikafka.storage.log_cleaner import (
    CleanedGroup,
    CleaningJob,
    CleaningResult,
    ProducerLastEntry,
    SourceSegment,
    discard,
)
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_dir_failure_channel import LogDirFailureChannel, storage_error
from minikafka.storage.log_transactions import LogTransactions, producer_batch
from minikafka.storage.log_validator import AppendOrigin, TimestampRules, ValidationResult, validate_records
from minikafka.storage.offset_index import ENTRY_SIZE as INDEX_ENTRY_SIZE
from minikafka.storage.producer_snapshots import delete_snapshots_outside, latest_snapshot, write_snapshot
from minikafka.storage.producer_state import Duplicate, ProducerState
from minikafka.storage.segment import LOG_SUFFIX, BatchPosition, LogSegment
from minikafka.storage.segment_swap import CLEANED_SUFFIX, SWAP_SUFFIX, complete_swaps, rename_suffix
from minikafka.storage.timestamp_search import TimestampAndOffset, search
from minikafka.storage.transaction_index import AbortedTxn

CLEAN_SHUTDOWN_FILE = ".clean-shutdown"
RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
MAX_SEGMENT_POSITION = 2**31 - 1  # index positions are 32-bit, as Kafka's segment.bytes is an int

# Runs its first argument (file I/O) in a worker thread, then its second on the thread that owns the log (the
# broker's event loop), as Kafka's scheduler thread flushes a rolled segment.
Background = Callable[[Callable[[], None], Callable[[], None]], None]

P = ParamSpec("P")
R = TypeVar("R")


def storage_operation(
    operation: str, writes: bool = True
) -> Callable[[Callable[Concatenate[PartitionLog, P], R]], Callable[Concatenate[PartitionLog, P], R]]:
    """Kafka's maybeHandleIOException: with a failure channel, an I/O error (or an unreadable checkpoint) takes
    the log's directory offline and surfaces as KAFKA_STORAGE_ERROR, and nothing touches a log in an offline
    directory again. Without one (the metadata log) the error propagates as it is."""

    def decorate(method: Callable[Concatenate[PartitionLog, P], R]) -> Callable[Concatenate[PartitionLog, P], R]:
        @functools.wraps(method)
        def guarded(self: PartitionLog, *args: P.args, **kwargs: P.kwargs) -> R:
            failures = self.failures
            try:
                if failures is not None and not failures.healthy:  # the common case costs one attribute read
                    self.check_online()
                    failures.check_injected(self.log_dir, writes)
                return method(self, *args, **kwargs)
            except (OSError, CheckpointError) as error:
                raise self.io_failed(operation, error) from error

        return guarded

    return decorate


@dataclass(frozen=True)
class Verification:
    """KIP-890 part 1 is on: a transactional batch must carry `guard` (None: it was not verified)."""

    guard: int | None


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    record_count: int
    size_bytes: int
    max_timestamp: int
    duplicate: bool = False  # a producer's retry of a batch already in the log: nothing was appended
    log_append_time_ms: int = NO_TIMESTAMP  # the leader's stamp on a LogAppendTime topic's batch


@dataclass(frozen=True)
class SegmentJitter:
    base_offset: int  # the segment it was drawn for
    jitter_ms: int


class PartitionLog:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        background: Background | None = None,
        failures: LogDirFailureChannel | None = None,
        files: FileHandleCache | None = None,
    ) -> None:
        self.directory = directory
        self.failures = failures  # None: I/O errors propagate as they are (the metadata log: fatal there)
        # Shared by a log directory's partitions to bound their open files; None: this log's own, unbounded.
        self.files = files if files is not None else FileHandleCache()
        self.config = config
        self._background = background  # None: a rolled segment is flushed at once, on the caller's thread
        self.name = directory.name
        self.segments: list[LogSegment] = []
        self.log_start_offset = 0
        self.recovery_point = 0
        self._checkpointed_recovery_point: int | None = None  # what the checkpoint file says
        self._recovery_checkpointed_ms = 0
        self._high_watermark = 0
        self.unflushed_messages = 0
        self.last_flush_ms = 0
        self._truncations = 0  # a background flush of a rolled segment only counts if the log was not cut since
        self.epoch_cache = LeaderEpochCache(directory / LEADER_EPOCH_FILE)
        self.topic_id: str | None = None
        self._log = structlog.get_logger().bind(partition=self.name)
        self._recovery_checkpoint = OffsetCheckpoint(directory / RECOVERY_POINT_FILE, self.name)
        self._hwm_checkpoint = OffsetCheckpoint(directory / HIGH_WATERMARK_FILE, self.name)
        self._checkpointed_high_watermark: int | None = None  # what the HWM checkpoint file says
        # The broker writes the HWM checkpoint from a worker thread; this orders it with close and abandon.
        self._hwm_checkpoint_lock = threading.Lock()
        self._start_checkpoint = OffsetCheckpoint(directory / LOG_START_FILE, self.name)
        self._cleaner_checkpoint = OffsetCheckpoint(directory / CLEANER_CHECKPOINT_FILE, self.name)
        self._closed = False
        self._metadata_unsynced = False  # partition.metadata written, its fsync left to the first flush
        self.producer_state = ProducerState()  # idempotent producers' last batches, as of the log end
        self.transactions = LogTransactions(directory)  # aborted-transaction index, undecided transactions
        self._jitter: SegmentJitter | None = None  # the active segment's, once segment.jitter.ms asked for one
        self._random: random.Random | None = None  # made only when needed: a simulation's draws stay the same

    # ---- opening and recovery ----

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        now_ms: int,
        topic_id: str | None = None,
        background: Background | None = None,
        failures: LogDirFailureChannel | None = None,
        files: FileHandleCache | None = None,
    ) -> PartitionLog:
        created = not directory.exists()
        directory.mkdir(parents=True, exist_ok=True)
        log = cls(directory, config, background, failures, files)
        try:
            log._open(now_ms, topic_id, created)
        except BaseException:
            log.abandon()  # the segments opened so far: a failed open keeps no file open
            raise
        return log

    def _open(self, now_ms: int, topic_id: str | None, created: bool = False) -> None:
        """`created`: the directory was made just now, so there is nothing to recover and nothing yet whose
        durability its files vouch for (a broker taking on thousands of replicas pays no fsync for each)."""
        log, directory = self, self.directory
        log.last_flush_ms = now_ms
        if created:
            log._create(now_ms, topic_id)
            return
        log._check_topic_id(topic_id)
        for leftover in directory.glob("*.tmp"):
            leftover.unlink()
        swaps = complete_swaps(directory)
        if swaps.cleaned_deleted or swaps.swapped_in:
            log._log.info(
                "log_cleaning_recovered",
                cleaned_deleted=list(swaps.cleaned_deleted),
                swapped_in=list(swaps.swapped_in),
                replaced_deleted=list(swaps.replaced_deleted),
            )
        clean = (directory / CLEAN_SHUTDOWN_FILE).exists()
        (directory / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
        log._checkpointed_recovery_point = log._recovery_checkpoint.read()
        log._recovery_checkpointed_ms = now_ms
        log.recovery_point = log._checkpointed_recovery_point or 0
        # Loaded before the scan: the checkpoint is written before the data, so it vouches for batch epochs.
        cache_existed = (directory / LEADER_EPOCH_FILE).exists()
        log.epoch_cache = LeaderEpochCache.load(directory / LEADER_EPOCH_FILE)
        log._load_segments(now_ms, clean, log.epoch_cache.epoch_for_offset if cache_existed else None)
        start = log._start_checkpoint.read()
        log.log_start_offset = max(start if start is not None else 0, log.segments[0].base_offset)
        # Unsynced: after a crash the next open cuts them again (an empty log's epoch cost a stop-start two fsyncs).
        log.epoch_cache.truncate_from_end(log.log_end_offset, sync=False)
        log.epoch_cache.truncate_from_start(log.log_start_offset, sync=False)
        log.recovery_point = min(log.recovery_point, log.log_end_offset)
        if not clean:
            # What recovery kept is made durable, so the recovery point is exact again (its checkpoint lags).
            following = [s.base_offset for s in log.segments[1:]] + [None]
            for segment, next_base in zip(log.segments, following, strict=True):
                if next_base is None or next_base > log.recovery_point:
                    segment.flush()
            log.recovery_point = log.log_end_offset
            log._checkpoint_recovery_point(now_ms)
        hwm = log._hwm_checkpoint.read() or 0
        log._checkpointed_high_watermark = hwm
        log._high_watermark = min(max(hwm, log.log_start_offset), log.log_end_offset)
        log.transactions.load([segment.base_offset for segment in log.segments])
        log._reload_producer_state()

    def _create(self, now_ms: int, topic_id: str | None) -> None:
        """A log in a directory made just now: one empty segment, no file to read, nothing to recover or scan."""
        if topic_id is not None:
            PartitionMetadataFile(self.directory / PARTITION_METADATA_FILE).write(topic_id, sync=False)
            self._metadata_unsynced = True
        self.topic_id = topic_id
        self.epoch_cache = LeaderEpochCache(self.directory / LEADER_EPOCH_FILE)
        self.segments.append(self._new_segment(0, now_ms))
        self._recovery_checkpointed_ms = now_ms
        self._checkpointed_high_watermark = 0  # an absent checkpoint reads as 0
        self.transactions.load([0])

    def _check_topic_id(self, topic_id: str | None) -> None:
        metadata = PartitionMetadataFile(self.directory / PARTITION_METADATA_FILE)
        stored = metadata.read()
        if topic_id is not None and stored is not None and stored != topic_id:
            self._log.warning("partition_topic_id_mismatch", expected=topic_id, actual=stored)
            raise KafkaError(
                ErrorCode.INCONSISTENT_TOPIC_ID,
                f"{self.directory} belongs to topic id {stored}, not {topic_id}",
            )
        if topic_id is not None and stored is None:
            metadata.write(topic_id)
        self.topic_id = stored or topic_id

    def _load_segments(self, now_ms: int, clean: bool, expected_epoch: Callable[[int], int] | None) -> None:
        base_offsets = sorted(int(p.name[: -len(LOG_SUFFIX)]) for p in self.directory.glob("*" + LOG_SUFFIX))
        for stray_index in self.directory.glob("*.index"):
            if int(stray_index.stem) not in base_offsets:
                stray_index.unlink()
        recovered: list[dict[str, object]] = []
        for position, base in enumerate(base_offsets):
            segment, index_ok = LogSegment.open_existing(
                self.directory,
                base,
                self.config.simulate_page_cache,
                self.config.index_interval_bytes,
                now_ms,
                self.files,
            )
            following = base_offsets[position + 1] if position + 1 < len(base_offsets) else None
            # A segment needs a full scan when it may hold unflushed data (at or past the recovery point after an
            # unclean shutdown) or when its index is missing or disagrees with it.
            needs_scan = not index_ok or (not clean and (following is None or following > self.recovery_point))
            if not needs_scan and not segment.load_end():
                needs_scan = True
            if needs_scan:
                result = segment.recover(expected_epoch, self.may_have_gaps)
                recovered.append(
                    {
                        "segment": base,
                        "valid_bytes": result.valid_bytes,
                        "truncated_bytes": result.truncated_bytes,
                        "batches": result.batches,
                        "reason": result.reason,
                    }
                )
            self.segments.append(segment)
            # A torn batch, or a segment that no longer reaches the next one (its tail was cut off entirely).
            if needs_scan and (result.truncated_bytes or (following is not None and segment.next_offset != following)):
                for later in base_offsets[position + 1 :]:  # nothing after a torn batch can be trusted
                    doomed, _ = LogSegment.open_existing(
                        self.directory,
                        later,
                        self.config.simulate_page_cache,
                        self.config.index_interval_bytes,
                        now_ms,
                        self.files,
                    )
                    recovered.append({"segment": later, "deleted": True, "truncated_bytes": doomed.size})
                    doomed.delete()
                break
        if not self.segments:
            start = self._start_checkpoint.read() or 0
            self.segments.append(self._new_segment(start, now_ms))
        if recovered:
            truncated = sum(n for r in recovered if isinstance(n := r.get("truncated_bytes"), int))
            self._log.info(
                "log_recovered",
                clean_shutdown=clean,
                recovery_point=self.recovery_point,
                log_end_offset=self.log_end_offset,
                truncated_bytes=truncated,
                segments=recovered,
            )

    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        return LogSegment(
            self.directory,
            base_offset,
            self.config.simulate_page_cache,
            self.config.index_interval_bytes,
            now_ms,
            self.files,
        )

    # ---- log directory failure ----

    @property
    def log_dir(self) -> Path:
        return self.directory.parent

    @property
    def offline(self) -> bool:
        # Asked before every operation: the cheap test first (a Path's parent and hash cost more than a fetch).
        return self.failures is not None and not self.failures.healthy and self.failures.is_offline(self.log_dir)

    def check_online(self) -> None:
        if self.offline:
            raise storage_error(self.log_dir, f"{self.name} is not readable or writable")

    def io_failed(self, operation: str, error: Exception) -> Exception:
        """The error to raise for a failed `operation`: with a failure channel, the directory goes offline."""
        if self.failures is None:
            return error
        reason = f"{operation} of {self.name} failed: {error}"
        self.failures.mark_offline(self.log_dir, reason)
        return storage_error(self.log_dir, reason)

    # ---- properties ----

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.active_segment.next_offset

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self.segments)

    @property
    def latest_epoch(self) -> int:
        return self.epoch_cache.latest_epoch

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self._high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)

    @property
    def last_stable_offset(self) -> int:
        """The LSO: a read_committed consumer reads below it (no transaction before it is still undecided)."""
        return self.transactions.last_stable_offset(self.producer_state, self._high_watermark)

    def aborted_transactions(self, start_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch from `start_offset` up to `upper_offset` must know."""
        return self.transactions.collect_aborted(start_offset, upper_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.epoch_cache.end_offset_for(epoch, self.log_end_offset)

    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """A new leader caches its epoch before appending in it, so it can answer where older epochs end."""
        self.epoch_cache.assign(leader_epoch, start_offset)

    # ---- appending ----

    @storage_operation("append")
    def append_as_leader(
        self,
        records: bytes | memoryview,
        leader_epoch: int,
        now_ms: int,
        from_coordinator: bool = False,
        verification: Verification | None = None,
        wall_clock_ms: int | None = None,
    ) -> AppendInfo:
        """Validate a producer's batch, assign offsets from the log end and stamp `leader_epoch` (rewriting only
        those two header fields), then append. Invalid input raises a KafkaError and writes nothing. A
        coordinator's batch (a transactional offset commit) skips the producer's sequence checks, as Kafka's
        AppendOrigin.COORDINATOR does. `wall_clock_ms` (None: the clock's now) is the time record timestamps are
        checked against and a LogAppendTime topic's batch is stamped with."""
        config = self.config
        rules = TimestampRules(
            wall_ms() if wall_clock_ms is None else wall_clock_ms,
            config.log_append_time,
            config.message_timestamp_before_max_ms,
            config.message_timestamp_after_max_ms,
        )
        validated = self._validate(records, AppendOrigin.CLIENT, "leader", rules)
        (batch,) = validated.batches  # a producer's request carries one batch per partition
        if verification is not None:
            self._check_verified(batch, verification)
        if batch.has_producer_id and not from_coordinator:
            check = self.producer_state.check_client_batch(producer_batch(batch))
            if isinstance(check, Duplicate):
                self._log.info(
                    "produce_duplicate_batch",
                    producer_id=batch.producer_id,
                    producer_epoch=batch.producer_epoch,
                    base_sequence=batch.base_sequence,
                    first_offset=check.first_offset,
                )
                count = check.last_offset - check.first_offset + 1
                return AppendInfo(check.first_offset, check.last_offset, count, 0, batch.max_timestamp, True)
        first = self.log_end_offset
        buffer = stamped(batch, first, leader_epoch)
        last = first + batch.last_offset_delta
        self.epoch_cache.assign(leader_epoch, first)
        self._append(buffer, first, last, validated.record_count, validated.max_timestamp, now_ms)
        self._update_producer_state((batch,), first)
        if batch.is_transactional:
            self.transactions.end_verification(batch.producer_id)  # its transaction is open here now
        stamp = rules.now_ms if rules.log_append_time else NO_TIMESTAMP
        return AppendInfo(first, last, validated.record_count, len(buffer), validated.max_timestamp, False, stamp)

    def start_verification(self, producer_id: int, epoch: int = -1, supports_epoch_bump: bool = False) -> int:
        """The guard of a verification for `producer_id` (the one under way, or a new one)."""
        return self.transactions.start_verification(producer_id, epoch, supports_epoch_bump)

    def _check_verified(self, batch: RecordBatch, verification: Verification) -> None:
        """With verification on, a producer's first transactional batch here must come with the guard of a
        verification no marker has ended since (Kafka's batchMissingRequiredVerification)."""
        current = self.transactions.unverified(self.producer_state, batch, verification.guard)
        if current is None:
            return
        self._rejected(
            "leader",
            "invalid_txn_state",
            expected=f"verification guard {current}",
            actual=f"guard {verification.guard} of producer {batch.producer_id}",
        )
        raise KafkaError(
            ErrorCode.INVALID_TXN_STATE,
            f"transactional batch of producer {batch.producer_id} is not part of an ongoing transaction here",
        )

    @storage_operation("append")
    def append_marker_as_leader(self, marker: EndTxnMarker, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Write a transaction's COMMIT or ABORT control batch, as the coordinator asked (Kafka's
        appendAsLeader with the coordinator as origin); a stale producer or coordinator epoch raises KafkaError
        and writes nothing."""
        self.producer_state.check_marker(marker)
        self.transactions.end_verification(marker.producer_id, marker.producer_epoch)
        batch = read_header(build_marker_batch(marker, now_ms))
        first = self.log_end_offset
        buffer = stamped(batch, first, leader_epoch)
        self.epoch_cache.assign(leader_epoch, first)
        self._append(buffer, first, first, 1, now_ms, now_ms)
        self._update_producer_state((batch,), first)
        return AppendInfo(first, first, 1, len(buffer), now_ms)

    def _update_producer_state(
        self, batches: tuple[RecordBatch, ...] | list[BatchPosition], first: int | None = None
    ) -> None:
        """After an append: the producer state covers the batches, `first` being the first one's offset (None: the
        batches carry their offsets, gaps included)."""
        state = self.producer_state
        segment = self.active_segment.base_offset
        for batch in batches:
            if first is None or first < batch.base_offset:
                first = batch.base_offset
            if batch.producer_id >= 0 and not batch.is_control:
                self._warn_older_producer_epoch(state, batch, first)
            state = self.transactions.apply(state, batch, first, segment)
            first += batch.last_offset - batch.base_offset + 1
        self.producer_state = state

    def _warn_older_producer_epoch(self, state: ProducerState, batch: RecordBatch | BatchPosition, first: int) -> None:
        """Only a replicated batch gets here with an older epoch: Kafka warns and adopts it."""
        entry = state.entry(batch.producer_id)
        if entry is not None and batch.producer_epoch < entry.producer_epoch:
            self._log.warning(
                "producer_epoch_older_than_last_seen",
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                last_epoch=entry.producer_epoch,
                offset=first,
            )

    @storage_operation("append")
    def append_as_follower(self, records: bytes | memoryview, now_ms: int) -> AppendInfo:
        """Append batches as the leader wrote them (validated as Kafka validates replicated batches, without the
        rules for producers): offsets must continue the log exactly."""
        validated = self._validate(records, AppendOrigin.REPLICATION, "follower")
        batches = validated.batches
        if (
            batches
            and self.log_end_offset == self.log_start_offset
            and (batches[0].base_offset < self.log_end_offset <= batches[0].last_offset)
        ):
            # The leader's log start is inside this batch (DeleteRecords put it there): an empty log starts again
            # at the batch's first offset, as Kafka's follower does, instead of refusing it on every fetch.
            self.truncate_fully_and_start_at(batches[0].base_offset, reason="log_start_inside_batch")
        expected = self.log_end_offset
        for batch in batches:
            # Above the log end is a gap the leader's cleaner left (Kafka refuses only offsets below it).
            if batch.base_offset < expected:
                self._rejected("follower", "not_at_log_end", expected=expected, actual=batch.base_offset)
                raise CorruptRecordError(
                    f"follower append at offset {batch.base_offset}, expected at least {expected} (the log end)",
                    batch.position,
                )
            expected = batch.last_offset + 1
        first = batches[0].base_offset
        if 0 <= batches[0].partition_leader_epoch < self.epoch_cache.latest_epoch:
            # An epoch cached at or past the log end with no batch of it left (this replica led it from a stale
            # image with a short log): the leader's older batches go there now, so that entry describes nothing.
            self.epoch_cache.truncate_from_end(first, sync=False)
        for batch in batches:
            # Kafka's rule for every batch (LeaderEpochFileCache.assign): a no-op unless the epoch changes.
            if batch.partition_leader_epoch >= 0:
                self.epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)
        self._append(records, first, expected - 1, validated.record_count, validated.max_timestamp, now_ms)
        self._update_producer_state(batches)
        return AppendInfo(first, expected - 1, validated.record_count, len(records), validated.max_timestamp)

    def _validate(
        self, records: bytes | memoryview, origin: AppendOrigin, role: str, timestamps: TimestampRules | None = None
    ) -> ValidationResult:
        """Kafka's checks of the batches and of their size; every rejection is logged once with what was
        expected."""
        try:
            validated = validate_records(
                records,
                origin,
                self.config.max_message_bytes,
                self.config.compact,
                codec := target_codec(self.config.compression_type),
                self.config.compression_level(codec),
                self.name,
                timestamps,
            )
        except KafkaError as error:
            where = {"position": error.position} if isinstance(error, CorruptRecordError | InvalidRecordError) else {}
            expected = "valid v2 batches within message.max.bytes"
            self._rejected(role, error.code.name.lower(), expected=expected, actual=error.message, **where)
            raise
        if len(records) > self.config.segment_bytes:
            too_large = KafkaError(
                ErrorCode.RECORD_LIST_TOO_LARGE,
                f"{len(records)} bytes exceed log.segment.bytes {self.config.segment_bytes}",
            )
            self._rejected(
                role, too_large.code.name.lower(), expected="within log.segment.bytes", actual=too_large.message
            )
            raise too_large
        return validated

    def _rejected(self, role: str, reason: str, expected: object, actual: object, **fields: object) -> None:
        self._log.warning(
            "log_append_rejected",
            role=role,
            reason=reason,
            expected=expected,
            actual=actual,
            log_end_offset=self.log_end_offset,
            **fields,
        )

    def _append(
        self, data: bytes | memoryview, first: int, last: int, count: int, max_timestamp: int, now_ms: int
    ) -> None:
        self._maybe_roll(len(data), last, now_ms)
        self.active_segment.append(data, first, last, max_timestamp)
        self.unflushed_messages += count
        self.maybe_flush(now_ms)

    def _maybe_roll(self, incoming: int, last_offset: int, now_ms: int) -> None:
        active = self.active_segment
        if active.size == 0:
            return
        too_big = active.size + incoming > min(self.config.segment_bytes, MAX_SEGMENT_POSITION)
        jitter = self._roll_jitter(active) if self.config.segment_jitter_ms else 0
        too_old = now_ms - active.created_ms >= self.config.max_segment_ms - jitter
        # The index stores offsets relative to the segment's base in 32 bits (Kafka rolls the same way).
        too_far = not active.can_convert_to_relative_offset(last_offset)
        index_full = len(active.index) >= self.config.segment_index_bytes // INDEX_ENTRY_SIZE
        if too_big or too_old or too_far or index_full:
            self.roll(now_ms)

    def _roll_jitter(self, active: LogSegment) -> int:
        """How much earlier than segment.ms the active segment rolls: drawn once per segment, below
        min(segment.jitter.ms, segment.ms), as Kafka's randomSegmentJitter, so that logs created together do not
        all roll at once."""
        if self._jitter is None or self._jitter.base_offset != active.base_offset:
            if self._random is None:
                self._random = new_random()
            bound = min(self.config.segment_jitter_ms, self.config.segment_ms)
            self._jitter = SegmentJitter(active.base_offset, self._random.randrange(bound))
        return self._jitter.jitter_ms

    def roll(self, now_ms: int) -> LogSegment:
        """Start a new segment at the log end. The old one is flushed, as Kafka flushes rolled segments: in the
        background when the log has one (Kafka's scheduler thread: an fsync of a whole segment holds up
        whatever waits for it, 0.25 s for 512 MiB here), else at once. It is a flush like any other: the recovery
        point moves once it is done, so "unflushed" always means "past the recovery point"."""
        self.sync_deferred()  # before the rolled segment's data is made durable
        rolled = self.active_segment
        rolled.on_become_inactive()
        self.unflushed_messages = 0
        write_snapshot(self.directory, self.producer_state)  # Kafka snapshots producer state at each roll
        segment = self._new_segment(self.log_end_offset, now_ms)
        self.segments.append(segment)
        self._log.debug("log_segment_rolled", base_offset=segment.base_offset)
        # Simulated unflushed bytes live in this process: only the owning thread may write them out.
        if self._background is None or self.config.simulate_page_cache:
            rolled.flush()
            self._mark_flushed(rolled, segment.base_offset, self._truncations, now_ms)
        else:
            self._flush_in_background(rolled, segment.base_offset, now_ms)
        return segment

    def _flush_in_background(self, rolled: LogSegment, offset: int, now_ms: int) -> None:
        assert self._background is not None
        fsync, truncations = rolled.detached_fsync(), self._truncations
        done: list[bool] = []

        def work() -> None:
            try:
                fsync()
                done.append(True)
            except OSError as error:  # left dirty: the next flush or the close fsyncs it again
                self._log.warning("rolled_segment_flush_failed", base_offset=rolled.base_offset, error=str(error))
                if self.failures is not None:  # an fsync error is an I/O error like any other
                    self.io_failed("flush", error)

        def then() -> None:
            if done:
                self._mark_flushed(rolled, offset, truncations, now_ms)

        self._background(work, then)

    def _mark_flushed(self, rolled: LogSegment, offset: int, truncations: int, now_ms: int) -> None:
        """`rolled`, which ends at `offset`, was fsynced: the recovery point moves there, unless the log was cut
        since (the bytes below `offset` may be new and unflushed, and `rolled` may be gone) or closed."""
        if self._closed or truncations != self._truncations:
            return
        rolled.mark_clean()
        if offset > self.recovery_point:
            self.recovery_point = offset
            self._checkpoint_recovery_point(now_ms)

    # ---- flushing ----

    @storage_operation("flush")
    def maybe_flush(self, now_ms: int) -> bool:
        """Flush when log.flush.interval.messages or log.flush.interval.ms says so."""
        if not self.unflushed_messages:
            return False
        due_by_count = self.unflushed_messages >= self.config.flush_interval_messages
        interval = self.config.flush_interval_ms
        due_by_time = interval is not None and now_ms - self.last_flush_ms >= interval
        if due_by_count or due_by_time:
            self.flush(now_ms)
            return True
        return False

    @storage_operation("flush")
    def flush(self, now_ms: int, checkpoint: bool = False) -> None:
        """fsync everything appended; the recovery point moves to the log end. Its checkpoint file is rewritten
        only every log.flush.offset.checkpoint.interval.ms (or when asked), as in Kafka: rewriting it atomically
        costs three more fsyncs per flush, and a stale checkpoint only makes recovery scan further."""
        self.sync_deferred()
        for segment in self.segments:
            if segment.dirty or segment is self.active_segment:  # rolled ones too, if their flush is not done
                segment.flush()
        self._flushed_to(self.log_end_offset, now_ms, checkpoint)

    def sync_deferred(self) -> None:
        """fsync what was written without it (partition.metadata of a new log, the leader-epoch checkpoint after an
        assignment) before any data they describe is made durable: a directory whose data survives a power loss
        knows its topic id, and recovery can check each batch's epoch against the checkpoint."""
        names = [PARTITION_METADATA_FILE] if self._metadata_unsynced else []
        if self.epoch_cache.unsynced:
            names.append(LEADER_EPOCH_FILE)
        if names:
            sync_files(self.directory, names)
            self._metadata_unsynced = self.epoch_cache.unsynced = False

    def flushed_elsewhere(self, end_offset: int, now_ms: int) -> None:
        """Another thread fsynced every segment up to `end_offset`, and the log was neither written nor cut
        since that fsync began (the caller knows): the recovery point moves there, as a `flush` moves it."""
        if not self._closed and end_offset > self.recovery_point:
            self._flushed_to(end_offset, now_ms, checkpoint=False)

    def _flushed_to(self, end_offset: int, now_ms: int, checkpoint: bool) -> None:
        self.unflushed_messages = 0
        self.last_flush_ms = now_ms
        self.recovery_point = end_offset
        due = now_ms - self._recovery_checkpointed_ms >= self.config.recovery_point_checkpoint_interval_ms
        if checkpoint or due:
            self._checkpoint_recovery_point(now_ms)

    def _checkpoint_recovery_point(self, now_ms: int) -> None:
        if self._checkpointed_recovery_point != self.recovery_point:
            self._recovery_checkpoint.write(self.recovery_point)
            self._checkpointed_recovery_point = self.recovery_point
        self._recovery_checkpointed_ms = now_ms

    @storage_operation("high watermark checkpoint")
    def checkpoint_high_watermark(self, high_watermark: int) -> None:
        """Write the HWM checkpoint if `high_watermark` (read earlier by the thread that owns the log) differs from
        it. Safe from another thread; nothing is written once the log is closed or abandoned."""
        with self._hwm_checkpoint_lock:
            if not self._closed:
                self._write_high_watermark_checkpoint(high_watermark)

    def _write_high_watermark_checkpoint(self, high_watermark: int) -> None:
        if high_watermark != self._checkpointed_high_watermark:
            self._hwm_checkpoint.write(high_watermark)
            self._checkpointed_high_watermark = high_watermark

    # ---- reading ----

    @storage_operation("read", writes=False)
    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None, first_whole: bool = True) -> bytes:
        """Whole batches from the one holding `fetch_offset`, at most `max_bytes` (the first batch whole even past
        it when `first_whole`: Kafka's minOneMessage), none starting at or past `max_offset` (the HWM, for
        consumers)."""
        if fetch_offset < self.log_start_offset or fetch_offset > self.log_end_offset:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {fetch_offset} is outside [{self.log_start_offset}, {self.log_end_offset}] of {self.name}",
            )
        if fetch_offset == self.log_end_offset or (max_bytes <= 0 and not first_whole):
            return b""
        if max_offset is None:  # a follower's read, at the log's end: from the appends kept in memory if it can
            recent = self.active_segment.read_recent(fetch_offset, max_bytes, first_whole)
            if recent is not None:
                return recent  # appended in this process: checked when they came in, never read back from disk
        slot = bisect.bisect_right([s.base_offset for s in self.segments], fetch_offset) - 1
        for segment in self.segments[max(slot, 0) :]:
            data = segment.read(fetch_offset, max_bytes, max_offset, first_whole)
            if data:
                return self._verified(data)
            if max_offset is not None and segment.next_offset >= max_offset:
                break
            if not first_whole and segment.base_offset <= fetch_offset < segment.next_offset:
                break  # the batch holding the offset is here and does not fit: a later segment must not answer
        return b""

    @storage_operation("read", writes=False)
    def offset_for_timestamp(self, target_ms: int) -> TimestampAndOffset | None:
        """The first record at or after the log start whose timestamp is at or after `target_ms` (no time index:
        batch headers are walked, and only the batch that holds the answer is decoded)."""
        reaching = (
            read_header(segment.log.read(position.position, position.size))
            for segment in self.segments
            for position in segment.scan(0)
            if position.max_timestamp >= target_ms and position.last_offset >= self.log_start_offset
        )
        return search(reaching, target_ms, self.log_start_offset)

    @storage_operation("read", writes=False)
    def max_timestamp_offset(self) -> TimestampAndOffset | None:
        """The first record holding the log's largest timestamp (ListOffsets MAX_TIMESTAMP); None when empty."""
        largest = max(
            (p.max_timestamp for s in self.segments for p in s.scan(0) if p.last_offset >= self.log_start_offset),
            default=-1,
        )
        return self.offset_for_timestamp(largest) if largest >= 0 else None

    def _verified(self, data: bytes) -> bytes:
        """Beyond Kafka: a broker checks every batch's CRC before serving it. Bytes that changed on disk are a
        storage error: the log dir goes offline and leadership moves to a replica with good data, rather than
        consumers or followers getting bad bytes. (The metadata log, without a failure channel, is not checked.)"""
        if self.failures is None:
            return data
        offset = None  # of the bad batch; None: the first batch's header is already torn
        try:
            for batch in iter_batches(data):
                offset = batch.base_offset
                if not batch.is_valid():
                    raise CorruptRecordError(
                        f"CRC mismatch in the batch at offset {offset} (stored {batch.crc:#010x}, "
                        f"computed {batch.computed_crc():#010x})",
                        batch.position,
                    )
                offset = batch.last_offset + 1
        except CorruptRecordError as error:
            self._log.error("log_batch_corrupt", offset=offset, error=error.message)
            raise self.io_failed("read", error) from error
        return data

    # ---- producer state ----

    def _reload_producer_state(self) -> None:
        """Kafka's loadProducerState: the newest snapshot at or below the log end, then every batch after it.
        Snapshots past the log end (their batches were cut or lost in a crash) or below its start are deleted."""
        end = self.log_end_offset
        delete_snapshots_outside(self.directory, self.log_start_offset, end)
        state = latest_snapshot(self.directory, end) or ProducerState(end_offset=self.log_start_offset)
        # The batches replayed write their aborted transactions' index entries again (Kafka rebuilds the
        # .txnindex of the segments it recovers the same way).
        self.transactions.forget_from(state.end_offset)
        for segment in self.segments:
            if segment.next_offset <= state.end_offset:
                continue
            for batch in segment.scan():
                if batch.base_offset >= state.end_offset:
                    state = self.transactions.apply(state, batch, batch.base_offset, segment.base_offset)
        self.producer_state = state

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> tuple[int, ...]:
        """Forget the producers idle for `expiration_ms` (producer.id.expiration.ms) with no transaction open; the
        next snapshot leaves them out. Returns their ids."""
        expired = self.producer_state.without_expired(now_ms, expiration_ms)
        self.producer_state = expired.state
        return expired.producer_ids

    # ---- truncation and retention ----

    @storage_operation("truncate")
    def truncate_to(self, offset: int, reason: str = "") -> int:
        """Cut the log so it ends at or below `offset` (whole batches); returns the new log end offset."""
        old_end = self.log_end_offset
        if offset >= old_end:
            # Nothing to cut, but an epoch entry at the log end (cached by a leader that appended nothing before it
            # lost leadership) goes: the follower would otherwise keep fetching with an epoch it holds no data of.
            self.epoch_cache.truncate_from_end(old_end)
            return old_end
        if offset <= self.segments[0].base_offset:
            self.truncate_fully_and_start_at(max(offset, self.log_start_offset), reason)
            return self.log_end_offset
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
        self.active_segment.truncate_to(offset)
        self._after_truncation()
        self._log.info(
            "log_truncated",
            old_log_end_offset=old_end,
            new_log_end_offset=self.log_end_offset,
            requested_offset=offset,
            reason=reason,
        )
        return self.log_end_offset

    @storage_operation("truncate")
    def truncate_fully_and_start_at(self, offset: int, reason: str = "") -> None:
        old_end = self.log_end_offset
        for segment in self.segments:
            segment.delete()
        self.segments = [self._new_segment(offset, self.last_flush_ms)]
        self.transactions.forget_from(0)  # every segment went, and the entries of their markers with them
        self.log_start_offset = offset
        self._start_checkpoint.write(offset)
        self.epoch_cache.clear()
        self._after_truncation()
        self._log.info(
            "log_truncated",
            old_log_end_offset=old_end,
            new_log_end_offset=offset,
            requested_offset=offset,
            reason=reason,
            fully=True,
        )

    def _after_truncation(self) -> None:
        self._truncations += 1
        self._reload_producer_state()
        end = self.log_end_offset
        self.epoch_cache.truncate_from_end(end)
        self._high_watermark = min(self._high_watermark, end)
        self.recovery_point = min(self.recovery_point, end)
        if (self._checkpointed_recovery_point or 0) > end:  # never vouch on disk for data that is gone
            self._recovery_checkpoint.write(end)
            self._checkpointed_recovery_point = end
        self.unflushed_messages = 0

    @storage_operation("retention")
    def delete_retention(self, now_ms: int) -> int:
        """Delete the oldest whole segments beyond retention.bytes / retention.ms (never the active segment, never
        data at or above the high watermark); returns how many segments went."""
        deleted = 0
        while len(self.segments) > 1 and self.config.delete:  # a compact-only log keeps its segments
            oldest = self.segments[0]
            following = self.segments[1]
            if following.base_offset > self._high_watermark:
                break
            over_size = (
                self.config.retention_bytes >= 0 and self.size_bytes - oldest.size >= self.config.retention_bytes
            )
            too_old = self.config.retention_ms >= 0 and now_ms - max(oldest.max_timestamp, 0) > self.config.retention_ms
            if not (over_size or too_old):
                break
            self.segments.pop(0).delete()
            self.log_start_offset = following.base_offset
            deleted += 1
        if deleted:
            self.transactions.aborted.drop_segments_below(self.segments[0].base_offset)
            self._start_checkpoint.write(self.log_start_offset)
            self.epoch_cache.truncate_from_start(self.log_start_offset)
            self._log.info(
                "log_segments_deleted", segments=deleted, log_start_offset=self.log_start_offset, reason="retention"
            )
        return deleted

    @storage_operation("retention")
    def delete_before(self, offset: int, reason: str) -> int:
        """Move the log start up to `offset` (Kafka's maybeIncrementLogStartOffset; the caller vouches that it is
        committed, e.g. a snapshot's end) and delete the segments wholly below it, never the active one; returns
        how many went."""
        offset = min(offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return 0
        deleted = 0
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            self.segments.pop(0).delete()
            deleted += 1
        self.transactions.aborted.drop_segments_below(self.segments[0].base_offset)
        self.log_start_offset = offset
        self._start_checkpoint.write(offset)
        self.epoch_cache.truncate_from_start(offset)
        self._high_watermark = max(self._high_watermark, offset)
        self._log.info("log_segments_deleted", segments=deleted, log_start_offset=offset, reason=reason)
        return deleted

    # ---- log cleaning ----

    @storage_operation("clean", writes=False)
    def cleanable(self, tombstones_due_ms: int | None = None) -> CleanableLog:
        """What the cleaner's planner needs to know of this log."""
        summaries = []
        for segment in self.segments:
            first = next(segment.scan(0), None)
            max_timestamp = segment.max_timestamp
            if self.config.min_compaction_lag_ms > 0 and segment is not self.active_segment:
                max_timestamp = max((batch.max_timestamp for batch in segment.scan(0)), default=-1)
            summaries.append(
                SegmentSummary(
                    segment.base_offset,
                    segment.next_offset,
                    segment.size,
                    first.max_timestamp if first is not None else -1,
                    max_timestamp,
                )
            )
        return CleanableLog(
            self.name,
            tuple(summaries),
            self.log_start_offset,
            self._high_watermark,
            self._cleaner_checkpoint.read(),
            self.config.min_cleanable_ratio,
            self.config.min_compaction_lag_ms,
            self.config.max_compaction_lag_ms,
            tombstones_due_ms,
            self.last_stable_offset,
        )

    def cleaning_job(self, plan: LogToClean, wall_clock_ms: int, dedupe_buffer_bytes: int) -> CleaningJob:
        """A cleaning of every whole segment below the plan's end, for a worker thread (which only reads them)."""
        following = [s.base_offset for s in self.segments[1:]]
        sources = tuple(
            SourceSegment(segment.base_offset, end, segment.size, segment.log_path)
            for segment, end in zip(self.segments[:-1], following, strict=True)
            if end <= plan.first_uncleanable_offset
        )
        producers = {
            pid: ProducerLastEntry(entry.batches[-1].last_offset if entry.batches else None, entry.producer_epoch)
            for pid, entry in self.producer_state.producers.items()
        }
        first = sources[0].base_offset if sources else plan.first_dirty_offset
        return CleaningJob(
            self.directory,
            self.name,
            sources,
            plan.first_dirty_offset,
            plan.first_uncleanable_offset,
            producers,
            wall_clock_ms,
            self.config.delete_retention_ms,
            min(self.config.segment_bytes, MAX_SEGMENT_POSITION),
            self.config.index_interval_bytes,
            dedupe_buffer_bytes,
            tuple(self.aborted_transactions(first, plan.first_uncleanable_offset)),
        )

    @property
    def may_have_gaps(self) -> bool:
        """Whether batches may start above where the previous one ended: the log is compacted, or was cleaned once
        (its cleaner checkpoint stays when the topic stops being compacted)."""
        return self.config.compact or (self.directory / CLEANER_CHECKPOINT_FILE).exists()

    @property
    def truncations(self) -> int:
        """Counts cuts of the log: a cleaning begun before one is not swapped in."""
        return self._truncations

    @storage_operation("clean")
    def swap_cleaned(self, job: CleaningJob, result: CleaningResult, truncations: int) -> bool:
        """Swap a cleaning's segments in (Kafka's replaceSegments), unless the log changed under it since the job
        was taken (cut, segments deleted by retention, closed): then its files go and False is answered."""
        current = {segment.base_offset: segment for segment in self.segments[:-1]}
        sizes = {source.base_offset: source.size for source in job.segments}
        unchanged = (
            not self._closed
            and truncations == self._truncations
            and all(
                base in current and current[base].size == sizes[base]
                for group in result.groups
                for base in group.replaces
            )
        )
        if not unchanged:
            discard(result)
            return False
        for group in result.groups:
            self._swap_group(group)
        self._cleaner_checkpoint.write(result.end_offset)
        return True

    def _swap_group(self, group: CleanedGroup) -> None:
        """`.cleaned` to `.swap`, the old segments deleted, `.swap` to the segment's name: at every step a crash
        leaves what opening the log completes (segment_swap.complete_swaps)."""
        swap_log = rename_suffix(group.log_path, CLEANED_SUFFIX, SWAP_SUFFIX)
        swap_index = rename_suffix(group.index_path, CLEANED_SUFFIX, SWAP_SUFFIX)
        fsync_directory(self.directory)
        old = [segment for segment in self.segments if segment.base_offset in group.replaces]
        position = self.segments.index(old[0])
        for segment in old:
            segment.delete()
        rename_suffix(swap_log, SWAP_SUFFIX, "")
        rename_suffix(swap_index, SWAP_SUFFIX, "")
        self.transactions.merge_segments(set(group.replaces), group.base_offset, group.aborted)
        fsync_directory(self.directory)
        segment, index_ok = LogSegment.open_existing(
            self.directory,
            group.base_offset,
            self.config.simulate_page_cache,
            self.config.index_interval_bytes,
            self.last_flush_ms,
            self.files,
        )
        if not index_ok or not segment.load_end():
            segment.recover(allow_gaps=True)
        self.segments[position : position + len(old)] = [segment]

    # ---- closing ----

    def close(self, now_ms: int = 0) -> None:
        """Flush, checkpoint and mark a clean shutdown (the next open skips the recovery scan)."""
        if self._closed:
            return
        if self.offline:  # nothing more is written to a failed directory, a clean-shutdown marker least of all
            self.abandon()
            return
        if self._holds_data():
            self.flush(now_ms, checkpoint=True)
            write_snapshot(self.directory, self.producer_state)  # the next open replays nothing
        with self._hwm_checkpoint_lock:  # after any checkpoint being written elsewhere, and the last one
            # Only a changed value: an idle partition's clean stop costs no fsync.
            self._write_high_watermark_checkpoint(self._high_watermark)
            self._closed = True
        for segment in self.segments:
            segment.close()
        (self.directory / CLEAN_SHUTDOWN_FILE).write_text("")

    def _holds_data(self) -> bool:
        """Anything a clean stop must make durable: an empty log (new, or every batch deleted) has nothing to
        flush and no producer to snapshot, and a broker stopping with thousands of them pays no fsync for each."""
        return (
            self.log_end_offset > self.log_start_offset
            or bool(self.unflushed_messages)
            or bool(self.producer_state.producers)
            or any(segment.dirty for segment in self.segments)
        )

    def abandon(self) -> None:
        """Close file handles without flushing, as a crash would (tests; unflushed simulated bytes are lost)."""
        with self._hwm_checkpoint_lock:
            self._closed = True
        for segment in self.segments:
            segment.close()

    def delete(self) -> None:
        self.abandon()
        shutil.rmtree(self.directory, ignore_errors=True)
