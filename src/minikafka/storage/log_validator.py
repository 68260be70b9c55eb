"""Kafka's LogValidator: the checks a partition log makes on record batches before it appends them.

Pure: bytes in, a `ValidationResult` out, or a KafkaError with Kafka's code (CORRUPT_MESSAGE for bytes that fail
their CRC or framing, INVALID_RECORD for a batch whose header disagrees with its records or that its sender may
not write, UNSUPPORTED_COMPRESSION_TYPE for codec ids Kafka does not define, INVALID_TIMESTAMP, MESSAGE_TOO_LARGE,
RECORD_LIST_TOO_LARGE for a compressed batch that inflates beyond a bound). A producer's compressed batch has its
records decompressed and walked by the same rules. The broker stores batches as sent (compressed ones too, with
Kafka's compression.type=producer), so whatever a producer's header claims (its record count, its offsets) must be
what its records hold: a count too big would move the log end past offsets that hold nothing. A leader's batches
(replication) get what Kafka's followers check: framing, size, CRC and the header's own rules, without a walk of
their records. A producer's record timestamps must be within message.timestamp.before.max.ms before and
message.timestamp.after.max.ms after the leader's clock (INVALID_TIMESTAMP, naming each record out of range). The one
field set rather than checked is a producer's max timestamp, as Kafka's LogValidator sets it: the largest record
timestamp with CreateTime, the leader's clock with LogAppendTime, which also sets the batch's timestamp type.
A topic whose compression.type names a codec gets a producer's batch of another codec written again with it, as
Kafka's LogValidator recompresses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from minikafka.common.compression import CompressionType, codec_name
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import (
    COMPRESSION_MASK,
    MAGIC,
    NO_TIMESTAMP,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatch,
    RecordError,
    build_batch,
    check_records,
    read_header,
    refused_records_message,
    with_max_timestamp,
)

# A compressed batch may inflate to this many times message.max.bytes (at least 1 MiB): above text's usual 5-20x.
INFLATION_RATIO = 64
MIN_INFLATION_BASE = 1024 * 1024
LAST_CODEC = max(CompressionType)  # codec ids above it are not Kafka's
LONG_MAX = 2**63 - 1


class AppendOrigin(Enum):
    """Who wrote the batches (Kafka's AppendOrigin): the rules differ."""

    CLIENT = "client"  # a producer's request: the leader assigns offsets, and client-only rules apply
    REPLICATION = "replication"  # a leader's bytes (a follower, the Raft metadata log): offsets as they are


@dataclass(frozen=True)
class TimestampRules:
    """A topic's message.timestamp.* configs, and the leader's wall clock they are applied at."""

    now_ms: int
    log_append_time: bool = False  # message.timestamp.type=LogAppendTime: the leader stamps the batch
    before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms
    after_max_ms: int = LONG_MAX  # message.timestamp.after.max.ms

    def out_of_range(self, timestamp: int) -> bool:
        """A bound of LONG_MAX is none: Kafka's 64-bit difference can never exceed it."""
        if timestamp == NO_TIMESTAMP or self.log_append_time:
            return False
        after = self.after_max_ms != LONG_MAX and timestamp - self.now_ms > self.after_max_ms
        return after or (self.before_max_ms != LONG_MAX and self.now_ms - timestamp > self.before_max_ms)


@dataclass(frozen=True)
class ValidationResult:
    batches: tuple[RecordBatch, ...]
    record_count: int
    max_timestamp: int


def validate_records(
    records: bytes | memoryview,
    origin: AppendOrigin,
    max_message_bytes: int,
    compacted: bool = False,
    compression: CompressionType | None = None,
    compression_level: int | None = None,
    partition: str = "",
    timestamps: TimestampRules | None = None,
) -> ValidationResult:
    """Check every batch in `records`, in Kafka's order: framing, size, CRC, then what a producer's records hold; a
    compacted topic takes no record without a key from a producer (INVALID_RECORD), and `timestamps` (None: no
    bounds, CreateTime) bound a producer's record timestamps. A producer's batch whose codec is not `compression`
    (the topic's compression.type; None: "producer") is written again with it, at `compression_level` (the topic's
    compression.<codec>.level)."""
    batches = tuple(_frame_batches(records))
    if origin is AppendOrigin.CLIENT and len(batches) != 1:
        # Produce requests since magic 2 carry exactly one batch per partition.
        raise InvalidRecordError(f"a produce request holds {len(batches)} record batches for one partition")
    for batch in batches:
        if origin is AppendOrigin.CLIENT and batch.base_offset != 0:
            raise InvalidRecordError(f"a producer's batch starts at offset 0, not {batch.base_offset}", batch.position)
        if batch.size > max_message_bytes:
            raise KafkaError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"batch of {batch.size} bytes exceeds message.max.bytes {max_message_bytes}",
            )
        _check_crc(batch)
        _check_batch(batch, origin)
        if origin is AppendOrigin.CLIENT:
            # A leader's batches get Kafka's shallow checks only (framing, size, CRC, the header): the leader walked
            # their records when its producer sent them, and a follower never decompresses.
            records_max_timestamp = _walk(batch, max_message_bytes)
            if compacted:
                _check_keys(batch, max_message_bytes, partition)
            if timestamps is not None:
                _check_timestamps(batch, records_max_timestamp, timestamps, max_message_bytes)
    if origin is AppendOrigin.CLIENT:
        stamp = timestamps.now_ms if timestamps is not None and timestamps.log_append_time else None
        batches = (
            _as_stored(batches[0], records_max_timestamp, stamp, compression, compression_level, max_message_bytes),
        )
    return ValidationResult(
        batches,
        sum(batch.records_count for batch in batches),
        max(batch.max_timestamp for batch in batches),
    )


