"""A log segment: `<20-digit base offset>.log` of record batches plus its sparse `.index` (and, when a transaction
was aborted in it, its `.txnindex`, which `transaction_index` keeps)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from minikafka.common.control_batch import EndTxnMarker, read_marker
from minikafka.common.errors import KafkaError
from minikafka.common.record_batch import HEADER_SIZE, CorruptRecordError, read_header
from minikafka.storage.durability import sync_fd
from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.offset_index import OffsetIndex
from minikafka.storage.page_cache import SegmentFile
from minikafka.storage.recent_appends import RecentAppends
from minikafka.storage.transaction_index import txn_index_path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


@dataclass(frozen=True)
class BatchPosition:
    """Where a batch sits in a segment: enough to read, cut or index it without decoding records."""

    position: int
    base_offset: int
    last_offset: int
    size: int
    partition_leader_epoch: int
    max_timestamp: int
    # What producer state is rebuilt from (no producer id: -1).
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_control: bool = False
    is_transactional: bool = False
    marker: EndTxnMarker | None = None  # a control batch's COMMIT or ABORT marker


@dataclass(frozen=True)
class RecoveryResult:
    valid_bytes: int
    truncated_bytes: int
    batches: int
    reason: str | None  # why the scan stopped early (torn header, CRC mismatch, ...)


class LogSegment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        simulate_page_cache: bool,
        index_interval_bytes: int,
        created_ms: int,
        files: FileHandleCache,
    ) -> None:
        """A new segment: both files are created."""
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log = SegmentFile(self.log_path, simulate_page_cache, files, create=True)
        self.index = OffsetIndex(self.index_path, base_offset, files)
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.created_ms = created_ms
        self._bytes_since_index_entry = 0
        self._recent = RecentAppends()

    @property
    def log_path(self) -> Path:
        return self.directory / (segment_name(self.base_offset) + LOG_SUFFIX)

    @property
    def index_path(self) -> Path:
        return self.directory / (segment_name(self.base_offset) + INDEX_SUFFIX)

    @property
    def size(self) -> int:
        return self.log.size

    # ---- opening ----

    @classmethod
    def open_existing(
        cls,
        directory: Path,
        base_offset: int,
        simulate_page_cache: bool,
        index_interval_bytes: int,
        created_ms: int,
        files: FileHandleCache,
    ) -> tuple[LogSegment, bool]:
        """Load a segment and its index (their files open when first used); the flag says whether the index was
        consistent (else: rebuild)."""
        segment = cls.__new__(cls)
        segment.directory = directory
        segment.base_offset = base_offset
        segment.index_interval_bytes = index_interval_bytes
        segment.log = SegmentFile(segment.log_path, simulate_page_cache, files, create=False)
        segment.created_ms = created_ms
        segment.max_timestamp = -1
        segment._bytes_since_index_entry = 0
        segment._recent = RecentAppends()
        index_existed = segment.index_path.exists()
        segment.index, consistent = OffsetIndex.load(segment.index_path, base_offset, segment.log.size, files)
        segment.next_offset = base_offset
        return segment, index_existed and consistent

    def load_end(self) -> bool:
        """Find the next offset by walking batch headers from the last index entry (no CRC checks); False when
        the walk does not reach the end of the file cleanly (the caller then recovers the segment)."""
        _offset, position = self.index.lookup(2**63 - 1)
        self.next_offset = self.base_offset
        end = position
        for batch in self.scan(position):
            self.next_offset = batch.last_offset + 1
            self.max_timestamp = max(self.max_timestamp, batch.max_timestamp)
            end = batch.position + batch.size
        return end == self.log.size and (position == 0 or self.next_offset > self.base_offset)

    # ---- writing ----

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        """Whether `offset` fits this segment's index (Kafka's canConvertToRelativeOffset)."""
        return self.index.can_append_offset(offset)

    def append(self, data: bytes | memoryview, first_offset: int, last_offset: int, max_timestamp: int) -> None:
        position = self.log.size
        self.log.append(data)  # first: a failed write leaves no index entry pointing past the file
        if position > 0 and self._bytes_since_index_entry >= self.index_interval_bytes:
            self.index.append(first_offset, position)
            self._bytes_since_index_entry = 0
        self._recent.add(first_offset, position, data)
        self._bytes_since_index_entry += len(data)
        self.next_offset = last_offset + 1
        self.max_timestamp = max(self.max_timestamp, max_timestamp)

    def flush(self) -> None:
        self.log.flush()
        self.index.flush()

    @property
    def dirty(self) -> bool:
        """Records written since the last fsync (the index is derived data: recovery rebuilds it)."""
        return self.log.dirty

    def detached_fsync(self) -> Callable[[], None]:
        """An fsync of this segment's files for another thread: on duplicated descriptors, so closing or deleting
        the segment meanwhile cannot pull them away, and touching none of its state (`mark_clean` records it)."""
        files = (self.log, self.index)
        descriptors = [self.log.duplicate_fd()]
        try:
            descriptors.append(self.index.duplicate_fd())
        except OSError:
            os.close(descriptors[0])
            raise
        sizes = [(os.fstat(fd).st_size, file.cuts) for fd, file in zip(descriptors, files, strict=True)]

        def fsync() -> None:
            try:
                for fd in descriptors:
                    sync_fd(fd)
                for file, (size, cuts) in zip(files, sizes, strict=True):
                    file.synced_up_to(size, cuts)
            finally:
                for fd in descriptors:
                    os.close(fd)

        return fsync

    def mark_clean(self) -> None:
        """A `detached_fsync` finished and nothing was written since it was taken."""
        self.log.mark_clean()
        self.index.mark_clean()

    def on_become_inactive(self) -> None:
        """Rolled (Kafka's onBecomeInactiveSegment): its end is no longer the log end, so its newest appends are
        not kept for fetches at the log end any more (every rolled segment would hold some)."""
        self._recent.clear()

    # ---- reading ----

    def scan(self, position: int = 0, verify_crc: bool = False) -> Iterator[BatchPosition]:
        """Batches from `position` on; stops at the first torn or (with verify_crc) corrupt batch."""
        end = self.log.size
        while position + HEADER_SIZE <= end:
            header = self.log.read(position, HEADER_SIZE)
            try:
                batch = read_header(header, 0, require_body=False)
            except CorruptRecordError:
                return
            if position + batch.size > end:
                return
            if verify_crc:
                whole = self.log.read(position, batch.size)
                try:
                    checked = read_header(whole, 0)
                except CorruptRecordError:
                    return
                if not checked.is_valid():
                    return
            yield BatchPosition(
                position,
                batch.base_offset,
                batch.last_offset,
                batch.size,
                batch.partition_leader_epoch,
                batch.max_timestamp,
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                batch.is_control,
                batch.is_transactional,
                self._marker_at(position, batch.size) if batch.is_control else None,
            )
            position += batch.size

    def _marker_at(self, position: int, size: int) -> EndTxnMarker | None:
        """A control batch's marker: control batches are one small record, read only when one is met."""
        try:
            return read_marker(read_header(self.log.read(position, size), 0))
        except KafkaError:
            return None

    def find(self, offset: int) -> BatchPosition | None:
        """The first batch whose last offset is at or after `offset`."""
        last = self._recent.last
        if last is not None and offset >= last.first_offset:
            position = last.position  # a fetch at the log end: no index lookup
        else:
            _indexed, position = self.index.lookup(offset)
        for batch in self.scan(position):
            if batch.last_offset >= offset:
                return batch
        return None

    def read_recent(self, offset: int, max_bytes: int, first_whole: bool = True) -> bytes | None:
        """What `read` would answer with no `max_offset`, from the appends kept in memory; None when they do not
        hold it."""
        return self._recent.read(offset, max_bytes, first_whole)

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None, first_whole: bool = True) -> bytes:
        """Whole batches from the one holding `offset`: at most `max_bytes` (the first batch always whole when
        `first_whole`, so a big batch cannot wedge a fetcher), none starting at or past `max_offset`."""
        start = self.find(offset)
        if start is None or (max_offset is not None and start.base_offset >= max_offset):
            return b""
        rest = self.log.size - start.position
        if rest <= max_bytes and (max_offset is None or self.next_offset <= max_offset):
            return self.log.read(start.position, rest)  # everything to the end fits: no walk over the headers
        end = start.position
        for batch in self.scan(start.position):
            if max_offset is not None and batch.base_offset >= max_offset:
                break
            if end + batch.size - start.position > max_bytes and (end > start.position or not first_whole):
                break
            end = batch.position + batch.size
        return self.log.read(start.position, end - start.position)

    # ---- cutting ----

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding `offset` and every later one (batches go whole, as in Kafka, so the segment
        may end below `offset`); returns the bytes removed."""
        first_removed = self.find(offset)
        if first_removed is None:
            return 0
        removed = self.log.size - first_removed.position
        self.log.truncate(first_removed.position)
        self.index.truncate_to_position(first_removed.position)
        # The end of the last batch kept: below the removed one's base where a cleaner left a gap before it.
        _indexed, position = self.index.lookup(2**63 - 1)
        self.next_offset = self.base_offset
        for batch in self.scan(position):
            self.next_offset = batch.last_offset + 1
        self._bytes_since_index_entry = 0
        self._recent.clear()
        return removed

    def recover(self, expected_epoch: Callable[[int], int] | None = None, allow_gaps: bool = False) -> RecoveryResult:
        """Scan every batch with CRC checks, cut at the first torn or corrupt one, rebuild the index.

        `expected_epoch(base_offset)` (from the leader-epoch checkpoint, written before the data) also catches a
        flipped partition leader epoch, which like the base offset lies outside the CRC. `allow_gaps`: the log is
        compacted, so a batch may start above where the previous one ended (else that is a corrupt base offset).
        """
        self.index.reset()
        self._bytes_since_index_entry = 0
        self._recent.clear()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        valid = 0
        count = 0
        gap = None
        for batch in self.scan(0, verify_crc=True):
            # The base offset lies outside the CRC: a batch not starting where the previous one ended is corrupt,
            # unless the log cleaner left a gap there.
            if batch.base_offset < self.next_offset or (batch.base_offset > self.next_offset and not allow_gaps):
                at_least = " at least" if allow_gaps else ""
                gap = f"batch base offset {batch.base_offset}, expected{at_least} {self.next_offset}"
                break
            if expected_epoch is not None and batch.partition_leader_epoch != expected_epoch(batch.base_offset):
                expected = expected_epoch(batch.base_offset)
                gap = f"batch partition leader epoch {batch.partition_leader_epoch}, expected {expected}"
                break
            if self._bytes_since_index_entry >= self.index_interval_bytes and batch.position > 0:
                self.index.append(batch.base_offset, batch.position)
                self._bytes_since_index_entry = 0
            self._bytes_since_index_entry += batch.size
            valid = batch.position + batch.size
            self.next_offset = batch.last_offset + 1
            self.max_timestamp = max(self.max_timestamp, batch.max_timestamp)
            count += 1
        truncated = self.log.size - valid
        reason = None
        if truncated:
            reason = gap or self._why_invalid(valid)
            self.log.truncate(valid)
        return RecoveryResult(valid, truncated, count, reason)

    def _why_invalid(self, position: int) -> str:
        data = self.log.read(position, self.log.size - position)
        try:
            batch = read_header(data, 0)
        except CorruptRecordError as error:
            return error.message
        return f"CRC mismatch (stored {batch.crc:#010x}, computed {batch.computed_crc():#010x})"

    def close(self) -> None:
        self.log.close()
        self.index.close()

    def delete(self) -> None:
        self.close()
        self.log_path.unlink(missing_ok=True)
        self.index_path.unlink(missing_ok=True)
        txn_index_path(self.directory, self.base_offset).unlink(missing_ok=True)
