"""Kafka's Cleaner: one cleaning of one log, written aside. Runs in a worker thread on a snapshot of the log's
segments (their files are only read, through descriptors of its own); the partition log swaps the result in.

1. The offset map: each key of the dirty section [first dirty offset, end) to its latest offset, kept as a 16-byte
   digest (as Kafka's SkimpyOffsetMap); when it would outgrow log.cleaner.dedupe.buffer.size, the section ends
   before the segment that does not fit, and the rest waits for the next cleaning.
2. Every segment from the log start to the section's end is rewritten, in groups that fit one segment: a record
   stays when it is the latest of its key (or its key is not in the map: newer than the map), a record without
   a key goes, a tombstone goes once its batch's delete horizon has passed (KIP-534: the first cleaning that keeps
   a tombstone sets it to now + delete.retention.ms, rewriting the batch). A batch keeps its base
   and last offsets, leader epoch and producer fields (so offsets keep their gaps and idempotent producers their
   sequences); a batch left with no record is dropped, unless it is the last batch of a producer the log still
   tracks, or the last of its group (so a cleaned segment still ends where the next begins: recovery tells a
   segment that lost its tail from a cleaned one by that).
3. Transactions, as Kafka's cleaner (storage/cleaned_transactions.py): the range cleaned ends at the last stable
   offset, so every transaction in it is decided. An aborted transaction's batches lose all their records (an
   empty batch stays where the producer's sequence needs it); a committed one's records are compacted as any
   other. A marker stays while its transaction's data is met; once none is, the cleaning sets its batch's delete
   horizon (KIP-534: now + delete.retention.ms), and the first cleaning past it removes the marker, unless it is
   the producer's last entry (its epoch fences zombies), which keeps it empty.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from minikafka.common.record_batch import HEADER_SIZE, RecordBatch, read_header, rebuild_batch
from minikafka.storage.cleaned_transactions import CleanedTransactions
from minikafka.storage.cleaner_plan import SegmentSummary, group_segments
from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.offset_index import OffsetIndex
from minikafka.storage.segment_swap import cleaned_paths
from minikafka.storage.transaction_index import AbortedTxn

# What one key of the map costs here: a 16-byte digest and an offset as Python objects in a dict (Kafka's
# SkimpyOffsetMap packs the same into 24 bytes), so log.cleaner.dedupe.buffer.size bounds the memory really used.
MAP_ENTRY_BYTES = 128
MAP_LOAD_FACTOR = 0.9  # Kafka's log.cleaner.io.buffer.load.factor


@dataclass(frozen=True)
class SourceSegment:
    base_offset: int
    end_offset: int  # where it ends in the log: the next segment's base
    size: int  # bytes of it to read (it does not change: only the active segment is appended to)
    path: Path


@dataclass(frozen=True)
class ProducerLastEntry:
    """Of a producer the log tracks (Kafka's lastRecordsOfActiveProducers): its last data batch's last offset
    (None: its current epoch has none, began by a marker) and its epoch."""

    last_data_offset: int | None
    epoch: int


@dataclass(frozen=True)
class CleaningJob:
    directory: Path
    name: str
    segments: tuple[SourceSegment, ...]  # from the log start, every whole segment below `end_offset`
    first_dirty_offset: int
    end_offset: int
    producers: Mapping[int, ProducerLastEntry]  # every producer the log tracks
    now_ms: int  # wall-clock: record timestamps are
    delete_retention_ms: int
    max_segment_bytes: int
    index_interval_bytes: int
    dedupe_buffer_bytes: int
    aborted: tuple[AbortedTxn, ...] = ()  # the aborted transactions overlapping the segments cleaned


@dataclass(frozen=True)
class CleanedGroup:
    base_offset: int
    replaces: tuple[int, ...]  # base offsets of the segments it replaces
    end_offset: int
    log_path: Path  # the `.cleaned` files
    index_path: Path
    bytes_before: int
    bytes_after: int
    aborted: tuple[AbortedTxn, ...] = ()  # its aborted-transaction index: the entries whose data it still holds


@dataclass(frozen=True)
class CleaningResult:
    groups: tuple[CleanedGroup, ...]
    end_offset: int  # the new cleaner checkpoint: everything below is clean
    keys: int
    records_before: int
    records_after: int
    tombstones_removed: int
    tombstones_due_ms: int | None  # the earliest time a kept tombstone or marker may go
    markers_removed: int = 0  # transaction markers past their delete horizon


@dataclass(frozen=True)
class FilteredBatch:
    data: bytes | None  # None: the batch goes
    records_before: int
    records_after: int
    tombstones_removed: int
    tombstones_due_ms: int | None
    markers_removed: int = 0


def key_digest(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


def read_batches(path: Path, size: int) -> Iterator[RecordBatch]:
    """Every whole batch in the first `size` bytes of a segment file, through a descriptor of its own."""
    fd = os.open(path, os.O_RDONLY)
    try:
        position = 0
        while position + HEADER_SIZE <= size:
            header = read_header(os.pread(fd, HEADER_SIZE, position), require_body=False)
            if position + header.size > size:
                return
            yield read_header(os.pread(fd, header.size, position))
            position += header.size
    finally:
        os.close(fd)


def build_offset_map(job: CleaningJob) -> tuple[dict[bytes, int], int]:
    """The dirty section's keys and their latest offsets, and where the section mapped ends."""
    capacity = max(1, int(job.dedupe_buffer_bytes * MAP_LOAD_FACTOR / MAP_ENTRY_BYTES))
    latest: dict[bytes, int] = {}
    transactions = CleanedTransactions(job.aborted)
    for segment in job.segments:
        if segment.end_offset <= job.first_dirty_offset:
            continue
        found: dict[bytes, int] = {}
        for batch in read_batches(segment.path, segment.size):
            # Markers hold no key of the topic's, and an aborted transaction's records are not the latest of theirs.
            if batch.is_control:
                transactions.on_marker(batch)
                continue
            if transactions.on_batch(batch):
                continue
            for record in batch.records():
                if record.key is not None and record.offset >= job.first_dirty_offset:
                    found[key_digest(record.key)] = record.offset
        if latest and len(latest) + sum(1 for key in found if key not in latest) > capacity:
            return latest, segment.base_offset
        latest.update(found)
    return latest, job.end_offset


def filter_batch(
    batch: RecordBatch,
    latest: Mapping[bytes, int],
    now_ms: int,
    delete_retention_ms: int,
    keep_empty: bool,
    aborted: bool = False,
) -> FilteredBatch:
    """What of one data batch a cleaning keeps (pure); `aborted`: of an aborted transaction, none of it. A tombstone
    stays until its batch's delete horizon has passed; the first cleaning that keeps one sets that horizon (KIP-534:
    now + delete.retention.ms), so a tombstone lasts delete.retention.ms from its first cleaning."""
    kept = []
    before = removed_tombstones = 0
    horizon = batch.delete_horizon_ms
    tombstones_kept = False
    for record in batch.records():
        before += 1
        if aborted or record.key is None or latest.get(key_digest(record.key), -1) > record.offset:
            continue
        if record.value is None:
            if horizon is not None and now_ms >= horizon:
                removed_tombstones += 1
                continue
            tombstones_kept = True
        kept.append(record)
    sets_horizon = tombstones_kept and horizon is None
    if sets_horizon:
        horizon = now_ms + delete_retention_ms
    if len(kept) == before and not sets_horizon:  # the batch as it is, compressed or not (Kafka's original)
        data: bytes | None = batch.bytes()
    elif kept or keep_empty:
        data = rebuild_batch(batch, kept, horizon)
    else:
        data = None
    return FilteredBatch(data, before, len(kept), removed_tombstones, horizon if tombstones_kept else None)


def filter_marker(
    batch: RecordBatch, discardable: bool, now_ms: int, delete_retention_ms: int, keep_empty: bool
) -> FilteredBatch:
    """What of one control batch a cleaning keeps (pure): all of it until it is discardable and past its delete
    horizon, which the first cleaning finding it discardable sets."""
    count = batch.records_count
    horizon = batch.delete_horizon_ms
    if not discardable:
        return FilteredBatch(batch.bytes(), count, count, 0, None)
    if horizon is None:
        horizon = now_ms + delete_retention_ms
        return FilteredBatch(rebuild_batch(batch, list(batch.records()), horizon), count, count, 0, horizon)
    if now_ms < horizon:
        return FilteredBatch(batch.bytes(), count, count, 0, horizon)
    return FilteredBatch(rebuild_batch(batch, []) if keep_empty else None, count, 0, 0, None, markers_removed=count)


def _last_of_producer(job: CleaningJob, batch: RecordBatch) -> bool:
    """Kafka's isBatchLastRecordOfProducer: the batch holding a tracked producer's last sequence, or, when its
    epoch has no data, its marker at that epoch (for fencing): kept, if only empty."""
    entry = job.producers.get(batch.producer_id) if batch.has_producer_id else None
    if entry is None:
        return False
    if entry.last_data_offset is not None:
        return batch.last_offset == entry.last_data_offset
    return batch.is_control and batch.producer_epoch == entry.epoch


def _filter(
    job: CleaningJob, batch: RecordBatch, latest: Mapping[bytes, int], txns: CleanedTransactions, keep_empty: bool
) -> FilteredBatch:
    keep_empty = keep_empty or _last_of_producer(job, batch)
    if batch.is_control:
        discardable = txns.on_marker(batch)
        return filter_marker(batch, discardable, job.now_ms, job.delete_retention_ms, keep_empty)
    aborted = txns.on_batch(batch)
    outcome = filter_batch(batch, latest, job.now_ms, job.delete_retention_ms, keep_empty, aborted)
    txns.on_written(batch, outcome.data is not None)
    return outcome


def _clean_group(
    job: CleaningJob, group: list[SourceSegment], latest: Mapping[bytes, int], txns: CleanedTransactions
) -> tuple[CleanedGroup, list[FilteredBatch]]:
    log_path, index_path = cleaned_paths(job.directory, group[0].base_offset)
    index_path.unlink(missing_ok=True)  # left by a cleaning that was not swapped in
    # A cache of its own: the cleaner runs in a worker thread, and this index is closed before the swap.
    index = OffsetIndex(index_path, group[0].base_offset, FileHandleCache())
    fd = os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    outcomes = []
    retained_before = len(txns.retained)
    try:
        written = since_index = 0
        batches = [(batch, segment) for segment in group for batch in read_batches(segment.path, segment.size)]
        for position, (batch, _segment) in enumerate(batches):
            outcome = _filter(job, batch, latest, txns, position == len(batches) - 1)
            outcomes.append(outcome)
            if outcome.data is None:
                continue
            if written > 0 and since_index >= job.index_interval_bytes:
                index.append(batch.base_offset, written)
                since_index = 0
            os.pwrite(fd, outcome.data, written)
            written += len(outcome.data)
            since_index += len(outcome.data)
        os.fsync(fd)
        index.flush()
    finally:
        os.close(fd)
        index.close()
    cleaned = CleanedGroup(
        group[0].base_offset,
        tuple(segment.base_offset for segment in group),
        group[-1].end_offset,
        log_path,
        index_path,
        sum(segment.size for segment in group),
        written,
        tuple(txns.retained[retained_before:]),
    )
    return cleaned, outcomes


def clean(job: CleaningJob) -> CleaningResult:
    """Map the dirty section, then write every group's cleaned segment aside (fsynced); nothing is swapped."""
    latest, end = build_offset_map(job)
    summaries = [SegmentSummary(s.base_offset, s.end_offset, s.size, -1, -1) for s in job.segments]
    by_base = {segment.base_offset: segment for segment in job.segments}
    groups = []
    outcomes: list[FilteredBatch] = []
    # One view of the transactions across the groups: a marker in a later group than its data still sees it.
    txns = CleanedTransactions(job.aborted)
    for grouped in group_segments(summaries, end, job.max_segment_bytes):
        cleaned, filtered = _clean_group(job, [by_base[s.base_offset] for s in grouped], latest, txns)
        groups.append(cleaned)
        outcomes.extend(filtered)
    dues = [outcome.tombstones_due_ms for outcome in outcomes if outcome.tombstones_due_ms is not None]
    if txns.recheck:
        dues.append(job.now_ms)
    return CleaningResult(
        tuple(groups),
        groups[-1].end_offset if groups else job.first_dirty_offset,
        len(latest),
        sum(outcome.records_before for outcome in outcomes),
        sum(outcome.records_after for outcome in outcomes),
        sum(outcome.tombstones_removed for outcome in outcomes),
        min(dues) if dues else None,
        sum(outcome.markers_removed for outcome in outcomes),
    )


def discard(result: CleaningResult) -> None:
    """A cleaning that is not swapped in (the log changed meanwhile): its files go."""
    for group in result.groups:
        group.log_path.unlink(missing_ok=True)
        group.index_path.unlink(missing_ok=True)