def _as_stored(
    batch: RecordBatch,
    records_max_timestamp: int,
    log_append_time: int | None,
    compression: CompressionType | None,
    compression_level: int | None,
    max_message_bytes: int,
) -> RecordBatch:
    """A producer's batch as the leader writes it: recompressed to the topic's codec (its max timestamp is then its
    records' already) or with its max timestamp set from its records, and stamped with `log_append_time` (None:
    CreateTime)."""
    if compression is not None and compression != batch.compression_type:
        batch = _recompressed(batch, compression, compression_level, max_message_bytes)
    elif log_append_time is None:
        return _with_max_timestamp(batch, records_max_timestamp)
    return batch if log_append_time is None else with_max_timestamp(batch, log_append_time, log_append_time=True)


def _walk(batch: RecordBatch, max_message_bytes: int) -> int:
    """The records' own checks; returns their largest timestamp."""
    if batch.compression_type:
        return check_records(batch.inflated(inflation_limit(max_message_bytes)))
    return check_records(batch)


def _check_timestamps(batch: RecordBatch, records_max: int, rules: TimestampRules, max_message_bytes: int) -> None:
    """Kafka's LogValidator.validateTimestamp for each record of a CreateTime topic: every record out of range is
    named. The records are walked again only when a bound could be crossed: the largest timestamp answers for the
    future bound, and the past one is Kafka's default (none) unless the topic sets it."""
    if rules.log_append_time:
        return
    if records_max - rules.now_ms <= rules.after_max_ms and rules.before_max_ms == LONG_MAX:
        return
    walked = batch.inflated(inflation_limit(max_message_bytes)) if batch.compression_type else batch
    low, high = rules.now_ms - rules.before_max_ms, rules.now_ms + rules.after_max_ms
    errors = tuple(
        RecordError(
            index,
            f"Timestamp {record.timestamp_ms} of message with offset {record.offset - batch.base_offset} is out of "
            f"range. The timestamp should be within [{low}, {high}]",
        )
        for index, record in enumerate(walked.stored_records())
        if rules.out_of_range(record.timestamp_ms)
    )
    if errors:
        raise InvalidRecordError(refused_records_message(errors), batch.position, errors, ErrorCode.INVALID_TIMESTAMP)


def _cleaned(batch: RecordBatch, origin: AppendOrigin) -> bool:
    """A replicated batch that a log cleaner rewrote: fewer records than offsets (none at all when it was kept
    only for its producer metadata or its last offset), as Kafka's followers accept them."""
    return (
        origin is AppendOrigin.REPLICATION
        and 0 <= batch.records_count <= batch.last_offset_delta
        and batch.last_offset_delta >= 0
    )


def _with_max_timestamp(batch: RecordBatch, records_max_timestamp: int) -> RecordBatch:
    """Kafka's LogValidator for a producer's CreateTime batch: the header's max timestamp is set to the largest
    record timestamp (a header claiming another is rewritten, its CRC made again), so that what the log indexes
    and ListOffsets answers is what the records hold. A leader's batches are stored as it wrote them."""
    if records_max_timestamp == batch.max_timestamp:
        return batch
    return with_max_timestamp(batch, records_max_timestamp)


