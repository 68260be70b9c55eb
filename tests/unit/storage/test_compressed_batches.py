"""Compressed record batches (codecs 1-4 in Kafka's framings): validated on append by the rules uncompressed ones
meet, stored as sent, and decoded by the readers; bytes that do not decode, unknown codecs and batches that inflate
without bound are refused with Kafka's errors."""

from __future__ import annotations

import cramjam
import pytest
from storage_helpers import compress_records, compressed, rewritten, three

from minikafka.common.compression import CompressionType, decompress
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import HEADER_SIZE, Header, Record, build_batch, iter_batches
from minikafka.storage.log_validator import AppendOrigin, inflation_limit, validate_records

LIMIT = 1 << 20
CODECS = [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]
RECORDS = [
    Record(b"x" * 300, key=None, timestamp_ms=5000, headers=(Header("h", b"1"), Header("n", None))),
    Record(None, key=b"key", timestamp_ms=4000),
    *(Record(b"v%d" % i * 100, key=b"k%d" % i, timestamp_ms=6000 + i) for i in range(150)),
]


def _plain() -> bytes:
    return build_batch(RECORDS, producer_id=3, producer_epoch=0, base_sequence=0)


def _decoded(batch: bytes) -> list[tuple[int, bytes | None, bytes | None, int, tuple[Header, ...]]]:
    return [(r.offset, r.key, r.value, r.timestamp_ms, r.headers) for b in iter_batches(batch) for r in b.records()]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("origin", [AppendOrigin.CLIENT, AppendOrigin.REPLICATION], ids=lambda o: o.value)
def test_each_codec_is_validated_and_decoded(codec: CompressionType, origin: AppendOrigin) -> None:
    batch = compressed(_plain(), codec)
    assert len(batch) < len(_plain())
    result = validate_records(batch, origin, LIMIT)
    assert (result.record_count, result.max_timestamp) == (len(RECORDS), 6149)
    assert result.batches[0].compression_type == codec and result.batches[0].bytes() == batch  # stored as sent
    assert _decoded(batch) == _decoded(_plain())


def test_raw_snappy_without_xerial_framing_as_librdkafka_writes_it() -> None:
    batch = compressed(_plain(), CompressionType.SNAPPY, xerial=False)
    assert validate_records(batch, AppendOrigin.CLIENT, LIMIT).record_count == len(RECORDS)
    assert _decoded(batch) == _decoded(_plain())


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_corrupt_compressed_bytes_are_corrupt_message(codec: CompressionType) -> None:
    body = bytearray(compress_records(_plain()[HEADER_SIZE:], codec))
    del body[len(body) // 2 : len(body) // 2 + 40]  # a hole in the middle of the stream
    batch = rewritten(_plain(), body=bytes(body), attributes=codec)
    with pytest.raises(KafkaError) as raised:
        validate_records(batch, AppendOrigin.CLIENT, LIMIT)
    assert raised.value.code is ErrorCode.CORRUPT_MESSAGE, raised.value.message
    assert "\n" not in raised.value.message


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_codecs_kafka_does_not_define_are_unsupported(codec: int) -> None:
    with pytest.raises(KafkaError) as raised:
        validate_records(rewritten(three(), attributes=codec), AppendOrigin.CLIENT, LIMIT)
    assert raised.value.code is ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_decompression_stops_at_its_limit(codec: CompressionType) -> None:
    inflated = b"\x00" * 300_000
    data = compress_records(inflated, codec)
    assert decompress(codec, data, len(inflated)) == inflated
    with pytest.raises(KafkaError) as raised:
        decompress(codec, data, len(inflated) - 1)
    assert raised.value.code is ErrorCode.RECORD_LIST_TOO_LARGE


def test_a_batch_inflating_past_the_bound_is_refused() -> None:
    """A zstd batch of a few kilobytes whose one record's value inflates past 64 x message.max.bytes."""
    bound = inflation_limit(LIMIT)
    record = build_batch([Record(b"\x00" * (bound + 1))])[HEADER_SIZE:]
    batch = rewritten(three(), body=bytes(cramjam.zstd.compress(record)), attributes=CompressionType.ZSTD)
    assert len(batch) < LIMIT
    with pytest.raises(KafkaError) as raised:
        validate_records(batch, AppendOrigin.CLIENT, LIMIT)
    assert raised.value.code is ErrorCode.RECORD_LIST_TOO_LARGE
