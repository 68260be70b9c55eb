"""The world's reads of a replica's segments answer what the segment's own read answers, from any offset."""

from __future__ import annotations

from pathlib import Path

from minikafka.common.record_batch import Record, build_batch
from minikafka.sim.world import _segment_from
from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.segment import LogSegment


def _segment(directory: Path) -> LogSegment:
    """Batches of one to five records of growing values, an index entry every 200 bytes."""
    segment = LogSegment(directory, 100, False, 200, 0, FileHandleCache())
    offset = 100
    for n in range(40):
        count = 1 + n % 5
        records = [Record(b"v" * (10 + 7 * n + i)) for i in range(count)]
        segment.append(build_batch(records, base_offset=offset), offset, offset + count - 1, 0)
        offset += count
    return segment


def test_from_every_offset_the_world_reads_what_the_segment_reads(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    for offset in range(90, segment.next_offset + 5):
        for max_bytes in (1 << 20, 300):
            assert _segment_from(segment, offset, max_bytes) == segment.read(offset, max_bytes, None, True)


def test_a_torn_tail_is_read_as_the_segment_reads_it(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    end = segment.next_offset
    segment.log.append(build_batch([Record(b"torn" * 20)], base_offset=end)[:-9])
    for offset in range(end - 12, end + 2):
        assert _segment_from(segment, offset, 1 << 20) == segment.read(offset, 1 << 20, None, True)