def _recompressed(batch: RecordBatch, codec: CompressionType, level: int | None, max_message_bytes: int) -> RecordBatch:
    """Kafka's LogValidator when the topic's codec is not the batch's: the records are written again, with their
    timestamps, keys, values and headers, under the same producer id, epoch, base sequence and transactional flag,
    so idempotence and transactions see the batch the producer sent; the max timestamp is the records' largest.
    The new batch must still fit message.max.bytes (MESSAGE_TOO_LARGE), as Kafka checks a batch that changed size."""
    walked = batch.inflated(inflation_limit(max_message_bytes)) if batch.compression_type else batch
    data = build_batch(
        list(walked.stored_records()),
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        attributes=batch.attributes & ~COMPRESSION_MASK,
        compression=codec,
        compression_level=level,
    )
    if len(data) > max_message_bytes:
        raise KafkaError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"batch of {len(data)} bytes once compressed with {codec_name(codec)} exceeds message.max.bytes "
            f"{max_message_bytes}",
        )
    return read_header(data)


def inflation_limit(max_message_bytes: int) -> int:
    """How far a compressed batch may inflate when validated: Kafka streams its records without a bound, but
    here they are decompressed whole, so a batch claiming a small size must not allocate without end."""
    return INFLATION_RATIO * max(max_message_bytes, MIN_INFLATION_BASE)


def _frame_batches(records: bytes | memoryview) -> list[RecordBatch]:
    batches = []
    position = 0
    while position < len(records):
        batch = read_header(records, position, check_counts=False)
        batches.append(batch)
        position += batch.size
    if not batches:
        raise CorruptRecordError("no record batch in the request", 0)
    return batches


def _check_crc(batch: RecordBatch) -> None:
    computed = batch.computed_crc()
    if computed != batch.crc:
        stored = f"stored {batch.crc:#010x}, computed {computed:#010x}"
        raise CorruptRecordError(f"CRC mismatch in batch at offset {batch.base_offset} ({stored})", batch.position)


def _check_batch(batch: RecordBatch, origin: AppendOrigin) -> None:
    """The header's own rules (Kafka's validateBatch), before its records are walked."""
    contiguous = batch.records_count > 0 and batch.last_offset_delta == batch.records_count - 1
    if not contiguous and not _cleaned(batch, origin):
        raise InvalidRecordError(
            f"records_count {batch.records_count} and last offset delta {batch.last_offset_delta} disagree "
            f"(a batch of n records has last offset delta n - 1, n > 0)",
            batch.position,
        )
    if batch.compression_type > LAST_CODEC:
        raise KafkaError(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"compression type {batch.compression_type} in batch at offset {batch.base_offset} (magic {MAGIC}): "
            f"Kafka's codecs are 0 none, 1 gzip, 2 snappy, 3 lz4 and 4 zstd",
        )
    if batch.is_transactional and not batch.has_producer_id:
        raise InvalidRecordError(f"transactional batch without a producer id ({batch.producer_id})", batch.position)
    if origin is AppendOrigin.CLIENT:
        _check_client_batch(batch)


def _check_client_batch(batch: RecordBatch) -> None:
    if batch.is_control:
        raise InvalidRecordError("clients may not write control batches", batch.position)
    if batch.has_producer_id and batch.base_sequence < 0:
        raise InvalidRecordError(
            f"invalid sequence {batch.base_sequence} in a batch of producer id {batch.producer_id}", batch.position
        )
    if batch.has_log_append_time:
        raise KafkaError(ErrorCode.INVALID_TIMESTAMP, "a producer may not set the timestamp type to LogAppendTime")


def _check_keys(batch: RecordBatch, max_message_bytes: int, partition: str) -> None:
    """Kafka's LogValidator for a compacted topic: compaction keeps the latest record per key, so a record without
    one could never be kept or replaced. Every such record is named by its index in the batch, as Kafka answers
    them: a client fails those and knows the others were refused only for their company."""
    walked = batch.inflated(inflation_limit(max_message_bytes)) if batch.compression_type else batch
    errors = tuple(
        RecordError(index, f"Compacted topic cannot accept message without key in topic partition {partition}.")
        for index, record in enumerate(walked.stored_records())
        if record.key is None
    )
    if errors:
        raise InvalidRecordError(refused_records_message(errors), batch.position, errors)
