"""The world's reads of a replica's segments answer what the segment's own read answers, from any offset."""

from __future__ import annotations

import random
from pathlib import Path

from minikafka.common.record_batch import (
    HEADER_SIZE,
    CorruptRecordError,
    Record,
    build_batch,
    iter_batches,
    rebuild_batch,
)
from minikafka.sim.invariants import RecordsRead, header_spans, records_between
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


def _read_header_walk(data: bytes) -> list[tuple[int, int, int, int, int]] | str:
    try:
        return [
            (b.position, b.size, b.base_offset, b.last_offset, b.partition_leader_epoch) for b in iter_batches(data)
        ]
    except CorruptRecordError:
        return "corrupt"


def _spans_walk(data: bytes) -> list[tuple[int, int, int, int, int]] | str:
    try:
        return [(s.position, s.size, s.base_offset, s.last_offset, s.leader_epoch) for s in header_spans(data)]
    except CorruptRecordError:
        return "corrupt"


def test_the_world_s_header_walk_accepts_and_refuses_what_read_header_does() -> None:
    rng = random.Random(7)
    whole = b"".join(
        build_batch([Record(b"x" * rng.randint(0, 40)) for _ in range(rng.randint(1, 4))], base_offset=10 * n)
        for n in range(12)
    )
    assert _spans_walk(whole) == _read_header_walk(whole) != "corrupt"
    starts = [b.position for b in iter_batches(whole)][:3]
    for start in starts:
        for at in range(start, start + HEADER_SIZE):  # every header field: magic, length, counts, deltas
            for value in (0x00, 0x80, 0xFF):
                damaged = bytearray(whole)
                damaged[at] = value
                assert _spans_walk(bytes(damaged)) == _read_header_walk(bytes(damaged))
    for cut in range(len(whole)):  # a torn tail anywhere
        assert _spans_walk(whole[:cut]) == _read_header_walk(whole[:cut])


def test_the_worlds_record_reads_go_on_past_a_batch_its_cleaning_emptied() -> None:
    """A cleaner keeps an emptied batch (its offsets, none of its records); the reads behind the world's
    invariants continue after it rather than stopping there."""
    first = next(iter_batches(build_batch([Record(b"k=a", b"k"), Record(b"k=b", b"k")], base_offset=0)))
    emptied = rebuild_batch(first, [])
    later = build_batch([Record(b"k=c", b"k")], base_offset=2)
    read = records_between(emptied + later, 0, 10)
    assert read.values == {2: b"k=c"} and read.next_offset == 3
    assert records_between(emptied, 0, 10) == RecordsRead({}, 2)


def test_a_batch_whose_records_do_not_decode_hides_only_its_own_records() -> None:
    """A flipped bit in an emptied batch's record count (the `corrupt` fault): the reads go on after that batch."""
    first = next(iter_batches(build_batch([Record(b"k=a", b"k"), Record(b"k=b", b"k")], base_offset=0)))
    flipped = bytearray(rebuild_batch(first, []))
    flipped[HEADER_SIZE - 1] ^= 0x01  # the record count: 1, with no record behind it
    later = build_batch([Record(b"k=c", b"k")], base_offset=2)
    assert records_between(bytes(flipped) + later, 0, 10) == RecordsRead({2: b"k=c"}, 3)
