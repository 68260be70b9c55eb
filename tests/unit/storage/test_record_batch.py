"""Record batch v2: byte layout computed by hand from the spec, varints, validation and in-place rewriting."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c
import pytest

from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import (
    CorruptRecordError,
    Header,
    Record,
    RecordBatch,
    build_batch,
    iter_batches,
    set_base_offset,
    set_partition_leader_epoch,
)
from minikafka.storage.log_validator import AppendOrigin, validate_records


def validate_batches(data: bytes) -> tuple[RecordBatch, ...]:
    """Every batch of `data`, checked as a follower checks what its leader sent."""
    return validate_records(data, AppendOrigin.REPLICATION, max_message_bytes=1 << 20).batches


def test_crc32c_is_castagnoli() -> None:
    assert crc32c.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def test_builder_matches_hand_computed_layout() -> None:
    batch = build_batch(
        [Record(b"v", key=b"k", timestamp_ms=1000)],
        base_offset=5,
        partition_leader_epoch=3,
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
    )
    # record: attributes 0, timestampDelta 0, offsetDelta 0, keyLength 1 (zigzag 2), "k", valueLength 1, "v",
    # headers count 0; its length 8 is written as zigzag varint 16.
    record = bytes([0x10, 0x00, 0x00, 0x00, 0x02]) + b"k" + bytes([0x02]) + b"v" + bytes([0x00])
    after_crc = struct.pack(">hiqqqhii", 0, 0, 1000, 1000, 7, 1, 0, 1) + record
    expected = struct.pack(">qiibI", 5, 4 + 1 + 4 + len(after_crc), 3, 2, crc32c.crc32c(after_crc)) + after_crc
    assert len(expected) == 61 + 9
    assert batch == expected


def test_two_byte_varints_null_key_and_header_match_hand_computed_bytes() -> None:
    value = b"v" * 64
    batch = build_batch(
        [Record(value, timestamp_ms=1000), Record(value, timestamp_ms=935, headers=(Header("h", None),))]
    )
    # Zigzag: 64 -> 128 = 0x80 0x01; -65 -> 129 = 0x81 0x01; -1 (null) -> 0x01. Lengths 71 and 75 -> 142, 150.
    first = bytes([0x8E, 0x01, 0x00, 0x00, 0x00, 0x01, 0x80, 0x01]) + value + bytes([0x00])
    second = bytes([0x96, 0x01, 0x00, 0x81, 0x01, 0x02, 0x01, 0x80, 0x01]) + value
    second += bytes([0x02, 0x02]) + b"h" + bytes([0x01])
    assert batch[61:] == first + second


def test_varints_headers_nulls_and_negative_deltas_round_trip() -> None:
    records = [
        Record(b"x" * 300, key=None, timestamp_ms=5000, headers=(Header("h", b"1"), Header("n", None))),
        Record(None, key=b"key", timestamp_ms=4000),
        Record(b"", key=b"", timestamp_ms=2**40),
    ]
    data = build_batch(records, base_offset=100)
    (batch,) = validate_batches(data)
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (100, 102, 3)
    assert batch.max_timestamp == 2**40
    decoded = list(batch.records())
    assert [r.offset for r in decoded] == [100, 101, 102]
    assert [(r.key, r.value, r.timestamp_ms) for r in decoded] == [
        (None, b"x" * 300, 5000),
        (b"key", None, 4000),
        (b"", b"", 2**40),
    ]
    assert decoded[0].headers == (Header("h", b"1"), Header("n", None))


def test_rewriting_offset_and_epoch_keeps_crc_valid() -> None:
    data = bytearray(build_batch([Record(b"a"), Record(b"b")]) + build_batch([Record(b"c")]))
    batches = validate_batches(bytes(data))
    set_base_offset(data, batches[1].position, 42)
    set_partition_leader_epoch(data, batches[1].position, 9)
    rewritten = validate_batches(bytes(data))
    assert (rewritten[1].base_offset, rewritten[1].partition_leader_epoch) == (42, 9)
    assert [r.value for r in rewritten[1].records()] == [b"c"]


@pytest.mark.parametrize("cut", [0, 1, 12, 60, 61, 69])
def test_truncated_input_is_corrupt_message(cut: int) -> None:
    data = build_batch([Record(b"v", key=b"k")])
    with pytest.raises(CorruptRecordError) as raised:
        validate_batches(data[:cut])
    assert raised.value.code is ErrorCode.CORRUPT_MESSAGE


def test_any_flipped_byte_inside_the_crc_is_caught() -> None:
    data = build_batch([Record(b"value", key=b"key")])
    for position in range(17, len(data)):  # crc field and everything it covers
        damaged = bytearray(data)
        damaged[position] ^= 0x40
        with pytest.raises(CorruptRecordError):
            validate_batches(bytes(damaged))


def test_iter_batches_walks_concatenated_batches() -> None:
    data = b"".join(build_batch([Record(bytes([i]))] * (i + 1), base_offset=i * 10) for i in range(4))
    assert [(b.base_offset, b.records_count) for b in iter_batches(data)] == [(0, 1), (10, 2), (20, 3), (30, 4)]


def test_any_record_like_encodes_as_the_record_with_the_same_fields() -> None:
    @dataclass
    class Pending:  # a producer's queued record: key, value, timestamp and no headers
        value: bytes | None
        key: bytes | None
        timestamp_ms: int
        headers: tuple[Header, ...] = ()

    pending = [Pending(b"v1", None, 1000), Pending(None, b"k2", 1005), Pending(b"v3" * 300, b"k3", 999)]
    records = [Record(p.value, key=p.key, timestamp_ms=p.timestamp_ms) for p in pending]
    assert build_batch(pending) == build_batch(records)


def test_a_read_header_is_the_batch_its_constructor_builds() -> None:
    """read_header fills a RecordBatch without its constructor: every field, by name, must be the header's."""
    first = build_batch([Record(b"a")], base_offset=0)
    second = build_batch(
        [Record(b"v", timestamp_ms=1000), Record(b"w", timestamp_ms=1007)],
        base_offset=5,
        partition_leader_epoch=3,
        producer_id=7,
        producer_epoch=1,
        base_sequence=4,
    )
    data = first + second
    batch = list(iter_batches(data))[1]
    expected = RecordBatch(data, len(first), *struct.unpack_from(">qiibIhiqqqhii", data, len(first)))
    assert vars(batch) == vars(expected)
    assert (batch.base_offset, batch.last_offset, batch.producer_id, batch.base_sequence) == (5, 6, 7, 4)
