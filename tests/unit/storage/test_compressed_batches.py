"""Compressed record batches (codecs 1-4 in Kafka's framings): validated on append by the rules uncompressed ones
meet, stored as sent, and decoded by the readers; bytes that do not decode, unknown codecs and batches that inflate
without bound are refused with Kafka's errors."""

from __future__ import annotations

from pathlib import Path

import cramjam
import pytest
from storage_helpers import compress_records, compressed, rewritten, three

from minikafka.common.compression import CompressionType, decompress, target_codec
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import HEADER_SIZE, TRANSACTIONAL_FLAG, Header, Record, build_batch, iter_batches
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_validator import AppendOrigin, inflation_limit, validate_records
from minikafka.storage.partition_log import PartitionLog

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


# ---- compression.type: a topic codec other than the producer's ----

ALL_CODECS = [CompressionType.NONE, *CODECS]


def _idempotent_transactional() -> bytes:
    return build_batch(RECORDS, producer_id=42, producer_epoch=3, base_sequence=17, attributes=TRANSACTIONAL_FLAG)


@pytest.mark.parametrize("target", ALL_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("source", ALL_CODECS, ids=lambda c: c.name)
def test_a_producers_batch_is_recompressed_to_the_topic_codec(source: CompressionType, target: CompressionType) -> None:
    """Kafka's LogValidator: compression.type other than producer, differing from the batch's codec, writes the
    records again with the topic's codec; the producer id, epoch, sequence and transactional flag stay."""
    plain = _idempotent_transactional()
    sent = plain if source is CompressionType.NONE else compressed(plain, source)
    result = validate_records(sent, AppendOrigin.CLIENT, LIMIT, compression=target)
    (batch,) = result.batches
    assert batch.compression_type == target and batch.is_valid()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 17)
    assert batch.is_transactional and not batch.is_control and not batch.has_log_append_time
    assert (batch.base_offset, batch.last_offset_delta, batch.records_count) == (0, len(RECORDS) - 1, len(RECORDS))
    assert (result.record_count, result.max_timestamp, batch.max_timestamp) == (len(RECORDS), 6149, 6149)
    assert _decoded(batch.bytes()) == _decoded(_plain())
    if source is target:
        assert batch.bytes() == sent  # the same codec: stored as sent
    # What was written is what a follower accepts.
    assert validate_records(batch.bytes(), AppendOrigin.REPLICATION, LIMIT).record_count == len(RECORDS)


@pytest.mark.parametrize("source", ALL_CODECS, ids=lambda c: c.name)
def test_producer_keeps_the_producers_codec(source: CompressionType) -> None:
    sent = _plain() if source is CompressionType.NONE else compressed(_plain(), source)
    assert validate_records(sent, AppendOrigin.CLIENT, LIMIT, compression=None).batches[0].bytes() == sent


def test_a_replicated_batch_is_never_recompressed() -> None:
    sent = compressed(_plain(), CompressionType.GZIP)
    result = validate_records(sent, AppendOrigin.REPLICATION, LIMIT, compression=CompressionType.LZ4)
    assert result.batches[0].bytes() == sent


def test_a_batch_recompressed_beyond_message_max_bytes_is_refused() -> None:
    """A zstd batch within message.max.bytes whose records, written again uncompressed, are not."""
    sent = compressed(build_batch([Record(b"a" * 200, timestamp_ms=1)] * 20), CompressionType.ZSTD)
    with pytest.raises(KafkaError) as raised:
        validate_records(sent, AppendOrigin.CLIENT, len(sent) + 10, compression=CompressionType.NONE)
    assert raised.value.code is ErrorCode.MESSAGE_TOO_LARGE


@pytest.mark.parametrize(
    ("name", "codec"),
    [
        ("producer", None),
        ("uncompressed", CompressionType.NONE),
        ("gzip", CompressionType.GZIP),
        ("snappy", CompressionType.SNAPPY),
        ("lz4", CompressionType.LZ4),
        ("zstd", CompressionType.ZSTD),
    ],
)
def test_compression_type_names(name: str, codec: CompressionType | None) -> None:
    assert target_codec(name) == codec


def test_a_partition_log_stores_producers_batches_with_its_compression_type(tmp_path: Path) -> None:
    """The append path: a gzip batch to an lz4 topic is stored lz4, at the log's offsets, and its producer's
    sequence still counts (a retry of it is a duplicate; its successor is in sequence)."""
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(compression_type="lz4"), 0)
    first = compressed(build_batch(RECORDS, producer_id=7, producer_epoch=0, base_sequence=0), CompressionType.GZIP)
    info = log.append_as_leader(first, leader_epoch=3, now_ms=0)
    assert (info.first_offset, info.last_offset) == (0, len(RECORDS) - 1)
    assert log.append_as_leader(first, leader_epoch=3, now_ms=0).duplicate
    (stored,) = list(iter_batches(log.read(0, 1 << 20)))
    assert stored.compression_type == CompressionType.LZ4 and stored.partition_leader_epoch == 3
    assert [r.value for r in stored.records()] == [r.value for r in RECORDS]
    following = build_batch(RECORDS[:2], producer_id=7, producer_epoch=0, base_sequence=len(RECORDS))
    log.config = LogConfig()  # compression.type changed back to producer: as sent
    assert log.append_as_leader(following, leader_epoch=3, now_ms=0).first_offset == len(RECORDS)
    assert list(iter_batches(log.read(len(RECORDS), 1 << 20)))[0].compression_type == CompressionType.NONE
    log.close()
