"""Helpers shared by the storage tests."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import cramjam
import crc32c

from minikafka.common.compression import XERIAL_MAGIC, CompressionType
from minikafka.common.record_batch import HEADER_SIZE, Record, build_batch, iter_batches


def batch_of(values: list[bytes], timestamp_ms: int = 0) -> bytes:
    return build_batch([Record(value, timestamp_ms=timestamp_ms) for value in values])


def values_read(data: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in `data`, checking each batch's CRC on the way."""
    out = []
    for batch in iter_batches(data):
        assert batch.is_valid(), f"served a corrupt batch at offset {batch.base_offset}"
        out.extend((record.offset, record.value) for record in batch.records())
    return out


_HEADER = struct.Struct(">qiibIhiqqqhii")
_FIELDS = (
    "base_offset",
    "batch_length",
    "partition_leader_epoch",
    "magic",
    "crc",
    "attributes",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "records_count",
)


def rewritten(batch: bytes, body: bytes | None = None, **fields: int) -> bytes:
    """`batch` with header `fields` (and optionally its records' bytes) replaced and a CRC that matches again, as
    a sender that means it would write them."""
    values = dict(zip(_FIELDS, _HEADER.unpack_from(batch), strict=True))
    values.update(fields)
    records = batch[HEADER_SIZE:] if body is None else body
    values["batch_length"] = HEADER_SIZE - 12 + len(records)
    header = bytearray(_HEADER.pack(*values.values()))
    crc = crc32c.crc32c(bytes(header[21:]) + records)
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + records


def compress_records(records: bytes, codec: CompressionType, xerial: bool = True) -> bytes:
    """`records` compressed in Kafka's framing for `codec` (snappy: xerial's, as Java writes it, in two chunks to
    cover the chunk walk; or one raw block, as librdkafka writes it)."""
    if codec is CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(records))
    if codec is CompressionType.LZ4:
        return bytes(cramjam.lz4.compress(records))
    if codec is CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(records))
    if not xerial:
        return bytes(cramjam.snappy.compress_raw(records))
    half = len(records) // 2
    chunks = [bytes(cramjam.snappy.compress_raw(part)) for part in (records[:half], records[half:])]
    return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"".join(struct.pack(">i", len(c)) + c for c in chunks)


def compressed(batch: bytes, codec: CompressionType, xerial: bool = True) -> bytes:
    """`batch` (one uncompressed batch) with its records section compressed, codec bits and CRC fixed up."""
    body = compress_records(batch[HEADER_SIZE:], codec, xerial)
    attributes = struct.unpack_from(">h", batch, 21)[0]
    return rewritten(batch, body=body, attributes=(attributes & ~0x07) | codec)


# ---- batches a partition log must refuse ----

_RECORD = 8  # bytes of each record of three(): a one-byte length, then a 7-byte body
_TRANSACTIONAL, _CONTROL, _LOG_APPEND_TIME = 0x10, 0x20, 0x08


def three() -> bytes:
    return batch_of([b"a", b"b", b"c"])


def _patched_record_byte(at: int, value: int) -> bytes:
    """three() with one byte of its records changed (`at` counts from the first record), CRC fixed up."""
    body = bytearray(three()[HEADER_SIZE:])
    body[at] = value
    return rewritten(three(), body=bytes(body))


@dataclass(frozen=True)
class BadBatch:
    make: Callable[[], bytes]
    refused_from: tuple[str, ...]  # "client" (a producer's request), "replication" (what a leader sent)
    error: str  # Kafka's error name


