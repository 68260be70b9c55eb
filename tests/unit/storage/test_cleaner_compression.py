"""The log cleaner rewrites a batch it filters with the batch's own codec, as Kafka's cleaner does: offsets,
producer id, epoch, base sequence, leader epoch and the transactional flag stay; a batch it empties is Kafka's empty
batch header (uncompressed); a batch it removes nothing from is kept byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.common.compression import CompressionType
from minikafka.common.record_batch import (
    TRANSACTIONAL_FLAG,
    Record,
    RecordBatch,
    build_batch,
    iter_batches,
    rebuild_batch,
)
from minikafka.storage.cleaner_plan import filthiest
from minikafka.storage.log_cleaner import clean
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

CODECS = [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]
COMPACTED = LogConfig(segment_bytes=600, cleanup_policy=("compact",), index_interval_bytes=100)
NOW = 10_000


def _batch(keys: list[bytes], round_: int, codec: int, base_sequence: int) -> bytes:
    records = [Record(b"%s-value-%d" % (key, round_) * 4, key) for key in keys]
    return build_batch(records, producer_id=7, producer_epoch=2, base_sequence=base_sequence, compression=codec)


def _cleaned_log(path: Path, codec: int) -> PartitionLog:
    """Six keys written in batches of three, five rounds, then k0 and k3 once more: the last round's batches lose
    one record each; then other keys, so that all of it is in segments the cleaner may clean."""
    log = PartitionLog.open(path, COMPACTED, now_ms=0)
    keys = [b"k%d" % n for n in range(6)]
    chunks = [(chunk, round_) for round_ in range(5) for chunk in (keys[:3], keys[3:])] + [([b"k0", b"k3"], 5)]
    chunks += [([b"z0", b"z1", b"z2"], 6 + n) for n in range(12)]
    sequence = 0
    for chunk, round_ in chunks:
        log.append_as_leader(_batch(chunk, round_, codec, sequence), 4, 0)
        sequence += len(chunk)
    log.high_watermark = log.log_end_offset
    plan = filthiest([log.cleanable(None)], NOW)
    assert plan is not None
    job = log.cleaning_job(plan, NOW, 1 << 20)
    assert log.swap_cleaned(job, clean(job), log.truncations)
    return log


def _read_all(log: PartitionLog) -> list[RecordBatch]:
    """Every batch, read segment after segment as a consumer reads across the gaps."""
    batches: list[RecordBatch] = []
    offset = log.log_start_offset
    while offset < log.high_watermark and (data := log.read(offset, 1 << 20, max_offset=log.high_watermark)):
        batches += iter_batches(data)
        offset = batches[-1].last_offset + 1
    return batches


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_a_filtered_batch_keeps_its_codec_and_producer_fields(tmp_path: Path, codec: CompressionType) -> None:
    log = _cleaned_log(tmp_path / "t-0", codec)
    batches = _read_all(log)
    filtered = [b for b in batches if 0 < b.records_count < b.last_offset - b.base_offset + 1]
    assert filtered, "the cleaning should have left partly filtered batches"
    for batch in filtered:
        assert batch.is_valid() and batch.compression_type == codec
        assert (batch.producer_id, batch.producer_epoch, batch.partition_leader_epoch) == (7, 2, 4)
        assert batch.last_offset - batch.base_offset == 2  # the original offsets, the removed ones a gap
        assert all(batch.base_offset <= r.offset <= batch.last_offset for r in batch.records())
    assert [b.base_sequence for b in batches] == sorted(b.base_sequence for b in batches)
    for batch in (b for b in batches if b.records_count == 0):
        assert batch.compression_type == CompressionType.NONE  # Kafka's empty batch header
    values = {r.key: r.value for b in batches for r in b.records()}
    assert values[b"k1"] == b"k1-value-4" * 4 and values[b"k0"] == b"k0-value-5" * 4


def test_rebuilding_keeps_the_transactional_flag_offsets_and_sequence_with_the_codec() -> None:
    records = [Record(b"v%d" % n * 20, b"k%d" % n) for n in range(4)]
    data = build_batch(records, base_offset=100, partition_leader_epoch=3, producer_id=9, producer_epoch=1,
                       base_sequence=40, attributes=TRANSACTIONAL_FLAG, compression=CompressionType.ZSTD)  # fmt: skip
    original = next(iter_batches(data))
    kept = [r for r in original.records() if r.offset in (101, 103)]
    rebuilt = next(iter_batches(rebuild_batch(original, kept)))
    assert rebuilt.is_valid() and rebuilt.compression_type == CompressionType.ZSTD and rebuilt.is_transactional
    assert (rebuilt.base_offset, rebuilt.last_offset, rebuilt.records_count) == (100, 103, 2)
    assert (rebuilt.producer_id, rebuilt.producer_epoch, rebuilt.base_sequence) == (9, 1, 40)
    assert rebuilt.partition_leader_epoch == 3
    assert [(r.offset, r.key, r.value) for r in rebuilt.records()] == [(r.offset, r.key, r.value) for r in kept]
    empty = next(iter_batches(rebuild_batch(original, [])))
    assert empty.compression_type == CompressionType.NONE and empty.is_transactional and empty.records_count == 0


def test_a_compressed_batch_nothing_is_removed_from_stays_as_it_was(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", COMPACTED, now_ms=0)
    sent = _batch([b"a", b"b", b"c"], 0, CompressionType.GZIP, 0)
    log.append_as_leader(sent, 1, 0)
    for round_ in range(1, 6):
        log.append_as_leader(_batch([b"d", b"e", b"f"], round_, CompressionType.GZIP, round_ * 3), 1, 0)
    log.high_watermark = log.log_end_offset
    before = next(iter_batches(log.read(0, 1 << 20, max_offset=log.high_watermark))).bytes()
    plan = filthiest([log.cleanable(None)], NOW)
    assert plan is not None
    job = log.cleaning_job(plan, NOW, 1 << 20)
    assert log.swap_cleaned(job, clean(job), log.truncations)
    assert next(iter_batches(log.read(0, 1 << 20, max_offset=log.high_watermark))).bytes() == before