BOTH = ("client", "replication")
# Found only by walking the records, which a leader does for its producers' batches; a follower checks a leader's
# batches as Kafka's do (framing, size, CRC, the header's rules) and takes these.
WALKED = ("client",)
BAD_BATCHES = {
    # The finding: a count of 2^31 - 1 over one record, CRC valid, moved the log end by 2^31.
    "count_far_above_records": BadBatch(
        lambda: rewritten(batch_of([b"a"]), records_count=2**31 - 1, last_offset_delta=2**31 - 2),
        WALKED,
        "INVALID_RECORD",
    ),
    "count_above_records": BadBatch(
        lambda: rewritten(three(), records_count=4, last_offset_delta=3), WALKED, "INVALID_RECORD"
    ),
    "count_below_records": BadBatch(
        lambda: rewritten(three(), records_count=2, last_offset_delta=1), WALKED, "INVALID_RECORD"
    ),
    # From a leader this is a batch its log cleaner rewrote (records 0, 1 and 2 of offsets 0 to 5): accepted.
    "count_disagrees_with_last_offset_delta": BadBatch(
        lambda: rewritten(three(), last_offset_delta=5), ("client",), "INVALID_RECORD"
    ),
    "count_zero": BadBatch(lambda: rewritten(three(), records_count=0, last_offset_delta=-1), BOTH, "INVALID_RECORD"),
    # The second record says offset delta 2.
    "offset_delta_out_of_turn": BadBatch(lambda: _patched_record_byte(_RECORD + 3, 4), WALKED, "INVALID_RECORD"),
    # The first value claims 2 bytes in a record with room for 1.
    "record_fields_overrun_its_length": BadBatch(lambda: _patched_record_byte(5, 4), WALKED, "INVALID_RECORD"),
    # The last record claims 63 bytes.
    "record_length_past_the_batch": BadBatch(lambda: _patched_record_byte(2 * _RECORD, 0x7E), WALKED, "INVALID_RECORD"),
    # The first record says 5 headers and has no room for one.
    "header_count_past_the_record": BadBatch(lambda: _patched_record_byte(7, 10), WALKED, "INVALID_RECORD"),
    # gzip's bits on records that are not a gzip stream.
    "compression_attribute_on_a_plain_body": BadBatch(
        lambda: rewritten(three(), attributes=1), WALKED, "CORRUPT_MESSAGE"
    ),
    "unknown_codec": BadBatch(lambda: rewritten(three(), attributes=7), BOTH, "UNSUPPORTED_COMPRESSION_TYPE"),
    "codec_5": BadBatch(lambda: rewritten(three(), attributes=5), BOTH, "UNSUPPORTED_COMPRESSION_TYPE"),
    # A zstd batch whose records hold one record fewer than its header counts: walked as an uncompressed one.
    "compressed_count_above_records": BadBatch(
        lambda: compressed(rewritten(three(), records_count=4, last_offset_delta=3), CompressionType.ZSTD),
        WALKED,
        "INVALID_RECORD",
    ),
    # A valid lz4 frame cut short.
    "compressed_bytes_truncated": BadBatch(
        lambda: rewritten(
            three(), body=compress_records(three()[HEADER_SIZE:], CompressionType.LZ4)[:-6], attributes=3
        ),
        WALKED,
        "CORRUPT_MESSAGE",
    ),
    "transactional_without_producer_id": BadBatch(
        lambda: rewritten(three(), attributes=_TRANSACTIONAL), BOTH, "INVALID_RECORD"
    ),
    "control_batch_from_a_client": BadBatch(
        lambda: rewritten(three(), attributes=_CONTROL), ("client",), "INVALID_RECORD"
    ),
    "producer_id_without_sequence": BadBatch(
        lambda: rewritten(three(), producer_id=7, producer_epoch=0, base_sequence=-1), ("client",), "INVALID_RECORD"
    ),
    "log_append_time_from_a_client": BadBatch(
        lambda: rewritten(three(), attributes=_LOG_APPEND_TIME), ("client",), "INVALID_TIMESTAMP"
    ),
    "client_base_offset_not_zero": BadBatch(lambda: rewritten(three(), base_offset=5), ("client",), "INVALID_RECORD"),
    "two_batches_from_a_client": BadBatch(lambda: three() + three(), ("client",), "INVALID_RECORD"),
    "crc_mismatch": BadBatch(lambda: three()[:-1] + b"x", BOTH, "CORRUPT_MESSAGE"),
    "truncated": BadBatch(lambda: three()[:-1], BOTH, "CORRUPT_MESSAGE"),
}
BAD_CASES = [(name, origin) for name, bad in sorted(BAD_BATCHES.items()) for origin in bad.refused_from]
